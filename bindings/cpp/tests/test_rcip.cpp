// Tests of the C++ wrapper (bindings/cpp/include/rcip/rcip.hpp). Built with
// -std=c++17 -Wall -Wextra -Wpedantic -Werror and, where the machine allows
// it, -fsanitize=address,undefined. Prints "N passed, M failed".
#include <rcip/rcip.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <future>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

int g_failed = 0;
int g_checks = 0;

#define CHECK(cond)                                                             \
    do {                                                                        \
        ++g_checks;                                                             \
        if (!(cond)) {                                                          \
            ++g_failed;                                                         \
            std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
        }                                                                       \
    } while (0)

#define CHECK_THROWS_CODE(expr, expected_code)                                  \
    do {                                                                        \
        ++g_checks;                                                             \
        bool thrown_ = false;                                                   \
        try {                                                                   \
            (void)(expr);                                                       \
        } catch (const rcip::Error &e_) {                                       \
            thrown_ = e_.code() == (expected_code);                             \
            if (!thrown_) std::fprintf(stderr, "got code %u: %s\n", static_cast<unsigned>(e_.code()), e_.what()); \
        }                                                                       \
        if (!thrown_) {                                                         \
            ++g_failed;                                                         \
            std::fprintf(stderr, "%s:%d: expected rcip::Error %s from %s\n", __FILE__, __LINE__, #expected_code, #expr); \
        }                                                                       \
    } while (0)

const char *CATALOG = R"({
  "protocolVersion": "1.0",
  "application": {"id": "desk", "name": "Desk", "description": "A help desk."},
  "scopes": [{"id": "tickets", "title": "Tickets", "description": "Ticket queue."}],
  "capabilities": [
    {"id": "greeting.say", "title": "Say hello", "description": "Greets someone.", "scopeIds": [], "effect": "read",
     "inputSchema": {"type": "object", "properties": {"name": {"type": "string", "minLength": 1}}, "required": ["name"]},
     "outputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}},
    {"id": "tickets.create", "title": "Create ticket", "description": "Opens a ticket.", "scopeIds": ["tickets"],
     "effect": "write", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}},
    {"id": "tickets.purge", "title": "Purge tickets", "description": "Deletes closed tickets.", "scopeIds": ["tickets"],
     "effect": "destructive", "inputSchema": {"type": "object"}, "outputSchema": {"type": "object"}}
  ]})";

constexpr int64_t CLOCK_START = 1767225600000;

std::string hello(rcip::Invocation &inv) {
    std::string name = rcip::json::string_member(inv.input(), "name");
    return "{\"text\": " + rcip::json::quote("hello " + name) + "}";
}

void test_catalog_and_errors() {
    CHECK(rcip::abi_matches());
    CHECK(rcip::version() == "0.1.0");
    rcip::Catalog catalog(CATALOG);
    CHECK(catalog.raw() != nullptr);
    CHECK_THROWS_CODE(rcip::Catalog("{\"protocolVersion\": \"2.0\"}"), RCIP_RESULT_INVALID_CATALOG);
    std::string report = rcip::Catalog::check("{}");
    CHECK(rcip::json::member(report, "ok").value_or("") == "false");
    try {
        rcip::Catalog bad("{not json");
        CHECK(false);
    } catch (const rcip::Error &e) {
        CHECK(e.code() == RCIP_RESULT_INVALID_CATALOG);
        CHECK(std::strlen(e.what()) > 0);
    }
    rcip::Schema schema(R"({"type": "integer"})");
    CHECK(schema.is_valid("3"));
    CHECK(!schema.is_valid("\"x\""));
    CHECK_THROWS_CODE(rcip::Schema(R"({"frobnicate": 1})"), RCIP_RESULT_INVALID_ARGUMENT);
}

void test_invoke_sync_handler() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    rcip::Binding binding = runtime.host().bind("greeting.say", hello);
    CHECK(binding.installed());
    rcip::Outcome o = runtime.client().invoke("greeting.say", R"({"name": "Ada"})").get();
    CHECK(o.ok());
    CHECK(o.status == rcip::Status::Succeeded);
    CHECK(rcip::json::string_member(o.output, "text") == "hello Ada");
    CHECK(o.capability_id == "greeting.say");
    CHECK(!o.invocation_id.empty());

    rcip::Outcome bad = runtime.client().invoke("greeting.say", R"({"name": ""})").get();
    CHECK(bad.status == rcip::Status::Failed && bad.error_code == "INPUT_INVALID");
    CHECK(runtime.client().invoke("greeting.say", "{not json").get().error_code == "INPUT_INVALID");
    CHECK(runtime.client().invoke("nope.nothing", "{}").get().error_code == "CAPABILITY_NOT_FOUND");

    rcip::InvokeOptions options;
    options.invocation_id = "my-id";
    std::string seen;
    std::string id = runtime.client().invoke("greeting.say", R"({"name": "Bo"})", [&](rcip::Outcome out) { seen = out.output; }, options);
    CHECK(id == "my-id");
    CHECK(rcip::json::string_member(seen, "text") == "hello Bo");
}

// Issue 27: the issues an outcome carries, and the bound's truncation flag
// (**rcip**), read on outcomes and preflight entries; the bound set on the builder.
void test_validation_issues_and_their_bound() {
    rcip::Catalog catalog(R"({"protocolVersion": "1.0",
      "application": {"id": "nums", "name": "Nums", "description": "Numbers."}, "scopes": [],
      "capabilities": [{"id": "nums.put", "title": "Put", "description": "Stores numbers.", "scopeIds": [],
        "effect": "read", "inputSchema": {"type": "array", "items": {"type": "integer"}},
        "outputSchema": {"type": "object"}}]})");
    const char *bad = R"(["a", "b", "c", 4, "e"])";
    auto ok = [](rcip::Invocation &) { return std::string("{}"); };
    {
        rcip::Runtime runtime(catalog);
        rcip::Binding b = runtime.host().bind("nums.put", ok);
        rcip::Outcome full = runtime.client().invoke("nums.put", bad).get();
        CHECK(full.error_code == "INPUT_INVALID" && full.validation_issues.size() == 4);
        CHECK(!full.validation_issues_truncated);
        CHECK(full.validation_issues[3].instance_path == "/4" && full.validation_issues[3].keyword == "type");
        CHECK(!full.validation_issues[0].message.empty());
    }
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog).validation_issue_limit(2, 0).build();
    rcip::Binding b = runtime.host().bind("nums.put", ok);
    rcip::Outcome cut = runtime.client().invoke("nums.put", bad).get();
    CHECK(cut.error_code == "INPUT_INVALID" && cut.validation_issues.size() == 2);
    CHECK(cut.validation_issues_truncated);
    CHECK(cut.validation_issues[0].instance_path == "/0" && cut.validation_issues[1].instance_path == "/1");
    rcip::PreflightReport report = runtime.client().preflight({{"nums.put", bad}, {"nums.put", "[1]"}}).get();
    CHECK(report.outcomes.size() == 2);
    CHECK(report.outcomes[0].error_code == "INPUT_INVALID" && report.outcomes[0].validation_issues.size() == 2);
    CHECK(report.outcomes[0].validation_issues_truncated);
    CHECK(report.outcomes[1].validation_issues.empty() && !report.outcomes[1].validation_issues_truncated);
}

void test_binding_raii_unbinds() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    {
        rcip::Binding b = runtime.host().bind("greeting.say", hello);
        CHECK_THROWS_CODE(runtime.host().bind("greeting.say", hello), RCIP_RESULT_ALREADY_BOUND);
        rcip::Binding moved = std::move(b);
        CHECK(!b && moved.installed());
    }
    CHECK(runtime.client().invoke("greeting.say", R"({"name": "x"})").get().error_code == "CAPABILITY_UNBOUND");
    CHECK_THROWS_CODE(runtime.host().bind("nope.nothing", hello), RCIP_RESULT_NOT_IN_CATALOG);
    rcip::Binding b = runtime.host().bind("greeting.say", hello);
    b.set_revision(3);
    b.unbind();
    CHECK(!b.installed());
}

void test_throwing_lambdas_become_errors() {
    rcip::Catalog catalog(CATALOG);
    std::vector<std::string> reported;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .policy([](rcip::PolicyRequest &req) -> rcip::Decision {
                                    if (req.capability_id() == "tickets.create") throw std::runtime_error("policy bug");
                                    return rcip::Decision::allow();
                                })
                                .on_event([](const rcip::Event &) { throw 42; })
                                .on_error([&](std::exception_ptr, const char *where) { reported.push_back(where); })
                                .build();
    rcip::Host host = runtime.host();
    rcip::Binding a = host.bind("greeting.say", [](rcip::Invocation &) -> std::string { throw std::runtime_error("handler bug"); });
    rcip::Binding c = host.bind("tickets.create", [](rcip::Invocation &inv) { inv.complete("{}"); });
    rcip::Binding d = host.bind(
        "tickets.purge", [](rcip::Invocation &) { throw rcip::Aborted(); },
        []() -> rcip::Availability { return true; });
    CHECK(runtime.client().invoke("greeting.say", R"({"name": "x"})").get().error_code == "EXECUTION_FAILED");
    CHECK(runtime.client().invoke("tickets.create", "{}").get().error_code == "POLICY_EVALUATION_FAILED");
    CHECK(runtime.client().invoke("tickets.purge", "{}").get().error_code == "EXECUTION_ABORTED");
    bool handler_reported = false, policy_reported = false, event_reported = false;
    for (const std::string &w : reported) {
        handler_reported |= w == "handler";
        policy_reported |= w == "policy";
        event_reported |= w == "event observer";
    }
    CHECK(handler_reported && policy_reported && event_reported);

    a.reset();
    rcip::Binding e = host.bind(
        "greeting.say", hello, []() -> rcip::Availability { throw std::logic_error("availability bug"); });
    rcip::Outcome unavailable = runtime.client().invoke("greeting.say", R"({"name": "x"})").get();
    CHECK(unavailable.error_code == "CAPABILITY_UNAVAILABLE");
    std::string snap(runtime.client().snapshot().json());
    CHECK(snap.find("AVAILABILITY_CHECK_FAILED") != std::string::npos);

}

void test_handler_returning_unsettled_fails() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog).policy([](rcip::PolicyRequest &) { return rcip::Decision::allow(); }).build();
    rcip::Binding b = runtime.host().bind("tickets.create", [](rcip::Invocation &) {});
    CHECK(runtime.client().invoke("tickets.create", "{}").get().error_code == "EXECUTION_FAILED");
}

void test_deferred_handler_on_another_thread() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    std::vector<std::thread> threads;
    rcip::Binding b = runtime.host().bind("greeting.say", [&](rcip::Invocation &inv) {
        threads.emplace_back([owned = std::move(inv)]() mutable {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
            owned.complete(R"({"text": "later"})");
            try {
                owned.complete(R"({"text": "twice"})");
            } catch (const rcip::Error &e) {
                if (e.code() != RCIP_RESULT_ALREADY_COMPLETED) std::abort();
            }
        });
    });
    std::future<rcip::Outcome> f = runtime.client().invoke("greeting.say", R"({"name": "x"})");
    CHECK(f.wait_for(std::chrono::seconds(10)) == std::future_status::ready);
    CHECK(rcip::json::string_member(f.get().output, "text") == "later");
    for (auto &t : threads) t.join();
}

void test_deferred_policy_and_cancellation() {
    rcip::Catalog catalog(CATALOG);
    std::vector<rcip::PolicyRequest> held;
    std::mutex m;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .policy([&](rcip::PolicyRequest &req) {
                                    std::lock_guard<std::mutex> lock(m);
                                    held.push_back(std::move(req));
                                })
                                .build();
    rcip::Binding b = runtime.host().bind("tickets.create", [](rcip::Invocation &inv) { inv.complete(R"({"id": 1})"); });
    std::future<rcip::Outcome> allowed = runtime.client().invoke("tickets.create", "{}");
    CHECK(allowed.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
    std::thread([&] { held.at(0).allow(); }).join();
    CHECK(allowed.get().ok());

    rcip::CancelToken token;
    rcip::CancelToken copy = token;  // a clone: the same token
    rcip::InvokeOptions options;
    options.cancel = &token;
    std::future<rcip::Outcome> cancelled = runtime.client().invoke("tickets.create", "{}", options);
    std::atomic<int> told{0};
    copy.on_cancel([&] { ++told; });
    copy.cancel();
    CHECK(token.cancelled());
    CHECK(told == 1);
    CHECK(cancelled.get().error_code == "EXECUTION_ABORTED");
    held.at(1).deny("too late");  // a late answer is ignored
}

void test_confirmation_expiry_with_a_manual_clock() {
    rcip::Catalog catalog(CATALOG);
    std::atomic<int64_t> now{CLOCK_START};
    std::vector<rcip::ConfirmationNotice> notices;
    std::vector<rcip::Event> events;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .clock([&] { return now.load(); })
                                .manual_timers()
                                .confirmation_ttl_ms(1000)
                                .on_confirmation([&](const rcip::ConfirmationNotice &n) { notices.push_back(n); })
                                .on_event([&](const rcip::Event &e) { events.push_back(e); })
                                .build();
    rcip::Binding b = runtime.host().bind("tickets.purge", [](rcip::Invocation &inv) { inv.complete(R"({"purged": 1})"); });
    rcip::Outcome pending = runtime.client().invoke("tickets.purge", "{}").get();
    CHECK(pending.status == rcip::Status::ConfirmationRequired);
    CHECK(pending.expires_at == CLOCK_START + 1000);
    CHECK(runtime.next_deadline().value_or(0) == CLOCK_START + 1000);
    CHECK(notices.size() == 1 && notices[0].event == "opened" && notices[0].confirmation_id == pending.confirmation_id);
    now += 1000;
    runtime.run_due_timers();
    CHECK(!runtime.next_deadline());
    CHECK(notices.back().event == "closed" && notices.back().reason == "expired");
    CHECK(events.back().error_code == "CONFIRMATION_EXPIRED" && events.back().timestamp == CLOCK_START + 1000);
    CHECK(runtime.host().resolve_confirmation(pending.confirmation_id, true).get().error_code == "CONFIRMATION_EXPIRED");

    rcip::Outcome again = runtime.client().invoke("tickets.purge", "{}").get();
    rcip::Outcome approved = runtime.host().resolve_confirmation(again.confirmation_id, true).get();
    CHECK(approved.ok() && approved.invocation_id == again.invocation_id);
}

void test_context_snapshot_subscription_preflight() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .id_generator([](std::string_view prefix) -> std::optional<std::string> {
                                    static int n = 0;
                                    return std::string(prefix) + "-" + std::to_string(++n);
                                })
                                .build();
    std::vector<uint64_t> revisions;
    rcip::Subscription sub = runtime.client().subscribe([&](uint64_t r) { revisions.push_back(r); });
    runtime.host().set_context({"tickets"}, std::string("tickets"));
    CHECK_THROWS_CODE(runtime.host().set_context({"nope"}), RCIP_RESULT_UNKNOWN_SCOPE);
    CHECK_THROWS_CODE(runtime.host().set_context_json("{oops"), RCIP_RESULT_INVALID_JSON);
    rcip::Binding b = runtime.host().bind("greeting.say", hello);
    rcip::Snapshot snap = runtime.client().snapshot();
    CHECK(snap.revision() == 2);
    CHECK(rcip::json::member(snap.json(), "context").value_or("").find("tickets") != std::string_view::npos);
    CHECK((revisions == std::vector<uint64_t>{1, 2}));
    sub.reset();
    runtime.host().refresh();
    CHECK(revisions.size() == 2);
    std::string listed = runtime.client().list_capabilities(R"({"effect": "read"})");
    CHECK(rcip::json::elements(listed).size() == 1);
    CHECK_THROWS_CODE(runtime.client().list_capabilities(R"({"effect": "boom"})"), RCIP_RESULT_INVALID_ARGUMENT);
    runtime.host().clear_context();

    rcip::PreflightReport report = runtime.client()
                                       .preflight({{"greeting.say", R"({"name": "x"})"}, {"tickets.create", "{}"}, {"greeting.say", "{"}})
                                       .get();
    CHECK(report.consistent && report.outcomes.size() == 3);
    CHECK(report.outcomes[0].status == "ready");
    CHECK(report.outcomes[1].status == "blocked" && report.outcomes[1].error_code == "CAPABILITY_UNBOUND");
    CHECK(report.outcomes[2].error_code == "INPUT_INVALID");
    CHECK_THROWS_CODE(runtime.client().preflight({}), RCIP_RESULT_PREFLIGHT_BATCH_INVALID);
    CHECK(runtime.client().invoke("greeting.say", R"({"name": "x"})").get().invocation_id == "invocation-1");
    CHECK(runtime.stats().find("\"bindings\":1") != std::string::npos);
}

void test_runtime_destroyed_with_pending_work() {
    rcip::Catalog catalog(CATALOG);
    std::vector<rcip::Invocation> held;
    rcip::Binding b;
    std::future<rcip::Outcome> pending;
    {
        rcip::Runtime runtime(catalog);
        b = runtime.host().bind("greeting.say", [&](rcip::Invocation &inv) { held.push_back(std::move(inv)); });
        pending = runtime.client().invoke("greeting.say", R"({"name": "x"})");
        CHECK(pending.wait_for(std::chrono::milliseconds(0)) == std::future_status::timeout);
    }
    CHECK(pending.get().error_code == "EXECUTION_ABORTED");
    CHECK(held.at(0).cancelled());
    held.at(0).complete(R"({"text": "late"})");  // OK and ignored
    CHECK(!b.installed());
    CHECK_THROWS_CODE(b.unbind(), RCIP_RESULT_CLOSED);
}

void test_shutdown_while_another_thread_is_inside_a_call() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    std::promise<void> entered;
    rcip::Binding b = runtime.host().bind("greeting.say", [&](rcip::Invocation &inv) {
        entered.set_value();
        // Blocks inside rcip_client_invoke until the shutdown cancels it.
        while (!inv.cancelled()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        inv.complete(R"({"text": "too late"})");
    });
    std::future<rcip::Outcome> f;
    std::thread caller([&] { f = runtime.client().invoke("greeting.say", R"({"name": "x"})"); });
    entered.get_future().wait();
    runtime.shutdown();  // the caller's thread is still inside the invoke
    caller.join();
    CHECK(f.get().error_code == "EXECUTION_ABORTED");
    runtime.shutdown();  // idempotent
    CHECK_THROWS_CODE(runtime.client().invoke("greeting.say", R"({"name": "x"})"), RCIP_RESULT_CLOSED);
    CHECK(runtime.stats().find("\"closed\":true") != std::string::npos);
}

void test_throwing_clock_ids_and_observers_are_contained() {
    rcip::Catalog catalog(CATALOG);
    std::vector<std::string> reported;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .clock([]() -> int64_t { throw std::runtime_error("clock bug"); })
                                .id_generator([](std::string_view) -> std::optional<std::string> { throw 7; })
                                .on_confirmation([](const rcip::ConfirmationNotice &) { throw std::bad_alloc(); })
                                .on_error([&](std::exception_ptr, const char *where) { reported.push_back(where); })
                                .build();
    rcip::Subscription sub = runtime.client().subscribe([](uint64_t) { throw std::logic_error("subscriber bug"); });
    rcip::Binding b = runtime.host().bind("greeting.say", hello);
    rcip::Binding p = runtime.host().bind("tickets.purge", [](rcip::Invocation &inv) { inv.complete("{}"); });
    rcip::Outcome o = runtime.client().invoke("greeting.say", R"({"name": "x"})").get();
    CHECK(o.ok());
    CHECK(o.invocation_id.rfind("invocation_", 0) == 0);  // the built-in generator answered
    CHECK(runtime.client().invoke("tickets.purge", "{}").get().status == rcip::Status::ConfirmationRequired);
    rcip::CancelToken token;
    token.on_cancel([] { throw std::runtime_error("on_cancel bug"); });
    token.cancel();  // swallowed, never std::terminate
    bool clock = false, ids = false, subscriber = false, confirmation = false;
    for (const std::string &w : reported) {
        clock |= w == "clock";
        ids |= w == "id generator";
        subscriber |= w == "subscriber";
        confirmation |= w == "confirmation callback";
    }
    CHECK(clock && ids && subscriber && confirmation);
}

void test_json_helpers() {
    CHECK(rcip::json::quote("a\"b\\\n\x01") == "\"a\\\"b\\\\\\n\\u0001\"");
    CHECK(rcip::json::unquote("\"\\u00e9\\ud83d\\ude00\"") == "\xc3\xa9\xf0\x9f\x98\x80");
    std::string_view obj = R"( {"a": [1, {"b": "}"}], "c" : "d", "e": {"f": true}} )";
    CHECK(rcip::json::member(obj, "c").value_or("") == "\"d\"");
    CHECK(rcip::json::member(obj, "e").value_or("") == R"({"f": true})");
    CHECK(rcip::json::elements(rcip::json::member(obj, "a").value_or("")).size() == 2);
    CHECK(!rcip::json::member(obj, "z"));
    CHECK(!rcip::json::member("[1]", "a"));
    // A member name is compared unescaped.
    CHECK(rcip::json::member(R"({"na\"me": 1, "x\u0041": 2})", "na\"me").value_or("") == "1");
    CHECK(rcip::json::member(R"({"na\"me": 1, "x\u0041": 2})", "xA").value_or("") == "2");
    // Nesting far deeper than the library's default limit: no stack frame
    // per level (the recursive helper overflowed the stack at about 100k).
    const std::size_t depth = 1000000;
    std::string deep = "{\"a\": " + std::string(depth, '[') + std::string(depth, ']') + ", \"name\": \"x\"}";
    CHECK(rcip::json::string_member(deep, "name") == "x");
    CHECK(rcip::json::member(deep, "a").value_or("").size() == 2 * depth);
    CHECK(!rcip::json::member(std::string_view(deep).substr(0, deep.size() - 1), "zz"));
    CHECK(!rcip::json::member(R"({"a" 1})", "a"));
    CHECK(!rcip::json::member(R"({1: 2})", "a"));
}

void test_misuse_is_refused() {
    rcip::Catalog catalog(CATALOG);
    // A NUL inside a text argument: refused, not cut short (which would
    // have invoked greeting.say with the text before the NUL).
    std::vector<rcip::PolicyRequest> held;
    rcip::Runtime::Builder builder(catalog);
    builder.policy([&](rcip::PolicyRequest &req) { held.push_back(std::move(req)); });
    rcip::Runtime runtime = builder.build();
    rcip::Binding b = runtime.host().bind("greeting.say", hello);
    using namespace std::string_view_literals;
    CHECK_THROWS_CODE(runtime.client().invoke("greeting.say\0.admin"sv, R"({"name":"a"})"), RCIP_RESULT_INVALID_ARGUMENT);
    CHECK_THROWS_CODE(runtime.client().invoke("greeting.say", "{\"name\":\"a\"}\0 trailing"sv), RCIP_RESULT_INVALID_ARGUMENT);
    CHECK_THROWS_CODE(runtime.host().set_context_json("{\"activeScopeIds\": []}\0x"sv), RCIP_RESULT_INVALID_ARGUMENT);
    CHECK(held.empty());
    // The builder is consumed by build(): every setter says so, on_error too
    // (it used to replace the live runtime's handler while callbacks read it).
    CHECK_THROWS_CODE(builder.on_error([](std::exception_ptr, const char *) {}), RCIP_RESULT_NULL_ARGUMENT);
    CHECK_THROWS_CODE(builder.manual_timers(), RCIP_RESULT_NULL_ARGUMENT);
    CHECK_THROWS_CODE(builder.build(), RCIP_RESULT_NULL_ARGUMENT);
    // A decision that is none of the three settles the request (as a policy
    // failure) and throws: settled() says so.
    std::future<rcip::Outcome> f = runtime.client().invoke("greeting.say", R"({"name":"a"})");
    CHECK(held.size() == 1);
    CHECK_THROWS_CODE(held.at(0).decide_json(R"({"decision": "maybe"})"), RCIP_RESULT_INVALID_ARGUMENT);
    CHECK(held.at(0).settled());
    CHECK(f.get().error_code == "POLICY_EVALUATION_FAILED");
}

}  // namespace

// The side channel (rcip) without an MCP client: progress reaches the
// observer, logs go nowhere, elicitation is unsupported; the rules hold.
void test_progress_logging_and_elicitation_in_process() {
    rcip::Catalog catalog(CATALOG);
    std::vector<rcip::Progress> seen;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .on_progress([&](const rcip::Progress &p) { seen.push_back(p); })
                                .build();
    rcip::Binding b = runtime.host().bind("greeting.say", [](rcip::Invocation &inv) {
        inv.report_progress(1, 4.0, "a quarter");
        inv.report_progress(2.5);
        CHECK_THROWS_CODE(inv.report_progress(2.5), RCIP_RESULT_INVALID_ARGUMENT);
        CHECK_THROWS_CODE(inv.report_progress(std::nan("")), RCIP_RESULT_INVALID_ARGUMENT);
        inv.log("info", R"("no MCP client: nowhere")", "greeter");
        CHECK_THROWS_CODE(inv.log("loud", "1"), RCIP_RESULT_INVALID_ARGUMENT);
        bool answered = false;
        CHECK_THROWS_CODE(inv.elicit("?", R"({"type": "object", "properties": {}})",
                                     [&](const rcip::ElicitResult &) { answered = true; }),
                          RCIP_RESULT_UNSUPPORTED);
        CHECK(!answered);
        CHECK_THROWS_CODE(inv.create_message(R"({"messages": [], "maxTokens": 1})", [&](std::string_view) { answered = true; }),
                          RCIP_RESULT_UNSUPPORTED);
        CHECK(!answered);
        inv.complete(R"({"text": "hi"})");
        CHECK_THROWS_CODE(inv.report_progress(3), RCIP_RESULT_ALREADY_COMPLETED);
    });
    CHECK(runtime.client().invoke("greeting.say", R"({"name": "Ada"})").get().ok());
    CHECK(seen.size() == 2);
    CHECK(seen[0].capability_id == "greeting.say" && seen[0].progress == 1 && seen[0].total.value_or(0) == 4 &&
          seen[0].message == "a quarter");
    CHECK(seen[1].progress == 2.5 && !seen[1].total && seen[1].message.empty());
    rcip::ElicitResult r = rcip::ElicitResult::parse(R"({"action":"accept","content":{"n":1}})");
    CHECK(r.accepted() && r.content == R"({"n":1})");
}

// The MCP session's rcip options from C++: the safe tool naming, a naming
// refused with both ids, and content blocks with the replaced count.
void test_mcp_session_naming_and_content() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    auto binding = runtime.host().bind("greeting.say", [](rcip::Invocation &inv) { return hello(inv); });
    std::vector<std::string> sent;
    std::mutex lock;
    auto keep = [&](std::string_view m) {
        std::lock_guard<std::mutex> g(lock);
        sent.emplace_back(m);
    };
    const char *init = R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})";
    {
        rcip::McpSession session(runtime, R"({"workers": 0, "toolNames": "safe"})", keep);
        session.receive(init);
        session.receive(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greeting_say","arguments":{"name":"Ada"}}})");
        session.receive(R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"greeting.say","arguments":{"name":"Ada"}}})");
        std::lock_guard<std::mutex> g(lock);
        CHECK(sent.size() == 3);
        CHECK(sent.size() == 3 && sent[1].find(R"("structuredContent":{"text":"hello Ada"})") != std::string::npos);
        CHECK(sent.size() == 3 && sent[2].find("Unknown tool: greeting.say") != std::string::npos);
    }
    ++g_checks;
    try {
        rcip::McpSession clash(runtime, R"({"toolNames": {"tickets.create": "greeting.say"}})", keep);
        ++g_failed;
        std::fprintf(stderr, "%s:%d: a colliding naming was accepted\n", __FILE__, __LINE__);
    } catch (const rcip::Error &e) {
        std::string what = e.what();
        if (e.code() != RCIP_RESULT_INVALID_ARGUMENT || what.find("\"greeting.say\"") == std::string::npos ||
            what.find("\"tickets.create\"") == std::string::npos) {
            ++g_failed;
            std::fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, e.what());
        }
    }
    sent.clear();
    {
        rcip::McpSession session(runtime, R"({"workers": 0, "content": {"greeting.say": [{"type": "text", "property": "text"}]}})",
                                 keep);
        session.receive(init);
        session.receive(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greeting.say","arguments":{"name":"Ada"}}})");
        std::lock_guard<std::mutex> g(lock);
        CHECK(sent.size() == 2 && sent[1].find(R"("content":[{"type":"text","text":"hello Ada"}])") != std::string::npos);
        CHECK(session.stats() == R"({"inFlight":0,"droppedNotifications":0,"contentReplaced":0})");
    }
    CHECK_THROWS_CODE(rcip::McpSession(runtime, R"({"content": {"greeting.say": [{"type": "image", "property": "poster"}]}})"),
                      RCIP_RESULT_INVALID_ARGUMENT);
}

// Issue 18, item 1: the policy reads its request and answers without JSON
// on the host side; one capability is handled, the rest delegated.
void test_policy_accessors_and_default_delegation() {
    rcip::Catalog catalog(CATALOG);
    std::vector<std::string> seen;
    rcip::Runtime runtime = rcip::Runtime::Builder(catalog)
                                .policy([&](rcip::PolicyRequest &req) {
                                    seen.push_back(req.capability_id() + " " + req.effect() + " " + req.phase() +
                                                   (req.scope_active("tickets") ? " tickets" : " -") + " " +
                                                   req.primary_scope_id().value_or("none") +
                                                   (req.confirmed() ? " confirmed" : ""));
                                    if (req.capability_id() == "tickets.create") {
                                        req.deny("queue \"A\" is frozen\nuntil Monday");
                                    } else {
                                        req.decide_default();
                                    }
                                })
                                .build();
    rcip::Host host = runtime.host();
    host.set_context({"tickets"}, std::string("tickets"));
    rcip::Binding a = host.bind("greeting.say", hello);
    rcip::Binding b = host.bind("tickets.create", [](rcip::Invocation &inv) { inv.complete("{}"); });
    rcip::Binding c = host.bind("tickets.purge", [](rcip::Invocation &inv) { inv.complete("{}"); });
    CHECK(runtime.client().invoke("greeting.say", R"({"name": "Ada"})").get().ok());
    rcip::Outcome denied = runtime.client().invoke("tickets.create", "{}").get();
    CHECK(denied.error_code == "POLICY_DENIED");
    CHECK(denied.error_message == "queue \"A\" is frozen\nuntil Monday");
    rcip::Outcome purge = runtime.client().invoke("tickets.purge", "{}").get();
    CHECK(purge.status == rcip::Status::ConfirmationRequired);
    CHECK(host.resolve_confirmation(purge.confirmation_id, true).get().ok());
    CHECK(seen.size() == 4);
    CHECK(seen[0] == "greeting.say read invoke tickets tickets");
    CHECK(seen[1] == "tickets.create write invoke tickets tickets");
    CHECK(seen[3] == "tickets.purge destructive invoke tickets tickets confirmed");
}

void test_confirmation_carried_to_another_runtime() {
    rcip::Catalog catalog(CATALOG);
    std::string carried;
    std::string invocation_id;
    {
        rcip::Runtime opening(catalog);
        rcip::Binding purge = opening.host().bind("tickets.purge", [](rcip::Invocation &inv) { inv.complete("{}"); });
        rcip::Outcome pending = opening.client().invoke("tickets.purge", "{}").get();
        CHECK(pending.status == rcip::Status::ConfirmationRequired);
        invocation_id = pending.invocation_id;
        carried = opening.host().carry_confirmation(pending.confirmation_id);
        CHECK(carried.find("\"invocationId\":\"" + invocation_id + "\"") != std::string::npos);
        bool refused = false;
        try {
            opening.host().carry_confirmation("confirmation-nope");
        } catch (const rcip::Error &e) {
            refused = e.code() == RCIP_RESULT_NOT_FOUND;
        }
        CHECK(refused);
    }
    rcip::Runtime other(catalog);
    CHECK(other.host().resume_confirmation(carried, true, "{}").get().error_code == "POLICY_DENIED");
    rcip::Binding purge = other.host().bind("tickets.purge", [](rcip::Invocation &inv) { inv.complete("{}"); });
    CHECK(other.host().resume_confirmation(carried, false, "{}").get().error_code == "CONFIRMATION_DECLINED");
    rcip::Outcome approved = other.host().resume_confirmation(carried, true, "{}").get();
    CHECK(approved.ok() && approved.invocation_id == invocation_id);
}

void test_builder_bindings() {
    rcip::Catalog catalog(CATALOG);
    auto token = std::make_shared<int>(7);
    std::weak_ptr<int> watch = token;
    {
        rcip::Runtime::Builder builder(catalog);
        builder.bind("greeting.say", [token](rcip::Invocation &inv) { return hello(inv); });
        token.reset();
        CHECK_THROWS_CODE(builder.bind("greeting.say", hello), RCIP_RESULT_ALREADY_BOUND);
        CHECK_THROWS_CODE(builder.bind("nope.nothing", hello), RCIP_RESULT_NOT_IN_CATALOG);
        builder.bind("tickets.purge", hello, [] { return false; });
        rcip::Runtime runtime = builder.build();
        rcip::Snapshot snapshot = runtime.client().snapshot();
        CHECK(snapshot.revision() == 0);
        CHECK(rcip::json::member(runtime.stats(), "bindings").value_or("") == "2");
        rcip::Outcome o = runtime.client().invoke("greeting.say", R"({"name": "Ada"})").get();
        CHECK(o.ok() && rcip::json::string_member(o.output, "text") == "hello Ada");
        CHECK(runtime.client().invoke("tickets.purge", "{}").get().error_code == "CAPABILITY_UNAVAILABLE");
        CHECK_THROWS_CODE(runtime.host().bind("greeting.say", hello), RCIP_RESULT_ALREADY_BOUND);
        CHECK(!watch.expired());  // the runtime holds the handler
    }
    CHECK(watch.expired());  // and let it go when it was destroyed
}

// Issue 25, item 3: a per-request runtime factory on an MCP session. Each
// stateless (2026-07-28) request runs on its own runtime: a context set in
// one is not seen by the next; a throwing factory answers -32603; the
// factory (and what it captured) goes with the session.
std::string modern_call(int id, bool scoped) {
    return std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(id) +
           R"(,"method":"tools/call","params":{"name":"greeting.say","arguments":{"name":"Ada"},"_meta":{)"
           R"("io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{})" +
           (scoped ? R"(,"test/scope":"tickets")" : "") + "}}}";
}

void test_mcp_request_runtimes() {
    rcip::Catalog catalog(CATALOG);
    rcip::Runtime runtime(catalog);
    std::vector<std::string> sent;
    std::mutex lock;
    auto keep = [&](std::string_view m) {
        std::lock_guard<std::mutex> g(lock);
        sent.emplace_back(m);
    };
    auto token = std::make_shared<int>(1);
    std::weak_ptr<int> watch = token;
    std::atomic<int> built{0};
    std::vector<std::string> tenants;
    {
        rcip::McpSession session(runtime, R"({"workers": 0, "eras": "both"})", keep);
        session.set_request_runtimes([&, token](const rcip::RequestSetup &setup) {
            CHECK(setup.method == "tools/call");
            tenants.push_back(setup.header("X-Tenant").value_or("-"));
            rcip::Runtime::Builder builder(catalog);
            builder.bind("greeting.say", [](rcip::Invocation &inv) {
                return "{\"text\": " + rcip::json::quote(std::string(inv.semantic_context())) + "}";
            });
            rcip::Runtime request_runtime = builder.build();
            if (rcip::json::member(setup.meta_json, "test/scope")) request_runtime.host().set_context({"tickets"});
            ++built;
            return request_runtime;
        });
        token.reset();
        session.receive(modern_call(1, true), R"({"X-Tenant": "t1"})");
        session.receive(modern_call(2, false));
        {
            std::lock_guard<std::mutex> g(lock);
            CHECK(sent.size() == 2);
            CHECK(sent.size() == 2 && sent[0].find(R"(\"activeScopeIds\":[\"tickets\"])") != std::string::npos);
            CHECK(sent.size() == 2 && sent[1].find(R"(\"activeScopeIds\":[])") != std::string::npos);
        }
        CHECK(built == 2);
        CHECK(tenants == (std::vector<std::string>{"t1", "-"}));
        CHECK_THROWS_CODE(session.receive(modern_call(3, false), "[]"), RCIP_RESULT_INVALID_ARGUMENT);
        CHECK(!watch.expired());  // the session holds the factory
        // A throwing factory answers the request -32603 (nothing unwinds into C).
        session.set_request_runtimes([](const rcip::RequestSetup &) -> rcip::Runtime { throw std::runtime_error("no"); });
        CHECK(watch.expired());  // the replaced factory was destroyed
        session.receive(modern_call(4, false));
        std::lock_guard<std::mutex> g(lock);
        CHECK(sent.size() == 3 && sent[2].find(R"("id":4)") != std::string::npos &&
              sent[2].find(R"("code":-32603)") != std::string::npos);
        CHECK(built == 2);
    }
}

int main() {
    test_catalog_and_errors();
    test_invoke_sync_handler();
    test_validation_issues_and_their_bound();
    test_binding_raii_unbinds();
    test_throwing_lambdas_become_errors();
    test_handler_returning_unsettled_fails();
    test_deferred_handler_on_another_thread();
    test_deferred_policy_and_cancellation();
    test_confirmation_expiry_with_a_manual_clock();
    test_context_snapshot_subscription_preflight();
    test_runtime_destroyed_with_pending_work();
    test_shutdown_while_another_thread_is_inside_a_call();
    test_throwing_clock_ids_and_observers_are_contained();
    test_json_helpers();
    test_misuse_is_refused();
    test_progress_logging_and_elicitation_in_process();
    test_mcp_session_naming_and_content();
    test_policy_accessors_and_default_delegation();
    test_confirmation_carried_to_another_runtime();
    test_builder_bindings();
    test_mcp_request_runtimes();
    std::printf("%d passed, %d failed\n", g_checks - g_failed, g_failed);
    return g_failed ? 1 : 0;
}
