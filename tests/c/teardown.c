/*
 * teardown.c: PIPELINE.md section 9 with work running on other threads
 * (issue 5, item 3). Written in C against include/rcip.h so that it also
 * runs under AddressSanitizer, UndefinedBehaviorSanitizer, LeakSanitizer
 * and valgrind (`make test-asan`, `make valgrind-c`).
 *
 * Each scenario frees something (the runtime, a binding, a token, the
 * catalog), or closes the runtime with rcip_runtime_close, while handlers, policies, confirmations, preflights or blocking
 * calls are in progress on other threads, and checks:
 *   - every pending invocation gets exactly one outcome (EXECUTION_ABORTED
 *     with its failed event first, when the runtime is freed), every
 *     pending preflight its report, every pending confirmation a closed
 *     notice and no event;
 *   - completions, decisions and cancellations after the free return OK
 *     and change nothing;
 *   - handles the host still holds answer RCIP_RESULT_CLOSED;
 *   - no callback starts after rcip_runtime_free returned (except inside a
 *     host call that began before it returned), and none starts after its
 *     user data was released; each user data is released exactly once,
 *     after the last callback of its registration returned.
 *
 * Usage: teardown [scale]  (scale multiplies the iterations of the
 * randomized scenarios; default 1, valgrind runs use 1).
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

/* ------------------------------------------------------------------ */
/* Checks                                                               */

static _Atomic int g_failures;
static const char *g_scenario = "";

static void fail_at(const char *file, int line, const char *expr, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&g_failures, 1);
    fprintf(stderr, "FAIL %s:%d [%s] %s: %s\n", file, line, g_scenario, expr, msg);
}

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (!(cond)) fail_at(__FILE__, __LINE__, #cond, __VA_ARGS__);     \
    } while (0)

#define OK(call) CHECK((call) == RCIP_RESULT_OK, "%s", rcip_last_error_message() ? rcip_last_error_message() : "")

static void sleep_us(unsigned us) {
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    nanosleep(&ts, NULL);
}

static uint64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------ */
/* "After free" bookkeeping                                             */

/* Set once rcip_runtime_free returned. */
static _Atomic int g_free_returned;
/* 1 while this thread is inside a host call that began before the free
 * returned (its callbacks may still run); 2 inside one that began after. */
static _Thread_local int tl_call;

static void begin_call(void) { tl_call = atomic_load(&g_free_returned) ? 2 : 1; }
static void end_call(void) { tl_call = 0; }

static _Atomic int g_late_callbacks;

/* A callback of the runtime starts: it must not start after the free
 * returned, unless it belongs to a call that began before. */
static void callback_starts(const char *what) {
    if (!atomic_load(&g_free_returned)) return;
    if (tl_call == 1) return;
    atomic_fetch_add(&g_late_callbacks, 1);
    fail_at(__FILE__, __LINE__, "no callback after free", "%s started after rcip_runtime_free returned (%s)", what,
            tl_call == 2 ? "inside a later call" : "on a library thread");
}

/* ------------------------------------------------------------------ */
/* A sequence of observations                                           */

static _Atomic uint64_t g_seq;

typedef struct outcome_rec {
    char name[48];
    _Atomic int outcomes;
    _Atomic int frees;
    _Atomic uint64_t at;
    char json[768];
} outcome_rec;

static void on_outcome(void *ud, const char *json) {
    outcome_rec *r = ud;
    callback_starts("outcome callback");
    if (atomic_load(&r->frees)) fail_at(__FILE__, __LINE__, "outcome", "%s: outcome after release", r->name);
    if (atomic_fetch_add(&r->outcomes, 1) == 0) {
        snprintf(r->json, sizeof r->json, "%s", json);
        atomic_store(&r->at, atomic_fetch_add(&g_seq, 1) + 1);
    } else {
        fail_at(__FILE__, __LINE__, "one outcome", "%s: second outcome %s", r->name, json);
    }
}

static void on_outcome_free(void *ud) {
    outcome_rec *r = ud;
    if (atomic_fetch_add(&r->frees, 1) != 0) fail_at(__FILE__, __LINE__, "one release", "%s released twice", r->name);
    if (atomic_load(&r->outcomes) != 1) fail_at(__FILE__, __LINE__, "release after outcome", "%s", r->name);
}

static bool has(const outcome_rec *r, const char *needle) { return strstr(r->json, needle) != NULL; }

static void expect_outcome(const outcome_rec *r, const char *needle) {
    CHECK(atomic_load(&r->outcomes) == 1 && atomic_load(&r->frees) == 1 && has(r, needle),
          "%s: %d outcomes, %d releases, wanted %s in %s", r->name, atomic_load(&r->outcomes), atomic_load(&r->frees),
          needle, r->json);
}

#define MAX_EVENTS 4096
typedef struct event_rec {
    char invocation[48];
    char phase[32];
    char code[40];
    uint64_t at;
} event_rec;
static event_rec g_events[MAX_EVENTS];
static _Atomic int g_nevents;
static _Atomic int g_notices_closed, g_notices_opened;
static char g_closed_reason[64];

static bool json_str(const char *json, const char *key, char *buf, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    buf[0] = '\0';
    if (!p) return false;
    p += strlen(pat);
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < n) {
        buf[i] = p[i];
        i++;
    }
    buf[i] = '\0';
    return true;
}

static void on_event(void *ud, const char *json) {
    (void)ud;
    callback_starts("event observer");
    int i = atomic_fetch_add(&g_nevents, 1);
    if (i >= MAX_EVENTS) return;
    event_rec *e = &g_events[i];
    json_str(json, "invocationId", e->invocation, sizeof e->invocation);
    json_str(json, "phase", e->phase, sizeof e->phase);
    json_str(json, "errorCode", e->code, sizeof e->code);
    e->at = atomic_fetch_add(&g_seq, 1) + 1;
}

/* The failed event of `id` with `code` came before its outcome. */
static void expect_failed_event_before(const outcome_rec *r, const char *id, const char *code) {
    int n = atomic_load(&g_nevents), found = 0;
    for (int i = 0; i < n && i < MAX_EVENTS; i++) {
        event_rec *e = &g_events[i];
        if (strcmp(e->invocation, id) || strcmp(e->phase, "failed")) continue;
        found++;
        CHECK(!strcmp(e->code, code), "%s: failed event with %s", id, e->code);
        CHECK(e->at < atomic_load(&r->at), "%s: the failed event came after the outcome", id);
    }
    CHECK(found == 1, "%s: %d failed events", id, found);
}

static int events_for(const char *id) {
    int n = atomic_load(&g_nevents), found = 0;
    for (int i = 0; i < n && i < MAX_EVENTS; i++)
        if (!strcmp(g_events[i].invocation, id)) found++;
    return found;
}

static void on_confirmation(void *ud, const char *json) {
    (void)ud;
    callback_starts("confirmation callback");
    char ev[16];
    json_str(json, "event", ev, sizeof ev);
    if (!strcmp(ev, "opened")) atomic_fetch_add(&g_notices_opened, 1);
    else {
        atomic_fetch_add(&g_notices_closed, 1);
        json_str(json, "reason", g_closed_reason, sizeof g_closed_reason);
    }
}

/* ------------------------------------------------------------------ */
/* Released-once user data                                              */

typedef struct ud_rec {
    const char *name;
    _Atomic int released;
    _Atomic int in_cb;     /* callbacks running now */
    _Atomic int calls;
} ud_rec;

static void ud_release(void *ud) {
    ud_rec *u = ud;
    if (atomic_fetch_add(&u->released, 1) != 0) fail_at(__FILE__, __LINE__, "release once", "%s released twice", u->name);
    if (atomic_load(&u->in_cb) != 0)
        fail_at(__FILE__, __LINE__, "release after callbacks", "%s released while %d callbacks run", u->name,
                atomic_load(&u->in_cb));
}

static void ud_enter(ud_rec *u, const char *what) {
    if (atomic_load(&u->released)) fail_at(__FILE__, __LINE__, "callback after release", "%s: %s after release", u->name, what);
    atomic_fetch_add(&u->in_cb, 1);
    atomic_fetch_add(&u->calls, 1);
}

static void ud_leave(ud_rec *u) { atomic_fetch_sub(&u->in_cb, 1); }

static void expect_released(ud_rec *u) {
    CHECK(atomic_load(&u->released) == 1, "%s released %d times", u->name, atomic_load(&u->released));
}

/* ------------------------------------------------------------------ */
/* Stashed completion handles, gates                                    */

static pthread_mutex_t g_stash_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_stash_cv = PTHREAD_COND_INITIALIZER;
/* Grows with the scale argument (the catalog test stashes 200 x scale). */
static struct stashed {
    char id[48];
    rcip_invocation *inv;
    rcip_policy_request *req;
} *g_stash;
static int g_nstash, g_stash_cap;

static void stash(const char *id, rcip_invocation *inv, rcip_policy_request *req) {
    pthread_mutex_lock(&g_stash_mu);
    if (g_nstash == g_stash_cap) {
        int cap = g_stash_cap ? 2 * g_stash_cap : 1024;
        struct stashed *grown = realloc(g_stash, (size_t)cap * sizeof *grown);
        if (!grown) {
            fprintf(stderr, "stash: out of memory\n");
            abort();
        }
        g_stash = grown;
        g_stash_cap = cap;
    }
    snprintf(g_stash[g_nstash].id, sizeof g_stash[0].id, "%s", id ? id : "(preflight)");
    g_stash[g_nstash].inv = inv;
    g_stash[g_nstash].req = req;
    g_nstash++;
    pthread_cond_broadcast(&g_stash_cv);
    pthread_mutex_unlock(&g_stash_mu);
}

/* Takes the stashed handles of `id` (NULL: any one); waits up to 5 s. */
static bool unstash(const char *id, rcip_invocation **inv, rcip_policy_request **req) {
    uint64_t deadline = mono_us() + 5000000u;
    pthread_mutex_lock(&g_stash_mu);
    for (;;) {
        for (int i = 0; i < g_nstash; i++) {
            if (id && strcmp(g_stash[i].id, id)) continue;
            *inv = g_stash[i].inv;
            *req = g_stash[i].req;
            g_stash[i] = g_stash[--g_nstash];
            pthread_mutex_unlock(&g_stash_mu);
            return true;
        }
        if (!id || mono_us() > deadline) break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 10000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_cond_timedwait(&g_stash_cv, &g_stash_mu, &ts);
    }
    pthread_mutex_unlock(&g_stash_mu);
    *inv = NULL;
    *req = NULL;
    return false;
}

typedef struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int entered;
    int open;
} gate;

static gate g_gate;

static void gate_reset(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->entered = 0;
    g->open = 0;
    pthread_mutex_unlock(&g->mu);
}

static void gate_pass(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->entered++;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_wait_entered(gate *g, int n) {
    pthread_mutex_lock(&g->mu);
    while (g->entered < n) pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(gate *g) {
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

/* ------------------------------------------------------------------ */
/* The host                                                             */

static const char *CATALOG =
    "{\"protocolVersion\":\"1.0\","
    "\"application\":{\"id\":\"teardown\",\"name\":\"Teardown\",\"description\":\"Teardown tests.\"},"
    "\"scopes\":[],"
    "\"capabilities\":["
    "{\"id\":\"job.run\",\"title\":\"Run\",\"description\":\"Runs a job.\",\"scopeIds\":[],\"effect\":\"write\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}},"
    "{\"id\":\"job.purge\",\"title\":\"Purge\",\"description\":\"Purges.\",\"scopeIds\":[],\"effect\":\"destructive\","
    "\"inputSchema\":{\"type\":\"object\"},\"outputSchema\":{\"type\":\"object\"}}]}";

static rcip_catalog *g_catalog;
static rcip_runtime *g_rt;
static ud_rec g_policy_ud, g_events_ud, g_conf_ud, g_bind_ud, g_sub_ud, g_clock_ud;
static _Atomic int g_stash_preflight;

static bool starts_with(const char *s, const char *prefix) { return s && !strncmp(s, prefix, strlen(prefix)); }

static void policy(void *ud, rcip_policy_request *req) {
    ud_rec *u = ud;
    callback_starts("policy");
    ud_enter(u, "policy");
    const char *id = rcip_policy_request_invocation_id(req);
    const char *ctx = rcip_policy_request_context(req);
    if (starts_with(id, "pol") || (!id && atomic_load(&g_stash_preflight))) {
        stash(id, NULL, req);
    } else {
        bool confirm = strstr(ctx, "\"effect\":\"destructive\"") && strstr(ctx, "\"confirmed\":false");
        OK(rcip_policy_request_decide(req, confirm ? "{\"decision\":\"confirm\"}" : "{\"decision\":\"allow\"}"));
        rcip_policy_request_free(req);
    }
    ud_leave(u);
}

static void handler(void *ud, rcip_invocation *inv) {
    ud_rec *u = ud;
    callback_starts("handler");
    ud_enter(u, "handler");
    const char *id = rcip_invocation_id(inv);
    if (starts_with(id, "block")) {
        gate_pass(&g_gate);
        /* the runtime was freed meanwhile: a late completion is OK and ignored */
        OK(rcip_invocation_complete(inv, "{}"));
        rcip_invocation_free(inv);
    } else if (starts_with(id, "defer")) {
        stash(id, inv, NULL);
    } else if (starts_with(id, "free-rt")) {
        stash(id, inv, NULL);
        rcip_runtime *rt = g_rt;
        g_rt = NULL;
        rcip_runtime_free(rt);
        atomic_store(&g_free_returned, 1);
    } else {
        OK(rcip_invocation_complete(inv, "{}"));
        rcip_invocation_free(inv);
    }
    ud_leave(u);
}

static int32_t availability(void *ud, rcip_availability_sink *sink) {
    ud_rec *u = ud;
    callback_starts("availability");
    ud_enter(u, "availability");
    if (atomic_load(&g_stash_preflight) == 2) gate_pass(&g_gate);
    OK(rcip_availability_set(sink, true, NULL, NULL));
    ud_leave(u);
    return 0;
}

static void subscriber(void *ud, uint64_t revision) {
    ud_rec *u = ud;
    (void)revision;
    callback_starts("subscriber");
    ud_enter(u, "subscriber");
    ud_leave(u);
}

static int64_t clock_ms(void *ud) {
    ud_rec *u = ud;
    callback_starts("clock");
    ud_enter(u, "clock");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ud_leave(u);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void reset(const char *scenario) {
    g_scenario = scenario;
    atomic_store(&g_free_returned, 0);
    atomic_store(&g_nevents, 0);
    atomic_store(&g_notices_closed, 0);
    atomic_store(&g_notices_opened, 0);
    atomic_store(&g_stash_preflight, 0);
    g_closed_reason[0] = '\0';
    gate_reset(&g_gate);
    ud_rec *all[] = {&g_policy_ud, &g_events_ud, &g_conf_ud, &g_bind_ud, &g_sub_ud, &g_clock_ud};
    const char *names[] = {"policy", "event observer", "confirmation callback", "binding", "subscription", "clock"};
    for (int i = 0; i < 6; i++) {
        atomic_store(&all[i]->released, 0);
        atomic_store(&all[i]->in_cb, 0);
        atomic_store(&all[i]->calls, 0);
        all[i]->name = names[i];
    }
}

/* A runtime with a policy, observers and a clock (all releasing into ud_recs). */
static rcip_runtime *build(uint64_t ttl_ms, bool manual) {
    rcip_runtime_builder *b = NULL;
    rcip_runtime *rt = NULL;
    OK(rcip_runtime_builder_new(g_catalog, &b));
    OK(rcip_runtime_builder_set_confirmation_ttl_ms(b, ttl_ms));
    OK(rcip_runtime_builder_set_policy(b, policy, &g_policy_ud, ud_release));
    OK(rcip_runtime_builder_add_event_observer(b, on_event, &g_events_ud, ud_release));
    OK(rcip_runtime_builder_set_confirmation_callback(b, on_confirmation, &g_conf_ud, ud_release));
    OK(rcip_runtime_builder_set_clock(b, clock_ms, &g_clock_ud, ud_release));
    OK(rcip_runtime_builder_set_manual_timers(b, manual));
    OK(rcip_runtime_builder_build(b, &rt));
    return rt;
}

typedef struct invoke_args {
    rcip_runtime *rt;
    const char *cap;
    const char *id;
    outcome_rec *rec;
    bool blocking;
    char *blocking_out;
} invoke_args;

static void *invoke_thread(void *arg) {
    invoke_args *a = arg;
    begin_call();
    if (a->blocking) {
        OK(rcip_client_invoke_blocking(rcip_runtime_client(a->rt), a->cap, "{}", a->id, NULL, &a->blocking_out));
    } else {
        OK(rcip_client_invoke(rcip_runtime_client(a->rt), a->cap, "{}", a->id, NULL, on_outcome, a->rec,
                              on_outcome_free, NULL));
    }
    end_call();
    return NULL;
}

static void invoke(rcip_runtime *rt, const char *cap, const char *id, outcome_rec *rec, const rcip_cancel_token *token) {
    snprintf(rec->name, sizeof rec->name, "%s", id);
    begin_call();
    OK(rcip_client_invoke(rcip_runtime_client(rt), cap, "{}", id, token, on_outcome, rec, on_outcome_free, NULL));
    end_call();
}

static void report_cb(void *ud, const char *json) { on_outcome(ud, json); }

/* ------------------------------------------------------------------ */
/* Scenarios                                                            */

/* The runtime is freed while: a handler runs on another thread (blocked
 * inside its callback), two completion handles and a policy handle wait
 * on this thread, a blocking invoke waits on a third thread, a
 * confirmation and a preflight are pending. */
static void free_runtime_with_work_on_other_threads(void) {
    reset("free the runtime while work runs on other threads");
    g_rt = build(600000, false);
    rcip_runtime *rt = g_rt;
    rcip_binding *binding = NULL, *purge = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, availability, &g_bind_ud, ud_release, &binding));
    static ud_rec purge_ud = {.name = "purge binding"};
    atomic_store(&purge_ud.released, 0);
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.purge", handler, NULL, &purge_ud, ud_release, &purge));
    rcip_subscription *sub = NULL;
    OK(rcip_client_subscribe(rcip_runtime_client(rt), subscriber, &g_sub_ud, ud_release, &sub));
    const rcip_snapshot *snap = NULL;
    OK(rcip_client_snapshot(rcip_runtime_client(rt), &snap));
    rcip_cancel_token *token = NULL;
    OK(rcip_cancel_token_new(&token));

    static outcome_rec blocked, d1, d2, p1, conf, pf;
    memset(&blocked, 0, sizeof blocked);
    memset(&d1, 0, sizeof d1);
    memset(&d2, 0, sizeof d2);
    memset(&p1, 0, sizeof p1);
    memset(&conf, 0, sizeof conf);
    memset(&pf, 0, sizeof pf);

    /* A handler blocked inside its callback on thread H1. */
    snprintf(blocked.name, sizeof blocked.name, "block-1");
    invoke_args h1 = {rt, "job.run", "block-1", &blocked, false, NULL};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, invoke_thread, &h1);
    gate_wait_entered(&g_gate, 1);
    /* A blocking invoke on thread H2 whose handler defers. */
    invoke_args h2 = {rt, "job.run", "defer-3", NULL, true, NULL};
    pthread_create(&t2, NULL, invoke_thread, &h2);
    rcip_invocation *i3 = NULL;
    rcip_policy_request *unused = NULL;
    CHECK(unstash("defer-3", &i3, &unused), "the blocking call's handler did not run");
    /* Deferred handlers, a deferred policy (with a token), a confirmation. */
    invoke(rt, "job.run", "defer-1", &d1, NULL);
    invoke(rt, "job.run", "defer-2", &d2, NULL);
    invoke(rt, "job.run", "pol-1", &p1, token);
    invoke(rt, "job.purge", "purge-1", &conf, NULL);
    CHECK(has(&conf, "confirmation_required"), "%s", conf.json);
    /* A preflight whose policy answer is pending. */
    atomic_store(&g_stash_preflight, 1);
    snprintf(pf.name, sizeof pf.name, "preflight");
    const char *ids[] = {"job.run", "job.purge"};
    const char *inputs[] = {"{}", "{}"};
    OK(rcip_client_preflight(rcip_runtime_client(rt), ids, inputs, 2, NULL, report_cb, &pf, on_outcome_free));
    CHECK(atomic_load(&pf.outcomes) == 0, "the preflight settled early");
    rcip_invocation *i1 = NULL, *i2 = NULL;
    rcip_policy_request *r1 = NULL, *rp1 = NULL, *rp2 = NULL;
    rcip_invocation *no_inv = NULL;
    CHECK(unstash("defer-1", &i1, &unused) && unstash("defer-2", &i2, &unused) && unstash("pol-1", &no_inv, &r1),
          "handles missing");
    CHECK(unstash("(preflight)", &no_inv, &rp1) && unstash("(preflight)", &no_inv, &rp2), "preflight requests missing");
    int events_before = atomic_load(&g_nevents);
    int closed_before = atomic_load(&g_notices_closed);
    CHECK(atomic_load(&d1.outcomes) == 0 && atomic_load(&p1.outcomes) == 0 && atomic_load(&blocked.outcomes) == 0,
          "pending work settled early");

    g_rt = NULL;
    rcip_runtime_free(rt);
    atomic_store(&g_free_returned, 1);

    /* During the free: one outcome each, after its failed event. */
    const char *aborted = "\"code\":\"EXECUTION_ABORTED\"";
    outcome_rec *pending[] = {&d1, &d2, &p1, &blocked};
    const char *pending_ids[] = {"defer-1", "defer-2", "pol-1", "block-1"};
    for (int i = 0; i < 4; i++) {
        /* block-1's user data is released when its invoke call (still inside
         * the handler on H1) returns; the others' now */
        if (i < 3) expect_outcome(pending[i], aborted);
        else CHECK(atomic_load(&blocked.outcomes) == 1 && has(&blocked, aborted), "block-1: %s", blocked.json);
        expect_failed_event_before(pending[i], pending_ids[i], "EXECUTION_ABORTED");
    }
    pthread_join(t2, NULL);
    CHECK(h2.blocking_out && strstr(h2.blocking_out, aborted), "blocking invoke: %s",
          h2.blocking_out ? h2.blocking_out : "(null)");
    rcip_string_free(h2.blocking_out);
    /* The preflight's report, unsettled entries blocked. */
    expect_outcome(&pf, "\"status\":\"blocked\"");
    CHECK(strstr(pf.json, aborted) != NULL, "preflight: %s", pf.json);
    /* The confirmation ended with a closed notice and no event. */
    CHECK(atomic_load(&g_notices_closed) == closed_before + 1 && !strcmp(g_closed_reason, "closed"),
          "confirmation closed notices %d, reason %s", atomic_load(&g_notices_closed) - closed_before, g_closed_reason);
    CHECK(events_for("purge-1") == 2, "purge-1 has %d events (requested, confirmation_requested)", events_for("purge-1"));
    int events_after_free = atomic_load(&g_nevents);
    CHECK(events_after_free == events_before + 5, "%d events during the free (5 failed)", events_after_free - events_before);

    /* Late settles: OK, nothing changes. */
    begin_call();
    OK(rcip_invocation_complete(i1, "{}"));
    OK(rcip_invocation_fail(i2, false));
    CHECK(rcip_invocation_complete(i1, "{}") == RCIP_RESULT_ALREADY_COMPLETED, "second settle");
    OK(rcip_invocation_complete(i3, "{}"));
    OK(rcip_policy_request_decide(r1, "{\"decision\":\"allow\"}"));
    OK(rcip_policy_request_decide(rp1, "{\"decision\":\"allow\"}"));
    rcip_invocation_free(i1);
    rcip_invocation_free(i2);
    rcip_invocation_free(i3);
    rcip_policy_request_free(r1);
    rcip_policy_request_free(rp2); /* undecided: settles as a failure, ignored */
    rcip_policy_request_free(rp1);
    OK(rcip_cancel_token_cancel(token));
    /* Handles answer CLOSED where they would act on the runtime. */
    CHECK(rcip_binding_unbind(binding) == RCIP_RESULT_CLOSED, "unbind after free");
    CHECK(rcip_binding_set_revision(binding, 7) == RCIP_RESULT_CLOSED, "set_revision after free");
    CHECK(!rcip_binding_is_installed(binding), "installed after free");
    CHECK(rcip_snapshot_revision(snap) == 2 && rcip_snapshot_json(snap) != NULL, "the snapshot stays readable");
    end_call();

    /* The handler blocked on H1 finishes: its late completion is ignored, and
     * the binding's user data is released only after it returned. */
    CHECK(atomic_load(&g_bind_ud.released) == 0, "binding user data released while its handler runs");
    gate_open(&g_gate);
    pthread_join(t1, NULL);
    expect_outcome(&blocked, aborted);
    expect_released(&g_bind_ud);
    expect_released(&purge_ud);
    expect_released(&g_policy_ud);
    expect_released(&g_events_ud);
    expect_released(&g_conf_ud);
    expect_released(&g_clock_ud);
    CHECK(atomic_load(&g_nevents) == events_after_free, "events after the free");
    rcip_subscription_free(sub);
    expect_released(&g_sub_ud);
    rcip_binding_free(binding);
    rcip_binding_free(purge);
    rcip_snapshot_free(snap);
    rcip_cancel_token_free(token);
    /* The catalog still builds runtimes. */
    reset("free the runtime while work runs on other threads");
    rcip_runtime *again = build(1000, true);
    CHECK(again != NULL, "the catalog outlives the runtime");
    rcip_runtime_free(again);
    expect_released(&g_policy_ud);
}

typedef struct refresh_args {
    rcip_runtime *rt;
} refresh_args;

static void *refresh_thread(void *arg) {
    refresh_args *a = arg;
    begin_call();
    OK(rcip_host_refresh(rcip_runtime_host(a->rt)));
    end_call();
    return NULL;
}

/* A binding is freed while its handler runs on one thread and its
 * availability check on another: both finish, the handler's completion
 * still succeeds, and the user data is released after both returned. */
static void free_binding_while_its_callbacks_run(void) {
    reset("free a binding while its callbacks run");
    g_rt = build(600000, true);
    rcip_runtime *rt = g_rt;
    rcip_binding *binding = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, availability, &g_bind_ud, ud_release, &binding));
    static outcome_rec blocked;
    memset(&blocked, 0, sizeof blocked);
    snprintf(blocked.name, sizeof blocked.name, "block-2");
    /* H1: the handler blocks inside its callback. */
    invoke_args h1 = {rt, "job.run", "block-2", &blocked, false, NULL};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, invoke_thread, &h1);
    gate_wait_entered(&g_gate, 1);
    /* H2: an availability check blocks inside its callback (same gate). */
    atomic_store(&g_stash_preflight, 2);
    refresh_args ra = {rt};
    pthread_create(&t2, NULL, refresh_thread, &ra);
    gate_wait_entered(&g_gate, 2);
    rcip_binding_free(binding);
    CHECK(atomic_load(&g_bind_ud.released) == 0, "released while two callbacks run");
    /* A new invocation no longer finds the binding. */
    static outcome_rec after;
    memset(&after, 0, sizeof after);
    invoke(rt, "job.run", "after-1", &after, NULL);
    expect_outcome(&after, "CAPABILITY_UNBOUND");
    gate_open(&g_gate);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    atomic_store(&g_stash_preflight, 0);
    /* unbinding does not cancel a running handler */
    expect_outcome(&blocked, "\"status\":\"succeeded\"");
    expect_released(&g_bind_ud);
    rcip_runtime_free(rt);
    g_rt = NULL;
}

static _Atomic int g_oncancel_calls;
static void on_cancel_cb(void *ud) {
    ud_rec *u = ud;
    ud_enter(u, "on-cancel");
    atomic_fetch_add(&g_oncancel_calls, 1);
    ud_leave(u);
}

typedef struct cancel_args {
    rcip_cancel_token *token;
} cancel_args;

static void *cancel_thread(void *arg) {
    cancel_args *a = arg;
    begin_call();
    OK(rcip_cancel_token_cancel(a->token));
    end_call();
    rcip_cancel_token_free(a->token);
    return NULL;
}

static void *free_token_thread(void *arg) {
    cancel_args *a = arg;
    rcip_cancel_token_free(a->token);
    return NULL;
}

/* Tokens are freed while their invocations are pending: the invocation
 * keeps its own reference; a clone cancelled on one thread while the
 * original is freed on another ends the pending policy exactly once. */
static void free_tokens_while_pending(void) {
    reset("free tokens while their invocations are pending");
    g_rt = build(600000, true);
    rcip_runtime *rt = g_rt;
    rcip_binding *binding = NULL, *purge = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, NULL, &g_bind_ud, ud_release, &binding));
    static ud_rec purge_ud = {.name = "purge binding"};
    atomic_store(&purge_ud.released, 0);
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.purge", handler, NULL, &purge_ud, ud_release, &purge));
    static outcome_rec a, b, c, d, approved;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    memset(&approved, 0, sizeof approved);
    rcip_invocation *inv = NULL;
    rcip_policy_request *req = NULL;

    /* a: deferred policy, token freed at once, decided later on another thread */
    rcip_cancel_token *ta = NULL;
    OK(rcip_cancel_token_new(&ta));
    invoke(rt, "job.run", "pol-a", &a, ta);
    rcip_cancel_token_free(ta);
    CHECK(unstash("pol-a", &inv, &req), "pol-a policy");
    OK(rcip_policy_request_decide(req, "{\"decision\":\"allow\"}"));
    rcip_policy_request_free(req);
    expect_outcome(&a, "\"status\":\"succeeded\"");

    /* b: running handler; the consumer's token is freed by another thread;
     * the handler's own token stays valid until the handle is freed */
    rcip_cancel_token *tb = NULL;
    OK(rcip_cancel_token_new(&tb));
    invoke(rt, "job.run", "defer-b", &b, tb);
    CHECK(unstash("defer-b", &inv, &req), "defer-b handler");
    const rcip_cancel_token *ht = rcip_invocation_cancel_token(inv);
    static ud_rec oncancel_ud = {.name = "on-cancel"};
    atomic_store(&oncancel_ud.released, 0);
    atomic_store(&g_oncancel_calls, 0);
    OK(rcip_cancel_token_on_cancel(ht, on_cancel_cb, &oncancel_ud, ud_release));
    cancel_args fa = {tb};
    pthread_t t;
    pthread_create(&t, NULL, free_token_thread, &fa);
    pthread_join(t, NULL);
    CHECK(!rcip_cancel_token_is_cancelled(ht), "the handler token was cancelled");
    OK(rcip_invocation_complete(inv, "{}"));
    expect_outcome(&b, "\"status\":\"succeeded\"");
    CHECK(atomic_load(&oncancel_ud.released) == 0, "on-cancel data released while the handle lives");
    rcip_invocation_free(inv);
    /* the last reference went away: released once, never called */
    expect_released(&oncancel_ud);
    CHECK(atomic_load(&g_oncancel_calls) == 0, "on-cancel called");

    /* c: a clone cancelled on one thread while the original is freed on another */
    rcip_cancel_token *tc = NULL, *tc2 = NULL;
    OK(rcip_cancel_token_new(&tc));
    OK(rcip_cancel_token_clone(tc, &tc2));
    invoke(rt, "job.run", "pol-c", &c, tc);
    CHECK(unstash("pol-c", &inv, &req), "pol-c policy");
    cancel_args ca = {tc2}, fc = {tc};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, cancel_thread, &ca);
    pthread_create(&t2, NULL, free_token_thread, &fc);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    expect_outcome(&c, "EXECUTION_ABORTED");
    OK(rcip_policy_request_decide(req, "{\"decision\":\"allow\"}")); /* late: OK, ignored */
    rcip_policy_request_free(req);
    CHECK(atomic_load(&c.outcomes) == 1, "pol-c: %d outcomes", atomic_load(&c.outcomes));

    /* d: a pending confirmation whose token was freed still resolves */
    rcip_cancel_token *td = NULL;
    OK(rcip_cancel_token_new(&td));
    invoke(rt, "job.purge", "purge-d", &d, td);
    rcip_cancel_token_free(td);
    char conf_id[96];
    CHECK(json_str(d.json, "id", conf_id, sizeof conf_id), "%s", d.json);
    snprintf(approved.name, sizeof approved.name, "approve purge-d");
    OK(rcip_host_resolve_confirmation(rcip_runtime_host(rt), conf_id, true, on_outcome, &approved, on_outcome_free));
    expect_outcome(&approved, "\"status\":\"succeeded\"");

    rcip_runtime_free(rt);
    g_rt = NULL;
    rcip_binding_free(binding);
    rcip_binding_free(purge);
    expect_released(&g_bind_ud);
    expect_released(&purge_ud);
}

typedef struct runner_args {
    rcip_runtime *rt;
    int n;
    int base;
    outcome_rec *recs;
} runner_args;

static void *runner_thread(void *arg) {
    runner_args *a = arg;
    for (int i = 0; i < a->n; i++) {
        char id[48];
        snprintf(id, sizeof id, "defer-%d", a->base + i);
        invoke(a->rt, "job.run", id, &a->recs[i], NULL);
    }
    return NULL;
}

static _Atomic int g_completer_stop;
static _Atomic int g_settling; /* settles in progress on completer threads */
static void *completer_thread(void *arg) {
    (void)arg;
    while (!atomic_load(&g_completer_stop)) {
        rcip_invocation *inv = NULL;
        rcip_policy_request *req = NULL;
        if (!unstash(NULL, &inv, &req)) {
            sleep_us(100);
            continue;
        }
        atomic_fetch_add(&g_settling, 1);
        begin_call();
        if (inv) OK(rcip_invocation_complete(inv, "{}"));
        if (req) OK(rcip_policy_request_decide(req, "{\"decision\":\"allow\"}"));
        end_call();
        atomic_fetch_sub(&g_settling, 1);
        rcip_invocation_free(inv);
        rcip_policy_request_free(req);
    }
    return NULL;
}

static void allow_policy(void *ud, rcip_policy_request *req) {
    (void)ud;
    OK(rcip_policy_request_decide(req, "{\"decision\":\"allow\"}"));
    rcip_policy_request_free(req);
}

/* The catalog is freed right after two runtimes were built from it, while
 * threads invoke on both and another thread completes their handlers. */
static void free_catalog_while_runtimes_run(int scale) {
    reset("free the catalog while runtimes run");
    rcip_catalog *catalog = NULL;
    OK(rcip_catalog_new(CATALOG, &catalog));
    rcip_runtime *rts[2];
    rcip_binding *bindings[2];
    static ud_rec bud[2] = {{.name = "binding 0"}, {.name = "binding 1"}};
    for (int r = 0; r < 2; r++) {
        rcip_runtime_builder *b = NULL;
        OK(rcip_runtime_builder_new(catalog, &b));
        OK(rcip_runtime_builder_set_policy(b, allow_policy, NULL, NULL));
        OK(rcip_runtime_builder_build(b, &rts[r]));
        atomic_store(&bud[r].released, 0);
        OK(rcip_host_bind(rcip_runtime_host(rts[r]), "job.run", handler, NULL, &bud[r], ud_release, &bindings[r]));
    }
    rcip_catalog_free(catalog);
    int n = 200 * scale;
    outcome_rec *recs = calloc((size_t)(4 * n), sizeof *recs);
    atomic_store(&g_completer_stop, 0);
    pthread_t completers[2], runners[4];
    for (int i = 0; i < 2; i++) pthread_create(&completers[i], NULL, completer_thread, NULL);
    runner_args ra[4];
    for (int i = 0; i < 4; i++) {
        ra[i] = (runner_args){rts[i % 2], n, i * n, recs + i * n};
        pthread_create(&runners[i], NULL, runner_thread, &ra[i]);
    }
    for (int i = 0; i < 4; i++) pthread_join(runners[i], NULL);
    uint64_t deadline = mono_us() + 10000000u;
    int done;
    do {
        done = 0;
        for (int i = 0; i < 4 * n; i++) done += atomic_load(&recs[i].frees);
        if (done < 4 * n) sleep_us(1000);
    } while (done < 4 * n && mono_us() < deadline);
    atomic_store(&g_completer_stop, 1);
    for (int i = 0; i < 2; i++) pthread_join(completers[i], NULL);
    for (int i = 0; i < 4 * n; i++) expect_outcome(&recs[i], "\"status\":\"succeeded\"");
    for (int r = 0; r < 2; r++) {
        rcip_runtime_free(rts[r]);
        rcip_binding_free(bindings[r]);
        expect_released(&bud[r]);
    }
    free(recs);
}

/* A handler frees its own runtime while other invocations wait for
 * completions on this thread. */
static void free_runtime_from_a_handler_on_another_thread(void) {
    reset("a handler on another thread frees the runtime");
    g_rt = build(600000, true);
    rcip_runtime *rt = g_rt;
    rcip_binding *binding = NULL;
    OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, NULL, &g_bind_ud, ud_release, &binding));
    static outcome_rec d1, self;
    memset(&d1, 0, sizeof d1);
    memset(&self, 0, sizeof self);
    invoke(rt, "job.run", "defer-x", &d1, NULL);
    rcip_invocation *i1 = NULL, *own = NULL;
    rcip_policy_request *unused = NULL;
    CHECK(unstash("defer-x", &i1, &unused), "defer-x");
    snprintf(self.name, sizeof self.name, "free-rt");
    invoke_args h = {rt, "job.run", "free-rt", &self, false, NULL};
    pthread_t t;
    pthread_create(&t, NULL, invoke_thread, &h);
    pthread_join(t, NULL);
    /* Its own invocation and the other one ended during the free. */
    expect_outcome(&self, "EXECUTION_ABORTED");
    expect_outcome(&d1, "EXECUTION_ABORTED");
    CHECK(unstash("free-rt", &own, &unused), "free-rt handle");
    begin_call();
    OK(rcip_invocation_complete(own, "{}"));
    OK(rcip_invocation_complete(i1, "{}"));
    end_call();
    rcip_invocation_free(own);
    rcip_invocation_free(i1);
    CHECK(atomic_load(&self.outcomes) == 1 && atomic_load(&d1.outcomes) == 1, "late completions changed something");
    expect_released(&g_bind_ud);
    expect_released(&g_policy_ud);
    rcip_binding_free(binding);
}

/* Confirmations fall due on the library's timer thread while the runtime
 * is freed: no expiry callback may start after the free returned. */
static void free_runtime_while_the_timer_expires(int scale) {
    reset("free the runtime while the timer thread expires confirmations");
    int rounds = 10 * scale;
    for (int round = 0; round < rounds; round++) {
        reset("free the runtime while the timer thread expires confirmations");
        g_rt = build(20, false);
        rcip_runtime *rt = g_rt;
        rcip_binding *purge = NULL;
        static ud_rec purge_ud = {.name = "purge binding"};
        atomic_store(&purge_ud.released, 0);
        OK(rcip_host_bind(rcip_runtime_host(rt), "job.purge", handler, NULL, &purge_ud, ud_release, &purge));
        enum { N = 200 };
        static outcome_rec recs[N];
        memset(recs, 0, sizeof recs);
        uint64_t t0 = mono_us();
        for (int i = 0; i < N; i++) {
            char id[32];
            snprintf(id, sizeof id, "purge-%d", i);
            invoke(rt, "job.purge", id, &recs[i], NULL);
        }
        /* free around the moment the first ones fall due */
        uint64_t at = t0 + 18000u + (uint64_t)(round % 10) * 1000u;
        while (mono_us() < at) sleep_us(200);
        g_rt = NULL;
        rcip_runtime_free(rt);
        atomic_store(&g_free_returned, 1);
        int closed = atomic_load(&g_notices_closed);
        sleep_us(60000);
        CHECK(atomic_load(&g_notices_closed) == closed, "%d closed notices after the free returned",
              atomic_load(&g_notices_closed) - closed);
        CHECK(closed == N, "%d of %d confirmations closed by the time the free returned", closed, N);
        for (int i = 0; i < N; i++) expect_outcome(&recs[i], "confirmation_required");
        expect_released(&g_conf_ud);
        expect_released(&g_events_ud);
        expect_released(&g_clock_ud);
        rcip_binding_free(purge);
        expect_released(&purge_ud);
    }
}

/* Randomized: threads invoke (deferred policies and handlers, handlers
 * blocked in their callbacks), completers settle handles continuously, and
 * the runtime is freed at a random moment. Every invocation gets exactly
 * one outcome; settles after the free return OK and deliver nothing. */
static void race_free_with_settles(int scale) {
    int iterations = 30 * scale;
    for (int it = 0; it < iterations; it++) {
        reset("free the runtime at a random moment while handles are settled");
        g_rt = build(600000, it % 2 == 0);
        rcip_runtime *rt = g_rt;
        rcip_binding *binding = NULL;
        OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, NULL, &g_bind_ud, ud_release, &binding));
        enum { N = 60 };
        static outcome_rec recs[N];
        memset(recs, 0, sizeof recs);
        atomic_store(&g_completer_stop, 0);
        pthread_t completers[2];
        for (int i = 0; i < 2; i++) pthread_create(&completers[i], NULL, completer_thread, NULL);
        /* Two handlers blocked inside their callbacks on their own threads. */
        invoke_args blockers[2];
        pthread_t bt[2];
        for (int i = 0; i < 2; i++) {
            static char ids[2][24];
            snprintf(ids[i], sizeof ids[i], "block-%d", i);
            snprintf(recs[N - 2 + i].name, sizeof recs[0].name, "%s", ids[i]);
            blockers[i] = (invoke_args){rt, "job.run", ids[i], &recs[N - 2 + i], false, NULL};
            pthread_create(&bt[i], NULL, invoke_thread, &blockers[i]);
        }
        gate_wait_entered(&g_gate, 2);
        for (int i = 0; i < N - 2; i++) {
            char id[32];
            snprintf(id, sizeof id, "%s-%d", i % 3 == 0 ? "pol" : "defer", i);
            invoke(rt, "job.run", id, &recs[i], NULL);
        }
        sleep_us((unsigned)(it * 7919) % 3000u);
        g_rt = NULL;
        rcip_runtime_free(rt);
        atomic_store(&g_free_returned, 1);
        /* Every invocation has its outcome now, except those whose settle
         * raced the free and is still delivering on a completer thread. */
        int racing = atomic_load(&g_settling), missing = 0;
        for (int i = 0; i < N; i++) {
            int n = atomic_load(&recs[i].outcomes);
            CHECK(n <= 1, "%s: %d outcomes right after the free", recs[i].name, n);
            missing += n == 0;
        }
        CHECK(missing <= racing, "%d invocations without an outcome after the free, %d settles racing it", missing, racing);
        gate_open(&g_gate);
        for (int i = 0; i < 2; i++) pthread_join(bt[i], NULL);
        /* let the completers drain what is left (late settles) */
        for (;;) {
            pthread_mutex_lock(&g_stash_mu);
            int left = g_nstash;
            pthread_mutex_unlock(&g_stash_mu);
            if (!left) break;
            sleep_us(500);
        }
        atomic_store(&g_completer_stop, 1);
        for (int i = 0; i < 2; i++) pthread_join(completers[i], NULL);
        for (int i = 0; i < N; i++)
            CHECK(atomic_load(&recs[i].outcomes) == 1 && atomic_load(&recs[i].frees) == 1 &&
                      (has(&recs[i], "\"status\":\"succeeded\"") || has(&recs[i], "EXECUTION_ABORTED")),
                  "%s: %d outcomes, %d releases: %s", recs[i].name, atomic_load(&recs[i].outcomes),
                  atomic_load(&recs[i].frees), recs[i].json);
        expect_released(&g_bind_ud);
        expect_released(&g_policy_ud);
        rcip_binding_free(binding);
    }
}

/* rcip_runtime_close while four threads keep invoking through the same
 * runtime: other threads may be inside calls when it is closed. A call that
 * began before the close returned answers OK (and then gets exactly one
 * outcome: succeeded, or EXECUTION_ABORTED) or CLOSED; a call that begins
 * after it answers CLOSED and runs no callback. The binding's user data is
 * released by the close (once running callbacks return), the runtime's own
 * only by the free that follows. */
enum { CLOSE_THREADS = 4, CLOSE_CALLS = 3000, CLOSE_AFTER = 20 };

typedef struct close_args {
    rcip_runtime *rt;
    outcome_rec *recs;
    int used;         /* recs whose call answered OK */
    int closed_after; /* CLOSED answers to calls that began after the close */
} close_args;

/* Threads that have had a call answer OK (the close waits for all). */
static _Atomic int g_close_started;

static void *invoke_until_closed(void *arg) {
    close_args *a = arg;
    const rcip_client *client = rcip_runtime_client(a->rt);
    /* CLOSED answers to calls that began before the close returned do not
     * count: the closing thread may be descheduled for a while. */
    for (int i = 0; a->used < CLOSE_CALLS && a->closed_after < CLOSE_AFTER; i++) {
        outcome_rec *rec = &a->recs[a->used];
        snprintf(rec->name, sizeof rec->name, "close-%d", i);
        begin_call();
        bool after = tl_call == 2;
        rcip_result rc = rcip_client_invoke(client, "job.run", "{}", NULL, NULL, on_outcome, rec, on_outcome_free, NULL);
        end_call();
        if (rc == RCIP_RESULT_OK) {
            CHECK(!after, "a call that began after the close answered OK");
            if (a->used++ == 0) atomic_fetch_add(&g_close_started, 1);
        } else {
            CHECK(rc == RCIP_RESULT_CLOSED, "invoke answered %d: %s", (int)rc, rcip_last_error_message());
            a->closed_after += after;
        }
    }
    return NULL;
}

static void close_while_threads_invoke(int scale) {
    int iterations = 10 * scale;
    for (int it = 0; it < iterations; it++) {
        reset("close the runtime while other threads invoke through it");
        rcip_runtime *rt = build(600000, false);
        g_rt = rt;
        rcip_binding *binding = NULL;
        OK(rcip_host_bind(rcip_runtime_host(rt), "job.run", handler, NULL, &g_bind_ud, ud_release, &binding));
        close_args args[CLOSE_THREADS];
        pthread_t threads[CLOSE_THREADS];
        atomic_store(&g_close_started, 0);
        for (int t = 0; t < CLOSE_THREADS; t++) {
            args[t] = (close_args){rt, calloc(CLOSE_CALLS, sizeof(outcome_rec)), 0, 0};
            pthread_create(&threads[t], NULL, invoke_until_closed, &args[t]);
        }
        while (atomic_load(&g_close_started) < CLOSE_THREADS) sleep_us(100);
        sleep_us((unsigned)(it * 7919) % 2000u);
        OK(rcip_runtime_close(rt));
        atomic_store(&g_free_returned, 1);
        for (int t = 0; t < CLOSE_THREADS; t++) pthread_join(threads[t], NULL);
        int ok = 0;
        for (int t = 0; t < CLOSE_THREADS; t++) {
            CHECK(args[t].closed_after == CLOSE_AFTER || args[t].used == CLOSE_CALLS,
                  "thread %d stopped after %d OK calls and %d CLOSED ones", t, args[t].used, args[t].closed_after);
            for (int i = 0; i < args[t].used; i++) {
                outcome_rec *r = &args[t].recs[i];
                CHECK(atomic_load(&r->outcomes) == 1 && atomic_load(&r->frees) == 1 &&
                          (has(r, "\"status\":\"succeeded\"") || has(r, "EXECUTION_ABORTED")),
                      "%s: %d outcomes, %d releases: %s", r->name, atomic_load(&r->outcomes), atomic_load(&r->frees),
                      r->json);
            }
            ok += args[t].used;
            free(args[t].recs);
        }
        CHECK(ok > 0, "no call answered OK before the close");
        expect_released(&g_bind_ud);
        CHECK(atomic_load(&g_policy_ud.released) == 0, "the policy's user data went before the free");
        OK(rcip_runtime_close(rt)); /* again: nothing changes */
        g_rt = NULL;
        rcip_runtime_free(rt);
        expect_released(&g_policy_ud);
        expect_released(&g_events_ud);
        expect_released(&g_conf_ud);
        expect_released(&g_clock_ud);
        rcip_binding_free(binding);
    }
}

int main(int argc, char **argv) {
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    if (scale < 1) scale = 1;
    pthread_mutex_init(&g_gate.mu, NULL);
    pthread_cond_init(&g_gate.cv, NULL);
    if (rcip_catalog_new(CATALOG, &g_catalog) != RCIP_RESULT_OK) {
        fprintf(stderr, "catalog: %s\n", rcip_last_error_message());
        return 1;
    }
    free_runtime_with_work_on_other_threads();
    free_binding_while_its_callbacks_run();
    free_tokens_while_pending();
    free_catalog_while_runtimes_run(scale);
    free_runtime_from_a_handler_on_another_thread();
    free_runtime_while_the_timer_expires(scale);
    race_free_with_settles(scale);
    close_while_threads_invoke(scale);
    rcip_catalog_free(g_catalog);
    free(g_stash);
    pthread_cond_destroy(&g_gate.cv);
    pthread_mutex_destroy(&g_gate.mu);
    int failures = atomic_load(&g_failures);
    printf("teardown: %s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    return failures ? 1 : 0;
}
