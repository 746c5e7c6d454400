/*
 * capi.c: issue 18, items 1 to 3, from C (run under ASan and valgrind by
 * `make test-asan` and `make valgrind-c`).
 *
 *   1. a policy reads its request through accessors and answers in plain
 *      calls; a reason that needs escaping arrives intact; the default
 *      policy's decision on request;
 *   2. outcomes read as records (status, error code and message, issues),
 *      the record kept past the callback that lent the text;
 *   3. pending outcomes: a worker thread settles while the main thread
 *      waits; a pending freed before its outcome (the outcome goes to
 *      nobody, nothing leaks); a ready callback that outlives its handle
 *      and whose user data is released once; a wait inside a handler of
 *      the same runtime answers WRONG_CONTEXT instead of deadlocking.
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcip.h"

static const char *CATALOG =
    "{\"protocolVersion\": \"1.0\","
    " \"application\": {\"id\": \"t\", \"name\": \"T\", \"description\": \"Test.\"},"
    " \"scopes\": [{\"id\": \"ward\", \"title\": \"Ward\", \"description\": \"W.\"}],"
    " \"capabilities\": ["
    "  {\"id\": \"a.read\", \"title\": \"R\", \"description\": \"Reads.\", \"scopeIds\": [\"ward\"], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\", \"properties\": {\"n\": {\"type\": \"integer\"}}},"
    "   \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"a.write\", \"title\": \"W\", \"description\": \"Writes.\", \"scopeIds\": [], \"effect\": \"write\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"a.slow\", \"title\": \"S\", \"description\": \"Slow.\", \"scopeIds\": [], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"a.nested\", \"title\": \"N\", \"description\": \"Waits inside.\", \"scopeIds\": [], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}}]}";

static int failures = 0;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "capi: check failed at line %d: %s\n", __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int same(const char *a, const char *b) {
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *REASON = "ward \"B\" is locked\nuntil 9:00 \\ \xc3\xa9";

/* ----- item 1 ----- */

static int policy_checks = 0;

static void policy(void *user_data, rcip_policy_request *req) {
    (void)user_data;
    const char *cap = rcip_policy_request_capability_id(req);
    CHECK(same(rcip_policy_request_phase(req), "invoke") || same(rcip_policy_request_phase(req), "preflight"));
    CHECK(rcip_policy_request_scope_is_active(req, "ward"));
    CHECK(!rcip_policy_request_scope_is_active(req, "nowhere"));
    CHECK(same(rcip_policy_request_primary_scope_id(req), "ward"));
    CHECK(rcip_policy_request_input(req) != NULL && rcip_policy_request_capability(req) != NULL);
    if (same(cap, "a.write")) {
        CHECK(same(rcip_policy_request_effect(req), "write"));
        CHECK(!rcip_policy_request_is_confirmed(req));
        CHECK(rcip_policy_request_deny(req, REASON) == RCIP_RESULT_OK);
    } else {
        CHECK(same(rcip_policy_request_effect(req), "read"));
        CHECK(rcip_policy_request_decide_default(req) == RCIP_RESULT_OK);
    }
    CHECK(rcip_policy_request_allow(req) == RCIP_RESULT_ALREADY_COMPLETED);
    policy_checks++;
    rcip_policy_request_free(req);
}

/* ----- handlers ----- */

static void complete(void *user_data, rcip_invocation *inv) {
    (void)user_data;
    CHECK(rcip_invocation_complete(inv, "{\"done\": true}") == RCIP_RESULT_OK);
    rcip_invocation_free(inv);
}

/* Keeps the invocation for a worker thread (user data: the slot). */
static void hold(void *user_data, rcip_invocation *inv) {
    *(rcip_invocation **)user_data = inv;
}

/* The pending the nested handler waits on. */
static rcip_pending *nested_target = NULL;
static rcip_result nested_answer = RCIP_RESULT_OK;

static void wait_inside(void *user_data, rcip_invocation *inv) {
    (void)user_data;
    char *json = NULL;
    nested_answer = rcip_pending_wait(nested_target, 2000, &json); /* without the rule: TIMED_OUT */
    CHECK(json == NULL);
    CHECK(rcip_invocation_complete(inv, "{}") == RCIP_RESULT_OK);
    rcip_invocation_free(inv);
}

static void *settle_later(void *arg) {
    rcip_invocation *inv = arg;
    struct timespec ts = {0, 20 * 1000000L};
    nanosleep(&ts, NULL);
    CHECK(rcip_invocation_complete(inv, "{\"late\": 1}") == RCIP_RESULT_OK);
    rcip_invocation_free(inv);
    return NULL;
}

/* ----- item 3: a ready callback ----- */

static int ready_calls = 0, ready_frees = 0;
static char *ready_text = NULL;

static void on_ready(void *user_data, const char *json) {
    (void)user_data;
    ready_calls++;
    /* Kept past the callback as a record (item 2). */
    rcip_record *r = NULL;
    CHECK(rcip_record_parse(json, &r) == RCIP_RESULT_OK);
    ready_text = r ? strdup(rcip_record_status(r)) : NULL;
    rcip_record_free(r);
}

static void on_ready_free(void *user_data) {
    (void)user_data;
    ready_frees++;
}

static rcip_pending *invoke(const rcip_client *client, const char *cap, const char *input) {
    rcip_pending *p = NULL;
    CHECK(rcip_client_invoke_pending(client, cap, input, NULL, NULL, &p) == RCIP_RESULT_OK);
    return p;
}

static rcip_record *take(rcip_pending *p, uint64_t timeout_ms) {
    char *json = NULL;
    rcip_record *r = NULL;
    CHECK(rcip_pending_wait(p, timeout_ms, &json) == RCIP_RESULT_OK);
    if (json) {
        CHECK(rcip_record_parse(json, &r) == RCIP_RESULT_OK);
        rcip_string_free(json);
    }
    rcip_pending_free(p);
    return r;
}

int main(void) {
    rcip_catalog *catalog = NULL;
    rcip_runtime_builder *builder = NULL;
    rcip_runtime *runtime = NULL;
    CHECK(rcip_catalog_new(CATALOG, &catalog) == RCIP_RESULT_OK);
    CHECK(rcip_runtime_builder_new(catalog, &builder) == RCIP_RESULT_OK);
    CHECK(rcip_runtime_builder_set_policy(builder, policy, NULL, NULL) == RCIP_RESULT_OK);
    CHECK(rcip_runtime_builder_build(builder, &runtime) == RCIP_RESULT_OK);
    if (!runtime) {
        return 1;
    }
    const rcip_host *host = rcip_runtime_host(runtime);
    const rcip_client *client = rcip_runtime_client(runtime);
    rcip_invocation *held = NULL;
    rcip_binding *b[4] = {NULL};
    CHECK(rcip_host_bind(host, "a.read", complete, NULL, NULL, NULL, &b[0]) == RCIP_RESULT_OK);
    CHECK(rcip_host_bind(host, "a.write", complete, NULL, NULL, NULL, &b[1]) == RCIP_RESULT_OK);
    CHECK(rcip_host_bind(host, "a.slow", hold, NULL, &held, NULL, &b[2]) == RCIP_RESULT_OK);
    CHECK(rcip_host_bind(host, "a.nested", wait_inside, NULL, NULL, NULL, &b[3]) == RCIP_RESULT_OK);
    CHECK(rcip_host_set_context(host, "{\"activeScopeIds\": [\"ward\"], \"primaryScopeId\": \"ward\"}") ==
          RCIP_RESULT_OK);

    /* Items 1 and 2: deny with a reason that needs escaping. */
    rcip_record *r = take(invoke(client, "a.write", "{}"), 1000);
    CHECK(same(rcip_record_status(r), "denied"));
    CHECK(same(rcip_record_error_code(r), "POLICY_DENIED"));
    CHECK(same(rcip_record_error_message(r), REASON));
    rcip_record_free(r);
    /* The default policy allows a read; the record's output. */
    r = take(invoke(client, "a.read", "{}"), 1000);
    CHECK(same(rcip_record_status(r), "succeeded"));
    CHECK(same(rcip_record_output(r), "{\"done\":true}"));
    rcip_record_free(r);
    /* Validation issues (no policy call). */
    r = take(invoke(client, "a.read", "{\"n\": \"x\"}"), 1000);
    CHECK(same(rcip_record_error_code(r), "INPUT_INVALID"));
    CHECK(rcip_record_issue_count(r) == 1);
    CHECK(same(rcip_record_issue_path(r, 0), "/n"));
    CHECK(same(rcip_record_issue_keyword(r, 0), "type"));
    CHECK(rcip_record_issue_message(r, 1) == NULL);
    rcip_record_free(r);
    CHECK(policy_checks == 2);

    /* Item 3: a worker settles while this thread waits. */
    rcip_pending *p = invoke(client, "a.slow", "{}");
    char *json = NULL;
    CHECK(rcip_pending_wait(p, 1, &json) == RCIP_RESULT_TIMED_OUT);
    pthread_t worker;
    pthread_create(&worker, NULL, settle_later, held);
    held = NULL;
    r = take(p, RCIP_WAIT_FOREVER);
    pthread_join(worker, NULL);
    CHECK(same(rcip_record_output(r), "{\"late\":1}"));
    rcip_record_free(r);

    /* Freed before its outcome: settled later by a worker, goes to nobody. */
    p = invoke(client, "a.slow", "{}");
    rcip_pending_free(p);
    pthread_create(&worker, NULL, settle_later, held);
    held = NULL;
    pthread_join(worker, NULL);

    /* A callback that outlives its handle. */
    p = invoke(client, "a.slow", "{}");
    CHECK(rcip_pending_on_ready(p, on_ready, NULL, on_ready_free) == RCIP_RESULT_OK);
    CHECK(rcip_pending_on_ready(p, on_ready, NULL, on_ready_free) == RCIP_RESULT_ALREADY_USED);
    CHECK(rcip_pending_wait(p, 0, &json) == RCIP_RESULT_ALREADY_USED);
    rcip_pending_free(p);
    pthread_create(&worker, NULL, settle_later, held);
    held = NULL;
    pthread_join(worker, NULL);
    CHECK(ready_calls == 1 && ready_frees == 1);
    CHECK(same(ready_text, "succeeded"));
    free(ready_text);

    /* A wait inside a handler of the same runtime: WRONG_CONTEXT. */
    nested_target = invoke(client, "a.slow", "{}");
    r = take(invoke(client, "a.nested", "{}"), 1000);
    CHECK(nested_answer == RCIP_RESULT_WRONG_CONTEXT);
    CHECK(same(rcip_record_status(r), "succeeded"));
    rcip_record_free(r);
    /* The runtime's free ends the held invocation: the pending gets the
     * teardown outcome and stays valid until freed. */
    rcip_runtime_free(runtime);
    r = take(nested_target, 1000);
    CHECK(same(rcip_record_error_code(r), "EXECUTION_ABORTED"));
    rcip_record_free(r);
    rcip_invocation_free(held);

    for (int i = 0; i < 4; i++) {
        rcip_binding_free(b[i]);
    }
    rcip_catalog_free(catalog);
    if (failures) {
        fprintf(stderr, "capi: %d check(s) failed\n", failures);
        return 1;
    }
    printf("capi: ok\n");
    return 0;
}
