// rcip.hpp: header-only C++17 wrapper over the rcip C ABI (rcip.h).
//
// Ownership follows the C ABI one to one:
//   - owners (Catalog, Schema, Runtime, Binding, Subscription, Snapshot,
//     Invocation, PolicyRequest, CancelToken, McpSession) hold a std::unique_ptr whose deleter calls
//     the C `_free`; they are move-only, except CancelToken, whose copy is a
//     clone (the C ABI has rcip_cancel_token_clone);
//   - views (Client, Host) own nothing and must not outlive their Runtime;
//   - raw() and release() are escape hatches to the C handle.
// A non-OK rcip_result throws rcip::Error (code() and the library's
// message). Callbacks are std::function objects boxed on the heap; the C
// library frees each box through its user_data_free callback, exactly once,
// after the last call. Trampolines are noexcept: an exception thrown by a
// handler fails the invocation (rcip::Aborted: EXECUTION_ABORTED, anything
// else: EXECUTION_FAILED), by a policy fails the policy request
// (POLICY_EVALUATION_FAILED), by an availability check fails the check
// (AVAILABILITY_CHECK_FAILED); no exception ever unwinds into the library.
// Every such exception except rcip::Aborted also reaches the runtime's
// on_error handler; an exception from a CancelToken::on_cancel callback is
// swallowed (it has no runtime to report to).
//
// Threads: callbacks (handlers, policies, availability checks, observers,
// subscribers, on_error) run on whichever thread does the work: the thread
// of the rcip call that made it runnable, or the library's timer thread for
// confirmation expiries. They may run concurrently with each other; guard
// shared state. A callback may call any rcip function (except from a clock
// or id generator, rcip.h says).
//
// Text arguments are std::string_view and are copied to NUL-terminated text
// for the C ABI: one that contains a NUL byte throws Error
// (RCIP_RESULT_INVALID_ARGUMENT) rather than being cut short.
#ifndef RCIP_HPP
#define RCIP_HPP

#include <rcip.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rcip {

// ----- errors -------------------------------------------------------------------

/// A non-OK rcip_result: code() is the value, what() the library's message
/// (rcip_last_error_message, read right after the failing call).
class Error : public std::runtime_error {
public:
    Error(rcip_result code, const std::string &message) : std::runtime_error(message), code_(code) {}
    rcip_result code() const noexcept { return code_; }

private:
    rcip_result code_;
};

/// Throw it from a handler to fail the invocation as an abort
/// (EXECUTION_ABORTED).
class Aborted : public std::exception {
public:
    const char *what() const noexcept override { return "rcip: the handler aborted"; }
};

namespace detail {

inline void check(rcip_result rc) {
    if (rc != RCIP_RESULT_OK) {
        const char *message = rcip_last_error_message();
        throw Error(rc, message ? message : rcip_result_str(static_cast<uint32_t>(rc)));
    }
}

/// Copies a string the library returned through `char **`, then frees it.
inline std::string take(char *s) {
    std::unique_ptr<char, void (*)(char *)> owned(s, rcip_string_free);
    return s ? std::string(s) : std::string();
}

template <typename T, void (*Free)(T *)>
struct Deleter {
    void operator()(T *p) const noexcept { Free(p); }
};

inline void free_snapshot(const rcip_snapshot *s) { rcip_snapshot_free(s); }

/// A text argument with a NUL byte inside: the C side would read only the
/// text before it, so it is refused.
[[noreturn]] inline void embedded_nul() {
    throw Error(RCIP_RESULT_INVALID_ARGUMENT, "rcip: a text argument contains a NUL byte (the C ABI takes NUL-terminated text)");
}

/// NUL-terminated copy for the C ABI (string_view may not be terminated).
inline std::string z(std::string_view s) {
    if (s.find('\0') != std::string_view::npos) embedded_nul();
    return std::string(s);
}

/// `s.c_str()`, refusing a string with a NUL byte inside.
inline const char *c_str(const std::string &s) {
    if (s.find('\0') != std::string::npos) embedded_nul();
    return s.c_str();
}

}  // namespace detail

// ----- a little JSON, enough to read the library's records ------------------------

namespace json {

/// `s` as a JSON string literal (quotes and escapes added).
inline std::string quote(std::string_view s) {
    static const char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(s.size() + 2);
    out.push_back('"');
    for (char c : s) {
        unsigned char u = static_cast<unsigned char>(c);
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            case '\b': out += "\\b"; break;
            case '\f': out += "\\f"; break;
            default:
                if (u < 0x20) {
                    out += "\\u00";
                    out.push_back(hex[u >> 4]);
                    out.push_back(hex[u & 15]);
                } else {
                    out.push_back(c);
                }
        }
    }
    out.push_back('"');
    return out;
}

namespace impl {

inline std::size_t ws(std::string_view s, std::size_t i) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\r' || s[i] == '\t')) ++i;
    return i;
}

/// Index just past the string literal starting at s[i] (a quote), or npos.
inline std::size_t skip_string(std::string_view s, std::size_t i) {
    for (++i; i < s.size(); ++i) {
        if (s[i] == '\\') {
            ++i;
        } else if (s[i] == '"') {
            return i + 1;
        }
    }
    return std::string_view::npos;
}

/// After `,` or `{` inside an object: index just past the member's key and
/// its colon, or npos.
inline std::size_t skip_key(std::string_view s, std::size_t i) {
    i = ws(s, i);
    if (i >= s.size() || s[i] != '"') return std::string_view::npos;
    i = ws(s, skip_string(s, i));
    if (i >= s.size() || s[i] != ':') return std::string_view::npos;
    return i + 1;
}

/// Index just past the JSON value starting at s[i] (after whitespace), or
/// npos. Iterative: a nesting level costs one byte of heap, not a stack
/// frame, so input nested as deep as the library accepts is safe.
inline std::size_t skip(std::string_view s, std::size_t i) {
    constexpr std::size_t npos = std::string_view::npos;
    std::string open;  // the closing bracket of each container we are in
    for (;;) {
        // A value starts at i.
        i = ws(s, i);
        if (i >= s.size()) return npos;
        char c = s[i];
        if (c == '{' || c == '[') {
            char close = c == '{' ? '}' : ']';
            i = ws(s, i + 1);
            if (i < s.size() && s[i] == close) {
                ++i;  // empty: a whole value
            } else {
                open.push_back(close);
                if (close == '}' && (i = skip_key(s, i)) == npos) return npos;
                continue;  // its first element
            }
        } else if (c == '"') {
            if ((i = skip_string(s, i)) == npos) return npos;
        } else {
            while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\n' &&
                   s[i] != '\r' && s[i] != '\t')
                ++i;
        }
        // A value ended at i: close containers, or go on after a comma.
        for (;;) {
            if (open.empty()) return i;
            i = ws(s, i);
            if (i >= s.size()) return npos;
            if (s[i] == open.back()) {
                open.pop_back();
                ++i;
                continue;
            }
            if (s[i] != ',') return npos;
            ++i;
            if (open.back() == '}' && (i = skip_key(s, i)) == npos) return npos;
            break;
        }
    }
}

inline void utf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

inline uint32_t hex4(std::string_view s, std::size_t i) {
    uint32_t v = 0;
    for (std::size_t k = i; k < i + 4 && k < s.size(); ++k) {
        char c = s[k];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= static_cast<uint32_t>(c - '0');
        else if (c >= 'a' && c <= 'f') v |= static_cast<uint32_t>(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= static_cast<uint32_t>(c - 'A' + 10);
    }
    return v;
}

}  // namespace impl

inline std::string unquote(std::string_view literal);

/// The text of member `key` of a JSON object (no copy), if present. `key`
/// is compared with the member names as they read once unescaped.
inline std::optional<std::string_view> member(std::string_view object, std::string_view key) {
    std::size_t i = impl::ws(object, 0);
    if (i >= object.size() || object[i] != '{') return std::nullopt;
    i = impl::ws(object, i + 1);
    if (i < object.size() && object[i] == '}') return std::nullopt;
    while (i < object.size()) {
        if (object[i] != '"') return std::nullopt;
        std::size_t key_end = impl::skip_string(object, i);
        if (key_end == std::string_view::npos) return std::nullopt;
        std::size_t i0 = i;
        std::string_view k = object.substr(i + 1, key_end - i - 2);
        i = impl::ws(object, key_end);
        if (i >= object.size() || object[i] != ':') return std::nullopt;
        std::size_t value_start = impl::ws(object, i + 1);
        std::size_t value_end = impl::skip(object, value_start);
        if (value_end == std::string_view::npos) return std::nullopt;
        bool same = k.find('\\') == std::string_view::npos ? k == key : unquote(object.substr(i0, key_end - i0)) == key;
        if (same) return object.substr(value_start, value_end - value_start);
        i = impl::ws(object, value_end);
        if (i >= object.size() || object[i] != ',') return std::nullopt;
        i = impl::ws(object, i + 1);
    }
    return std::nullopt;
}

/// The elements of a JSON array (texts, no copies).
inline std::vector<std::string_view> elements(std::string_view array) {
    std::vector<std::string_view> out;
    std::size_t i = impl::ws(array, 0);
    if (i >= array.size() || array[i] != '[') return out;
    i = impl::ws(array, i + 1);
    if (i < array.size() && array[i] == ']') return out;
    while (i < array.size()) {
        std::size_t end = impl::skip(array, i);
        if (end == std::string_view::npos) break;
        out.push_back(array.substr(i, end - i));
        i = impl::ws(array, end);
        if (i >= array.size() || array[i] != ',') break;
        i = impl::ws(array, i + 1);
    }
    return out;
}

/// The value of a JSON string literal (escapes decoded, UTF-8), or "" for
/// anything that is not a string.
inline std::string unquote(std::string_view literal) {
    std::string out;
    if (literal.size() < 2 || literal.front() != '"') return out;
    for (std::size_t i = 1; i + 1 < literal.size(); ++i) {
        char c = literal[i];
        if (c != '\\') {
            out.push_back(c);
            continue;
        }
        char e = literal[++i];
        switch (e) {
            case 'n': out.push_back('\n'); break;
            case 'r': out.push_back('\r'); break;
            case 't': out.push_back('\t'); break;
            case 'b': out.push_back('\b'); break;
            case 'f': out.push_back('\f'); break;
            case 'u': {
                uint32_t cp = impl::hex4(literal, i + 1);
                i += 4;
                if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < literal.size() && literal[i + 1] == '\\' && literal[i + 2] == 'u') {
                    uint32_t low = impl::hex4(literal, i + 3);
                    if (low >= 0xDC00 && low < 0xE000) {
                        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                        i += 6;
                    }
                }
                impl::utf8(out, cp);
                break;
            }
            default: out.push_back(e);
        }
    }
    return out;
}

/// A string member's value, or "" when absent or not a string.
inline std::string string_member(std::string_view object, std::string_view key) {
    auto v = member(object, key);
    return v ? unquote(*v) : std::string();
}

}  // namespace json

// ----- records ----------------------------------------------------------------------------

enum class Status { Succeeded, Failed, Denied, ConfirmationRequired, Unknown };

/// One validation issue of an `INPUT_INVALID` / `OUTPUT_INVALID` error (Ajv's shape).
struct ValidationIssue {
    std::string instance_path;  ///< JSON pointer into the input or output ("" is the root)
    std::string keyword;        ///< the schema keyword that failed
    std::string message;
};

namespace detail {
/// `validationIssues` and `validationIssuesTruncated` (**rcip**) of an error object.
inline void read_issues(std::string_view error, std::vector<ValidationIssue> &issues, bool &truncated) {
    if (auto list = json::member(error, "validationIssues")) {
        for (std::string_view i : json::elements(*list)) {
            issues.push_back(ValidationIssue{json::string_member(i, "instancePath"), json::string_member(i, "keyword"),
                                             json::string_member(i, "message")});
        }
    }
    auto cut = json::member(error, "validationIssuesTruncated");
    truncated = cut && *cut == "true";
}
}  // namespace detail

/// One invocation outcome (the outcome record of conformance/FORMAT.md).
struct Outcome {
    std::string json;  ///< the whole record
    Status status = Status::Unknown;
    std::string invocation_id;
    std::string capability_id;
    std::string output;  ///< raw JSON text of the output (succeeded only)
    std::string error_code;  ///< the RCIP error code (failed, denied)
    std::string error_message;
    std::vector<ValidationIssue> validation_issues;  ///< INPUT_INVALID / OUTPUT_INVALID only
    /// **rcip**: the runtime's issue bound (Runtime::Builder::validation_issue_limit;
    /// default 1000 issues, 1 MiB of issue text) left issues out of
    /// validation_issues, which holds the first ones of the full list.
    bool validation_issues_truncated = false;
    std::string confirmation_id;  ///< confirmation_required only
    int64_t expires_at = 0;  ///< epoch ms, confirmation_required only

    bool ok() const noexcept { return status == Status::Succeeded; }

    static Outcome parse(std::string text) {
        Outcome o;
        o.json = std::move(text);
        std::string_view j = o.json;
        std::string status = json::string_member(j, "status");
        o.status = status == "succeeded"               ? Status::Succeeded
                   : status == "failed"                ? Status::Failed
                   : status == "denied"                ? Status::Denied
                   : status == "confirmation_required" ? Status::ConfirmationRequired
                                                       : Status::Unknown;
        o.invocation_id = json::string_member(j, "invocationId");
        o.capability_id = json::string_member(j, "capabilityId");
        if (auto out = json::member(j, "output")) o.output = std::string(*out);
        if (auto err = json::member(j, "error")) {
            o.error_code = json::string_member(*err, "code");
            o.error_message = json::string_member(*err, "message");
            detail::read_issues(*err, o.validation_issues, o.validation_issues_truncated);
        }
        if (auto c = json::member(j, "confirmation")) {
            o.confirmation_id = json::string_member(*c, "id");
            if (auto e = json::member(*c, "expiresAt")) o.expires_at = std::stoll(std::string(*e));
        }
        return o;
    }
};

/// A preflight report; each entry's status is "ready",
/// "confirmation_required" or "blocked" (with error_code).
struct PreflightReport {
    struct Entry {
        std::string status;
        std::string capability_id;
        std::string error_code;
        std::vector<ValidationIssue> validation_issues;  ///< a blocked INPUT_INVALID entry
        bool validation_issues_truncated = false;        ///< **rcip**, as Outcome's
    };
    std::string json;
    bool consistent = false;
    uint64_t revision = 0;
    std::vector<Entry> outcomes;

    static PreflightReport parse(std::string text) {
        PreflightReport r;
        r.json = std::move(text);
        std::string_view j = r.json;
        auto consistent = json::member(j, "consistent");
        r.consistent = consistent && *consistent == "true";
        if (auto rev = json::member(j, "revision")) r.revision = std::stoull(std::string(*rev));
        if (auto list = json::member(j, "outcomes")) {
            for (std::string_view e : json::elements(*list)) {
                Entry entry;
                entry.status = json::string_member(e, "status");
                entry.capability_id = json::string_member(e, "capabilityId");
                if (auto err = json::member(e, "error")) {
                    entry.error_code = json::string_member(*err, "code");
                    detail::read_issues(*err, entry.validation_issues, entry.validation_issues_truncated);
                }
                r.outcomes.push_back(std::move(entry));
            }
        }
        return r;
    }
};

/// A redacted lifecycle event.
struct Event {
    std::string json;
    int64_t timestamp = 0;
    std::string invocation_id;
    std::string capability_id;
    std::string phase;
    std::string error_code;  ///< empty when absent

    static Event parse(std::string text) {
        Event e;
        e.json = std::move(text);
        std::string_view j = e.json;
        if (auto t = json::member(j, "timestamp")) e.timestamp = std::stoll(std::string(*t));
        e.invocation_id = json::string_member(j, "invocationId");
        e.capability_id = json::string_member(j, "capabilityId");
        e.phase = json::string_member(j, "phase");
        e.error_code = json::string_member(j, "errorCode");
        return e;
    }
};

/// A handler's progress report, as the progress observer gets it
/// (**rcip**; never a lifecycle event).
struct Progress {
    std::string json;  ///< {"invocationId", "capabilityId", "progress", "total"?, "message"?}
    std::string invocation_id;
    std::string capability_id;
    double progress = 0;
    std::optional<double> total;
    std::string message;  ///< empty when absent

    static Progress parse(std::string text) {
        Progress p;
        p.json = std::move(text);
        std::string_view j = p.json;
        p.invocation_id = json::string_member(j, "invocationId");
        p.capability_id = json::string_member(j, "capabilityId");
        if (auto v = json::member(j, "progress")) p.progress = std::stod(std::string(*v));
        if (auto v = json::member(j, "total")) p.total = std::stod(std::string(*v));
        p.message = json::string_member(j, "message");
        return p;
    }
};

/// The user's answer to Invocation::elicit (**rcip**): action "accept"
/// (with `content`, the object the client sent, as JSON text), "decline"
/// or "cancel" (also when the call was cancelled or the session ended).
struct ElicitResult {
    std::string json;  ///< {"action", "content"?}
    std::string action;
    std::string content;  ///< JSON object text; empty unless accepted

    bool accepted() const noexcept { return action == "accept"; }

    static ElicitResult parse(std::string text) {
        ElicitResult r;
        r.json = std::move(text);
        r.action = json::string_member(r.json, "action");
        if (auto c = json::member(r.json, "content")) r.content = std::string(*c);
        return r;
    }
};

/// What the confirmation callback is told: event "opened" (with the
/// captured input, for the dialog) or "closed" (with a reason).
struct ConfirmationNotice {
    std::string json;
    std::string event;
    std::string confirmation_id;
    std::string invocation_id;
    std::string capability_id;
    std::string reason;  ///< closed: approved, declined, expired, cancelled, invalidated, closed
    std::string input;  ///< opened: raw JSON text of the captured input
    int64_t expires_at = 0;

    static ConfirmationNotice parse(std::string text) {
        ConfirmationNotice n;
        n.json = std::move(text);
        std::string_view j = n.json;
        n.event = json::string_member(j, "event");
        n.invocation_id = json::string_member(j, "invocationId");
        n.capability_id = json::string_member(j, "capabilityId");
        n.reason = json::string_member(j, "reason");
        if (auto c = json::member(j, "confirmation")) {
            n.confirmation_id = json::string_member(*c, "id");
            if (auto e = json::member(*c, "expiresAt")) n.expires_at = std::stoll(std::string(*e));
        } else {
            n.confirmation_id = json::string_member(j, "confirmationId");
        }
        if (auto in = json::member(j, "input")) n.input = std::string(*in);
        return n;
    }
};

/// An availability answer. A check may also return a bool.
struct Availability {
    bool available = true;
    std::optional<std::string> reason_code;
    std::optional<std::string> reason;

    Availability(bool a = true) : available(a) {}  // NOLINT: implicit from bool on purpose
    Availability(bool a, std::string code, std::string why) : available(a), reason_code(std::move(code)), reason(std::move(why)) {}
};

/// A policy decision.
struct Decision {
    std::string decision;
    std::optional<std::string> reason;

    static Decision allow() { return {"allow", std::nullopt}; }
    static Decision deny(std::optional<std::string> reason = std::nullopt) { return {"deny", std::move(reason)}; }
    static Decision confirm(std::optional<std::string> reason = std::nullopt) { return {"confirm", std::move(reason)}; }

    std::string to_json() const {
        std::string out = "{\"decision\":" + json::quote(decision);
        if (reason) out += ",\"reason\":" + json::quote(*reason);
        return out + "}";
    }
};

/// Reports exceptions thrown by callbacks whose failure has no outcome of
/// its own (observers, subscribers, the clock, the id generator), and by
/// handlers and policies too. `where` names the callback kind.
using ErrorHandler = std::function<void(std::exception_ptr, const char *where)>;

namespace detail {

/// Shared by a runtime and every callback box registered on it.
struct Shared {
    ErrorHandler on_error;

    void report(std::exception_ptr e, const char *where) const noexcept {
        if (!on_error) return;
        try {
            on_error(std::move(e), where);
        } catch (...) {
        }
    }
};

template <typename Box>
void delete_box(void *user_data) noexcept {
    delete static_cast<Box *>(user_data);
}

}  // namespace detail

// ----- catalog, schema --------------------------------------------------------------------

/// A checked, compiled catalog (RcipApplicationDefinition). Runtimes keep
/// their own reference.
class Catalog {
public:
    explicit Catalog(std::string_view catalog_json) {
        rcip_catalog *out = nullptr;
        detail::check(rcip_catalog_new(detail::z(catalog_json).c_str(), &out));
        ptr_.reset(out);
    }
    explicit Catalog(rcip_catalog *adopt) noexcept : ptr_(adopt) {}

    /// Every problem at once: {"ok", "problems": [{"pointer", "id"?, "rule", "message"}]}.
    static std::string check(std::string_view catalog_json) {
        char *out = nullptr;
        detail::check(rcip_catalog_check(detail::z(catalog_json).c_str(), &out));
        return detail::take(out);
    }

    rcip_catalog *raw() const noexcept { return ptr_.get(); }
    rcip_catalog *release() noexcept { return ptr_.release(); }

private:
    std::unique_ptr<rcip_catalog, detail::Deleter<rcip_catalog, rcip_catalog_free>> ptr_;
};

/// A strict JSON Schema 2020-12, compiled as capability schemas are.
class Schema {
public:
    explicit Schema(std::string_view schema_json) {
        rcip_schema *out = nullptr;
        detail::check(rcip_schema_new(detail::z(schema_json).c_str(), &out));
        ptr_.reset(out);
    }
    /// {"valid": bool, "issues": [{"instancePath", "keyword", "message"}]}
    std::string validate(std::string_view instance_json) const {
        char *out = nullptr;
        detail::check(rcip_schema_validate(ptr_.get(), detail::z(instance_json).c_str(), &out));
        return detail::take(out);
    }
    bool is_valid(std::string_view instance_json) const {
        std::string result = validate(instance_json);
        auto v = json::member(result, "valid");
        return v && *v == "true";
    }
    rcip_schema *raw() const noexcept { return ptr_.get(); }

private:
    std::unique_ptr<rcip_schema, detail::Deleter<rcip_schema, rcip_schema_free>> ptr_;
};

// ----- cancellation -------------------------------------------------------------------------

/// A cancellation token. Copying clones the reference (same token).
class CancelToken {
public:
    CancelToken() {
        rcip_cancel_token *out = nullptr;
        detail::check(rcip_cancel_token_new(&out));
        ptr_.reset(out);
    }
    explicit CancelToken(rcip_cancel_token *adopt) noexcept : ptr_(adopt) {}
    CancelToken(const CancelToken &other) : ptr_(clone_of(other.ptr_.get())) {}
    CancelToken &operator=(const CancelToken &other) {
        if (this != &other) ptr_.reset(clone_of(other.ptr_.get()));
        return *this;
    }
    CancelToken(CancelToken &&) noexcept = default;
    CancelToken &operator=(CancelToken &&) noexcept = default;

    void cancel() const { detail::check(rcip_cancel_token_cancel(ptr_.get())); }
    bool cancelled() const noexcept { return rcip_cancel_token_is_cancelled(ptr_.get()); }

    /// Runs `callback` once on cancellation (at once if already cancelled).
    /// An exception it throws is swallowed.
    void on_cancel(std::function<void()> callback) const {
        auto box = std::make_unique<std::function<void()>>(std::move(callback));
        detail::check(rcip_cancel_token_on_cancel(ptr_.get(), &CancelToken::trampoline, box.get(),
                                                  &detail::delete_box<std::function<void()>>));
        box.release();  // the library owns it now
    }

    rcip_cancel_token *raw() const noexcept { return ptr_.get(); }
    rcip_cancel_token *release() noexcept { return ptr_.release(); }

private:
    static rcip_cancel_token *clone_of(const rcip_cancel_token *t) {
        if (!t) return nullptr;
        rcip_cancel_token *out = nullptr;
        detail::check(rcip_cancel_token_clone(t, &out));
        return out;
    }
    static void trampoline(void *user_data) noexcept {
        try {
            (*static_cast<std::function<void()> *>(user_data))();
        } catch (...) {
        }
    }
    std::unique_ptr<rcip_cancel_token, detail::Deleter<rcip_cancel_token, rcip_cancel_token_free>> ptr_;
};

// ----- completion handles -------------------------------------------------------------------

/// One running invocation, as a handler receives it. Settle it once with
/// complete() or fail(); to settle later (another thread), move it out of
/// the handler. Destroying it unsettled fails the invocation
/// (EXECUTION_FAILED, or EXECUTION_ABORTED when the token was cancelled).
class Invocation {
public:
    explicit Invocation(rcip_invocation *adopt) noexcept : ptr_(adopt) {}

    std::string_view id() const noexcept { return view(rcip_invocation_id(ptr_.get())); }
    std::string_view capability_id() const noexcept { return view(rcip_invocation_capability_id(ptr_.get())); }
    /// The handler's own copy of the input, compact JSON text.
    std::string_view input() const noexcept { return view(rcip_invocation_input(ptr_.get())); }
    /// {"activeScopeIds": [...], "primaryScopeId"?}
    std::string_view semantic_context() const noexcept { return view(rcip_invocation_semantic_context(ptr_.get())); }
    bool cancelled() const noexcept { return rcip_cancel_token_is_cancelled(rcip_invocation_cancel_token(ptr_.get())); }
    /// A reference of your own to the invocation's token.
    CancelToken cancel_token() const {
        rcip_cancel_token *out = nullptr;
        detail::check(rcip_cancel_token_clone(rcip_invocation_cancel_token(ptr_.get()), &out));
        return CancelToken(out);
    }

    /// Completes with output JSON text (not JSON, or failing the output
    /// schema: OUTPUT_INVALID). Throws Error (ALREADY_COMPLETED) on a second settle.
    void complete(std::string_view output_json) {
        detail::check(rcip_invocation_complete(ptr_.get(), detail::z(output_json).c_str()));
    }
    /// Fails: EXECUTION_ABORTED when `aborted` or the token was cancelled,
    /// else EXECUTION_FAILED.
    void fail(bool aborted = false) {
        detail::check(rcip_invocation_fail(ptr_.get(), aborted));
    }
    /// True once settled (by this object, or by the library: see
    /// rcip_invocation_is_settled).
    bool settled() const noexcept { return ptr_ && rcip_invocation_is_settled(ptr_.get()); }

    // The side channel (**rcip**, docs/MCP.md "Progress, logging and
    // elicitation"): any thread, while the invocation is pending.

    /// Reports progress: notifications/progress to an MCP client whose call
    /// carried a progressToken (before the response), and the progress
    /// observer. Throws Error: INVALID_ARGUMENT (not finite, not greater
    /// than the last report), ALREADY_COMPLETED (settled).
    void report_progress(double progress, std::optional<double> total = std::nullopt,
                         std::optional<std::string_view> message = std::nullopt) {
        std::string m = message ? detail::z(*message) : std::string();
        detail::check(rcip_invocation_report_progress(ptr_.get(), progress, total.has_value(), total.value_or(0.0),
                                                      message ? m.c_str() : nullptr));
    }
    /// A log message to the MCP client whose call this is, at `level`
    /// ("debug" ... "emergency"), filtered by its logging/setLevel;
    /// `data_json` is any JSON value as text.
    void log(std::string_view level, std::string_view data_json, std::optional<std::string_view> logger = std::nullopt) {
        std::string l = logger ? detail::z(*logger) : std::string();
        detail::check(rcip_invocation_log(ptr_.get(), detail::z(level).c_str(), logger ? l.c_str() : nullptr,
                                          detail::z(data_json).c_str()));
    }
    /// Asks the MCP client's user (elicitation/create, form mode) and
    /// returns at once; `on_answer` runs once on a session worker (keep it
    /// short: settle, or hand the answer over). `requested_schema_json`
    /// follows MCP's elicitation rules. Throws Error: INVALID_ARGUMENT (the
    /// schema), UNSUPPORTED (no client that can be asked),
    /// ALREADY_COMPLETED; then `on_answer` never runs.
    void elicit(std::string_view message, std::string_view requested_schema_json,
                std::function<void(const ElicitResult &)> on_answer) {
        using Box = std::function<void(const ElicitResult &)>;
        auto box = std::make_unique<Box>(std::move(on_answer));
        detail::check(rcip_invocation_elicit(
            ptr_.get(), detail::z(message).c_str(), detail::z(requested_schema_json).c_str(),
            [](void *user_data, const char *answer) noexcept {
                try {
                    (*static_cast<Box *>(user_data))(ElicitResult::parse(answer ? answer : ""));
                } catch (...) {
                }
            },
            box.get(), &detail::delete_box<Box>));
        box.release();
    }
    /// Asks the MCP client to sample its language model
    /// (sampling/createMessage with `params_json`: `messages` and
    /// `maxTokens` are checked); `on_reply` gets `{"result": ...}`,
    /// `{"error": ...}` or `{"cancelled": true}` once, on a session worker.
    /// Throws Error as elicit (UNSUPPORTED: a client without sampling).
    void create_message(std::string_view params_json, std::function<void(std::string_view reply_json)> on_reply) {
        with_reply(std::move(on_reply), [&](rcip_ask_callback cb, void *data, rcip_user_data_free_callback free) {
            return rcip_invocation_create_message(ptr_.get(), detail::z(params_json).c_str(), cb, data, free);
        });
    }
    /// Sends the MCP client `method` (elicitation/create with
    /// `{"message", "requestedSchema"}`, sampling/createMessage, roots/list
    /// with `{}`) under the question key `key` (std::nullopt: rcip numbers
    /// it, rcip/ask/1, ...); `on_reply` gets `{"result": ...}`,
    /// `{"error": ...}` or `{"cancelled": true}` once, on a session worker.
    /// On an MCP 2026-07-28 request an unanswered question goes to the
    /// client in the call's InputRequiredResult (`{"cancelled": true}`
    /// here) and the handler runs again with the answer: ask before doing
    /// anything irreversible (docs/MCP.md "Questions without sessions").
    /// Throws Error as elicit (INVALID_ARGUMENT also for a bad or repeated
    /// key; UNSUPPORTED: see can_ask).
    void ask(std::optional<std::string_view> key, std::string_view method, std::string_view params_json,
             std::function<void(std::string_view reply_json)> on_reply) {
        std::string k = key ? detail::z(*key) : std::string();
        with_reply(std::move(on_reply), [&](rcip_ask_callback cb, void *data, rcip_user_data_free_callback free) {
            return rcip_invocation_ask(ptr_.get(), key ? k.c_str() : nullptr, detail::z(method).c_str(),
                                       detail::z(params_json).c_str(), cb, data, free);
        });
    }
    /// Whether ask(.., method, ..) would reach the client: the MCP call's
    /// client (or 2026-07-28 request) declared what `method` needs.
    bool can_ask(std::string_view method) const {
        return rcip_invocation_can_ask(ptr_.get(), detail::z(method).c_str());
    }
    /// As elicit(message, schema, callback), the answer as a future: wait
    /// on it from another thread than the session's workers.
    std::future<ElicitResult> elicit(std::string_view message, std::string_view requested_schema_json) {
        auto promise = std::make_shared<std::promise<ElicitResult>>();
        auto future = promise->get_future();
        elicit(message, requested_schema_json, [promise](const ElicitResult &r) { promise->set_value(r); });
        return future;
    }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

    rcip_invocation *raw() const noexcept { return ptr_.get(); }
    rcip_invocation *release() noexcept { return ptr_.release(); }

private:
    static std::string_view view(const char *s) noexcept { return s ? std::string_view(s) : std::string_view(); }
    /// Calls `start(callback, user_data, free)` with a box holding
    /// `on_reply`: the reply text reaches it once; when `start` fails
    /// (Error thrown) the box is freed here and `on_reply` never runs.
    template <class Start> static void with_reply(std::function<void(std::string_view)> on_reply, Start start) {
        using Box = std::function<void(std::string_view)>;
        auto box = std::make_unique<Box>(std::move(on_reply));
        detail::check(start(
            [](void *user_data, const char *reply) noexcept {
                try {
                    (*static_cast<Box *>(user_data))(reply ? std::string_view(reply) : std::string_view());
                } catch (...) {
                }
            },
            box.get(), &detail::delete_box<Box>));
        box.release();
    }
    std::unique_ptr<rcip_invocation, detail::Deleter<rcip_invocation, rcip_invocation_free>> ptr_;
};

/// One question to the host policy. Decide once (decide/allow/deny/confirm)
/// or fail(); move it out of the policy to decide later. Destroying it
/// undecided fails it (POLICY_EVALUATION_FAILED).
class PolicyRequest {
public:
    explicit PolicyRequest(rcip_policy_request *adopt) noexcept : ptr_(adopt) {}

    /// {"capability": <live snapshot entry>, "input", "semanticContext", "confirmed", "phase"}
    std::string_view context() const noexcept {
        const char *s = rcip_policy_request_context(ptr_.get());
        return s ? std::string_view(s) : std::string_view();
    }
    /// The invocation id; empty for a preflight proposal.
    std::optional<std::string_view> invocation_id() const noexcept {
        const char *s = rcip_policy_request_invocation_id(ptr_.get());
        return s ? std::optional<std::string_view>(s) : std::nullopt;
    }
    /// The capability asked about (rcip_policy_request_capability_id).
    std::string capability_id() const { return opt(rcip_policy_request_capability_id(ptr_.get())); }
    /// "read", "write", "external" or "destructive".
    std::string effect() const { return opt(rcip_policy_request_effect(ptr_.get())); }
    /// True for an approved confirmation's re-run.
    bool confirmed() const noexcept { return rcip_policy_request_is_confirmed(ptr_.get()); }
    /// "invoke" or "preflight".
    std::string phase() const { return opt(rcip_policy_request_phase(ptr_.get())); }
    /// True when `scope_id` is an active scope of the captured context
    /// (exact: a parent is not inherited).
    bool scope_active(std::string_view scope_id) const {
        return rcip_policy_request_scope_is_active(ptr_.get(), detail::z(scope_id).c_str());
    }
    /// The context's primary scope id, if it has one.
    std::optional<std::string> primary_scope_id() const {
        const char *s = rcip_policy_request_primary_scope_id(ptr_.get());
        return s ? std::optional<std::string>(s) : std::nullopt;
    }
    /// The input as compact JSON text.
    std::string_view input() const noexcept { return view(rcip_policy_request_input(ptr_.get())); }
    /// The capability's live snapshot entry as JSON text.
    std::string_view capability() const noexcept { return view(rcip_policy_request_capability(ptr_.get())); }

    void decide(const Decision &d) { decide_json(d.to_json()); }
    /// `{"decision": "allow" | "deny" | "confirm", "reason"?}`; another
    /// decision settles as a policy failure and throws INVALID_ARGUMENT.
    void decide_json(std::string_view decision_json) {
        detail::check(rcip_policy_request_decide(ptr_.get(), detail::z(decision_json).c_str()));
    }
    void allow() { detail::check(rcip_policy_request_allow(ptr_.get())); }
    /// A reason in plain text (rcip escapes it); none: rcip's message.
    void deny(std::optional<std::string> reason = std::nullopt) {
        detail::check(rcip_policy_request_deny(ptr_.get(), reason ? detail::z(*reason).c_str() : nullptr));
    }
    /// A reason in plain text becomes the confirmation's description.
    void confirm(std::optional<std::string> reason = std::nullopt) {
        detail::check(rcip_policy_request_confirm(ptr_.get(), reason ? detail::z(*reason).c_str() : nullptr));
    }
    /// Settles with the default policy's decision (read allow, confirmed
    /// allow, destructive confirm, write and external deny).
    void decide_default() { detail::check(rcip_policy_request_decide_default(ptr_.get())); }
    void fail() {
        detail::check(rcip_policy_request_fail(ptr_.get()));
    }
    /// True once settled, also by a decision that was none of the three
    /// (see rcip_policy_request_is_settled).
    bool settled() const noexcept { return ptr_ && rcip_policy_request_is_settled(ptr_.get()); }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

    rcip_policy_request *raw() const noexcept { return ptr_.get(); }
    rcip_policy_request *release() noexcept { return ptr_.release(); }

private:
    static std::string opt(const char *s) { return s ? std::string(s) : std::string(); }
    static std::string_view view(const char *s) noexcept { return s ? std::string_view(s) : std::string_view(); }
    std::unique_ptr<rcip_policy_request, detail::Deleter<rcip_policy_request, rcip_policy_request_free>> ptr_;
};

using Handler = std::function<void(Invocation &)>;
using AvailabilityCheck = std::function<Availability()>;
using Policy = std::function<void(PolicyRequest &)>;

namespace detail {

/// Adapts `void(Invocation&)` and `std::string(Invocation&)` handlers.
template <typename F>
Handler make_handler(F &&f) {
    using R = std::invoke_result_t<F &, Invocation &>;
    if constexpr (std::is_void_v<R>) {
        return Handler(std::forward<F>(f));
    } else {
        static_assert(std::is_convertible_v<R, std::string_view> || std::is_convertible_v<R, std::string>,
                      "a handler returns void or the output JSON text");
        return [fn = std::forward<F>(f)](Invocation &inv) mutable {
            std::string output(fn(inv));
            if (inv && !inv.settled()) inv.complete(output);
        };
    }
}

/// Adapts `void(PolicyRequest&)` and `Decision(PolicyRequest&)` policies.
template <typename F>
Policy make_policy(F &&f) {
    using R = std::invoke_result_t<F &, PolicyRequest &>;
    if constexpr (std::is_void_v<R>) {
        return Policy(std::forward<F>(f));
    } else {
        static_assert(std::is_convertible_v<R, Decision>, "a policy returns void or a Decision");
        return [fn = std::forward<F>(f)](PolicyRequest &req) mutable {
            Decision d = fn(req);
            if (req && !req.settled()) req.decide(d);
        };
    }
}

struct BindingBox {
    Handler handler;
    AvailabilityCheck availability;
    std::shared_ptr<const Shared> shared;

    static void handle(void *user_data, rcip_invocation *raw) noexcept {
        auto *box = static_cast<BindingBox *>(user_data);
        Invocation inv(raw);
        try {
            box->handler(inv);
        } catch (const Aborted &) {
            settle_failed(inv, true);
        } catch (...) {
            box->shared->report(std::current_exception(), "handler");
            settle_failed(inv, false);
        }
        // If the handler kept (moved) the invocation, `inv` is empty; else
        // its destructor frees it (an unsettled handle fails).
    }

    static int32_t available(void *user_data, rcip_availability_sink *sink) noexcept {
        auto *box = static_cast<BindingBox *>(user_data);
        try {
            Availability a = box->availability();
            rcip_result rc = rcip_availability_set(sink, a.available, a.reason_code ? a.reason_code->c_str() : nullptr,
                                                   a.reason ? a.reason->c_str() : nullptr);
            return rc == RCIP_RESULT_OK ? 0 : 1;
        } catch (...) {
            box->shared->report(std::current_exception(), "availability");
            return 1;
        }
    }

    static void settle_failed(Invocation &inv, bool aborted) noexcept {
        if (!inv || inv.settled()) return;
        rcip_invocation_fail(inv.raw(), aborted);  // ALREADY_COMPLETED if the handler settled it: fine
    }
};

struct PolicyBox {
    Policy policy;
    std::shared_ptr<const Shared> shared;

    static void decide(void *user_data, rcip_policy_request *raw) noexcept {
        auto *box = static_cast<PolicyBox *>(user_data);
        PolicyRequest req(raw);
        try {
            box->policy(req);
        } catch (...) {
            box->shared->report(std::current_exception(), "policy");
            if (req && !req.settled()) rcip_policy_request_fail(req.raw());
        }
    }
};

template <typename T>
struct FnBox {
    std::function<void(const T &)> fn;
    std::shared_ptr<const Shared> shared;
    const char *where;

    static void call(void *user_data, const char *text) noexcept {
        auto *box = static_cast<FnBox *>(user_data);
        try {
            box->fn(T::parse(text ? text : ""));
        } catch (...) {
            box->shared->report(std::current_exception(), box->where);
        }
    }
};

struct SubscriberBox {
    std::function<void(uint64_t)> fn;
    std::shared_ptr<const Shared> shared;

    static void call(void *user_data, uint64_t revision) noexcept {
        auto *box = static_cast<SubscriberBox *>(user_data);
        try {
            box->fn(revision);
        } catch (...) {
            box->shared->report(std::current_exception(), "subscriber");
        }
    }
};

struct ClockBox {
    std::function<int64_t()> fn;
    std::shared_ptr<const Shared> shared;

    static int64_t call(void *user_data) noexcept {
        auto *box = static_cast<ClockBox *>(user_data);
        try {
            return box->fn();
        } catch (...) {
            box->shared->report(std::current_exception(), "clock");
            // The clock cannot fail: fall back to the system clock.
            return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
        }
    }
};

struct IdBox {
    std::function<std::optional<std::string>(std::string_view prefix)> fn;
    std::shared_ptr<const Shared> shared;

    static int32_t call(void *user_data, const char *prefix, rcip_string_sink *sink) noexcept {
        auto *box = static_cast<IdBox *>(user_data);
        try {
            std::optional<std::string> id = box->fn(prefix ? prefix : "");
            if (!id) return 1;  // the built-in generator answers
            return rcip_string_sink_set(sink, id->c_str()) == RCIP_RESULT_OK ? 0 : 1;
        } catch (...) {
            box->shared->report(std::current_exception(), "id generator");
            return 1;
        }
    }
};

template <typename T>
struct PromiseBox {
    std::promise<T> promise;

    static void call(void *user_data, const char *text) noexcept {
        auto *box = static_cast<PromiseBox *>(user_data);
        try {
            box->promise.set_value(T::parse(text ? text : ""));
        } catch (...) {
            try {
                box->promise.set_exception(std::current_exception());
            } catch (...) {
            }
        }
    }
};

template <typename T>
struct CallbackBox {
    std::function<void(T)> fn;
    std::shared_ptr<const Shared> shared;

    static void call(void *user_data, const char *text) noexcept {
        auto *box = static_cast<CallbackBox *>(user_data);
        try {
            box->fn(T::parse(text ? text : ""));
        } catch (...) {
            box->shared->report(std::current_exception(), "outcome callback");
        }
    }
};

}  // namespace detail

// ----- bindings, subscriptions, snapshots -----------------------------------------------------

/// A handler bound to a capability. Destroying it unbinds (if it is still
/// the installed binding), like a React unmount. Valid after its runtime is
/// destroyed (then unbind() throws CLOSED).
class Binding {
public:
    Binding() noexcept = default;
    explicit Binding(rcip_binding *adopt) noexcept : ptr_(adopt) {}

    void unbind() const { detail::check(rcip_binding_unbind(ptr_.get())); }
    void set_revision(uint64_t revision) const { detail::check(rcip_binding_set_revision(ptr_.get(), revision)); }
    bool installed() const noexcept { return rcip_binding_is_installed(ptr_.get()); }
    void reset() noexcept { ptr_.reset(); }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

    rcip_binding *raw() const noexcept { return ptr_.get(); }
    rcip_binding *release() noexcept { return ptr_.release(); }

private:
    std::unique_ptr<rcip_binding, detail::Deleter<rcip_binding, rcip_binding_free>> ptr_;
};

/// A snapshot subscription; destroying it unsubscribes.
class Subscription {
public:
    Subscription() noexcept = default;
    explicit Subscription(rcip_subscription *adopt) noexcept : ptr_(adopt) {}
    void reset() noexcept { ptr_.reset(); }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }
    rcip_subscription *raw() const noexcept { return ptr_.get(); }
    rcip_subscription *release() noexcept { return ptr_.release(); }

private:
    std::unique_ptr<rcip_subscription, detail::Deleter<rcip_subscription, rcip_subscription_free>> ptr_;
};

/// An immutable snapshot of one revision.
class Snapshot {
public:
    explicit Snapshot(const rcip_snapshot *adopt) noexcept : ptr_(adopt) {}
    std::string_view json() const noexcept {
        const char *s = rcip_snapshot_json(ptr_.get());
        return s ? std::string_view(s) : std::string_view();
    }
    uint64_t revision() const noexcept { return rcip_snapshot_revision(ptr_.get()); }
    const rcip_snapshot *raw() const noexcept { return ptr_.get(); }

private:
    std::unique_ptr<const rcip_snapshot, detail::Deleter<const rcip_snapshot, detail::free_snapshot>> ptr_;
};

/// One preflight proposal: a capability id and its input JSON text.
struct Proposal {
    std::string capability_id;
    std::string input_json;
};

/// Options of one invocation.
struct InvokeOptions {
    std::optional<std::string> invocation_id;  ///< default: a generated id
    const CancelToken *cancel = nullptr;  ///< retained by the invocation as long as it needs it
};

// ----- views ------------------------------------------------------------------------------------

/// The consumer surface. A view: it must not outlive its Runtime.
class Client {
public:
    Client(const rcip_client *client, std::shared_ptr<const detail::Shared> shared) noexcept
        : ptr_(client), shared_(std::move(shared)) {}

    [[nodiscard]] Snapshot snapshot() const {
        const rcip_snapshot *out = nullptr;
        detail::check(rcip_client_snapshot(ptr_, &out));
        return Snapshot(out);
    }

    /// A JSON array of capability entries; `filter_json` empty for no filter.
    std::string list_capabilities(std::string_view filter_json = {}) const {
        char *out = nullptr;
        std::string filter = detail::z(filter_json);
        detail::check(rcip_client_list_capabilities(ptr_, filter_json.empty() ? nullptr : filter.c_str(), &out));
        return detail::take(out);
    }

    /// Keep the Subscription: destroying it unsubscribes.
    [[nodiscard]] Subscription subscribe(std::function<void(uint64_t revision)> callback) const {
        auto box = std::make_unique<detail::SubscriberBox>(detail::SubscriberBox{std::move(callback), shared_});
        rcip_subscription *out = nullptr;
        detail::check(rcip_client_subscribe(ptr_, &detail::SubscriberBox::call, box.get(), &detail::delete_box<detail::SubscriberBox>,
                                            &out));
        box.release();
        return Subscription(out);
    }

    /// Invokes; the future is ready when the outcome arrives (possibly
    /// before this returns). Waiting on it from the thread that must settle
    /// a deferred policy or handler would deadlock.
    [[nodiscard]] std::future<Outcome> invoke(std::string_view capability_id, std::string_view input_json,
                                              const InvokeOptions &options = {}) const {
        auto box = std::make_unique<detail::PromiseBox<Outcome>>();
        std::future<Outcome> future = box->promise.get_future();
        start_invoke(capability_id, input_json, options, &detail::PromiseBox<Outcome>::call, box,
                     &detail::delete_box<detail::PromiseBox<Outcome>>);
        return future;
    }

    /// Invokes with a callback (called exactly once, on the settling
    /// thread); returns the invocation id.
    std::string invoke(std::string_view capability_id, std::string_view input_json, std::function<void(Outcome)> on_outcome,
                       const InvokeOptions &options = {}) const {
        auto box = std::make_unique<detail::CallbackBox<Outcome>>(detail::CallbackBox<Outcome>{std::move(on_outcome), shared_});
        return start_invoke(capability_id, input_json, options, &detail::CallbackBox<Outcome>::call, box,
                            &detail::delete_box<detail::CallbackBox<Outcome>>);
    }

    /// Preflights 1 to 16 proposals (Error PREFLIGHT_BATCH_INVALID otherwise).
    [[nodiscard]] std::future<PreflightReport> preflight(const std::vector<Proposal> &proposals, const CancelToken *cancel = nullptr) const {
        std::vector<const char *> ids, inputs;
        for (const Proposal &p : proposals) {
            ids.push_back(detail::c_str(p.capability_id));
            inputs.push_back(detail::c_str(p.input_json));
        }
        auto box = std::make_unique<detail::PromiseBox<PreflightReport>>();
        std::future<PreflightReport> future = box->promise.get_future();
        detail::check(rcip_client_preflight(ptr_, ids.empty() ? nullptr : ids.data(), inputs.empty() ? nullptr : inputs.data(),
                                            proposals.size(), cancel ? cancel->raw() : nullptr,
                                            &detail::PromiseBox<PreflightReport>::call, box.get(),
                                            &detail::delete_box<detail::PromiseBox<PreflightReport>>));
        box.release();
        return future;
    }

    const rcip_client *raw() const noexcept { return ptr_; }

private:
    /// The library owns `box` once the call succeeded: it is released
    /// before anything that may throw (copying the id).
    template <typename Box>
    std::string start_invoke(std::string_view capability_id, std::string_view input_json, const InvokeOptions &options,
                             rcip_outcome_callback cb, std::unique_ptr<Box> &box, rcip_user_data_free_callback free_fn) const {
        char *id_out = nullptr;
        std::string id = detail::z(capability_id), input = detail::z(input_json);
        detail::check(rcip_client_invoke(ptr_, id.c_str(), input.c_str(),
                                         options.invocation_id ? detail::c_str(*options.invocation_id) : nullptr,
                                         options.cancel ? options.cancel->raw() : nullptr, cb, box.get(), free_fn, &id_out));
        box.release();
        return detail::take(id_out);
    }

    const rcip_client *ptr_;
    std::shared_ptr<const detail::Shared> shared_;
};

/// The trusted host surface. A view: it must not outlive its Runtime.
class Host {
public:
    Host(const rcip_host *host, std::shared_ptr<const detail::Shared> shared) noexcept : ptr_(host), shared_(std::move(shared)) {}

    /// Binds a handler: `void(Invocation&)` (settles itself, or moves the
    /// invocation away to settle later) or `std::string(Invocation&)`
    /// (returns the output JSON text).
    template <typename F>
    [[nodiscard]] Binding bind(std::string_view capability_id, F &&handler) const {
        return bind_impl(capability_id, detail::make_handler(std::forward<F>(handler)), AvailabilityCheck());
    }

    /// Binds a handler and an availability check returning Availability or bool.
    template <typename F, typename A>
    [[nodiscard]] Binding bind(std::string_view capability_id, F &&handler, A &&availability) const {
        return bind_impl(capability_id, detail::make_handler(std::forward<F>(handler)), AvailabilityCheck(std::forward<A>(availability)));
    }

    /// `{"activeScopeIds": [...], "primaryScopeId"?}`
    void set_context_json(std::string_view context_json) const {
        detail::check(rcip_host_set_context(ptr_, detail::z(context_json).c_str()));
    }
    void set_context(const std::vector<std::string> &active_scope_ids, std::optional<std::string> primary = std::nullopt) const {
        std::string text = "{\"activeScopeIds\":[";
        for (std::size_t i = 0; i < active_scope_ids.size(); ++i) text += (i ? "," : "") + json::quote(active_scope_ids[i]);
        text += "]";
        if (primary) text += ",\"primaryScopeId\":" + json::quote(*primary);
        set_context_json(text + "}");
    }
    void clear_context() const { detail::check(rcip_host_clear_context(ptr_)); }
    void refresh() const { detail::check(rcip_host_refresh(ptr_)); }

    /// Approves or declines a pending confirmation; the future holds the outcome.
    /// Inside the confirmation callback's `opened` notice an approval's run
    /// starts only when that notice returns (rcip.h): do not wait on the
    /// future there; use the callback overload.
    std::future<Outcome> resolve_confirmation(std::string_view confirmation_id, bool approved) const {
        auto box = std::make_unique<detail::PromiseBox<Outcome>>();
        std::future<Outcome> future = box->promise.get_future();
        detail::check(rcip_host_resolve_confirmation(ptr_, detail::z(confirmation_id).c_str(), approved,
                                                     &detail::PromiseBox<Outcome>::call, box.get(),
                                                     &detail::delete_box<detail::PromiseBox<Outcome>>));
        box.release();
        return future;
    }
    void resolve_confirmation(std::string_view confirmation_id, bool approved, std::function<void(Outcome)> on_outcome) const {
        auto box = std::make_unique<detail::CallbackBox<Outcome>>(detail::CallbackBox<Outcome>{std::move(on_outcome), shared_});
        detail::check(rcip_host_resolve_confirmation(ptr_, detail::z(confirmation_id).c_str(), approved,
                                                     &detail::CallbackBox<Outcome>::call, box.get(),
                                                     &detail::delete_box<detail::CallbackBox<Outcome>>));
        box.release();
    }

    /// The pending confirmation `confirmation_id` as another runtime of the
    /// same catalog may resume it (**rcip**, PIPELINE.md section 5): the JSON
    /// record `{"confirmationId", "invocationId", "capabilityId", "expiresAt",
    /// "context"}`. Throws Error NOT_FOUND when none of that id is pending here.
    std::string carry_confirmation(std::string_view confirmation_id) const {
        char *out = nullptr;
        detail::check(rcip_host_carry_confirmation(ptr_, detail::z(confirmation_id).c_str(), &out));
        return detail::take(out);
    }
    /// Answers a confirmation another runtime opened (`carried_json` from its
    /// carry_confirmation) with the consumer's input again: a decline is
    /// denied CONFIRMATION_DECLINED, too late failed CONFIRMATION_EXPIRED, an
    /// unbound capability or another context denied POLICY_DENIED; an approval
    /// re-runs policy, availability and validation under the carried id.
    /// Single use across runtimes is the caller's. The future holds the outcome.
    std::future<Outcome> resume_confirmation(std::string_view carried_json, bool approved,
                                             std::string_view input_json) const {
        auto box = std::make_unique<detail::PromiseBox<Outcome>>();
        std::future<Outcome> future = box->promise.get_future();
        detail::check(rcip_host_resume_confirmation(ptr_, detail::z(carried_json).c_str(), approved,
                                                    detail::z(input_json).c_str(), nullptr,
                                                    &detail::PromiseBox<Outcome>::call, box.get(),
                                                    &detail::delete_box<detail::PromiseBox<Outcome>>));
        box.release();
        return future;
    }

    const rcip_host *raw() const noexcept { return ptr_; }

private:
    Binding bind_impl(std::string_view capability_id, Handler handler, AvailabilityCheck availability) const {
        bool has_availability = static_cast<bool>(availability);
        auto box = std::make_unique<detail::BindingBox>(detail::BindingBox{std::move(handler), std::move(availability), shared_});
        rcip_binding *out = nullptr;
        detail::check(rcip_host_bind(ptr_, detail::z(capability_id).c_str(), &detail::BindingBox::handle,
                                     has_availability ? &detail::BindingBox::available : nullptr, box.get(),
                                     &detail::delete_box<detail::BindingBox>, &out));
        box.release();
        return Binding(out);
    }

    const rcip_host *ptr_;
    std::shared_ptr<const detail::Shared> shared_;
};

// ----- runtime ---------------------------------------------------------------------------------

/// A runtime over one catalog. Destroying it closes it: pending invocations
/// end EXECUTION_ABORTED during the destructor. Bindings, tokens and
/// completion handles still held stay valid: a Binding's unbind answers
/// CLOSED; settling an Invocation or PolicyRequest the runtime no longer
/// waits for does nothing and does not throw.
class Runtime {
public:
    class Builder;

    explicit Runtime(const Catalog &catalog);

    Client client() const noexcept { return Client(rcip_runtime_client(ptr_.get()), shared_); }
    Host host() const noexcept { return Host(rcip_runtime_host(ptr_.get()), shared_); }

    /// The earliest expiresAt among pending confirmations (manual timers).
    std::optional<int64_t> next_deadline() const {
        bool has = false;
        int64_t deadline = 0;
        detail::check(rcip_runtime_next_deadline(ptr_.get(), &has, &deadline));
        return has ? std::optional<int64_t>(deadline) : std::nullopt;
    }
    void run_due_timers() const { detail::check(rcip_runtime_run_due_timers(ptr_.get())); }
    /// {"revision", "bindings", "subscribers", "pendingInvocations", ...}
    [[nodiscard]] std::string stats() const {
        char *out = nullptr;
        detail::check(rcip_runtime_stats(ptr_.get(), &out));
        return detail::take(out);
    }
    /// Closes now (as the destructor does) and frees the runtime: no other
    /// thread may be using it.
    void close() noexcept { ptr_.reset(); }
    /// Closes without freeing (`rcip_runtime_close`): pending invocations end
    /// EXECUTION_ABORTED now, later calls throw `RCIP_RESULT_CLOSED` (reads
    /// of the snapshot and stats still answer). Unlike `close()`, other
    /// threads may be inside calls on this runtime meanwhile; the destructor
    /// or `close()` frees it once they are done.
    void shutdown() const { detail::check(rcip_runtime_close(ptr_.get())); }
    explicit operator bool() const noexcept { return static_cast<bool>(ptr_); }

    rcip_runtime *raw() const noexcept { return ptr_.get(); }
    /// Gives the C handle away (a C call that consumes it, such as
    /// rcip_mcp_request_setup_accept); this object is empty afterwards.
    /// Client and Host views taken before stay as valid as the C handle.
    rcip_runtime *release() noexcept { return ptr_.release(); }

private:
    Runtime(rcip_runtime *adopt, std::shared_ptr<detail::Shared> shared) noexcept : ptr_(adopt), shared_(std::move(shared)) {}
    std::unique_ptr<rcip_runtime, detail::Deleter<rcip_runtime, rcip_runtime_free>> ptr_;
    std::shared_ptr<detail::Shared> shared_;
};

/// Configures a runtime: each setter registers at once; build() consumes.
class Runtime::Builder {
public:
    explicit Builder(const Catalog &catalog) : shared_(std::make_shared<detail::Shared>()) {
        rcip_runtime_builder *out = nullptr;
        detail::check(rcip_runtime_builder_new(catalog.raw(), &out));
        ptr_.reset(out);
    }

    Builder &confirmation_ttl_ms(uint64_t ttl_ms) {
        detail::check(rcip_runtime_builder_set_confirmation_ttl_ms(live(), ttl_ms));
        return *this;
    }
    Builder &limits(std::size_t max_payload_len, std::size_t max_depth) {
        detail::check(rcip_runtime_builder_set_limits(live(), max_payload_len, max_depth));
        return *this;
    }
    /// **rcip**: the bound on the validation issues one outcome carries, in
    /// issues and in bytes of issue text (0 keeps a default: 1000 issues,
    /// 1048576 bytes); see rcip_runtime_builder_set_validation_issue_limit.
    Builder &validation_issue_limit(std::size_t max_issues, std::size_t max_bytes) {
        detail::check(rcip_runtime_builder_set_validation_issue_limit(live(), max_issues, max_bytes));
        return *this;
    }
    /// `void(PolicyRequest&)` or `Decision(PolicyRequest&)`.
    template <typename F>
    Builder &policy(F &&policy) {
        auto box = std::make_unique<detail::PolicyBox>(detail::PolicyBox{detail::make_policy(std::forward<F>(policy)), shared_});
        detail::check(rcip_runtime_builder_set_policy(live(), &detail::PolicyBox::decide, box.get(),
                                                      &detail::delete_box<detail::PolicyBox>));
        box.release();
        return *this;
    }
    Builder &on_event(std::function<void(const Event &)> observer) {
        using Box = detail::FnBox<Event>;
        auto box = std::make_unique<Box>(Box{std::move(observer), shared_, "event observer"});
        detail::check(rcip_runtime_builder_add_event_observer(live(), &Box::call, box.get(), &detail::delete_box<Box>));
        box.release();
        return *this;
    }
    /// Every progress report of the runtime's handlers (**rcip**), also of
    /// approved re-runs, which reach no MCP client.
    Builder &on_progress(std::function<void(const Progress &)> observer) {
        using Box = detail::FnBox<Progress>;
        auto box = std::make_unique<Box>(Box{std::move(observer), shared_, "progress observer"});
        detail::check(rcip_runtime_builder_set_progress_observer(live(), &Box::call, box.get(), &detail::delete_box<Box>));
        box.release();
        return *this;
    }
    Builder &on_confirmation(std::function<void(const ConfirmationNotice &)> callback) {
        using Box = detail::FnBox<ConfirmationNotice>;
        auto box = std::make_unique<Box>(Box{std::move(callback), shared_, "confirmation callback"});
        detail::check(rcip_runtime_builder_set_confirmation_callback(live(), &Box::call, box.get(), &detail::delete_box<Box>));
        box.release();
        return *this;
    }
    /// Epoch milliseconds. It must not call the runtime.
    Builder &clock(std::function<int64_t()> clock) {
        auto box = std::make_unique<detail::ClockBox>(detail::ClockBox{std::move(clock), shared_});
        detail::check(rcip_runtime_builder_set_clock(live(), &detail::ClockBox::call, box.get(), &detail::delete_box<detail::ClockBox>));
        box.release();
        return *this;
    }
    /// An id for `prefix` ("invocation", "confirmation"), or nullopt for the built-in one.
    Builder &id_generator(std::function<std::optional<std::string>(std::string_view prefix)> generator) {
        auto box = std::make_unique<detail::IdBox>(detail::IdBox{std::move(generator), shared_});
        detail::check(
            rcip_runtime_builder_set_id_generator(live(), &detail::IdBox::call, box.get(), &detail::delete_box<detail::IdBox>));
        box.release();
        return *this;
    }
    Builder &manual_timers(bool manual = true) {
        detail::check(rcip_runtime_builder_set_manual_timers(live(), manual));
        return *this;
    }
    /// Binds a handler on the builder (**rcip**, rcip_runtime_builder_bind):
    /// the runtime starts with it bound, in the snapshot of revision 0, with
    /// no Binding object; it stays bound until the runtime is freed. A
    /// duplicate throws Error(ALREADY_BOUND), an unknown id
    /// Error(NOT_IN_CATALOG). Handler forms as Host::bind.
    template <typename F>
    Builder &bind(std::string_view capability_id, F &&handler) {
        return bind_impl(capability_id, detail::make_handler(std::forward<F>(handler)), AvailabilityCheck());
    }
    /// As bind(), with an availability check returning Availability or bool
    /// (asked once by build() for revision 0's snapshot).
    template <typename F, typename A>
    Builder &bind(std::string_view capability_id, F &&handler, A &&availability) {
        return bind_impl(capability_id, detail::make_handler(std::forward<F>(handler)), AvailabilityCheck(std::forward<A>(availability)));
    }
    /// Told about exceptions thrown by any callback of this runtime (but
    /// rcip::Aborted from a handler, which is an outcome). Before build()
    /// only: afterwards callbacks may be reading it.
    Builder &on_error(ErrorHandler handler) {
        live();
        shared_->on_error = std::move(handler);
        return *this;
    }

    Runtime build() {
        rcip_runtime *out = nullptr;
        live();
        detail::check(rcip_runtime_builder_build(ptr_.release(), &out));  // consumes the builder, even on failure
        return Runtime(out, shared_);
    }

private:
    Builder &bind_impl(std::string_view capability_id, Handler handler, AvailabilityCheck availability) {
        bool has_availability = static_cast<bool>(availability);
        auto box = std::make_unique<detail::BindingBox>(detail::BindingBox{std::move(handler), std::move(availability), shared_});
        detail::check(rcip_runtime_builder_bind(live(), detail::z(capability_id).c_str(), &detail::BindingBox::handle,
                                                has_availability ? &detail::BindingBox::available : nullptr, box.get(),
                                                &detail::delete_box<detail::BindingBox>));
        box.release();
        return *this;
    }

    /// The C builder; Error after build(), which consumed it.
    rcip_runtime_builder *live() const {
        if (!ptr_) throw Error(RCIP_RESULT_NULL_ARGUMENT, "rcip: this Runtime::Builder was already built");
        return ptr_.get();
    }

    std::unique_ptr<rcip_runtime_builder, detail::Deleter<rcip_runtime_builder, rcip_runtime_builder_free>> ptr_;
    std::shared_ptr<detail::Shared> shared_;
};

inline Runtime::Runtime(const Catalog &catalog) : Runtime(Builder(catalog).build()) {}

// ----- MCP server session (rcip_mcp_session_*; docs/MCP.md) ----------------------------------

/// What a per-request runtime factory (McpSession::set_request_runtimes)
/// is told about one stateless (MCP 2026-07-28) request. Copies of the
/// library's text, so keeping them past the factory call is harmless.
struct RequestSetup {
    /// "tools/list" or "tools/call".
    std::string method;
    /// The request's whole params._meta object, as JSON text
    /// (io.modelcontextprotocol/protocolVersion, .../clientCapabilities,
    /// .../clientInfo, ...; self-reported by the client).
    std::string meta_json;
    /// {lower-case header name: value} passed with
    /// McpSession::receive(message, headers_json); "{}" without.
    std::string headers_json;

    /// The value of header `name` (any case), or nullopt.
    std::optional<std::string> header(std::string_view name) const {
        std::string lower(name);
        for (char &c : lower) {
            if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
        }
        auto value = json::member(headers_json, lower);
        if (!value) return std::nullopt;
        return json::unquote(*value);
    }
};

/// An MCP server session (MCP 2025-11-25) over a runtime's consumer
/// surface: messages in through receive(), messages out through the
/// message callback, or the stdio transport with serve_stdio().
///
/// `options_json` is the session options object of rcip_mcp_session_new
/// (empty: defaults), e.g. the **rcip** tool naming and content blocks:
///
///     rcip::McpSession session(runtime, R"({
///         "toolNames": "safe",
///         "content": {"charts.render": [{"type": "text", "property": "caption"},
///                                       {"type": "image", "property": "chart"}]}})");
///
/// A naming under which two capabilities share a tool name (the message
/// names both ids) or a name is longer than 64 characters, and a content
/// mapping naming a property the output schema does not declare, throw
/// Error (RCIP_RESULT_INVALID_ARGUMENT) here.
///
/// Destroying the session closes it (calls in flight cancelled, no more
/// messages). It keeps the runtime's core alive; do not destroy it from
/// inside its own message callback. Move-only.
class McpSession {
public:
    using MessageCallback = std::function<void(std::string_view message_json)>;

    /// Messages to standard output, one line each (the stdio transport,
    /// with serve_stdio()): write nothing else to standard output.
    explicit McpSession(const Runtime &runtime, std::string_view options_json = {}) {
        create(runtime, options_json, nullptr, nullptr, nullptr);
    }

    /// Each message (one JSON-RPC message, no newline) to `on_message`, in
    /// order, one at a time, on whichever thread produced it. An exception
    /// it throws is swallowed (nothing unwinds into the library).
    McpSession(const Runtime &runtime, std::string_view options_json, MessageCallback on_message) {
        auto box = std::make_unique<MessageCallback>(std::move(on_message));
        create(runtime, options_json, &McpSession::deliver, box.get(), &detail::delete_box<MessageCallback>);
        box.release();  // the session owns it now
    }

    /// Passes one message from the client; replies go to the callback.
    void receive(std::string_view message_json) const {
        std::string text = detail::z(message_json);
        detail::check(rcip_mcp_session_receive(ptr_.get(), text.c_str()));
    }

    /// As receive(), with the headers a transport of the host's own got the
    /// message with (`headers_json`: {"name": "value", ...}); a stateless
    /// request's factory reads them (RequestSetup::header). Headers not an
    /// object of strings throw Error (INVALID_JSON, INVALID_ARGUMENT).
    void receive(std::string_view message_json, std::string_view headers_json) const {
        std::string text = detail::z(message_json);
        std::string headers = detail::z(headers_json);
        detail::check(rcip_mcp_session_receive_with_headers(ptr_.get(), text.c_str(), headers.c_str()));
    }

    /// Builds one stateless request's runtime: a Runtime (from the
    /// session's catalog, its handlers bound on the Builder, its context
    /// set for this request) that the session owns from then on.
    using RequestFactory = std::function<Runtime(const RequestSetup &setup)>;

    /// Gives the session a per-request runtime factory (**rcip**;
    /// rcip_mcp_session_set_request_runtimes): each stateless (MCP
    /// 2026-07-28) tools/list and tools/call runs on a fresh runtime that
    /// `factory` returns, closed when its response is sent, so nothing of
    /// one request is seen by another. Served when the session option
    /// "eras" is "both" or "modern"; legacy sessions keep the session's
    /// runtime. `factory` runs on a session worker thread (with "workers":
    /// 0, inside receive()), possibly on several at once: it must be
    /// thread-safe. An exception it throws, or an empty Runtime, answers
    /// the request with JSON-RPC -32603 (nothing unwinds into the
    /// library). Replaces an earlier factory (destroyed once its last call
    /// returned); the factory is destroyed with the session.
    void set_request_runtimes(RequestFactory factory) const {
        auto box = std::make_unique<RequestFactory>(std::move(factory));
        detail::check(rcip_mcp_session_set_request_runtimes(ptr_.get(), &McpSession::build_request_runtime, box.get(),
                                                            &detail::delete_box<RequestFactory>));
        box.release();  // the session owns it now
    }

    /// Serves standard input until it ends, then closes the session.
    void serve_stdio() const { detail::check(rcip_mcp_session_serve_stdio(ptr_.get())); }

    /// {"inFlight", "droppedNotifications", "contentReplaced"} (**rcip**:
    /// content blocks replaced by a text note because an output property
    /// the "content" option names was not valid content).
    [[nodiscard]] std::string stats() const {
        char *out = nullptr;
        detail::check(rcip_mcp_session_stats(ptr_.get(), &out));
        return detail::take(out);
    }

    rcip_mcp_session *raw() const noexcept { return ptr_.get(); }

private:
    void create(const Runtime &runtime, std::string_view options_json, rcip_mcp_message_callback on_message,
                void *user_data, rcip_user_data_free_callback user_data_free) {
        std::string options = detail::z(options_json);
        rcip_mcp_session *out = nullptr;
        detail::check(rcip_mcp_session_new(runtime.raw(), options.empty() ? nullptr : options.c_str(), on_message,
                                           user_data, user_data_free, &out));
        ptr_.reset(out);
    }

    static int32_t build_request_runtime(void *user_data, rcip_mcp_request_setup *setup) noexcept {
        try {
            auto text = [](const char *p) { return std::string(p ? p : ""); };
            RequestSetup info{text(rcip_mcp_request_setup_method(setup)), text(rcip_mcp_request_setup_meta(setup)),
                              text(rcip_mcp_request_setup_headers(setup))};
            Runtime runtime = (*static_cast<RequestFactory *>(user_data))(info);
            if (!runtime) return 1;
            // Consumed on failure too.
            return rcip_mcp_request_setup_accept(setup, runtime.release(), nullptr, nullptr) == RCIP_RESULT_OK ? 0 : 1;
        } catch (...) {
            return 1;
        }
    }

    static void deliver(void *user_data, const char *message_json) noexcept {
        try {
            (*static_cast<MessageCallback *>(user_data))(message_json ? message_json : "");
        } catch (...) {
        }
    }

    std::unique_ptr<rcip_mcp_session, detail::Deleter<rcip_mcp_session, rcip_mcp_session_free>> ptr_;
};

/// rcip_abi_version() equals the header's RCIP_ABI_VERSION.
inline bool abi_matches() noexcept { return rcip_abi_version() == RCIP_ABI_VERSION; }
inline std::string_view version() noexcept { return rcip_version(); }

}  // namespace rcip

#endif  // RCIP_HPP
