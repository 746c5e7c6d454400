/*
 * clinic.c: a clinic-style host with no JSON parser of its own.
 *
 * What a real host does, written against the header only:
 *   - a custom policy that reads its request through accessors
 *     (capability id, effect, active scopes), answers with plain calls
 *     (deny and confirm with a reason in plain text: rcip escapes it) and
 *     hands every other capability to the default policy;
 *   - a confirmation callback that reads its notice as a record and hands
 *     the confirmation to a "nurse" thread, which approves or declines it
 *     and waits for the outcome there;
 *   - handlers that pass their invocation to a worker thread, which
 *     settles it later; the consumer waits for the outcome with a timeout
 *     (rcip_pending_wait) instead of a condition variable of its own;
 *   - cancellation: the consumer cancels a long scan once the worker says
 *     it has started, and the worker stops when it sees the cancellation;
 *   - a preflight of a batch, read entry by entry;
 *   - lifecycle events counted by phase.
 * Every outcome is read with rcip_record_* calls; the JSON stays available
 * for logging. The program checks each outcome and exits 1 on a mismatch,
 * so `make test` runs it (also under ASan and valgrind).
 *
 * Ownership patterns shown: pending handles (freed after their outcome is
 * taken), records (freed after reading; an entry of a report lives as long
 * as the report), completion handles handed to another thread (settled and
 * freed there; this thread does not touch them after the hand-over).
 */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcip.h"

static const char *CATALOG =
    "{\"protocolVersion\": \"1.0\","
    " \"application\": {\"id\": \"clinic\", \"name\": \"Clinic\", \"description\": \"A ward's tools.\"},"
    " \"scopes\": [{\"id\": \"ward\", \"title\": \"Ward\", \"description\": \"The ward overview.\"},"
    "              {\"id\": \"icu\", \"title\": \"ICU\", \"description\": \"Intensive care.\", \"parentId\": \"ward\"}],"
    " \"capabilities\": ["
    "  {\"id\": \"patients.list\", \"title\": \"List patients\", \"description\": \"Lists the ward's patients.\","
    "   \"scopeIds\": [\"ward\"], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\", \"properties\": {\"limit\": {\"type\": \"integer\", \"minimum\": 1}},"
    "                     \"additionalProperties\": false},"
    "   \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"labs.fetch\", \"title\": \"Fetch lab results\", \"description\": \"Fetches results from the lab.\","
    "   \"scopeIds\": [\"ward\"], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"imaging.scan\", \"title\": \"Search imaging\", \"description\": \"Searches the imaging archive.\","
    "   \"scopeIds\": [], \"effect\": \"read\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"orders.send\", \"title\": \"Send order\", \"description\": \"Sends an order to the pharmacy.\","
    "   \"scopeIds\": [\"icu\"], \"effect\": \"external\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}},"
    "  {\"id\": \"records.delete\", \"title\": \"Delete record\", \"description\": \"Deletes a patient record.\","
    "   \"scopeIds\": [\"ward\"], \"effect\": \"destructive\","
    "   \"inputSchema\": {\"type\": \"object\"}, \"outputSchema\": {\"type\": \"object\"}}]}";

/* Most time a wait may take before the program calls it a failure. */
#define WAIT_MS 10000

static int failures = 0;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "clinic: expectation failed (%s:%d): ", __FILE__, __LINE__);           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static bool ok(rcip_result rc, const char *what) {
    if (rc != RCIP_RESULT_OK) {
        const char *detail = rcip_last_error_message();
        fprintf(stderr, "clinic: %s failed: %s (%s)\n", what, rcip_result_str(rc), detail ? detail : "");
        failures++;
        return false;
    }
    return true;
}

static bool same(const char *a, const char *b) {
    return a != NULL && b != NULL && strcmp(a, b) == 0;
}

static const char *or_none(const char *s) {
    return s ? s : "-";
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ----- a small blocking queue of pointers (worker jobs, confirmations) ----- */

#define QUEUE_CAP 16

typedef struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    void *items[QUEUE_CAP];
    size_t head, len;
    bool closed;
} queue;

static void queue_init(queue *q) {
    pthread_mutex_init(&q->lock, NULL);
    pthread_cond_init(&q->changed, NULL);
    q->head = q->len = 0;
    q->closed = false;
}

static void queue_push(queue *q, void *item) {
    pthread_mutex_lock(&q->lock);
    if (q->len < QUEUE_CAP) {
        q->items[(q->head + q->len) % QUEUE_CAP] = item;
        q->len++;
    }
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

/* The next item, or NULL once the queue is closed and empty. */
static void *queue_pop(queue *q) {
    void *item = NULL;
    pthread_mutex_lock(&q->lock);
    while (q->len == 0 && !q->closed) {
        pthread_cond_wait(&q->changed, &q->lock);
    }
    if (q->len > 0) {
        item = q->items[q->head];
        q->head = (q->head + 1) % QUEUE_CAP;
        q->len--;
    }
    pthread_mutex_unlock(&q->lock);
    return item;
}

static void queue_close(queue *q) {
    pthread_mutex_lock(&q->lock);
    q->closed = true;
    pthread_cond_broadcast(&q->changed);
    pthread_mutex_unlock(&q->lock);
}

static void queue_destroy(queue *q) {
    pthread_mutex_destroy(&q->lock);
    pthread_cond_destroy(&q->changed);
}

/* ----- the clinic's state -------------------------------------------------- */

typedef struct {
    const rcip_host *host;
    queue jobs;          /* rcip_invocation * for the worker thread */
    queue confirmations; /* char * confirmation ids for the nurse (malloc'd copies) */
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool scan_started;   /* the worker has started the imaging scan */
    int approve_next;    /* the nurse's next answers: 1 approve, 0 decline */
    int nurse_answers[4];
    int nurse_count;
    char nurse_outcomes[4][32]; /* the resolved outcome's status or error code */
    int events_by_phase[8];
} clinic;

static const char *PHASES[8] = {"requested", "started", "succeeded", "failed", "denied",
                                "confirmation_requested", "confirmation_declined", NULL};

/* ----- policy: reads the request, answers in plain calls ------------------ */

static void clinic_policy(void *user_data, rcip_policy_request *request) {
    (void)user_data;
    const char *capability = rcip_policy_request_capability_id(request);
    rcip_result rc;
    if (same(capability, "orders.send")) {
        /* Orders leave the building: only from the ICU view, and a nurse
         * confirms each one (the re-run after approval is allowed). */
        if (!rcip_policy_request_scope_is_active(request, "icu")) {
            rc = rcip_policy_request_deny(request, "orders are sent from the \"ICU\" view only");
        } else if (rcip_policy_request_is_confirmed(request)) {
            rc = rcip_policy_request_allow(request);
        } else {
            rc = rcip_policy_request_confirm(request, "Send this order to the pharmacy?");
        }
    } else if (same(capability, "records.delete") && !rcip_policy_request_is_confirmed(request)) {
        rc = rcip_policy_request_confirm(request, "Delete the record? This cannot be undone.");
    } else {
        /* Everything else: the default policy (read allow, confirmed allow,
         * destructive confirm, write and external deny). */
        rc = rcip_policy_request_decide_default(request);
    }
    ok(rc, "policy decision");
    rcip_policy_request_free(request);
}

/* ----- confirmation callback: hands each opened confirmation to the nurse -- */

static void on_confirmation(void *user_data, const char *notice_json) {
    clinic *c = user_data;
    rcip_record *notice = NULL;
    if (!ok(rcip_record_parse(notice_json, &notice), "read notice")) {
        return;
    }
    if (same(rcip_record_notice_kind(notice), "opened")) {
        const char *id = rcip_record_confirmation_id(notice);
        size_t n = strlen(id) + 1;
        char *copy = malloc(n);
        if (copy) {
            memcpy(copy, id, n);
            queue_push(&c->confirmations, copy);
        }
    } else {
        printf("confirmation %s closed: %s\n", or_none(rcip_record_confirmation_id(notice)),
               or_none(rcip_record_reason(notice)));
    }
    rcip_record_free(notice);
}

/* The nurse: resolves each confirmation and waits for its outcome on this
 * thread (not inside a callback, so waiting is allowed). */
static void *nurse_main(void *arg) {
    clinic *c = arg;
    char *id;
    while ((id = queue_pop(&c->confirmations)) != NULL) {
        pthread_mutex_lock(&c->lock);
        bool approve = c->approve_next != 0;
        pthread_mutex_unlock(&c->lock);
        rcip_pending *pending = NULL;
        char *json = NULL;
        if (ok(rcip_host_resolve_confirmation_pending(c->host, id, approve, &pending), "resolve") &&
            ok(rcip_pending_wait(pending, WAIT_MS, &json), "wait for the resolution")) {
            rcip_record *outcome = NULL;
            if (ok(rcip_record_parse(json, &outcome), "read outcome")) {
                const char *code = rcip_record_error_code(outcome);
                const char *what = code ? code : rcip_record_status(outcome);
                printf("nurse %s %s: %s\n", approve ? "approved" : "declined", id, what);
                pthread_mutex_lock(&c->lock);
                if (c->nurse_count < 4) {
                    snprintf(c->nurse_outcomes[c->nurse_count], sizeof c->nurse_outcomes[0], "%s", what);
                    c->nurse_answers[c->nurse_count] = approve;
                    c->nurse_count++;
                }
                pthread_cond_broadcast(&c->changed);
                pthread_mutex_unlock(&c->lock);
                rcip_record_free(outcome);
            }
            rcip_string_free(json);
        }
        rcip_pending_free(pending);
        free(id);
    }
    return NULL;
}

/* ----- handlers and the worker thread -------------------------------------- */

static void list_patients(void *user_data, rcip_invocation *invocation) {
    (void)user_data;
    ok(rcip_invocation_complete(invocation, "{\"patients\": [\"Ada\", \"Grace\"]}"), "complete list");
    rcip_invocation_free(invocation);
}

/* Deferred handlers: the invocation goes to the worker thread; this thread
 * does not touch the handle after the hand-over. */
static void to_worker(void *user_data, rcip_invocation *invocation) {
    clinic *c = user_data;
    queue_push(&c->jobs, invocation);
}

static void *worker_main(void *arg) {
    clinic *c = arg;
    rcip_invocation *invocation;
    while ((invocation = queue_pop(&c->jobs)) != NULL) {
        const char *capability = rcip_invocation_capability_id(invocation);
        if (same(capability, "imaging.scan")) {
            const rcip_cancel_token *token = rcip_invocation_cancel_token(invocation);
            pthread_mutex_lock(&c->lock);
            c->scan_started = true;
            pthread_cond_broadcast(&c->changed);
            pthread_mutex_unlock(&c->lock);
            /* Scans until it sees the cancellation (bounded: about 10 s). */
            int steps = 0;
            while (!rcip_cancel_token_is_cancelled(token) && steps < 1000) {
                sleep_ms(10);
                steps++;
            }
            ok(rcip_invocation_fail(invocation, rcip_cancel_token_is_cancelled(token)), "fail scan");
        } else {
            sleep_ms(20); /* the lab answers */
            ok(rcip_invocation_complete(invocation, "{\"potassium\": 4.1, \"unit\": \"mmol/L\"}"), "complete labs");
        }
        rcip_invocation_free(invocation);
    }
    return NULL;
}

/* ----- events ----------------------------------------------------------------- */

static void on_event(void *user_data, const char *event_json) {
    clinic *c = user_data;
    rcip_record *event = NULL;
    if (rcip_record_parse(event_json, &event) != RCIP_RESULT_OK) {
        return;
    }
    const char *phase = rcip_record_phase(event);
    pthread_mutex_lock(&c->lock);
    for (int i = 0; PHASES[i] != NULL; i++) {
        if (same(phase, PHASES[i])) {
            c->events_by_phase[i]++;
        }
    }
    pthread_mutex_unlock(&c->lock);
    rcip_record_free(event);
}

/* ----- the consumer side ------------------------------------------------------ */

/* Invokes and waits for the outcome; returns the record (free it), or NULL. */
static rcip_record *invoke_and_wait(const rcip_client *client, const char *capability, const char *input,
                                    const rcip_cancel_token *token) {
    rcip_pending *pending = NULL;
    char *json = NULL;
    rcip_record *outcome = NULL;
    if (ok(rcip_client_invoke_pending(client, capability, input, NULL, token, &pending), "invoke") &&
        ok(rcip_pending_wait(pending, WAIT_MS, &json), "wait for the outcome")) {
        ok(rcip_record_parse(json, &outcome), "read outcome");
        rcip_string_free(json);
    }
    rcip_pending_free(pending);
    return outcome;
}

/* Waits until the nurse has resolved `count` confirmations. */
static void wait_for_nurse(clinic *c, int count) {
    pthread_mutex_lock(&c->lock);
    while (c->nurse_count < count) {
        pthread_cond_wait(&c->changed, &c->lock);
    }
    pthread_mutex_unlock(&c->lock);
}

static void print_outcome(const char *label, const rcip_record *o) {
    printf("%-16s %s", label, or_none(rcip_record_status(o)));
    if (rcip_record_error_code(o)) {
        printf(" %s: %s", rcip_record_error_code(o), or_none(rcip_record_error_message(o)));
    }
    if (rcip_record_output(o)) {
        printf(" %s", rcip_record_output(o));
    }
    printf("\n");
}

static void run(clinic *c, const rcip_runtime *runtime) {
    const rcip_client *client = rcip_runtime_client(runtime);
    const rcip_host *host = rcip_runtime_host(runtime);
    ok(rcip_host_set_context(host, "{\"activeScopeIds\": [\"ward\"], \"primaryScopeId\": \"ward\"}"),
       "set context");

    /* Preflight the morning round before running any of it. */
    const char *ids[4] = {"patients.list", "orders.send", "records.delete", "patients.list"};
    const char *inputs[4] = {"{\"limit\": 5}", "{}", "{}", "{\"limit\": 0}"};
    rcip_pending *pre = NULL;
    char *report_json = NULL;
    if (ok(rcip_client_preflight_pending(client, ids, inputs, 4, NULL, &pre), "preflight") &&
        ok(rcip_pending_wait(pre, WAIT_MS, &report_json), "wait for the report")) {
        rcip_record *report = NULL;
        if (ok(rcip_record_parse(report_json, &report), "read report")) {
            EXPECT(rcip_record_entry_count(report) == 4, "4 entries");
            const char *want[4] = {"ready", "blocked", "confirmation_required", "blocked"};
            for (size_t i = 0; i < rcip_record_entry_count(report); i++) {
                const rcip_record *e = rcip_record_entry(report, i);
                printf("preflight %-15s %s %s\n", rcip_record_capability_id(e), rcip_record_status(e),
                       or_none(rcip_record_error_code(e) ? rcip_record_error_code(e) : rcip_record_reason(e)));
                EXPECT(same(rcip_record_status(e), want[i]), "entry %zu is %s", i, want[i]);
            }
            const rcip_record *bad = rcip_record_entry(report, 3);
            EXPECT(same(rcip_record_error_code(bad), "INPUT_INVALID") && rcip_record_issue_count(bad) == 1 &&
                       same(rcip_record_issue_path(bad, 0), "/limit") &&
                       same(rcip_record_issue_keyword(bad, 0), "minimum"),
                   "the invalid limit is reported at /limit (minimum)");
            EXPECT(same(rcip_record_error_message(rcip_record_entry(report, 1)),
                        "orders are sent from the \"ICU\" view only"),
                   "the policy's reason, escaped by rcip");
            rcip_record_free(report);
        }
        rcip_string_free(report_json);
    }
    rcip_pending_free(pre);

    /* A synchronous handler, then one a worker thread settles. */
    rcip_record *o = invoke_and_wait(client, "patients.list", "{\"limit\": 5}", NULL);
    if (o) {
        print_outcome("patients.list", o);
        EXPECT(same(rcip_record_status(o), "succeeded"), "list succeeds");
        rcip_record_free(o);
    }
    o = invoke_and_wait(client, "labs.fetch", "{}", NULL);
    if (o) {
        print_outcome("labs.fetch", o);
        EXPECT(same(rcip_record_output(o), "{\"potassium\":4.1,\"unit\":\"mmol/L\"}"), "the worker's output");
        rcip_record_free(o);
    }

    /* A destructive call: the consumer sees confirmation_required; the nurse
     * approves from her thread and sees the re-run succeed. */
    pthread_mutex_lock(&c->lock);
    c->approve_next = 1;
    pthread_mutex_unlock(&c->lock);
    o = invoke_and_wait(client, "records.delete", "{\"record\": 17}", NULL);
    if (o) {
        int64_t expires_at = 0;
        print_outcome("records.delete", o);
        EXPECT(same(rcip_record_status(o), "confirmation_required"), "delete needs a confirmation");
        EXPECT(rcip_record_confirmation_id(o) != NULL && rcip_record_expires_at(o, &expires_at) && expires_at > 0,
               "a confirmation id and expiry");
        rcip_record_free(o);
    }
    wait_for_nurse(c, 1);

    /* Orders from the ward view: denied with the policy's reason. */
    o = invoke_and_wait(client, "orders.send", "{\"drug\": \"KCl\"}", NULL);
    if (o) {
        print_outcome("orders.send", o);
        EXPECT(same(rcip_record_error_code(o), "POLICY_DENIED"), "orders denied outside the ICU view");
        rcip_record_free(o);
    }
    /* From the ICU view: confirm; the nurse declines this one. */
    ok(rcip_host_set_context(host, "{\"activeScopeIds\": [\"ward\", \"icu\"], \"primaryScopeId\": \"icu\"}"),
       "set context");
    pthread_mutex_lock(&c->lock);
    c->approve_next = 0;
    pthread_mutex_unlock(&c->lock);
    o = invoke_and_wait(client, "orders.send", "{\"drug\": \"KCl\"}", NULL);
    if (o) {
        print_outcome("orders.send", o);
        EXPECT(same(rcip_record_status(o), "confirmation_required"), "orders confirmed from the ICU view");
        rcip_record_free(o);
    }
    wait_for_nurse(c, 2);
    pthread_mutex_lock(&c->lock);
    EXPECT(same(c->nurse_outcomes[0], "succeeded"), "the approved delete ran");
    EXPECT(same(c->nurse_outcomes[1], "CONFIRMATION_DECLINED"), "the declined order did not");
    pthread_mutex_unlock(&c->lock);

    /* Cancellation: cancel the scan once the worker reports it started. */
    rcip_cancel_token *token = NULL;
    rcip_pending *scan = NULL;
    if (ok(rcip_cancel_token_new(&token), "token") &&
        ok(rcip_client_invoke_pending(client, "imaging.scan", "{}", NULL, token, &scan), "invoke scan")) {
        pthread_mutex_lock(&c->lock);
        while (!c->scan_started) {
            pthread_cond_wait(&c->changed, &c->lock);
        }
        pthread_mutex_unlock(&c->lock);
        char *json = NULL;
        EXPECT(rcip_pending_wait(scan, 0, &json) == RCIP_RESULT_TIMED_OUT, "the scan is still running");
        ok(rcip_cancel_token_cancel(token), "cancel");
        if (ok(rcip_pending_wait(scan, WAIT_MS, &json), "wait for the scan")) {
            rcip_record *r = NULL;
            if (ok(rcip_record_parse(json, &r), "read outcome")) {
                print_outcome("imaging.scan", r);
                EXPECT(same(rcip_record_error_code(r), "EXECUTION_ABORTED"), "the cancelled scan aborts");
                rcip_record_free(r);
            }
            rcip_string_free(json);
        }
    }
    rcip_pending_free(scan);
    rcip_cancel_token_free(token);
}

int main(void) {
    clinic c;
    memset(&c, 0, sizeof c);
    queue_init(&c.jobs);
    queue_init(&c.confirmations);
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.changed, NULL);

    rcip_catalog *catalog = NULL;
    rcip_runtime_builder *builder = NULL;
    rcip_runtime *runtime = NULL;
    if (!ok(rcip_catalog_new(CATALOG, &catalog), "catalog") ||
        !ok(rcip_runtime_builder_new(catalog, &builder), "builder") ||
        !ok(rcip_runtime_builder_set_policy(builder, clinic_policy, NULL, NULL), "policy") ||
        !ok(rcip_runtime_builder_set_confirmation_callback(builder, on_confirmation, &c, NULL), "confirmations") ||
        !ok(rcip_runtime_builder_add_event_observer(builder, on_event, &c, NULL), "events") ||
        !ok(rcip_runtime_builder_build(builder, &runtime), "build")) {
        rcip_runtime_builder_free(builder);
        rcip_catalog_free(catalog);
        return 1;
    }
    c.host = rcip_runtime_host(runtime);

    const struct {
        const char *id;
        rcip_handler_callback handler;
    } binds[5] = {{"patients.list", list_patients},
                  {"labs.fetch", to_worker},
                  {"imaging.scan", to_worker},
                  {"orders.send", list_patients},
                  {"records.delete", list_patients}};
    rcip_binding *bindings[5] = {NULL};
    for (int i = 0; i < 5; i++) {
        ok(rcip_host_bind(c.host, binds[i].id, binds[i].handler, NULL, &c, NULL, &bindings[i]), "bind");
    }

    pthread_t worker, nurse;
    pthread_create(&worker, NULL, worker_main, &c);
    pthread_create(&nurse, NULL, nurse_main, &c);

    run(&c, runtime);

    /* Shut down: the threads finish their queues, then the runtime goes. */
    queue_close(&c.jobs);
    queue_close(&c.confirmations);
    pthread_join(worker, NULL);
    pthread_join(nurse, NULL);
    rcip_runtime_free(runtime);
    for (int i = 0; i < 5; i++) {
        rcip_binding_free(bindings[i]);
    }
    rcip_catalog_free(catalog);

    printf("events:");
    for (int i = 0; PHASES[i] != NULL; i++) {
        printf(" %s=%d", PHASES[i], c.events_by_phase[i]);
    }
    printf("\n");
    /* 6 invocations, and the approved delete's re-run. */
    EXPECT(c.events_by_phase[0] == 7, "7 requested events, saw %d", c.events_by_phase[0]);
    EXPECT(c.events_by_phase[5] == 2, "2 confirmations requested, saw %d", c.events_by_phase[5]);
    EXPECT(c.events_by_phase[6] == 1, "1 confirmation declined, saw %d", c.events_by_phase[6]);

    queue_destroy(&c.jobs);
    queue_destroy(&c.confirmations);
    pthread_mutex_destroy(&c.lock);
    pthread_cond_destroy(&c.changed);
    if (failures) {
        fprintf(stderr, "clinic: %d expectation(s) failed\n", failures);
        return 1;
    }
    printf("clinic: all outcomes as expected\n");
    return 0;
}
