/*
 * lifetimes.c: lifetimes and documented orders a C host relies on
 * (issue 18, items 4 and 5). Runs plain, under AddressSanitizer
 * (`make test-asan`) and under valgrind (`make valgrind-c`).
 *
 * 1. A binding's user data outlives deferred work: a worker thread holds an
 *    invocation of the binding while the host unbinds and frees the
 *    binding; the worker then reads the user data and settles. The user
 *    data is released only when that invocation is freed (a release at the
 *    unbind is a use-after-free under ASan and valgrind, and fails the
 *    checks below in a plain run). The same for the policy's user data and
 *    a policy request a worker holds while the runtime is freed.
 * 2. A confirmation resolved before its `opened` notice returned (inline
 *    from `opened`, from the consumer's outcome callback, from another
 *    thread, by cancelling its token, and with the runtime closed
 *    meanwhile): nothing of its ending reaches the confirmation callback
 *    before `opened` returned; `closed` comes before an approval's re-run
 *    (its events and its outcome), as include/rcip.h says.
 * 3. A builder binding's user data (rcip_runtime_builder_bind, **rcip**)
 *    outlives the runtime while an invocation handed to its handler is
 *    held, and is released exactly once when that invocation is freed; a
 *    refused duplicate or unknown id never releases its user data.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rcip.h"

static int g_failures;
static const char *g_scenario = "";

#define CHECK(cond, ...)                                                              \
    do {                                                                              \
        if (!(cond)) {                                                                \
            g_failures++;                                                             \
            fprintf(stderr, "FAIL %s:%d [%s] %s: ", __FILE__, __LINE__, g_scenario, #cond); \
            fprintf(stderr, __VA_ARGS__);                                             \
            fputc('\n', stderr);                                                      \
        }                                                                             \
    } while (0)

#define OK(call)                                                                      \
    do {                                                                              \
        rcip_result rc_ = (call);                                                     \
        CHECK(rc_ == RCIP_RESULT_OK, "%s: %s", rcip_result_str(rc_),                  \
              rcip_last_error_message() ? rcip_last_error_message() : "");            \
    } while (0)

static const char *CATALOG =
    "{\"protocolVersion\":\"1.0\","
    "\"application\":{\"id\":\"lifetimes\",\"name\":\"Lifetimes\",\"description\":\"Lifetime tests.\"},"
    "\"scopes\":[],"
    "\"capabilities\":["
    "{\"id\":\"job.run\",\"title\":\"Run\",\"description\":\"Runs a job.\",\"scopeIds\":[],\"effect\":\"read\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}},"
    "{\"id\":\"job.purge\",\"title\":\"Purge\",\"description\":\"Purges.\",\"scopeIds\":[],\"effect\":\"destructive\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}}]}";

static rcip_catalog *g_catalog;

/* ------------------------------------------------------------------ */
/* 1. User data outlives deferred work                                  */

#define MAGIC 0x5ca1ab1eu

typedef struct desk {
    unsigned magic;
    char name[32];
} desk;

static atomic_int g_desk_released;

static void desk_free(void *ud) {
    desk *d = ud;
    d->magic = 0;
    free(d);
    atomic_fetch_add(&g_desk_released, 1);
}

typedef struct work {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rcip_invocation *inv;
    void *user_data;
    bool unbound;        /* the host unbound and freed the binding */
    int released_before; /* g_desk_released when the worker settled */
    int read_magic_ok;
} work;

static work g_work = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, false, -1, 0};

static void deferring_handler(void *ud, rcip_invocation *inv) {
    pthread_mutex_lock(&g_work.mu);
    g_work.inv = inv;
    g_work.user_data = ud;
    pthread_cond_broadcast(&g_work.cv);
    pthread_mutex_unlock(&g_work.mu);
}

static void *worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_work.mu);
    while (!g_work.inv || !g_work.unbound) pthread_cond_wait(&g_work.cv, &g_work.mu);
    rcip_invocation *inv = g_work.inv;
    desk *d = g_work.user_data;
    pthread_mutex_unlock(&g_work.mu);
    /* The binding is unbound and freed: its user data must still be alive. */
    g_work.released_before = atomic_load(&g_desk_released);
    g_work.read_magic_ok = d->magic == MAGIC && strcmp(d->name, "front desk") == 0;
    char out[96];
    snprintf(out, sizeof out, "{\"desk\":\"%s\"}", d->name);
    OK(rcip_invocation_complete(inv, out));
    CHECK(atomic_load(&g_desk_released) == 0, "released when the invocation settled, before its free");
    rcip_invocation_free(inv);
    return NULL;
}

typedef struct outcome_box {
    atomic_int count;
    char json[512];
} outcome_box;

static void box_outcome(void *ud, const char *json) {
    outcome_box *b = ud;
    if (atomic_fetch_add(&b->count, 1) == 0) snprintf(b->json, sizeof b->json, "%s", json);
}

static void user_data_outlives_deferred_work(void) {
    g_scenario = "binding user data outlives deferred work";
    rcip_runtime_builder *b = NULL;
    rcip_runtime *rt = NULL;
    OK(rcip_runtime_builder_new(g_catalog, &b));
    OK(rcip_runtime_builder_build(b, &rt));
    desk *d = malloc(sizeof *d);
    d->magic = MAGIC;
    snprintf(d->name, sizeof d->name, "front desk");
    rcip_binding *binding = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", deferring_handler, NULL, d, desk_free, &binding));
    pthread_t t;
    pthread_create(&t, NULL, worker, NULL);
    static outcome_box box;
    OK(rcip_client_invoke(rcip_runtime_client(rt), "job.run", "{}", NULL, NULL, box_outcome, &box, NULL, NULL));
    /* The handler returned without settling; unbind and free the binding. */
    OK(rcip_binding_unbind(binding));
    rcip_binding_free(binding);
    CHECK(atomic_load(&g_desk_released) == 0, "user data released while an invocation of the binding is held");
    pthread_mutex_lock(&g_work.mu);
    g_work.unbound = true;
    pthread_cond_broadcast(&g_work.cv);
    pthread_mutex_unlock(&g_work.mu);
    pthread_join(t, NULL);
    CHECK(g_work.released_before == 0, "the worker found the user data released (%d)", g_work.released_before);
    CHECK(g_work.read_magic_ok, "the worker read freed or changed user data");
    CHECK(atomic_load(&g_desk_released) == 1, "released %d times after the invocation was freed",
          atomic_load(&g_desk_released));
    CHECK(atomic_load(&box.count) == 1 && strstr(box.json, "\"status\":\"succeeded\"") &&
              strstr(box.json, "front desk"),
          "outcome %s", box.json);
    rcip_runtime_free(rt);
    CHECK(atomic_load(&g_desk_released) == 1, "released twice");
}

/* The same for the policy's user data: a worker holds a policy request
 * while the runtime is freed, then reads the policy's data and decides. */
static atomic_int g_policy_released;

static void policy_data_free(void *ud) {
    desk *d = ud;
    d->magic = 0;
    free(d);
    atomic_fetch_add(&g_policy_released, 1);
}

typedef struct policy_work {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    rcip_policy_request *req;
    void *user_data;
    bool runtime_freed;
    int released_before;
    int read_ok;
    rcip_result decide_rc;
} policy_work;

static policy_work g_pw = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, false, -1, 0, 0};

static void deferring_policy(void *ud, rcip_policy_request *req) {
    pthread_mutex_lock(&g_pw.mu);
    g_pw.req = req;
    g_pw.user_data = ud;
    pthread_cond_broadcast(&g_pw.cv);
    pthread_mutex_unlock(&g_pw.mu);
}

static void *policy_worker(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g_pw.mu);
    while (!g_pw.req || !g_pw.runtime_freed) pthread_cond_wait(&g_pw.cv, &g_pw.mu);
    rcip_policy_request *req = g_pw.req;
    desk *d = g_pw.user_data;
    pthread_mutex_unlock(&g_pw.mu);
    g_pw.released_before = atomic_load(&g_policy_released);
    g_pw.read_ok = d->magic == MAGIC && strcmp(d->name, "policy desk") == 0;
    /* The runtime is gone: the decision is accepted and ignored. */
    g_pw.decide_rc = rcip_policy_request_decide(req, "{\"decision\":\"allow\"}");
    CHECK(atomic_load(&g_policy_released) == 0, "policy data released before its request was freed");
    rcip_policy_request_free(req);
    return NULL;
}

static void handler_ok(void *ud, rcip_invocation *inv) {
    (void)ud;
    OK(rcip_invocation_complete(inv, "{}"));
    rcip_invocation_free(inv);
}

static void policy_data_outlives_a_held_request(void) {
    g_scenario = "policy user data outlives a held request";
    rcip_runtime_builder *b = NULL;
    rcip_runtime *rt = NULL;
    desk *d = malloc(sizeof *d);
    d->magic = MAGIC;
    snprintf(d->name, sizeof d->name, "policy desk");
    OK(rcip_runtime_builder_new(g_catalog, &b));
    OK(rcip_runtime_builder_set_policy(b, deferring_policy, d, policy_data_free));
    OK(rcip_runtime_builder_build(b, &rt));
    rcip_binding *binding = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler_ok, NULL, NULL, NULL, &binding));
    pthread_t t;
    pthread_create(&t, NULL, policy_worker, NULL);
    static outcome_box box;
    OK(rcip_client_invoke(rcip_runtime_client(rt), "job.run", "{}", NULL, NULL, box_outcome, &box, NULL, NULL));
    rcip_binding_free(binding);
    rcip_runtime_free(rt);
    CHECK(atomic_load(&box.count) == 1 && strstr(box.json, "EXECUTION_ABORTED"), "outcome %s", box.json);
    CHECK(atomic_load(&g_policy_released) == 0, "policy data released by the free while a request is held");
    pthread_mutex_lock(&g_pw.mu);
    g_pw.runtime_freed = true;
    pthread_cond_broadcast(&g_pw.cv);
    pthread_mutex_unlock(&g_pw.mu);
    pthread_join(t, NULL);
    CHECK(g_pw.released_before == 0, "the worker found the policy data released");
    CHECK(g_pw.read_ok, "the worker read freed or changed policy data");
    CHECK(g_pw.decide_rc == RCIP_RESULT_OK, "a late decision answered %d", (int)g_pw.decide_rc);
    CHECK(atomic_load(&g_policy_released) == 1, "policy data released %d times", atomic_load(&g_policy_released));
}

/* ------------------------------------------------------------------ */
/* 2. Confirmation notice orders                                        */

#define MAX_LOG 64
static pthread_mutex_t g_log_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_log[MAX_LOG][64];
static int g_nlog;

static void logf_(const char *fmt, ...) {
    pthread_mutex_lock(&g_log_mu);
    if (g_nlog < MAX_LOG) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_log[g_nlog], sizeof g_log[0], fmt, ap);
        va_end(ap);
        g_nlog++;
    }
    pthread_mutex_unlock(&g_log_mu);
}

/* The value of a string member (no escapes in these tests). */
static void json_str(const char *json, const char *key, char *buf, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    buf[0] = '\0';
    if (!p) return;
    p += strlen(pat);
    const char *e = strchr(p, '"');
    if (!e) return;
    size_t len = (size_t)(e - p) < n - 1 ? (size_t)(e - p) : n - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
}

static void on_event(void *ud, const char *json) {
    (void)ud;
    char phase[40];
    json_str(json, "phase", phase, sizeof phase);
    logf_("event %s", phase);
}

static void on_outcome(void *ud, const char *json) {
    char status[40], code[48];
    json_str(json, "status", status, sizeof status);
    json_str(json, "code", code, sizeof code);
    logf_("%s %s%s%s", (const char *)ud, status, code[0] ? " " : "", code);
}

enum mode { INLINE_APPROVE, INLINE_DECLINE, INLINE_CANCEL, FROM_OUTCOME, OTHER_THREAD, INLINE_CLOSE };
static enum mode g_mode;
static rcip_runtime *g_rt;
static rcip_cancel_token *g_token;
static char g_confirmation_id[64];
static atomic_int g_resolve_rc;
static atomic_int g_in_opened;

/* The other thread's resolve, started while `opened` runs. */
static pthread_mutex_t g_ot_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_ot_cv = PTHREAD_COND_INITIALIZER;
static bool g_ot_done;

static void *resolve_thread(void *arg) {
    (void)arg;
    rcip_result rc = rcip_host_resolve_confirmation(rcip_runtime_host(g_rt), g_confirmation_id, true, on_outcome,
                                                    "resolve", NULL);
    atomic_store(&g_resolve_rc, (int)rc);
    logf_("resolve returned");
    pthread_mutex_lock(&g_ot_mu);
    g_ot_done = true;
    pthread_cond_broadcast(&g_ot_cv);
    pthread_mutex_unlock(&g_ot_mu);
    return NULL;
}

static void on_confirmation(void *ud, const char *json) {
    (void)ud;
    char event[16], reason[24];
    json_str(json, "event", event, sizeof event);
    json_str(json, "reason", reason, sizeof reason);
    if (strcmp(event, "opened") != 0) {
        CHECK(!atomic_load(&g_in_opened), "a closed notice (%s) while opened runs", reason);
        logf_("notice closed %s", reason);
        return;
    }
    atomic_store(&g_in_opened, 1);
    logf_("notice opened");
    char id[64];
    json_str(strstr(json, "\"confirmation\""), "id", id, sizeof id);
    snprintf(g_confirmation_id, sizeof g_confirmation_id, "%s", id);
    rcip_result rc = RCIP_RESULT_OK;
    pthread_t t;
    switch (g_mode) {
    case INLINE_APPROVE:
    case INLINE_DECLINE:
        rc = rcip_host_resolve_confirmation(rcip_runtime_host(g_rt), id, g_mode == INLINE_APPROVE, on_outcome,
                                            "resolve", NULL);
        logf_("resolve returned");
        break;
    case INLINE_CANCEL:
        rc = rcip_cancel_token_cancel(g_token);
        logf_("cancel returned");
        break;
    case INLINE_CLOSE:
        rc = rcip_host_resolve_confirmation(rcip_runtime_host(g_rt), id, true, on_outcome, "resolve", NULL);
        logf_("resolve returned");
        rcip_runtime_close(g_rt);
        break;
    case OTHER_THREAD:
        /* The resolving thread must not wait for this notice to return. */
        pthread_create(&t, NULL, resolve_thread, NULL);
        pthread_mutex_lock(&g_ot_mu);
        while (!g_ot_done) pthread_cond_wait(&g_ot_cv, &g_ot_mu);
        pthread_mutex_unlock(&g_ot_mu);
        pthread_join(t, NULL);
        rc = (rcip_result)atomic_load(&g_resolve_rc);
        break;
    case FROM_OUTCOME:
        break;
    }
    atomic_store(&g_resolve_rc, (int)rc);
    logf_("opened returns");
    atomic_store(&g_in_opened, 0);
}

static void consumer_outcome(void *ud, const char *json) {
    on_outcome(ud, json);
    if (g_mode == FROM_OUTCOME && strstr(json, "confirmation_required")) {
        char id[64];
        json_str(strstr(json, "\"confirmation\""), "id", id, sizeof id);
        atomic_store(&g_resolve_rc, (int)rcip_host_resolve_confirmation(rcip_runtime_host(g_rt), id, true,
                                                                       on_outcome, "resolve", NULL));
        logf_("resolve returned");
    }
}

static void purge(void *ud, rcip_invocation *inv) {
    (void)ud;
    OK(rcip_invocation_complete(inv, "{}"));
    rcip_invocation_free(inv);
}

/* Runs one scenario and compares the whole log with `want` (NULL-ended). */
static void run_order(const char *name, enum mode mode, const char *const *want) {
    g_scenario = name;
    g_mode = mode;
    g_nlog = 0;
    atomic_store(&g_resolve_rc, -1);
    g_ot_done = false;
    rcip_runtime_builder *b = NULL;
    OK(rcip_runtime_builder_new(g_catalog, &b));
    OK(rcip_runtime_builder_add_event_observer(b, on_event, NULL, NULL));
    OK(rcip_runtime_builder_set_confirmation_callback(b, on_confirmation, NULL, NULL));
    OK(rcip_runtime_builder_set_manual_timers(b, true));
    OK(rcip_runtime_builder_build(b, &g_rt));
    rcip_binding *binding = NULL;
    OK(rcip_host_bind(rcip_runtime_host(g_rt), "job.purge", purge, NULL, NULL, NULL, &binding));
    g_token = NULL;
    OK(rcip_cancel_token_new(&g_token));
    OK(rcip_client_invoke(rcip_runtime_client(g_rt), "job.purge", "{}", "p1", g_token, consumer_outcome, "invoke",
                          NULL, NULL));
    logf_("invoke returned");
    CHECK(atomic_load(&g_resolve_rc) == RCIP_RESULT_OK, "the resolving call answered %d",
          atomic_load(&g_resolve_rc));
    int n = 0;
    while (want[n]) n++;
    bool same = n == g_nlog;
    for (int i = 0; same && i < n; i++) same = strcmp(want[i], g_log[i]) == 0;
    if (!same) {
        CHECK(same, "the order differs");
        for (int i = 0; i < n || i < g_nlog; i++)
            fprintf(stderr, "  %2d  want %-36s got %s\n", i, i < n ? want[i] : "-", i < g_nlog ? g_log[i] : "-");
    }
    rcip_binding_free(binding);
    rcip_cancel_token_free(g_token);
    rcip_runtime_free(g_rt);
    g_rt = NULL;
}

#define OPENING "event requested", "event confirmation_requested", "invoke confirmation_required"

static void confirmation_orders(void) {
    /* The header's order: `closed approved` first, then the re-run; the
     * re-run waits until `opened` returned. */
    static const char *const approve[] = {OPENING,
                                          "notice opened",
                                          "resolve returned",
                                          "opened returns",
                                          "notice closed approved",
                                          "event requested",
                                          "event started",
                                          "event succeeded",
                                          "resolve succeeded",
                                          "invoke returned",
                                          NULL};
    run_order("approve inline from opened", INLINE_APPROVE, approve);
    /* Other endings: the event and the resolving call's outcome, then
     * `closed` once `opened` returned. */
    static const char *const decline[] = {OPENING,
                                          "notice opened",
                                          "event confirmation_declined",
                                          "resolve denied CONFIRMATION_DECLINED",
                                          "resolve returned",
                                          "opened returns",
                                          "notice closed declined",
                                          "invoke returned",
                                          NULL};
    run_order("decline inline from opened", INLINE_DECLINE, decline);
    /* The token's cancellation reaches the confirmation once `opened`
     * returned (its registration follows the notice). */
    static const char *const cancel[] = {OPENING,
                                         "notice opened",
                                         "cancel returned",
                                         "opened returns",
                                         "event failed",
                                         "notice closed cancelled",
                                         "invoke returned",
                                         NULL};
    run_order("cancel inline from opened", INLINE_CANCEL, cancel);
    /* Resolved from the consumer's outcome callback, before `opened`. */
    static const char *const from_outcome[] = {OPENING,
                                               "resolve returned",
                                               "notice opened",
                                               "opened returns",
                                               "notice closed approved",
                                               "event requested",
                                               "event started",
                                               "event succeeded",
                                               "resolve succeeded",
                                               "invoke returned",
                                               NULL};
    run_order("approve from the consumer's outcome callback", FROM_OUTCOME, from_outcome);
    /* Resolved on another thread while `opened` runs: that call returns at
     * once; the opening thread runs the re-run after `closed`. */
    static const char *const other_thread[] = {OPENING,
                                               "notice opened",
                                               "resolve returned",
                                               "opened returns",
                                               "notice closed approved",
                                               "event requested",
                                               "event started",
                                               "event succeeded",
                                               "resolve succeeded",
                                               "invoke returned",
                                               NULL};
    run_order("approve on another thread while opened runs", OTHER_THREAD, other_thread);
    /* Approved inline, then the runtime closed before `opened` returned: the
     * held re-run still gets its one outcome (EXECUTION_ABORTED after its
     * failed event, as the close gives every pending invocation). */
    static const char *const closing[] = {OPENING,
                                          "notice opened",
                                          "resolve returned",
                                          "opened returns",
                                          "notice closed approved",
                                          "event failed",
                                          "resolve failed EXECUTION_ABORTED",
                                          "invoke returned",
                                          NULL};
    run_order("approve inline, then close, from opened", INLINE_CLOSE, closing);
}

/* ------------------------------------------------------------------ */
/* 3. Builder bindings                                                  */

static void builder_binding_data_outlives_the_runtime(void) {
    g_scenario = "builder binding user data outlives the runtime";
    atomic_store(&g_desk_released, 0);
    g_work.inv = NULL;
    g_work.user_data = NULL;
    rcip_runtime_builder *b = NULL;
    rcip_runtime *rt = NULL;
    OK(rcip_runtime_builder_new(g_catalog, &b));
    desk *d = malloc(sizeof *d);
    d->magic = MAGIC;
    snprintf(d->name, sizeof d->name, "front desk");
    desk spare = {MAGIC, "spare"};
    OK(rcip_runtime_builder_bind(b, "job.run", deferring_handler, NULL, d, desk_free));
    CHECK(rcip_runtime_builder_bind(b, "job.run", deferring_handler, NULL, &spare, desk_free) ==
              RCIP_RESULT_ALREADY_BOUND,
          "a duplicate is refused by the bind call");
    CHECK(rcip_runtime_builder_bind(b, "job.nowhere", deferring_handler, NULL, &spare, desk_free) ==
              RCIP_RESULT_NOT_IN_CATALOG,
          "an unknown id");
    OK(rcip_runtime_builder_build(b, &rt));
    char *stats = NULL;
    OK(rcip_runtime_stats(rt, &stats));
    CHECK(stats && strstr(stats, "\"revision\":0,\"bindings\":1,") != NULL, "bound at revision 0: %s",
          stats ? stats : "");
    rcip_string_free(stats);
    outcome_box box = {0};
    OK(rcip_client_invoke(rcip_runtime_client(rt), "job.run", "{}", NULL, NULL, box_outcome, &box, NULL, NULL));
    CHECK(g_work.inv != NULL && g_work.user_data == d, "the handler holds the invocation");
    rcip_runtime_free(rt);
    CHECK(atomic_load(&box.count) == 1 && strstr(box.json, "EXECUTION_ABORTED") != NULL, "aborted by the free: %s",
          box.json);
    CHECK(atomic_load(&g_desk_released) == 0, "released while an invocation is held");
    CHECK(d->magic == MAGIC, "the user data is alive");
    if (g_work.inv) {
        OK(rcip_invocation_complete(g_work.inv, "{}"));
        CHECK(atomic_load(&g_desk_released) == 0, "released before the invocation was freed");
        rcip_invocation_free(g_work.inv);
    }
    CHECK(atomic_load(&g_desk_released) == 1, "released once: %d", atomic_load(&g_desk_released));
    CHECK(spare.magic == MAGIC, "refused registrations keep their user data");
}

int main(void) {
    if (rcip_catalog_new(CATALOG, &g_catalog) != RCIP_RESULT_OK) {
        fprintf(stderr, "catalog: %s\n", rcip_last_error_message());
        return 1;
    }
    user_data_outlives_deferred_work();
    policy_data_outlives_a_held_request();
    confirmation_orders();
    builder_binding_data_outlives_the_runtime();
    rcip_catalog_free(g_catalog);
    if (g_failures) {
        fprintf(stderr, "lifetimes: %d failures\n", g_failures);
        return 1;
    }
    printf("lifetimes: all checks passed\n");
    return 0;
}
