/*
 * request_runtimes.c: a C host that gives an MCP session a per-request
 * runtime factory (rcip_mcp_session_set_request_runtimes, issue 25 item 3)
 * and feeds it stateless (MCP 2026-07-28) requests through
 * rcip_mcp_session_receive and rcip_mcp_session_receive_with_headers.
 * Run by `make test-c-tests`, under ASan/UBSan/LSan (`make test-asan`) and
 * valgrind (`make valgrind-c`), so the per-request runtimes, their request
 * data and the factory's data are checked for leaks and memory errors.
 *
 * Checks: each request gets its own runtime (a context the factory set for
 * one request is not seen by the next, with and without worker threads);
 * the factory sees the method, the request's _meta and the headers passed
 * with it; each request's user data is released exactly once after its
 * response; a refusing factory answers -32603; the factory's user data is
 * released exactly once when it is replaced and once when the session is
 * freed, and that release may register a factory again (no session lock
 * is held); misuse answers NULL_ARGUMENT and calls nothing.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcip.h"

static _Atomic int failures;

#define CHECK(cond, what)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            atomic_fetch_add(&failures, 1);                                            \
            fprintf(stderr, "FAIL %s:%d: %s (%s)\n", __FILE__, __LINE__, what, #cond); \
        }                                                                              \
    } while (0)

#define OK(call)                                                                                          \
    do {                                                                                                  \
        rcip_result rc_ = (call);                                                                         \
        if (rc_ != RCIP_RESULT_OK) {                                                                      \
            atomic_fetch_add(&failures, 1);                                                               \
            fprintf(stderr, "FAIL %s:%d: %s -> %s: %s\n", __FILE__, __LINE__, #call, rcip_result_str(rc_), \
                    rcip_last_error_message() ? rcip_last_error_message() : "");                         \
        }                                                                                                 \
    } while (0)

static const char *CATALOG =
    "{\"protocolVersion\":\"1.0\","
    "\"application\":{\"id\":\"perrequest\",\"name\":\"Per request\",\"description\":\"Tests.\"},"
    "\"scopes\":[{\"id\":\"notes\",\"title\":\"Notes\",\"description\":\"The notes.\"}],"
    "\"capabilities\":[{\"id\":\"ctx.read\",\"title\":\"Read\",\"description\":\"Reads the context.\","
    "\"scopeIds\":[],\"effect\":\"read\",\"inputSchema\":{\"type\":\"object\"},"
    "\"outputSchema\":{\"type\":\"object\"}}]}";

/* ----- the messages the session sends ------------------------------------- */

#define MAX_MESSAGES 64

struct outbox {
    pthread_mutex_t lock;
    char *messages[MAX_MESSAGES];
    int count;
};

static void collect(void *user_data, const char *message_json)
{
    struct outbox *box = user_data;
    pthread_mutex_lock(&box->lock);
    if (box->count < MAX_MESSAGES) {
        size_t n = strlen(message_json) + 1;
        box->messages[box->count] = malloc(n);
        memcpy(box->messages[box->count], message_json, n);
        box->count++;
    }
    pthread_mutex_unlock(&box->lock);
}

static int outbox_count(struct outbox *box)
{
    pthread_mutex_lock(&box->lock);
    int n = box->count;
    pthread_mutex_unlock(&box->lock);
    return n;
}

/* The message answering request `id` (NULL when none arrived). */
static const char *answer_to(struct outbox *box, int id)
{
    char needle[32];
    snprintf(needle, sizeof needle, "\"id\":%d,", id);
    const char *found = NULL;
    pthread_mutex_lock(&box->lock);
    for (int i = 0; i < box->count; i++) {
        if (strstr(box->messages[i], needle)) {
            found = box->messages[i];
        }
    }
    pthread_mutex_unlock(&box->lock);
    return found;
}

static void outbox_clear(struct outbox *box)
{
    pthread_mutex_lock(&box->lock);
    for (int i = 0; i < box->count; i++) {
        free(box->messages[i]);
    }
    box->count = 0;
    pthread_mutex_unlock(&box->lock);
}

static void wait_for(struct outbox *box, int n)
{
    struct timespec pause = {0, 5 * 1000 * 1000};
    for (int i = 0; i < 2000 && outbox_count(box) < n; i++) {
        nanosleep(&pause, NULL);
    }
}

/* ----- the factory ---------------------------------------------------------- */

struct fixture {
    const rcip_catalog *catalog;
    atomic_int built;
    atomic_int refusals;
    atomic_int request_data_freed;
    atomic_int factory_freed;
    atomic_bool refuse;
    atomic_int saw_tenant;   /* requests whose x-tenant header was t1 */
    atomic_int saw_headers;  /* requests whose headers JSON was {"x-tenant":"t1"} */
    atomic_int saw_no_headers;
    atomic_int bad_method;
    rcip_mcp_session *session; /* for a release that registers again */
    const rcip_host *_Atomic last_host; /* the host view of the latest request's runtime */
    atomic_bool reenter;
};

/* One request's data: freed by its release function, which counts. */
struct request_data {
    struct fixture *fixture;
    int scoped;
};

static void request_data_free(void *user_data)
{
    struct request_data *data = user_data;
    atomic_fetch_add(&data->fixture->request_data_freed, 1);
    free(data);
}

static int32_t build_runtime(void *user_data, rcip_mcp_request_setup *setup);

static int32_t build_runtime_again(void *user_data, rcip_mcp_request_setup *setup)
{
    return build_runtime(user_data, setup);
}

static void factory_free(void *user_data)
{
    struct fixture *f = user_data;
    atomic_fetch_add(&f->factory_freed, 1);
    /* A release may call any rcip function, the session's registration
     * included: it runs with no session lock held (else this deadlocks). */
    if (atomic_exchange(&f->reenter, false)) {
        OK(rcip_mcp_session_set_request_runtimes(f->session, build_runtime_again, f, factory_free));
    }
}

/* The handler: answers with the semantic context its runtime had. */
static void echo_context(void *user_data, rcip_invocation *invocation)
{
    (void)user_data;
    const char *context = rcip_invocation_semantic_context(invocation);
    size_t n = strlen(context) + 32;
    char *output = malloc(n);
    snprintf(output, n, "{\"context\":%s}", context);
    OK(rcip_invocation_complete(invocation, output));
    free(output);
    rcip_invocation_free(invocation);
}

static int32_t build_runtime(void *user_data, rcip_mcp_request_setup *setup)
{
    struct fixture *f = user_data;
    const char *method = rcip_mcp_request_setup_method(setup);
    if (!method || (strcmp(method, "tools/call") != 0 && strcmp(method, "tools/list") != 0)) {
        atomic_fetch_add(&f->bad_method, 1);
    }
    const char *tenant = rcip_mcp_request_setup_header(setup, "X-Tenant");
    if (tenant && strcmp(tenant, "t1") == 0) {
        atomic_fetch_add(&f->saw_tenant, 1);
    }
    const char *headers = rcip_mcp_request_setup_headers(setup);
    if (headers && strcmp(headers, "{\"x-tenant\":\"t1\"}") == 0) {
        atomic_fetch_add(&f->saw_headers, 1);
    }
    if (headers && strcmp(headers, "{}") == 0) {
        atomic_fetch_add(&f->saw_no_headers, 1);
    }
    if (atomic_load(&f->refuse)) {
        atomic_fetch_add(&f->refusals, 1);
        return 1; /* the request is answered -32603 */
    }
    const char *meta = rcip_mcp_request_setup_meta(setup);
    rcip_runtime_builder *b = NULL;
    rcip_runtime *runtime = NULL;
    if (rcip_runtime_builder_new(f->catalog, &b) != RCIP_RESULT_OK) {
        return 1;
    }
    OK(rcip_runtime_builder_bind(b, "ctx.read", echo_context, NULL, NULL, NULL));
    if (rcip_runtime_builder_build(b, &runtime) != RCIP_RESULT_OK) {
        return 1;
    }
    struct request_data *data = malloc(sizeof *data);
    data->fixture = f;
    /* This request's context comes from its own _meta only. */
    data->scoped = meta && strstr(meta, "\"test/scope\":\"notes\"") != NULL;
    if (data->scoped) {
        OK(rcip_host_set_context(rcip_runtime_host(runtime), "{\"activeScopeIds\":[\"notes\"]}"));
    }
    atomic_fetch_add(&f->built, 1);
    atomic_store(&f->last_host, rcip_runtime_host(runtime));
    if (rcip_mcp_request_setup_accept(setup, runtime, data, request_data_free) != RCIP_RESULT_OK) {
        free(data); /* never released by the library after a failed accept */
        return 1;
    }
    return 0;
}

static char *modern_call(int id, bool scoped)
{
    char *text = malloc(512);
    snprintf(text, 512,
             "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"ctx.read\","
             "\"arguments\":{},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\","
             "\"io.modelcontextprotocol/clientCapabilities\":{}%s}}}",
             id, scoped ? ",\"test/scope\":\"notes\"" : "");
    return text;
}

static bool has_context(const char *answer, bool scoped)
{
    return answer &&
           strstr(answer, scoped ? "\"context\":{\"activeScopeIds\":[\"notes\"]}" : "\"context\":{\"activeScopeIds\":[]}");
}

static rcip_runtime *session_runtime(const rcip_catalog *catalog)
{
    rcip_runtime_builder *b = NULL;
    rcip_runtime *runtime = NULL;
    OK(rcip_runtime_builder_new(catalog, &b));
    OK(rcip_runtime_builder_build(b, &runtime));
    return runtime;
}

/* ----- without workers: every reply before receive returns ------------------ */

static void inline_requests(const rcip_catalog *catalog)
{
    struct outbox box = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct fixture f = {.catalog = catalog};
    rcip_runtime *runtime = session_runtime(catalog);
    rcip_mcp_session *session = NULL;
    OK(rcip_mcp_session_new(runtime, "{\"workers\":0,\"eras\":\"both\"}", collect, &box, NULL, &session));

    /* Misuse: refused, nothing kept, nothing released. */
    CHECK(rcip_mcp_session_set_request_runtimes(session, NULL, &f, factory_free) == RCIP_RESULT_NULL_ARGUMENT,
          "a NULL factory");
    CHECK(rcip_mcp_session_set_request_runtimes(NULL, build_runtime, &f, factory_free) == RCIP_RESULT_NULL_ARGUMENT,
          "a NULL session");
    CHECK(rcip_mcp_request_setup_method(NULL) == NULL && rcip_mcp_request_setup_meta(NULL) == NULL &&
              rcip_mcp_request_setup_headers(NULL) == NULL && rcip_mcp_request_setup_header(NULL, "a") == NULL,
          "accessors of NULL are NULL");
    CHECK(rcip_mcp_request_setup_accept(NULL, NULL, NULL, NULL) == RCIP_RESULT_NULL_ARGUMENT, "accept NULL");
    CHECK(atomic_load(&f.factory_freed) == 0, "a failed registration releases nothing");

    OK(rcip_mcp_session_set_request_runtimes(session, build_runtime, &f, factory_free));

    /* Request 1 sets a context in its runtime; request 2 must not see it. */
    char *first = modern_call(1, true);
    OK(rcip_mcp_session_receive_with_headers(session, first, "{\"X-Tenant\":\"t1\"}"));
    char *second = modern_call(2, false);
    OK(rcip_mcp_session_receive(session, second));
    CHECK(has_context(answer_to(&box, 1), true), "request 1 ran on its runtime with its context");
    CHECK(has_context(answer_to(&box, 2), false), "request 2 did not see request 1's context");
    CHECK(atomic_load(&f.built) == 2, "one runtime per request");
    CHECK(atomic_load(&f.saw_tenant) == 1 && atomic_load(&f.saw_headers) == 1, "request 1's headers");
    CHECK(atomic_load(&f.saw_no_headers) == 1, "request 2 had none");
    CHECK(atomic_load(&f.bad_method) == 0, "the method is tools/call");
    CHECK(atomic_load(&f.request_data_freed) == 2, "each request's data released once, with its response");
    /* The ended request's runtime is closed but still at its address: a
     * view taken during the request answers CLOSED (valgrind sees any
     * read of freed memory here). */
    CHECK(rcip_host_refresh(atomic_load(&f.last_host)) == RCIP_RESULT_CLOSED, "an ended request's runtime is closed");

    /* A legacy request never reaches the factory. */
    OK(rcip_mcp_session_receive(session, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":"
                                         "{\"protocolVersion\":\"2025-11-25\",\"capabilities\":{}}}"));
    CHECK(answer_to(&box, 3) && strstr(answer_to(&box, 3), "\"protocolVersion\":\"2025-11-25\""), "legacy initialize");
    CHECK(atomic_load(&f.built) == 2, "initialize builds nothing");

    /* Headers of the wrong shape: refused, the message not received. */
    CHECK(rcip_mcp_session_receive_with_headers(session, second, "[1]") == RCIP_RESULT_INVALID_ARGUMENT, "headers array");
    CHECK(rcip_mcp_session_receive_with_headers(session, second, "{") == RCIP_RESULT_INVALID_JSON, "headers not JSON");
    CHECK(rcip_mcp_session_receive_with_headers(NULL, second, NULL) == RCIP_RESULT_NULL_ARGUMENT, "NULL session");
    CHECK(atomic_load(&f.built) == 2, "refused messages build nothing");

    /* Replacing the factory releases the old one's data once; that release
     * registers a third factory, which replaces (and releases) the second. */
    f.session = session;
    atomic_store(&f.reenter, true);
    OK(rcip_mcp_session_set_request_runtimes(session, build_runtime, &f, factory_free));
    CHECK(atomic_load(&f.factory_freed) == 2, "the replaced factories' data released once each");

    /* A refusing factory: -32603 for that request, nothing built. */
    atomic_store(&f.refuse, true);
    char *fourth = modern_call(4, false);
    OK(rcip_mcp_session_receive(session, fourth));
    const char *refused = answer_to(&box, 4);
    CHECK(refused && strstr(refused, "\"code\":-32603"), "a refusal answers -32603");
    CHECK(atomic_load(&f.refusals) == 1 && atomic_load(&f.built) == 2, "refused once, nothing built");

    rcip_mcp_session_free(session);
    CHECK(atomic_load(&f.factory_freed) == 3, "the last factory's data released once at the session's free");
    CHECK(atomic_load(&f.request_data_freed) == 2, "no request data released twice");
    rcip_runtime_free(runtime);
    free(first);
    free(second);
    free(fourth);
    outbox_clear(&box);
}

/* ----- with workers: the factory runs on the session's threads --------------- */

#define WORKER_REQUESTS 12

static void worker_requests(const rcip_catalog *catalog)
{
    struct outbox box = {.lock = PTHREAD_MUTEX_INITIALIZER};
    struct fixture f = {.catalog = catalog};
    rcip_runtime *runtime = session_runtime(catalog);
    rcip_mcp_session *session = NULL;
    OK(rcip_mcp_session_new(runtime, "{\"workers\":3,\"eras\":\"modern\"}", collect, &box, NULL, &session));
    OK(rcip_mcp_session_set_request_runtimes(session, build_runtime, &f, factory_free));
    for (int id = 1; id <= WORKER_REQUESTS; id++) {
        char *call = modern_call(id, id % 2 == 1);
        OK(rcip_mcp_session_receive(session, call));
        free(call);
    }
    wait_for(&box, WORKER_REQUESTS);
    CHECK(outbox_count(&box) == WORKER_REQUESTS, "every request answered");
    for (int id = 1; id <= WORKER_REQUESTS; id++) {
        CHECK(has_context(answer_to(&box, id), id % 2 == 1), "each request saw only its own context");
    }
    CHECK(atomic_load(&f.built) == WORKER_REQUESTS, "one runtime per request");
    rcip_mcp_session_free(session);
    CHECK(atomic_load(&f.request_data_freed) == WORKER_REQUESTS, "each request's data released once");
    CHECK(atomic_load(&f.factory_freed) == 1, "the factory's data released once");
    rcip_runtime_free(runtime);
    outbox_clear(&box);
}

int main(void)
{
    rcip_catalog *catalog = NULL;
    OK(rcip_catalog_new(CATALOG, &catalog));
    if (!catalog) {
        return 1;
    }
    inline_requests(catalog);
    worker_requests(catalog);
    rcip_catalog_free(catalog);
    if (atomic_load(&failures)) {
        fprintf(stderr, "request_runtimes: %d check(s) failed\n", atomic_load(&failures));
        return 1;
    }
    printf("request_runtimes: ok\n");
    return 0;
}
