/*
 * host.c: the rcip host the official MCP conformance suite drives
 * (`make test-mcp-conformance`, tests/mcp-conformance/README.md).
 *
 *   mcp_conformance_host CATALOG [ADDRESS] [OPTIONS_JSON | eras=ERA]
 *
 * OPTIONS_JSON replaces the server options below; `eras=legacy`, `eras=both`
 * or `eras=modern` keeps them and sets the session option "eras" (the
 * 2026-07-28 run of make test-mcp-conformance starts the host with
 * `eras=both`: 2025-11-25 sessions and stateless requests on one endpoint).
 *
 * An ordinary rcip host: its own catalog (catalog.json next to this file)
 * and handlers, served over MCP Streamable HTTP through the public C ABI
 * only (rcip_mcp_server_*). Each session gets a runtime of its own, built
 * by the factory below from the one compiled catalog, with the handlers
 * bound on it. Listens on ADDRESS (default 127.0.0.1:0), prints exactly one
 * line to stdout once listening:
 *
 *   rcip: serving MCP on http://127.0.0.1:PORT/mcp
 *
 * and shuts down gracefully on SIGINT or SIGTERM (exit status 0).
 *
 * The tools, by scenario:
 *   test_simple_text          tools-call-simple-text: completes with a fixed text
 *   test_error_handling       tools-call-error: its handler fails (isError: true)
 *   test_reconnection         server-sse-polling: completes ~300 ms later from a
 *                             host thread; with "pollAfterMs" the server closes
 *                             the call's SSE stream first and answers on the
 *                             client's GET with Last-Event-ID
 *   test_tool_with_progress   tools-call-with-progress: a host thread reports 0, 50
 *                             and 100 of 100, 50 ms apart, then completes
 *   test_tool_with_logging    tools-call-with-logging: a host thread sends three
 *                             info log messages, 50 ms apart, then completes
 *   test_elicitation          tools-call-elicitation, elicitation-sep1034-defaults,
 *   test_elicitation_sep1034_defaults  elicitation-sep1330-enums: the handler asks
 *   test_elicitation_sep1330_enums     the client's user (rcip_invocation_elicit)
 *                             and completes with the answer when it arrives
 *   test_sampling             tools-call-sampling: the handler asks the client to
 *                             sample (rcip_invocation_create_message) with the prompt
 *                             and completes with the client's reply
 *   json_schema_2020_12_tool  json-schema-2020-12: the capability json_schema_tool
 *                             under the name the suite needs ("toolNames"; an RCIP
 *                             id segment cannot start with a digit)
 *   test_image_content, test_audio_content, test_embedded_resource,
 *   test_multiple_content_types
 *                             tools-call-image, -audio, -embedded-resource,
 *                             -mixed-content: outputs whose properties the
 *                             session's "content" mapping (CONTENT_OPTIONS)
 *                             turns into image, audio, resource and text
 *                             blocks; structuredContent stays the output
 *   test_missing_capability   server-stateless (2026-07-28): the sampling handler
 *                             without a prompt; a request that did not declare
 *                             sampling gets -32021 naming it (HTTP 400)
 *   test_streaming_elicitation server-stateless: the elicitation handler with its
 *                             default message; the response stream must carry no
 *                             elicitation/create (a stateless request's question
 *                             travels in its InputRequiredResult instead)
 *   test_logging_tool         server-stateless: the logging handler; a request
 *                             without _meta logLevel must get no log message
 *   test_input_required_result_*
 *                             input-required-result-* (2026-07-28, SEP-2322): the
 *                             handler asks through rcip_invocation_ask under the
 *                             scenario's keys (user_name, capital_question,
 *                             client_roots, confirm, greeting, step1/step2) and
 *                             completes with a text made of the replies; the
 *                             library answers a question from the retry's
 *                             inputResponses, or collects it into the response's
 *                             inputRequests (the reply is then {"cancelled": true}
 *                             and the handler runs again on the retry).
 *                             _capabilities asks only what rcip_invocation_can_ask
 *                             allows; _multi_round asks step2 once step1 is answered
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcip.h"

/* Content blocks (rcip, docs/MCP.md "Content blocks"): which output
 * properties of the content scenarios' capabilities become which blocks. */
#define CONTENT_OPTIONS \
    " \"content\": {" \
    "\"test_image_content\": [{\"type\": \"image\", \"property\": \"image\"}]," \
    " \"test_audio_content\": [{\"type\": \"audio\", \"property\": \"audio\"}]," \
    " \"test_embedded_resource\": [{\"type\": \"resource\", \"property\": \"resource\"}]," \
    " \"test_multiple_content_types\": [{\"type\": \"text\", \"property\": \"caption\"}," \
    " {\"type\": \"image\", \"property\": \"image\"}, {\"type\": \"resource\", \"property\": \"resource\"}]},"

/* The server options: every request answered as SSE when the client
 * accepts it (server-sse-multiple-streams reads SSE answers to concurrent
 * tools/list), a pending call's stream closed after 100 ms (SEP-1699
 * polling), the content mapping, and the one tool name that is not a
 * capability id. */
#define DEFAULT_OPTION_FIELDS \
    "\"responseMode\": \"sse\", \"pollAfterMs\": 100, \"retryMs\": 500," \
    CONTENT_OPTIONS \
    " \"serverName\": \"rcip-mcp-conformance-host\"," \
    " \"toolNames\": {\"json_schema_tool\": \"json_schema_2020_12_tool\"}"
static const char *DEFAULT_OPTIONS = "{" DEFAULT_OPTION_FIELDS "}";

static int check(rcip_result rc, const char *what) {
    if (rc != RCIP_RESULT_OK) {
        const char *detail = rcip_last_error_message();
        fprintf(stderr, "mcp_conformance_host: %s failed: %s (%s)\n", what, rcip_result_str(rc), detail ? detail : "");
        return 1;
    }
    return 0;
}

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    size_t n;
    while (buf && (n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = grown;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[len] = '\0';
    return buf;
}

/* ----- handlers (run on the server's worker threads) ------------------- */

static void complete_or_log(rcip_invocation *invocation, const char *output) {
    if (rcip_invocation_complete(invocation, output) != RCIP_RESULT_OK)
        fprintf(stderr, "mcp_conformance_host: complete %s: %s\n", rcip_invocation_capability_id(invocation),
                rcip_last_error_message());
    rcip_invocation_free(invocation);
}

static void simple_text(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    complete_or_log(invocation, "{\"text\": \"This is a simple text response for testing.\"}");
}

static void error_handling(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    /* not aborted: an execution failure, answered with isError: true */
    if (rcip_invocation_fail(invocation, false) != RCIP_RESULT_OK)
        fprintf(stderr, "mcp_conformance_host: fail: %s\n", rcip_last_error_message());
    rcip_invocation_free(invocation);
}

static void *reconnection_later(void *arg) {
    rcip_invocation *invocation = arg;
    struct timespec delay = {0, 300 * 1000 * 1000};
    nanosleep(&delay, NULL);
    /* After the session ended (DELETE, shutdown) this answers an error
     * code instead of completing: logged, not fatal. */
    complete_or_log(invocation, "{\"text\": \"Reconnection test completed.\"}");
    return NULL;
}

/* Deferred: the invocation handle moves to a thread of the host, which
 * completes it later (the handler returns at once). */
static void reconnection(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, reconnection_later, invocation) != 0) {
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
    }
    pthread_attr_destroy(&attr);
}

static void json_schema_tool(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    const char *input = rcip_invocation_input(invocation);
    size_t size = strlen(input) + 32;
    char *output = malloc(size);
    if (!output) {
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
        return;
    }
    snprintf(output, size, "{\"received\": %s}", input);
    complete_or_log(invocation, output);
    free(output);
}

/* ----- progress, logging and elicitation (issue 16) ------------------- */

static void sleep_ms(long ms) {
    struct timespec delay = {ms / 1000, (ms % 1000) * 1000 * 1000};
    nanosleep(&delay, NULL);
}

static void report_or_log(rcip_result rc, const char *what) {
    if (rc != RCIP_RESULT_OK) fprintf(stderr, "mcp_conformance_host: %s: %s\n", what, rcip_last_error_message());
}

static void *progress_later(void *arg) {
    rcip_invocation *invocation = arg;
    for (int step = 0; step <= 2; step++) {
        if (step > 0) sleep_ms(50);
        /* notifications/progress when the call carried a progressToken */
        report_or_log(rcip_invocation_report_progress(invocation, step * 50.0, true, 100.0, NULL), "progress");
    }
    complete_or_log(invocation, "{\"text\": \"Progress reported: 0, 50 and 100 of 100.\"}");
    return NULL;
}

static void *logging_later(void *arg) {
    static const char *const MESSAGES[] = {"\"Tool execution started\"", "\"Tool processing data\"",
                                           "\"Tool execution completed\""};
    rcip_invocation *invocation = arg;
    for (int i = 0; i < 3; i++) {
        if (i > 0) sleep_ms(50);
        report_or_log(rcip_invocation_log(invocation, "info", "mcp_conformance_host", MESSAGES[i]), "log");
    }
    complete_or_log(invocation, "{\"text\": \"Logged three messages.\"}");
    return NULL;
}

/* Runs `body` on a detached host thread with the invocation (deferred). */
static void on_thread(rcip_invocation *invocation, void *(*body)(void *)) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attr, body, invocation) != 0) {
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
    }
    pthread_attr_destroy(&attr);
}

static void tool_with_progress(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    on_thread(invocation, progress_later);
}

static void tool_with_logging(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    on_thread(invocation, logging_later);
}

/* The answer, `{"action", "content"?}`, is the capability's output as it is
 * (its output schema has exactly that shape). */
static void answered(void *user_data, const char *answer_json) {
    complete_or_log(user_data, answer_json);
}

/* Asks; the handler returns at once and `answered` settles the invocation.
 * A client that cannot be asked gets a failed call (isError: true). */
static void ask(rcip_invocation *invocation, const char *message, const char *schema) {
    if (rcip_invocation_elicit(invocation, message, schema, answered, invocation, NULL) != RCIP_RESULT_OK) {
        fprintf(stderr, "mcp_conformance_host: elicit: %s\n", rcip_last_error_message());
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
    }
}

/* The "message" string of the input {"message": "..."} (canonical compact
 * JSON), unescaped for the simple escapes; \uXXXX is kept as written. */
static char *input_message(const char *input) {
    const char *key = strstr(input, "\"message\":\"");
    if (!key) return NULL;
    const char *p = key + strlen("\"message\":\"");
    char *out = malloc(strlen(p) + 1);
    if (!out) return NULL;
    size_t n = 0;
    for (; *p && *p != '"'; p++) {
        if (*p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n': out[n++] = '\n'; break;
            case 't': out[n++] = '\t'; break;
            case 'u': out[n++] = '\\'; out[n++] = 'u'; break;
            default: out[n++] = *p; break;
            }
        } else {
            out[n++] = *p;
        }
    }
    out[n] = '\0';
    return out;
}

static void elicitation(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    char *message = input_message(rcip_invocation_input(invocation));
    ask(invocation, message ? message : "Please provide your information",
        "{\"type\": \"object\", \"properties\": {"
        "\"username\": {\"type\": \"string\", \"description\": \"User's response\"},"
        "\"email\": {\"type\": \"string\", \"description\": \"User's email address\"}},"
        " \"required\": [\"username\", \"email\"]}");
    free(message);
}

static void elicitation_defaults(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    ask(invocation, "Please review and update the form fields with defaults",
        "{\"type\": \"object\", \"properties\": {"
        "\"name\": {\"type\": \"string\", \"description\": \"User name\", \"default\": \"John Doe\"},"
        "\"age\": {\"type\": \"integer\", \"description\": \"User age\", \"default\": 30},"
        "\"score\": {\"type\": \"number\", \"description\": \"User score\", \"default\": 95.5},"
        "\"status\": {\"type\": \"string\", \"description\": \"User status\","
        " \"enum\": [\"active\", \"inactive\", \"pending\"], \"default\": \"active\"},"
        "\"verified\": {\"type\": \"boolean\", \"description\": \"Verification status\", \"default\": true}}}");
}

static void elicitation_enums(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    ask(invocation, "Please select options from the enum fields",
        "{\"type\": \"object\", \"properties\": {"
        "\"untitledSingle\": {\"type\": \"string\", \"enum\": [\"option1\", \"option2\", \"option3\"]},"
        "\"titledSingle\": {\"type\": \"string\", \"oneOf\": [{\"const\": \"value1\", \"title\": \"First Option\"},"
        " {\"const\": \"value2\", \"title\": \"Second Option\"}, {\"const\": \"value3\", \"title\": \"Third Option\"}]},"
        "\"legacyEnum\": {\"type\": \"string\", \"enum\": [\"opt1\", \"opt2\", \"opt3\"],"
        " \"enumNames\": [\"Option One\", \"Option Two\", \"Option Three\"]},"
        "\"untitledMulti\": {\"type\": \"array\", \"items\": {\"type\": \"string\","
        " \"enum\": [\"option1\", \"option2\", \"option3\"]}},"
        "\"titledMulti\": {\"type\": \"array\", \"items\": {\"anyOf\": [{\"const\": \"value1\", \"title\": \"First Choice\"},"
        " {\"const\": \"value2\", \"title\": \"Second Choice\"}, {\"const\": \"value3\", \"title\": \"Third Choice\"}]}}}}");
}

/* The prompt's JSON string as the canonical input holds it ("...", escapes
 * included), so it goes into the request's JSON as it is. */
static char *input_prompt_json(const char *input) {
    const char *key = strstr(input, "\"prompt\":\"");
    if (!key) return NULL;
    const char *start = key + strlen("\"prompt\":");
    const char *p = start + 1;
    while (*p && *p != '"') p += (*p == '\\' && p[1]) ? 2 : 1;
    if (*p != '"') return NULL;
    size_t n = (size_t)(p + 1 - start);
    char *out = malloc(n + 1);
    if (!out) return NULL;
    memcpy(out, start, n);
    out[n] = '\0';
    return out;
}

/* The reply, {"result": ...} | {"error": ...} | {"cancelled": true}, is
 * the capability's output as it is. */
static void sampled(void *user_data, const char *reply_json) {
    complete_or_log(user_data, reply_json);
}

static void sampling(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    char *prompt = input_prompt_json(rcip_invocation_input(invocation));
    const char *format =
        "{\"messages\": [{\"role\": \"user\", \"content\": {\"type\": \"text\", \"text\": %s}}], \"maxTokens\": 100}";
    size_t size = strlen(format) + (prompt ? strlen(prompt) : 2) + 1;
    char *params = malloc(size);
    if (params) snprintf(params, size, format, prompt ? prompt : "\"\"");
    if (!params || rcip_invocation_create_message(invocation, params, sampled, invocation, NULL) != RCIP_RESULT_OK) {
        fprintf(stderr, "mcp_conformance_host: sample: %s\n", rcip_last_error_message());
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
    }
    free(params);
    free(prompt);
}

/* ----- questions by multi round-trip requests (2026-07-28, SEP-2322) ---- */

/* A question a handler asks through rcip_invocation_ask: its key (the key
 * of the input request and of its answer), method and params. */
typedef struct {
    const char *key;
    const char *method;
    const char *params;
} question;

#define NAME_SCHEMA \
    "\"requestedSchema\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}}, \"required\": [\"name\"]}"
static const question USER_NAME = {"user_name", "elicitation/create",
                                   "{\"message\": \"What is your name?\", " NAME_SCHEMA "}"};
static const question CAPITAL = {"capital_question", "sampling/createMessage",
                                 "{\"messages\": [{\"role\": \"user\", \"content\": {\"type\": \"text\","
                                 " \"text\": \"What is the capital of France?\"}}], \"maxTokens\": 100}"};
static const question ROOTS = {"client_roots", "roots/list", "{}"};
static const question CONFIRM = {"confirm", "elicitation/create",
                                 "{\"message\": \"Please confirm\", \"requestedSchema\": {\"type\": \"object\","
                                 " \"properties\": {\"ok\": {\"type\": \"boolean\"}}, \"required\": [\"ok\"]}}"};
static const question GREETING = {"greeting", "sampling/createMessage",
                                  "{\"messages\": [{\"role\": \"user\", \"content\": {\"type\": \"text\","
                                  " \"text\": \"Generate a greeting\"}}], \"maxTokens\": 50}"};
static const question STEP1 = {"step1", "elicitation/create",
                               "{\"message\": \"Step 1: What is your name?\", " NAME_SCHEMA "}"};
static const question STEP2 = {"step2", "elicitation/create",
                               "{\"message\": \"Step 2: What is your favorite color?\", \"requestedSchema\": {"
                               "\"type\": \"object\", \"properties\": {\"color\": {\"type\": \"string\"}},"
                               " \"required\": [\"color\"]}}"};

#define MAX_QUESTIONS 3

/* One call's questions: asked together (`rounds` 1) or one after the
 * other, each only once the one before it was answered (`rounds` > 1).
 * The last reply settles the invocation. */
typedef struct {
    rcip_invocation *invocation;
    const question *asks[MAX_QUESTIONS];
    size_t count;
    int one_by_one;
    pthread_mutex_t lock;
    size_t replied;
    char *replies[MAX_QUESTIONS]; /* reply JSON, by question */
} questions;

/* The first JSON string after `"field":` in compact JSON (what the library
 * writes), unescaped for the simple escapes; NULL when absent. */
static char *string_field(const char *json, const char *field) {
    char needle[64];
    snprintf(needle, sizeof needle, "\"%s\":\"", field);
    const char *at = json ? strstr(json, needle) : NULL;
    if (!at) return NULL;
    char *wrapped = malloc(strlen(at) + 16);
    if (!wrapped) return NULL;
    /* input_message reads {"message":"..."}: reuse it on a renamed copy */
    snprintf(wrapped, strlen(at) + 16, "\"message\":\"%s", at + strlen(needle));
    char *out = input_message(wrapped);
    free(wrapped);
    return out;
}

/* `text` as a JSON string body (quotes and backslashes escaped). */
static void append_escaped(char *out, size_t size, const char *text) {
    size_t n = strlen(out);
    for (; text && *text && n + 3 < size; text++) {
        if (*text == '"' || *text == '\\') out[n++] = '\\';
        out[n++] = *text;
    }
    out[n] = '\0';
}

static void questions_free(questions *q) {
    for (size_t i = 0; i < q->count; i++) free(q->replies[i]);
    pthread_mutex_destroy(&q->lock);
    free(q);
}

/* Every question answered: the text the tool answers with. An unanswered
 * question (`{"cancelled":true}`: it travels in this round's
 * InputRequiredResult) means this run's output is set aside by the server,
 * so any text does. */
static void questions_done(questions *q) {
    char text[1024] = "";
    int waiting = 0;
    for (size_t i = 0; i < q->count; i++)
        if (!q->replies[i] || strstr(q->replies[i], "\"cancelled\":true")) waiting = 1;
    if (waiting) {
        strcpy(text, "Waiting for the client's answers.");
    } else {
        for (size_t i = 0; i < q->count; i++) {
            const question *a = q->asks[i];
            const char *reply = q->replies[i];
            char *value = NULL;
            char part[256];
            if (strstr(reply, "\"error\":")) {
                snprintf(part, sizeof part, "%s: the client answered with an error. ", a->key);
            } else if (strcmp(a->method, "roots/list") == 0) {
                value = string_field(reply, "uri");
                snprintf(part, sizeof part, "Roots: %s. ", value ? value : "none");
            } else if (strcmp(a->method, "sampling/createMessage") == 0) {
                value = string_field(reply, "text");
                snprintf(part, sizeof part, "The model said: %s ", value ? value : "");
            } else if (a == &CONFIRM) {
                snprintf(part, sizeof part, "state-ok: %s. ",
                         strstr(reply, "\"ok\":true") ? "confirmed" : "not confirmed");
            } else if (a == &STEP2) {
                value = string_field(reply, "color");
                snprintf(part, sizeof part, "Favorite color: %s. ", value ? value : "unknown");
            } else if (strstr(reply, "\"action\":\"accept\"")) {
                value = string_field(reply, "name");
                snprintf(part, sizeof part, "Hello, %s! ", value ? value : "stranger");
            } else {
                snprintf(part, sizeof part, "%s: declined. ", a->key);
            }
            free(value);
            strncat(text, part, sizeof text - strlen(text) - 1);
        }
    }
    size_t len = strlen(text);
    if (len > 0 && text[len - 1] == ' ') text[len - 1] = '\0';
    char output[2200] = "{\"text\": \"";
    append_escaped(output, sizeof output - 4, text);
    strcat(output, "\"}");
    rcip_invocation *invocation = q->invocation;
    questions_free(q);
    complete_or_log(invocation, output);
}

static int ask_next(questions *q, size_t index);

/* A reply (on a library worker): kept; the last one settles the call. */
static void question_replied(questions *q, size_t index, const char *reply_json) {
    pthread_mutex_lock(&q->lock);
    q->replies[index] = strdup(reply_json ? reply_json : "");
    size_t replied = ++q->replied;
    pthread_mutex_unlock(&q->lock);
    int answered = reply_json && !strstr(reply_json, "\"cancelled\":true");
    if (q->one_by_one && answered && index + 1 < q->count) {
        if (ask_next(q, index + 1) == 0) return;
        replied = q->count; /* could not ask: settle now */
    }
    if (replied == q->count || (q->one_by_one && !answered)) questions_done(q);
}

/* The reply's user data: the call and the question's index. */
typedef struct {
    questions *q;
    size_t index;
} reply_slot;

static void on_reply(void *user_data, const char *reply_json) {
    reply_slot *slot = user_data;
    question_replied(slot->q, slot->index, reply_json);
}

/* Asks question `index`; 0 when asked (its reply will come). */
static int ask_next(questions *q, size_t index) {
    reply_slot *slot = malloc(sizeof *slot);
    if (!slot) return 1;
    slot->q = q;
    slot->index = index;
    const question *a = q->asks[index];
    if (rcip_invocation_ask(q->invocation, a->key, a->method, a->params, on_reply, slot, free) != RCIP_RESULT_OK) {
        fprintf(stderr, "mcp_conformance_host: ask %s: %s\n", a->key, rcip_last_error_message());
        free(slot);
        q->replies[index] = strdup("{\"error\":{}}");
        q->replied++;
        return 1;
    }
    return 0;
}

/* Asks `count` questions of `asks` (together, or one by one), deferred:
 * the replies settle the invocation. */
static void ask_questions(rcip_invocation *invocation, const question *const *asks, size_t count, int one_by_one) {
    questions *q = calloc(1, sizeof *q);
    if (!q) {
        rcip_invocation_fail(invocation, false);
        rcip_invocation_free(invocation);
        return;
    }
    q->invocation = invocation;
    q->count = count;
    q->one_by_one = one_by_one;
    for (size_t i = 0; i < count; i++) q->asks[i] = asks[i];
    pthread_mutex_init(&q->lock, NULL);
    if (count == 0) {
        questions_done(q);
        return;
    }
    /* The first reply may arrive before the last ask returns: the lock
     * orders them, and the call is settled by whichever reply is last. */
    size_t failed = 0;
    pthread_mutex_lock(&q->lock);
    for (size_t i = 0; i < (one_by_one ? 1 : count); i++) failed += (size_t)ask_next(q, i);
    int all_failed = failed == (one_by_one ? 1 : count);
    size_t replied = q->replied;
    pthread_mutex_unlock(&q->lock);
    if (all_failed || (!one_by_one && replied == count)) questions_done(q);
}

/* What a question-asking tool asks: its questions, together or one by one
 * (the tool's binding data). */
typedef struct {
    const question *asks[MAX_QUESTIONS];
    size_t count;
    int one_by_one;
} ask_plan;

static const ask_plan ASK_USER_NAME = {{&USER_NAME}, 1, 0};
static const ask_plan ASK_CAPITAL = {{&CAPITAL}, 1, 0};
static const ask_plan ASK_ROOTS = {{&ROOTS}, 1, 0};
static const ask_plan ASK_CONFIRM = {{&CONFIRM}, 1, 0};
static const ask_plan ASK_THREE = {{&USER_NAME, &GREETING, &ROOTS}, 3, 0};
static const ask_plan ASK_TWO_ROUNDS = {{&STEP1, &STEP2}, 2, 1};

static void mrtr_questions(void *user_data, rcip_invocation *invocation) {
    const ask_plan *plan = user_data;
    ask_questions(invocation, plan->asks, plan->count, plan->one_by_one);
}

/* Asks only what the request declared it can answer (rcip_invocation_can_ask):
 * an undeclared question would make the response -32021. */
static void mrtr_capabilities(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    const question *asks[2];
    size_t n = 0;
    if (rcip_invocation_can_ask(invocation, USER_NAME.method)) asks[n++] = &USER_NAME;
    if (rcip_invocation_can_ask(invocation, CAPITAL.method)) asks[n++] = &CAPITAL;
    ask_questions(invocation, asks, n, 0);
}

/* ----- content scenarios: outputs whose properties become blocks ------- */

/* A 1x1 red PNG and an 8 kHz mono WAV of one silent sample, base64. */
#define RED_PIXEL_PNG "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
#define SILENT_WAV "UklGRiUAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQEAAACA"

static void image_content(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    complete_or_log(invocation, "{\"image\": {\"data\": \"" RED_PIXEL_PNG "\", \"mimeType\": \"image/png\"}}");
}

static void audio_content(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    complete_or_log(invocation, "{\"audio\": {\"data\": \"" SILENT_WAV "\", \"mimeType\": \"audio/wav\"}}");
}

static void embedded_resource(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    complete_or_log(invocation, "{\"resource\": {\"uri\": \"test://embedded-resource\", \"mimeType\": \"text/plain\","
                                " \"text\": \"This is an embedded resource content.\"}}");
}

static void multiple_content_types(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    complete_or_log(invocation,
                    "{\"caption\": \"Multiple content types test:\","
                    " \"image\": {\"data\": \"" RED_PIXEL_PNG "\", \"mimeType\": \"image/png\"},"
                    " \"resource\": {\"uri\": \"test://mixed-content-resource\", \"mimeType\": \"application/json\","
                    " \"text\": \"{\\\"test\\\":\\\"data\\\",\\\"value\\\":123}\"}}");
}

/* ----- the session factory (runs on a library worker thread) ---------- */

static const struct {
    const char *id;
    rcip_handler_callback handler;
    const void *data; /* the handler's user data (read only; never freed) */
} HANDLERS[] = {
    {"test_simple_text", simple_text, NULL},
    {"test_error_handling", error_handling, NULL},
    {"test_reconnection", reconnection, NULL},
    {"json_schema_tool", json_schema_tool, NULL},
    {"test_tool_with_progress", tool_with_progress, NULL},
    {"test_tool_with_logging", tool_with_logging, NULL},
    {"test_elicitation", elicitation, NULL},
    {"test_elicitation_sep1034_defaults", elicitation_defaults, NULL},
    {"test_elicitation_sep1330_enums", elicitation_enums, NULL},
    {"test_sampling", sampling, NULL},
    {"test_image_content", image_content, NULL},
    {"test_audio_content", audio_content, NULL},
    {"test_embedded_resource", embedded_resource, NULL},
    {"test_multiple_content_types", multiple_content_types, NULL},
    /* server-stateless (2026-07-28) diagnostics: the same handlers */
    {"test_missing_capability", sampling, NULL},
    {"test_streaming_elicitation", elicitation, NULL},
    {"test_logging_tool", tool_with_logging, NULL},
    /* input-required-result-* (2026-07-28 multi round-trip requests) */
    {"test_input_required_result_elicitation", mrtr_questions, &ASK_USER_NAME},
    {"test_input_required_result_sampling", mrtr_questions, &ASK_CAPITAL},
    {"test_input_required_result_list_roots", mrtr_questions, &ASK_ROOTS},
    {"test_input_required_result_request_state", mrtr_questions, &ASK_CONFIRM},
    {"test_input_required_result_multiple_inputs", mrtr_questions, &ASK_THREE},
    {"test_input_required_result_multi_round", mrtr_questions, &ASK_TWO_ROUNDS},
    {"test_input_required_result_tampered_state", mrtr_questions, &ASK_CONFIRM},
    {"test_input_required_result_capabilities", mrtr_capabilities, NULL},
};
#define HANDLER_COUNT (sizeof HANDLERS / sizeof HANDLERS[0])

/* What a session owns besides its runtime: its bindings. */
typedef struct {
    rcip_binding *bindings[HANDLER_COUNT];
} session_state;

/* Called by the server after the session's runtime is closed. */
static void session_state_free(void *user_data) {
    session_state *state = user_data;
    for (size_t i = 0; i < HANDLER_COUNT; i++) rcip_binding_free(state->bindings[i]);
    free(state);
}

static int32_t make_session(void *user_data, rcip_mcp_session_setup *setup) {
    const rcip_catalog *catalog = user_data;
    rcip_runtime_builder *builder = NULL;
    rcip_runtime *runtime = NULL;
    session_state *state = calloc(1, sizeof *state);
    if (!state) return 1;
    if (check(rcip_runtime_builder_new(catalog, &builder), "rcip_runtime_builder_new")) goto fail;
    if (check(rcip_runtime_builder_build(builder, &runtime), "rcip_runtime_builder_build")) goto fail;
    for (size_t i = 0; i < HANDLER_COUNT; i++) {
        if (check(rcip_host_bind(rcip_runtime_host(runtime), HANDLERS[i].id, HANDLERS[i].handler, NULL,
                                 (void *)HANDLERS[i].data, NULL, &state->bindings[i]),
                  "rcip_host_bind"))
            goto fail;
    }
    /* consumes the runtime; the server frees the state after closing it */
    if (check(rcip_mcp_session_setup_accept(setup, runtime, state, session_state_free),
              "rcip_mcp_session_setup_accept")) {
        runtime = NULL; /* consumed on failure too */
        goto fail;
    }
    return 0;
fail:
    if (state) session_state_free(state);
    rcip_runtime_free(runtime);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 2 || argc > 4) {
        fprintf(stderr, "usage: %s CATALOG [ADDRESS] [OPTIONS_JSON | eras=ERA]\n", argv[0]);
        return 2;
    }
    const char *address = argc > 2 ? argv[2] : "127.0.0.1:0";
    const char *options = argc > 3 ? argv[3] : DEFAULT_OPTIONS;
    char with_eras[sizeof DEFAULT_OPTION_FIELDS + 64];
    if (argc > 3 && strncmp(argv[3], "eras=", 5) == 0) {
        const char *era = argv[3] + 5;
        if (strcmp(era, "legacy") != 0 && strcmp(era, "both") != 0 && strcmp(era, "modern") != 0) {
            fprintf(stderr, "mcp_conformance_host: eras must be legacy, both or modern, not %s\n", era);
            return 2;
        }
        snprintf(with_eras, sizeof with_eras, "{\"eras\": \"%s\", " DEFAULT_OPTION_FIELDS "}", era);
        options = with_eras;
    }
    char *catalog_json = read_file(argv[1]);
    if (!catalog_json) {
        fprintf(stderr, "mcp_conformance_host: cannot read %s\n", argv[1]);
        return 2;
    }

    /* Signals are taken by sigwait below: blocked before any thread starts,
     * so every library thread inherits the mask. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);

    rcip_catalog *catalog = NULL;
    rcip_mcp_server *server = NULL;
    char *url = NULL;
    int status = 1;
    if (check(rcip_catalog_new(catalog_json, &catalog), "rcip_catalog_new")) goto done;
    /* the factory borrows the catalog: it outlives the server */
    if (check(rcip_mcp_server_new(catalog, address, options, make_session, catalog, NULL, &server),
              "rcip_mcp_server_new"))
        goto done;
    if (check(rcip_mcp_server_url(server, &url), "rcip_mcp_server_url")) goto done;
    if (check(rcip_mcp_server_start(server), "rcip_mcp_server_start")) goto done;
    printf("rcip: serving MCP on %s\n", url);
    fflush(stdout);

    int signal_number = 0;
    sigwait(&stop, &signal_number);
    fprintf(stderr, "mcp_conformance_host: signal %d, shutting down\n", signal_number);
    if (check(rcip_mcp_server_shutdown(server, 5000), "rcip_mcp_server_shutdown")) goto done;
    status = 0;
done:
    rcip_string_free(url);
    rcip_mcp_server_free(server);
    rcip_catalog_free(catalog);
    free(catalog_json);
    return status;
}
