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
 *                             elicitation/create (rcip refuses to ask a stateless
 *                             request: isError, until multi round-trip requests)
 *   test_logging_tool         server-stateless: the logging handler; a request
 *                             without _meta logLevel must get no log message
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
} HANDLERS[] = {
    {"test_simple_text", simple_text},
    {"test_error_handling", error_handling},
    {"test_reconnection", reconnection},
    {"json_schema_tool", json_schema_tool},
    {"test_tool_with_progress", tool_with_progress},
    {"test_tool_with_logging", tool_with_logging},
    {"test_elicitation", elicitation},
    {"test_elicitation_sep1034_defaults", elicitation_defaults},
    {"test_elicitation_sep1330_enums", elicitation_enums},
    {"test_sampling", sampling},
    {"test_image_content", image_content},
    {"test_audio_content", audio_content},
    {"test_embedded_resource", embedded_resource},
    {"test_multiple_content_types", multiple_content_types},
    /* server-stateless (2026-07-28) diagnostics: the same handlers */
    {"test_missing_capability", sampling},
    {"test_streaming_elicitation", elicitation},
    {"test_logging_tool", tool_with_logging},
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
        if (check(rcip_host_bind(rcip_runtime_host(runtime), HANDLERS[i].id, HANDLERS[i].handler, NULL, NULL, NULL,
                                 &state->bindings[i]),
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
