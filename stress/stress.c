/*
 * stress.c: many threads drive one rcip runtime through the C ABI and a
 * ledger checks that nothing is lost, duplicated or out of order
 * (issue 5, item 1; PIPELINE.md sections 4, 5, 7 and 9).
 *
 * Workload (every worker thread, in a loop): invocations following one of
 * the plans below, with inline and deferred policies and handlers (deferred
 * handles are settled later by whichever worker pops them from a shared
 * action queue, usually another thread), confirmations approved, declined,
 * cancelled, approved right at their expiry or left to the library's
 * expiry timer (short TTL), cancellations at every stage, preflights,
 * binds / unbinds / rebinds, binding revisions, context changes, refreshes,
 * snapshot reads, list calls, subscriptions, stats and due-timer runs.
 *
 * The ledger is keyed by invocation id: every invocation gets an id of the
 * form "s<slot>g<generation>" naming a ledger slot, and every callback
 * (outcome, event, confirmation notice, handler, policy, on-cancel, user
 * data release) finds its slot from that id or from user data encoding the
 * same pair. A slot retires when every callback it expects has arrived
 * (reference counted), and is checked then:
 *   - exactly one consumer outcome, then exactly one release of its user
 *     data; exactly one outcome per resolve call and per duplicate invoke;
 *   - lifecycle events balance: terminal events == requested events +
 *     confirmations that ended other than by approval;
 *   - each opened confirmation has exactly one opened and one closed notice;
 *   - no handler starts when the consumer's cancel call returned before the
 *     policy handle was settled;
 *   - outcome codes are the ones the plan allows, exactly the expected one
 *     where the host decided it (a handler's settle, a cancelled policy);
 *   - any callback for a retired or unknown slot is a stray (duplicate);
 *   - no binding or subscription callback starts after its user data was
 *     released, and no binding user data is released while one runs.
 * Besides: snapshot revisions one thread reads never decrease (nor fall
 * below a revision this thread was notified of); a subscriber registered
 * for the whole run sees every revision exactly once; rcip_runtime_stats
 * never shows more than 256 receipts; a watchdog fails the run when no
 * outcome arrives for 10 seconds while work is pending; at the end every
 * slot retired (else: lost outcomes) and the runtime reports nothing
 * pending.
 *
 * Counted paths (the full run wants --min-per-path, 10000, of each):
 * cancel during a pending policy (the outcome must arrive inside the cancel
 * call, and the late decision must answer OK and change nothing), cancel
 * during a pending confirmation, cancel during a running handler (the
 * handler's token and on-cancel callback are told, the invocation goes on),
 * expiry (timer thread or a due-timer run), a deferred handle settled on
 * another thread, unbind while a handler runs (its completion still
 * succeeds), approval within 3 ms of expiresAt. "closed notice before
 * opened notice" is counted, not failed: a confirmation resolved or
 * expired by another thread before the opening thread delivered `opened`
 * (the header does not order the two across threads).
 *
 * Written in C11 against include/rcip.h rather than as a Rust crate
 * declaring the functions by hand: the declarations cannot drift from the
 * committed header, the program is a C host like the ones rcip serves,
 * and the same source builds with ASan/UBSan/LSan (`make test-asan`) and
 * runs under valgrind (`make valgrind-c`), which check the host side of
 * every callback (lent strings, user data lifetimes).
 *
 * Usage: stress [--seconds N] [--threads N] [--ttl-ms N] [--min-per-path N]
 *               [--seed N] [--quiet]
 * Exit status 0 when every check passed and each counted path reached the
 * minimum; 1 otherwise; 2 when the watchdog fired.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rcip.h"

/* ------------------------------------------------------------------ */
/* Configuration                                                        */

#define MAX_THREADS 64
#define NSLOTS (1u << 16)     /* ledger slots (must stay below 2^20) */
#define MAX_ACTIVE 4000u      /* back-pressure: live slots */
#define WATCHDOG_US (10u * 1000000u)
#define RACE_WINDOW_MS 3      /* |approve time - expiresAt| counted as a race */
#define REV_BITS (1u << 27)   /* revisions tracked for the permanent subscriber */

static unsigned g_seconds = 600;
static unsigned g_threads = 8;
static unsigned g_ttl_ms = 50;
static uint64_t g_min_per_path = 10000;
static uint64_t g_seed = 0x5eed;
static bool g_quiet = false;

static const char *CATALOG =
    "{\"protocolVersion\":\"1.0\","
    "\"application\":{\"id\":\"stress\",\"name\":\"Stress\",\"description\":\"The rcip stress host.\"},"
    "\"scopes\":[{\"id\":\"desk\",\"title\":\"Desk\",\"description\":\"The desk.\"},"
    "{\"id\":\"board\",\"title\":\"Board\",\"description\":\"The board.\"}],"
    "\"capabilities\":["
#define IN_SCHEMA                                                                                              \
    "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"slot\":{\"type\":\"integer\",\"minimum\":0},"     \
    "\"g\":{\"type\":\"integer\"},\"pad\":{\"type\":\"string\",\"maxLength\":4096}},"                           \
    "\"required\":[\"slot\",\"g\"],\"additionalProperties\":false},"                                          \
    "\"outputSchema\":{\"type\":\"object\",\"properties\":{\"ok\":{\"type\":\"boolean\"}},"                   \
    "\"required\":[\"ok\"],\"additionalProperties\":false}"
    "{\"id\":\"job.a\",\"title\":\"Job A\",\"description\":\"A write job.\",\"scopeIds\":[\"desk\"],"
    "\"effect\":\"write\"," IN_SCHEMA "},"
    "{\"id\":\"job.b\",\"title\":\"Job B\",\"description\":\"A flaky write job.\",\"scopeIds\":[\"board\"],"
    "\"effect\":\"write\"," IN_SCHEMA "},"
    "{\"id\":\"job.churn\",\"title\":\"Churn\",\"description\":\"Rebound all the time.\",\"scopeIds\":[],"
    "\"effect\":\"write\"," IN_SCHEMA "},"
    "{\"id\":\"job.read\",\"title\":\"Read\",\"description\":\"A read job.\",\"scopeIds\":[],"
    "\"effect\":\"read\"," IN_SCHEMA "}]}";

enum { CAP_A, CAP_B, CAP_CHURN, CAP_READ, NCAPS };
static const char *CAP_IDS[NCAPS] = {"job.a", "job.b", "job.churn", "job.read"};

/* ------------------------------------------------------------------ */
/* Plans                                                                */

enum plan {
    PL_INLINE_OK,       /* allow inline, complete inline: succeeded */
    PL_INLINE_FAIL,     /* handler fails inline */
    PL_BAD_OUTPUT,      /* handler output not JSON / too deep / off schema: OUTPUT_INVALID */
    PL_DENY,            /* policy denies inline */
    PL_POLICY_FAIL,     /* policy fails, decides nonsense, or is freed undecided */
    PL_BAD_INPUT,       /* input text is not a JSON value: INPUT_INVALID, no events */
    PL_SCHEMA_BAD,      /* input fails its schema */
    PL_PRECANCELLED,    /* token cancelled before invoke */
    PL_UNKNOWN_CAP,     /* CAPABILITY_NOT_FOUND */
    PL_DEFER_POLICY,    /* policy answered later by another thread */
    PL_CANCEL_POLICY,   /* cancel while the policy is pending (path 1) */
    PL_RACE_POLICY,     /* cancel racing a deferred decision */
    PL_DEFER_HANDLER,   /* handler completed later by another thread (path 5) */
    PL_CANCEL_HANDLER,  /* cancel while the handler runs (path 3) */
    PL_UNBIND_RUNNING,  /* unbind while the handler runs (path 6) */
    PL_FREE_UNSETTLED,  /* handler handle freed unsettled */
    PL_CONFIRM_APPROVE, /* confirmation approved */
    PL_CONFIRM_DECLINE, /* confirmation declined */
    PL_CONFIRM_EXPIRE,  /* confirmation left to expire (path 4) */
    PL_CONFIRM_CANCEL,  /* cancel while the confirmation is pending (path 2) */
    PL_CONFIRM_RACE,    /* approval racing expiry (path 7) */
    PL_DUP,             /* second invoke with a reserved id */
    PL_BLOCKING,        /* rcip_client_invoke_blocking */
    NPLANS
};

/* Weights per 1000 invocations. */
static const unsigned PLAN_WEIGHT[NPLANS] = {
    [PL_INLINE_OK] = 130,     [PL_INLINE_FAIL] = 25,     [PL_BAD_OUTPUT] = 20,     [PL_DENY] = 25,
    [PL_POLICY_FAIL] = 20,    [PL_BAD_INPUT] = 20,       [PL_SCHEMA_BAD] = 15,     [PL_PRECANCELLED] = 15,
    [PL_UNKNOWN_CAP] = 10,    [PL_DEFER_POLICY] = 50,    [PL_CANCEL_POLICY] = 65,  [PL_RACE_POLICY] = 40,
    [PL_DEFER_HANDLER] = 60,  [PL_CANCEL_HANDLER] = 65,  [PL_UNBIND_RUNNING] = 70, [PL_FREE_UNSETTLED] = 15,
    [PL_CONFIRM_APPROVE] = 50, [PL_CONFIRM_DECLINE] = 25, [PL_CONFIRM_EXPIRE] = 65, [PL_CONFIRM_CANCEL] = 65,
    [PL_CONFIRM_RACE] = 90,   [PL_DUP] = 15,             [PL_BLOCKING] = 20,
};

/* ------------------------------------------------------------------ */
/* Outcome codes                                                        */

enum code {
    C_SUCCEEDED,
    C_CONF_REQUIRED,
    C_ALREADY_ACTIVE,
    C_INPUT_INVALID,
    C_NOT_FOUND,
    C_UNBOUND,
    C_UNAVAILABLE,
    C_POLICY_FAILED,
    C_POLICY_DENIED,
    C_ABORTED,
    C_EXEC_FAILED,
    C_OUTPUT_INVALID,
    C_DECLINED,
    C_EXPIRED,
    C_CONF_NOT_FOUND,
    NCODES
};
static const char *CODE_NAMES[NCODES] = {
    "succeeded",          "confirmation_required",     "INVOCATION_ALREADY_ACTIVE", "INPUT_INVALID",
    "CAPABILITY_NOT_FOUND", "CAPABILITY_UNBOUND",      "CAPABILITY_UNAVAILABLE",    "POLICY_EVALUATION_FAILED",
    "POLICY_DENIED",      "EXECUTION_ABORTED",         "EXECUTION_FAILED",          "OUTPUT_INVALID",
    "CONFIRMATION_DECLINED", "CONFIRMATION_EXPIRED",   "CONFIRMATION_NOT_FOUND",
};
#define BIT(c) (1u << (c))
/* Outcomes the environment may cause before a handler runs: churned
 * bindings, flaky availability, a context change seen by a recheck. */
#define ENV (BIT(C_UNBOUND) | BIT(C_UNAVAILABLE) | BIT(C_POLICY_DENIED))

/* ------------------------------------------------------------------ */
/* Counted paths                                                        */

enum path {
    P_CANCEL_POLICY,   /* cancel during a pending policy */
    P_CANCEL_CONF,     /* cancel during a pending confirmation */
    P_CANCEL_HANDLER,  /* cancel during a running handler */
    P_EXPIRY,          /* expiry (timer thread or a due-timer run) */
    P_OTHER_THREAD,    /* a deferred handle settled on another thread */
    P_UNBIND_RUNNING,  /* unbind while a handler runs */
    P_APPROVE_RACE,    /* approval within RACE_WINDOW_MS of expiresAt */
    NPATHS
};
static const char *PATH_NAMES[NPATHS] = {
    "cancel during a pending policy",  "cancel during a pending confirmation", "cancel during a running handler",
    "expiry",                          "completion from another thread",       "unbind while a handler runs",
    "approval racing expiry",
};
static _Atomic uint64_t g_path[NPATHS];

/* Finer counters for the report. */
enum extra {
    X_EXPIRY_TIMER,          /* expired on the library's timer thread */
    X_EXPIRY_DUE_RUN,        /* expired by rcip_runtime_run_due_timers on a worker */
    X_EXPIRY_AT_APPROVAL,    /* approval at or after expiresAt */
    X_RACE_APPROVED,         /* racing approval that ran the capability */
    X_RACE_EXPIRED,          /* racing approval answered CONFIRMATION_EXPIRED */
    X_RACE_OTHER,            /* racing approval answered anything else */
    X_OTHER_THREAD_HANDLER,  /* completion handles settled on another thread */
    X_OTHER_THREAD_POLICY,   /* policy handles decided on another thread */
    X_LATE_DECIDE,           /* late decisions after cancel, answered OK */
    X_CANCEL_CONF_EARLY,     /* token cancelled before the confirmation registered on it */
    X_CLOSED_BEFORE_OPENED,  /* a closed notice delivered before the opened notice */
    X_PREFLIGHTS,
    X_PREFLIGHT_ENTRIES,
    X_RECEIPT_ANSWERS,
    X_BINDS,
    X_SUBSCRIBES,
    X_CONTEXT_CHANGES,
    X_REFRESHES,
    X_SNAPSHOT_READS,
    X_MAX_RECEIPTS,
    NEXTRA
};
static const char *EXTRA_NAMES[NEXTRA] = {
    "expired on the timer thread",  "expired by a due-timer run",        "expired at approval",
    "race: approval ran",           "race: answered expired",            "race: invalidated (context or binding changed)",
    "handler handles on another thread", "policy handles on another thread", "late decisions ignored (OK)",
    "cancel before the confirmation watched its token", "closed notice before opened notice",
    "preflights",                   "preflight entries",                 "receipt answers",
    "binds",                        "subscriptions",                     "context changes",
    "refreshes",                    "snapshot reads",                    "most receipts seen",
};
static _Atomic uint64_t g_extra[NEXTRA];

static _Atomic uint64_t g_code_count[NCODES];
static _Atomic uint64_t g_invocations;
static _Atomic uint64_t g_resolves;

/* ------------------------------------------------------------------ */
/* Violations                                                           */

enum vkind {
    V_DUPLICATE,
    V_LOST,
    V_STRAY,
    V_UNEXPECTED_OUTCOME,
    V_HANDLER_AFTER_CANCEL,
    V_REVISION,
    V_RECEIPTS,
    V_AFTER_RELEASE,
    V_RELEASE_WHILE_RUNNING,
    V_RESULT,
    V_EVENTS,
    V_CONFIRMATION,
    V_SUBSCRIBER,
    V_ORDER,
    V_TEARDOWN,
    NV
};
static const char *VNAMES[NV] = {
    "duplicated outcome", "lost outcome",         "stray callback",        "unexpected outcome",
    "handler after cancel", "revision decreased", "too many receipts",     "callback after user data release",
    "user data released while a callback runs", "unexpected rcip_result", "event imbalance",
    "confirmation notices", "subscriber notifications", "ordering",        "teardown",
};
static _Atomic uint64_t g_viol[NV];

static void violation(int kind, const char *fmt, ...) {
    uint64_t n = atomic_fetch_add(&g_viol[kind], 1);
    if (n < 8) {
        char buf[1024];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(buf, sizeof buf, fmt, ap);
        va_end(ap);
        fprintf(stderr, "VIOLATION (%s): %s\n", VNAMES[kind], buf);
    }
}

/* ------------------------------------------------------------------ */
/* Time, randomness, ordering                                           */

static uint64_t mono_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int64_t real_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void sleep_us(unsigned us) {
    struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000L};
    nanosleep(&ts, NULL);
}

static _Thread_local uint64_t tl_rng;
static _Atomic uint64_t g_rng_seq;

static uint64_t rnd(void) {
    if (tl_rng == 0) tl_rng = (g_seed ^ (0x9E3779B97F4A7C15ull * (atomic_fetch_add(&g_rng_seq, 1) + 1))) | 1;
    uint64_t x = tl_rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tl_rng = x;
    return x * 2685821657736338717ull;
}

static uint32_t below(uint32_t n) { return (uint32_t)(rnd() % n); }

/* A global order of host-observed moments (cancel returned, settle began). */
static _Atomic uint64_t g_seq = 1;
static uint64_t next_seq(void) { return atomic_fetch_add(&g_seq, 1); }

static _Thread_local int tl_worker = -1; /* -1: not a worker (the library's timer thread) */
static _Thread_local int tl_resolving = 0; /* inside one of our resolve calls */
static _Thread_local int tl_due_run = 0;   /* inside one of our due-timer runs */
static _Thread_local uint64_t tl_last_rev;
static _Thread_local uint64_t tl_max_notified;

/* Watchdog: the last moment an outcome or report arrived. */
static _Atomic uint64_t g_last_progress;

/* ------------------------------------------------------------------ */
/* The runtime                                                          */

static rcip_catalog *g_catalog;
static rcip_runtime *g_runtime;
static const rcip_client *g_client;
static const rcip_host *g_host;
static _Atomic int g_runtime_freed;
static _Atomic int g_flaky; /* job.b unavailable while set */
static _Atomic int g_runtime_ud_frees;

/* ------------------------------------------------------------------ */
/* Bindings and subscriptions (records are never reused: a callback that
 * starts after its record was released is always seen)                 */

typedef struct bind_rec {
    int cap;
    rcip_binding *b;
    _Atomic int released;
    _Atomic int failed_reg;
    _Atomic int in_cb;
    struct bind_rec *next_all;
} bind_rec;

typedef struct sub_rec {
    _Atomic int released;
    _Atomic int in_cb;
    int permanent;
    struct sub_rec *next_all;
} sub_rec;

static pthread_mutex_t g_rec_mu = PTHREAD_MUTEX_INITIALIZER;
static bind_rec *g_all_binds;
static sub_rec *g_all_subs;

static pthread_mutex_t g_cap_mu[NCAPS] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                          PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
static bind_rec *g_cur[NCAPS]; /* the installed binding per capability, under g_cap_mu */

static _Atomic unsigned char *g_rev_seen; /* permanent subscriber: one byte per revision */
static uint64_t g_rev_start;

/* ------------------------------------------------------------------ */
/* Ledger slots                                                         */

enum kind { K_INV = 1, K_PF = 2 };
enum handle_state { H_NONE, H_PENDING, H_TAKEN };
enum reason { R_NONE, R_APPROVED, R_DECLINED, R_EXPIRED, R_CANCELLED, R_INVALIDATED, R_CLOSED };
static const char *REASON_NAMES[] = {"none", "approved", "declined", "expired", "cancelled", "invalidated", "closed"};

typedef struct slot {
    _Atomic uint32_t gen; /* first: never cleared */
    _Atomic int active;
    _Atomic int refs;
    int kind, plan, cap, owner, pf_count;
    char id[32];
    rcip_cancel_token *token;
    /* the confirmation (written by the outcome callback before any action is queued) */
    char conf_id[128];
    int64_t expires_at;
    _Atomic int outcomes, ud_frees, first_code;
    _Atomic int resolves, resolve_outcomes, resolve_frees;
    _Atomic int dup_outcomes, dup_frees;
    _Atomic int ev_requested, ev_started, ev_terminal;
    _Atomic int opened, closed, closed_nonapproved, close_reason, conf_notices;
    _Atomic int handler_calls, policy_calls;
    _Atomic int oncancel_regs, oncancel_calls, oncancel_frees;
    _Atomic uint64_t cancel_done_seq, settle_start_seq;
    _Atomic int cancelled;
    _Atomic int preq_state;
    rcip_policy_request *preq;
    int preq_worker;
    _Atomic int inv_state;
    rcip_invocation *inv;
    int inv_worker;
    bind_rec *inv_rec;
    _Atomic int expect; /* exact code of the next handler-settled outcome, or -1 */
    _Atomic int pf_reports, pf_frees;
} slot;

static slot *g_slots;
static uint32_t g_free[NSLOTS];
static uint32_t g_free_n;
static pthread_mutex_t g_free_mu = PTHREAD_MUTEX_INITIALIZER;
static _Atomic unsigned g_active;

enum tag { T_INVOKE = 1, T_RESOLVE, T_DUP, T_ONCANCEL, T_REPORT };

static void *ud_of(slot *s, int tag) {
    uint64_t idx = (uint64_t)(s - g_slots);
    uint64_t v = ((uint64_t)atomic_load(&s->gen) << 24) | ((uint64_t)tag << 20) | idx;
    return (void *)(uintptr_t)v;
}

static slot *slot_at(uint64_t idx, uint64_t gen) {
    if (idx >= NSLOTS) return NULL;
    slot *s = &g_slots[idx];
    if (atomic_load(&s->gen) != gen || !atomic_load(&s->active)) return NULL;
    return s;
}

static slot *slot_of_ud(void *ud, int *tag) {
    uint64_t v = (uint64_t)(uintptr_t)ud;
    *tag = (int)((v >> 20) & 0xF);
    return slot_at(v & 0xFFFFF, v >> 24);
}

/* "s<idx>g<gen>" */
static slot *slot_of_id(const char *id) {
    if (!id || id[0] != 's') return NULL;
    char *end;
    unsigned long idx = strtoul(id + 1, &end, 10);
    if (*end != 'g') return NULL;
    unsigned long gen = strtoul(end + 1, &end, 10);
    if (*end != '\0') return NULL;
    return slot_at(idx, gen);
}

static slot *slot_alloc(int kind, int plan, int cap) {
    pthread_mutex_lock(&g_free_mu);
    if (g_free_n == 0) {
        pthread_mutex_unlock(&g_free_mu);
        return NULL;
    }
    uint32_t idx = g_free[--g_free_n];
    pthread_mutex_unlock(&g_free_mu);
    slot *s = &g_slots[idx];
    uint32_t gen = atomic_load(&s->gen) + 1;
    atomic_store(&s->gen, gen);
    memset((char *)s + offsetof(slot, active), 0, sizeof *s - offsetof(slot, active));
    s->kind = kind;
    s->plan = plan;
    s->cap = cap;
    s->owner = tl_worker;
    atomic_store(&s->first_code, -1);
    atomic_store(&s->expect, -1);
    snprintf(s->id, sizeof s->id, "s%ug%u", idx, gen);
    atomic_fetch_add(&g_active, 1);
    atomic_store(&s->refs, 1); /* the driver's */
    atomic_store(&s->active, 1);
    return s;
}

static void slot_ref(slot *s) { atomic_fetch_add(&s->refs, 1); }
static void slot_retire(slot *s);
static void slot_unref(slot *s) {
    int left = atomic_fetch_sub(&s->refs, 1) - 1;
    if (left == 0) slot_retire(s);
    if (left < 0) violation(V_DUPLICATE, "%s: reference count below zero", s->id);
}

/* ------------------------------------------------------------------ */
/* The action queue: deferred handles and timed actions, run by whichever
 * worker pops them.                                                    */

enum action_kind {
    A_DECIDE,          /* deferred policy: allow */
    A_DECIDE_CONFIRM,  /* deferred policy: confirm */
    A_CANCEL_POLICY,   /* path 1 */
    A_RACE_CANCEL,     /* cancel racing a decision */
    A_DUP_THEN_DECIDE, /* invoke again with the reserved id, then allow */
    A_COMPLETE,        /* deferred handler: complete */
    A_CANCEL_HANDLER,  /* path 3 */
    A_UNBIND_RUNNING,  /* path 6 */
    A_FREE_HANDLER,    /* free the handle unsettled */
    A_APPROVE,
    A_DECLINE,
    A_CANCEL_CONF,     /* path 2 */
    A_APPROVE_RACE,    /* path 7 */
    A_LATE_RESOLVE,    /* ask for the receipt */
    A_PF_DECIDE,       /* deferred preflight policy */
    A_PF_CANCEL,
};

typedef struct action {
    uint64_t due;
    uint32_t kind;
    slot *s;
    void *ptr;
} action;

static pthread_mutex_t g_q_mu = PTHREAD_MUTEX_INITIALIZER;
static action *g_q;
static size_t g_q_n, g_q_cap;

/* Queues an action; the caller already holds the slot reference it carries. */
static void push_action(uint64_t due, uint32_t kind, slot *s, void *ptr) {
    pthread_mutex_lock(&g_q_mu);
    if (g_q_n == g_q_cap) {
        g_q_cap = g_q_cap ? g_q_cap * 2 : 4096;
        g_q = realloc(g_q, g_q_cap * sizeof *g_q);
        if (!g_q) {
            fprintf(stderr, "out of memory\n");
            abort();
        }
    }
    size_t i = g_q_n++;
    action a = {due, kind, s, ptr};
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (g_q[p].due <= due) break;
        g_q[i] = g_q[p];
        i = p;
    }
    g_q[i] = a;
    pthread_mutex_unlock(&g_q_mu);
}

static bool pop_due(uint64_t now, action *out) {
    pthread_mutex_lock(&g_q_mu);
    if (g_q_n == 0 || g_q[0].due > now) {
        pthread_mutex_unlock(&g_q_mu);
        return false;
    }
    *out = g_q[0];
    action last = g_q[--g_q_n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < g_q_n && g_q[l].due < (m == i ? last.due : g_q[m].due)) m = l;
        if (r < g_q_n && g_q[r].due < (m == i ? last.due : g_q[m].due)) m = r;
        if (m == i) break;
        g_q[i] = g_q[m];
        i = m;
    }
    if (g_q_n > 0) g_q[i] = last;
    pthread_mutex_unlock(&g_q_mu);
    return true;
}

static size_t queue_len(void) {
    pthread_mutex_lock(&g_q_mu);
    size_t n = g_q_n;
    pthread_mutex_unlock(&g_q_mu);
    return n;
}

/* ------------------------------------------------------------------ */
/* Small JSON readers (rcip's output is compact and its key order fixed) */

static bool json_str(const char *json, const char *key, char *buf, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    if (!p) return false;
    p += strlen(pat);
    size_t i = 0;
    while (p[i] && p[i] != '"' && i + 1 < n) {
        buf[i] = p[i];
        i++;
    }
    buf[i] = '\0';
    return p[i] == '"';
}

static bool json_int(const char *json, const char *key, int64_t *out) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(json, pat);
    if (!p) return false;
    char *end;
    long long v = strtoll(p + strlen(pat), &end, 10);
    if (end == p + strlen(pat)) return false;
    *out = v;
    return true;
}

/* The code of an outcome record, or -1 when it is malformed. */
static int parse_outcome(const char *json) {
    char status[40], code[48];
    if (!json_str(json, "status", status, sizeof status)) return -1;
    if (!strcmp(status, "succeeded")) return strstr(json, "\"output\":") ? C_SUCCEEDED : -1;
    if (!strcmp(status, "confirmation_required")) return strstr(json, "\"confirmation\":{\"id\":\"") ? C_CONF_REQUIRED : -1;
    const char *err = strstr(json, "\"error\":{");
    if (!err || !json_str(err, "code", code, sizeof code)) return -1;
    int c = -1;
    for (int i = C_ALREADY_ACTIVE; i < NCODES; i++)
        if (!strcmp(code, CODE_NAMES[i])) c = i;
    if (c < 0) return -1;
    bool denied = c == C_POLICY_DENIED || c == C_DECLINED;
    if (strcmp(status, denied ? "denied" : "failed") != 0) return -1;
    return c;
}

static void touch_progress(void) { atomic_store(&g_last_progress, mono_us()); }

static void expect_rc(rcip_result got, rcip_result want, const char *what) {
    if (got != want) {
        const char *m = rcip_last_error_message();
        violation(V_RESULT, "%s returned %u (%s), expected %u: %s", what, (unsigned)got, rcip_result_str(got),
                  (unsigned)want, m ? m : "");
    }
}

/* ------------------------------------------------------------------ */
/* Slot retirement: the ledger's checks                                 */

static unsigned allowed_first(int plan) {
    switch (plan) {
    case PL_INLINE_OK:
    case PL_DEFER_POLICY:
    case PL_DEFER_HANDLER:
    case PL_UNBIND_RUNNING:
    case PL_BLOCKING:
    case PL_DUP:
        return BIT(C_SUCCEEDED) | ENV;
    case PL_INLINE_FAIL:
        return BIT(C_EXEC_FAILED) | BIT(C_ABORTED) | ENV;
    case PL_BAD_OUTPUT:
        return BIT(C_OUTPUT_INVALID) | ENV;
    case PL_DENY:
        return BIT(C_POLICY_DENIED) | ENV;
    case PL_POLICY_FAIL:
        return BIT(C_POLICY_FAILED) | ENV;
    case PL_BAD_INPUT:
        return BIT(C_INPUT_INVALID);
    case PL_SCHEMA_BAD:
        return BIT(C_INPUT_INVALID) | BIT(C_UNBOUND) | BIT(C_UNAVAILABLE);
    case PL_PRECANCELLED:
        return BIT(C_ABORTED) | BIT(C_UNBOUND) | BIT(C_UNAVAILABLE);
    case PL_UNKNOWN_CAP:
        return BIT(C_NOT_FOUND);
    case PL_CANCEL_POLICY:
        return BIT(C_ABORTED) | ENV;
    case PL_RACE_POLICY:
        return BIT(C_SUCCEEDED) | BIT(C_ABORTED) | ENV;
    case PL_CANCEL_HANDLER:
        return BIT(C_SUCCEEDED) | BIT(C_ABORTED) | ENV;
    case PL_FREE_UNSETTLED:
        return BIT(C_EXEC_FAILED) | ENV;
    default: /* confirmation plans */
        return BIT(C_CONF_REQUIRED) | ENV;
    }
}

static void slot_retire(slot *s) {
    const char *id = s->id;
    if (s->kind == K_INV) {
        int outcomes = atomic_load(&s->outcomes), frees = atomic_load(&s->ud_frees);
        if (outcomes != 1 || frees != 1)
            violation(outcomes > 1 ? V_DUPLICATE : V_LOST, "%s (plan %d): %d outcomes, %d user-data releases", id,
                      s->plan, outcomes, frees);
        if (atomic_load(&s->resolve_outcomes) != atomic_load(&s->resolves) ||
            atomic_load(&s->resolve_frees) != atomic_load(&s->resolves))
            violation(V_DUPLICATE, "%s: %d resolves, %d resolve outcomes, %d releases", id, atomic_load(&s->resolves),
                      atomic_load(&s->resolve_outcomes), atomic_load(&s->resolve_frees));
        if (s->plan == PL_DUP && (atomic_load(&s->dup_outcomes) > 1 || atomic_load(&s->dup_frees) != atomic_load(&s->dup_outcomes)))
            violation(V_DUPLICATE, "%s: duplicate invoke: %d outcomes, %d releases", id, atomic_load(&s->dup_outcomes),
                      atomic_load(&s->dup_frees));
        int req = atomic_load(&s->ev_requested), term = atomic_load(&s->ev_terminal);
        int nonapproved = atomic_load(&s->closed_nonapproved);
        if (term != req + nonapproved || atomic_load(&s->ev_started) > req)
            violation(V_EVENTS, "%s (plan %d): requested %d, started %d, terminal %d, closed other than approved %d", id,
                      s->plan, req, atomic_load(&s->ev_started), term, nonapproved);
        bool opened_conf = atomic_load(&s->first_code) == C_CONF_REQUIRED;
        if (atomic_load(&s->opened) != (opened_conf ? 1 : 0) || atomic_load(&s->closed) != (opened_conf ? 1 : 0))
            violation(V_CONFIRMATION, "%s: %d opened and %d closed notices for %d confirmations", id,
                      atomic_load(&s->opened), atomic_load(&s->closed), opened_conf ? 1 : 0);
        if (atomic_load(&s->handler_calls) > 2 || atomic_load(&s->policy_calls) > 2)
            violation(V_DUPLICATE, "%s: %d handler calls, %d policy calls", id, atomic_load(&s->handler_calls),
                      atomic_load(&s->policy_calls));
        if (atomic_load(&s->oncancel_frees) != atomic_load(&s->oncancel_regs) ||
            atomic_load(&s->oncancel_calls) > atomic_load(&s->oncancel_regs))
            violation(V_DUPLICATE, "%s: on-cancel: %d registrations, %d calls, %d releases", id,
                      atomic_load(&s->oncancel_regs), atomic_load(&s->oncancel_calls), atomic_load(&s->oncancel_frees));
    } else {
        if (atomic_load(&s->pf_reports) != 1 || atomic_load(&s->pf_frees) != 1)
            violation(atomic_load(&s->pf_reports) > 1 ? V_DUPLICATE : V_LOST, "preflight %s: %d reports, %d releases", id,
                      atomic_load(&s->pf_reports), atomic_load(&s->pf_frees));
    }
    rcip_cancel_token_free(s->token);
    s->token = NULL;
    atomic_store(&s->active, 0);
    uint32_t idx = (uint32_t)(s - g_slots);
    pthread_mutex_lock(&g_free_mu);
    g_free[g_free_n++] = idx;
    pthread_mutex_unlock(&g_free_mu);
    atomic_fetch_sub(&g_active, 1);
}

/* ------------------------------------------------------------------ */
/* Outcomes                                                             */

static void queue_confirmation_action(slot *s);

static void check_outcome_id(slot *s, const char *json, int code) {
    char got[64] = "";
    if (code == C_CONF_NOT_FOUND) return; /* a newly generated id */
    if (!json_str(json, "invocationId", got, sizeof got) || strcmp(got, s->id) != 0)
        violation(V_UNEXPECTED_OUTCOME, "%s: outcome names invocation %s", s->id, got);
}

static void record_first_outcome(slot *s, int code, const char *json) {
    if (atomic_fetch_add(&s->outcomes, 1) != 0) {
        violation(V_DUPLICATE, "%s: second consumer outcome %s", s->id, json);
        return;
    }
    if (atomic_load(&s->ud_frees) != 0) violation(V_AFTER_RELEASE, "%s: outcome after its user data was released", s->id);
    atomic_store(&s->first_code, code);
    if (code < 0 || !(allowed_first(s->plan) & BIT(code)))
        violation(V_UNEXPECTED_OUTCOME, "%s (plan %d): outcome %s", s->id, s->plan, json);
    if (code == C_CONF_REQUIRED) {
        const char *c = strstr(json, "\"confirmation\":{");
        int64_t at = 0;
        if (!c || !json_str(c, "id", s->conf_id, sizeof s->conf_id) || !json_int(c, "expiresAt", &at)) {
            violation(V_UNEXPECTED_OUTCOME, "%s: confirmation record unreadable: %s", s->id, json);
            return;
        }
        s->expires_at = at;
        queue_confirmation_action(s);
    }
}

static void check_expectation(slot *s, int code, const char *json) {
    int want = atomic_exchange(&s->expect, -1);
    if (want >= 0 && want != code)
        violation(V_UNEXPECTED_OUTCOME, "%s (plan %d): expected %s after the handler, got %s", s->id, s->plan,
                  CODE_NAMES[want], json);
}

static void on_outcome(void *ud, const char *json) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    touch_progress();
    int code = parse_outcome(json);
    if (code >= 0) atomic_fetch_add(&g_code_count[code], 1);
    if (!s) {
        violation(V_STRAY, "outcome for a retired ledger slot: %s", json);
        return;
    }
    if (code < 0) violation(V_UNEXPECTED_OUTCOME, "%s: malformed outcome %s", s->id, json);
    else check_outcome_id(s, json, code);
    switch (tag) {
    case T_INVOKE:
        if (code != C_CONF_REQUIRED && code >= 0) check_expectation(s, code, json);
        record_first_outcome(s, code, json);
        break;
    case T_RESOLVE: {
        int n = atomic_fetch_add(&s->resolve_outcomes, 1) + 1;
        if (n > atomic_load(&s->resolves)) violation(V_DUPLICATE, "%s: more resolve outcomes than resolves", s->id);
        if (code >= 0) check_expectation(s, code, json);
        if (code == C_CONF_REQUIRED) violation(V_UNEXPECTED_OUTCOME, "%s: an approved re-run asked again", s->id);
        break;
    }
    case T_DUP:
        if (atomic_fetch_add(&s->dup_outcomes, 1) != 0) violation(V_DUPLICATE, "%s: second duplicate outcome", s->id);
        if (code != C_ALREADY_ACTIVE) violation(V_UNEXPECTED_OUTCOME, "%s: duplicate id gave %s", s->id, json);
        break;
    default:
        violation(V_STRAY, "outcome with tag %d", tag);
    }
}

static void on_outcome_free(void *ud) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    if (!s) {
        violation(V_STRAY, "user data release for a retired ledger slot");
        return;
    }
    switch (tag) {
    case T_INVOKE:
        if (atomic_fetch_add(&s->ud_frees, 1) != 0) violation(V_DUPLICATE, "%s: user data released twice", s->id);
        if (atomic_load(&s->outcomes) != 1) violation(V_ORDER, "%s: user data released before the outcome", s->id);
        break;
    case T_RESOLVE:
        atomic_fetch_add(&s->resolve_frees, 1);
        if (atomic_load(&s->resolve_frees) > atomic_load(&s->resolve_outcomes))
            violation(V_ORDER, "%s: resolve user data released before its outcome", s->id);
        break;
    case T_DUP:
        atomic_fetch_add(&s->dup_frees, 1);
        break;
    default:
        violation(V_STRAY, "release with tag %d", tag);
        return;
    }
    slot_unref(s);
}

static void on_report(void *ud, const char *json) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    touch_progress();
    if (!s || tag != T_REPORT) {
        violation(V_STRAY, "report for a retired ledger slot: %s", json);
        return;
    }
    if (atomic_fetch_add(&s->pf_reports, 1) != 0) violation(V_DUPLICATE, "preflight %s: second report", s->id);
    int entries = 0;
    for (const char *p = strstr(json, "\"status\":\""); p; p = strstr(p + 1, "\"status\":\"")) entries++;
    if (entries != s->pf_count || !strstr(json, "\"consistent\":"))
        violation(V_UNEXPECTED_OUTCOME, "preflight %s: %d entries for %d proposals: %s", s->id, entries, s->pf_count, json);
    atomic_fetch_add(&g_extra[X_PREFLIGHTS], 1);
    atomic_fetch_add(&g_extra[X_PREFLIGHT_ENTRIES], (uint64_t)entries);
}

static void on_report_free(void *ud) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    if (!s) {
        violation(V_STRAY, "report user data released for a retired slot");
        return;
    }
    atomic_fetch_add(&s->pf_frees, 1);
    if (atomic_load(&s->pf_reports) != 1) violation(V_ORDER, "preflight %s: released before its report", s->id);
    slot_unref(s);
}

/* ------------------------------------------------------------------ */
/* Runtime-level callbacks: events, confirmation notices, policy        */

static void check_alive(const char *what) {
    if (atomic_load(&g_runtime_freed)) violation(V_TEARDOWN, "%s called after rcip_runtime_free returned", what);
}

static void on_event(void *ud, const char *json) {
    (void)ud;
    check_alive("event observer");
    char iid[64], phase[40];
    if (!json_str(json, "invocationId", iid, sizeof iid) || !json_str(json, "phase", phase, sizeof phase)) {
        violation(V_EVENTS, "malformed event %s", json);
        return;
    }
    slot *s = slot_of_id(iid);
    if (!s) {
        violation(V_STRAY, "event for a retired or unknown invocation: %s", json);
        return;
    }
    if (!strcmp(phase, "requested")) atomic_fetch_add(&s->ev_requested, 1);
    else if (!strcmp(phase, "started")) atomic_fetch_add(&s->ev_started, 1);
    else if (!strcmp(phase, "succeeded") || !strcmp(phase, "failed") || !strcmp(phase, "denied") ||
             !strcmp(phase, "confirmation_requested") || !strcmp(phase, "confirmation_declined"))
        atomic_fetch_add(&s->ev_terminal, 1);
    else violation(V_EVENTS, "unknown phase %s", json);
}

static void conf_notice_done(slot *s) {
    if (atomic_fetch_add(&s->conf_notices, 1) == 1) slot_unref(s);
}

static int reason_of(const char *r) {
    for (int i = R_APPROVED; i <= R_CLOSED; i++)
        if (!strcmp(r, REASON_NAMES[i])) return i;
    return R_NONE;
}

static void on_confirmation(void *ud, const char *json) {
    (void)ud;
    check_alive("confirmation callback");
    char ev[16], iid[64];
    if (!json_str(json, "event", ev, sizeof ev) || !json_str(json, "invocationId", iid, sizeof iid)) {
        violation(V_CONFIRMATION, "malformed notice %s", json);
        return;
    }
    slot *s = slot_of_id(iid);
    if (!s) {
        violation(V_STRAY, "confirmation notice for a retired invocation: %s", json);
        return;
    }
    if (!strcmp(ev, "opened")) {
        if (atomic_fetch_add(&s->opened, 1) != 0) violation(V_CONFIRMATION, "%s: opened twice", s->id);
        if (atomic_load(&s->closed) != 0) atomic_fetch_add(&g_extra[X_CLOSED_BEFORE_OPENED], 1);
        conf_notice_done(s);
        return;
    }
    char reason[24];
    if (strcmp(ev, "closed") != 0 || !json_str(json, "reason", reason, sizeof reason)) {
        violation(V_CONFIRMATION, "unknown notice %s", json);
        return;
    }
    int r = reason_of(reason);
    if (atomic_fetch_add(&s->closed, 1) != 0) violation(V_CONFIRMATION, "%s: closed twice (%s)", s->id, reason);
    atomic_store(&s->close_reason, r);
    if (r != R_APPROVED) atomic_fetch_add(&s->closed_nonapproved, 1);
    if (r == R_EXPIRED) {
        if (tl_resolving) atomic_fetch_add(&g_extra[X_EXPIRY_AT_APPROVAL], 1);
        else {
            atomic_fetch_add(&g_path[P_EXPIRY], 1);
            atomic_fetch_add(&g_extra[tl_due_run ? X_EXPIRY_DUE_RUN : X_EXPIRY_TIMER], 1);
        }
    }
    if (r == R_CANCELLED && s->plan == PL_CONFIRM_CANCEL) atomic_fetch_add(&g_path[P_CANCEL_CONF], 1);
    unsigned ok;
    switch (s->plan) {
    /* a late decline reaches a confirmation the timer has not expired yet:
     * declining checks before expiry (PIPELINE.md section 5, resolve 2-3) */
    case PL_CONFIRM_EXPIRE: ok = BIT(R_EXPIRED) | BIT(R_DECLINED); break;
    case PL_CONFIRM_CANCEL: ok = BIT(R_CANCELLED) | BIT(R_EXPIRED); break;
    case PL_CONFIRM_DECLINE: ok = BIT(R_DECLINED) | BIT(R_EXPIRED); break;
    default: ok = BIT(R_APPROVED) | BIT(R_EXPIRED) | BIT(R_INVALIDATED); break;
    }
    if (!(ok & BIT(r))) violation(V_CONFIRMATION, "%s (plan %d): closed %s", s->id, s->plan, reason);
    conf_notice_done(s);
}

static void runtime_ud_free(void *ud) {
    (void)ud;
    atomic_fetch_add(&g_runtime_ud_frees, 1);
}

static void decide(rcip_policy_request *req, const char *decision, rcip_result want) {
    expect_rc(rcip_policy_request_decide(req, decision), want, "rcip_policy_request_decide");
}

static const char *ALLOW = "{\"decision\":\"allow\"}";
static const char *CONFIRM = "{\"decision\":\"confirm\",\"reason\":\"stress: please confirm\"}";
static const char *DENY = "{\"decision\":\"deny\",\"reason\":\"stress says no\"}";

/* Stashes a policy handle in its slot and queues what settles it. */
static void defer_policy(slot *s, rcip_policy_request *req, uint32_t kind, uint64_t delay_us) {
    s->preq = req;
    s->preq_worker = tl_worker;
    slot_ref(s);
    atomic_store(&s->preq_state, H_PENDING);
    push_action(mono_us() + delay_us, kind, s, NULL);
}

static void preflight_policy(rcip_policy_request *req) {
    const char *ctx = rcip_policy_request_context(req);
    const char *in = ctx ? strstr(ctx, "\"input\":{") : NULL;
    int64_t idx = -1, gen = -1;
    if (!in || !strstr(ctx, "\"phase\":\"preflight\"") || !json_int(in, "slot", &idx) || !json_int(in, "g", &gen)) {
        violation(V_UNEXPECTED_OUTCOME, "preflight policy context without our input: %s", ctx ? ctx : "(null)");
        rcip_policy_request_free(req);
        return;
    }
    slot *s = slot_at((uint64_t)idx, (uint64_t)gen);
    if (!s || s->kind != K_PF) {
        violation(V_STRAY, "preflight policy call for a retired slot");
        rcip_policy_request_free(req);
        return;
    }
    /* Now and then the policy cancels the preflight's token inline: the
     * report settles inside this callback, before the preflight call has
     * asked about its other proposals. */
    if (s->token && below(16) == 0)
        expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel (inside a policy)");
    uint32_t r = below(10);
    if (r < 5) decide(req, ALLOW, RCIP_RESULT_OK);
    else if (r < 6) decide(req, CONFIRM, RCIP_RESULT_OK);
    else if (r < 7) decide(req, DENY, RCIP_RESULT_OK);
    else {
        slot_ref(s);
        push_action(mono_us() + below(800), A_PF_DECIDE, s, req);
        return;
    }
    rcip_policy_request_free(req);
}

static void policy(void *ud, rcip_policy_request *req) {
    (void)ud;
    check_alive("policy");
    const char *iid = rcip_policy_request_invocation_id(req);
    if (!iid) {
        preflight_policy(req);
        return;
    }
    slot *s = slot_of_id(iid);
    if (!s) {
        violation(V_STRAY, "policy call for a retired invocation %s", iid);
        rcip_policy_request_free(req);
        return;
    }
    atomic_fetch_add(&s->policy_calls, 1);
    const char *ctx = rcip_policy_request_context(req);
    bool confirmed = ctx && strstr(ctx, "\"confirmed\":true") != NULL;
    if (confirmed) {
        uint32_t r = below(100);
        if (r < 85) {
            atomic_store(&s->settle_start_seq, next_seq());
            decide(req, ALLOW, RCIP_RESULT_OK);
        } else if (r < 97) {
            defer_policy(s, req, A_DECIDE, below(1000));
            return;
        } else {
            decide(req, CONFIRM, RCIP_RESULT_OK); /* confirm on an approved re-run: POLICY_DENIED */
        }
        rcip_policy_request_free(req);
        return;
    }
    switch (s->plan) {
    case PL_DENY:
        decide(req, DENY, RCIP_RESULT_OK);
        break;
    case PL_POLICY_FAIL:
        switch (below(4)) {
        case 0: expect_rc(rcip_policy_request_fail(req), RCIP_RESULT_OK, "rcip_policy_request_fail"); break;
        case 1: decide(req, "{\"decision\":\"maybe\"}", RCIP_RESULT_INVALID_ARGUMENT); break;
        case 2:
            decide(req, "{\"decision\":", RCIP_RESULT_INVALID_JSON); /* stays undecided */
            expect_rc(rcip_policy_request_fail(req), RCIP_RESULT_OK, "rcip_policy_request_fail");
            break;
        default: break; /* freed undecided */
        }
        break;
    case PL_DEFER_POLICY:
        defer_policy(s, req, A_DECIDE, below(1500));
        return;
    case PL_CANCEL_POLICY:
        if (below(8) == 0) {
            /* cancelled inside the policy callback: the invocation ends
             * inline; the decision that follows later is late */
            atomic_store(&s->cancelled, 1);
            expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel (inside a policy)");
            atomic_store(&s->cancel_done_seq, next_seq());
            if (atomic_load(&s->outcomes) != 1 || atomic_load(&s->first_code) != C_ABORTED)
                violation(V_UNEXPECTED_OUTCOME, "%s: a cancel inside the policy callback did not end the invocation", s->id);
            defer_policy(s, req, A_DECIDE, below(1000));
            return;
        }
        defer_policy(s, req, A_CANCEL_POLICY, below(1000));
        return;
    case PL_RACE_POLICY: {
        /* the decision and the cancellation fall due within 100 us */
        uint64_t delay = below(1000);
        defer_policy(s, req, A_DECIDE, delay);
        slot_ref(s);
        push_action(mono_us() + delay + below(100), A_RACE_CANCEL, s, NULL);
        return;
    }
    case PL_DUP:
        defer_policy(s, req, A_DUP_THEN_DECIDE, below(500));
        return;
    case PL_CONFIRM_APPROVE:
    case PL_CONFIRM_DECLINE:
    case PL_CONFIRM_EXPIRE:
    case PL_CONFIRM_CANCEL:
    case PL_CONFIRM_RACE:
        if (below(5) == 0) {
            defer_policy(s, req, A_DECIDE_CONFIRM, below(800));
            return;
        }
        decide(req, CONFIRM, RCIP_RESULT_OK);
        break;
    default:
        atomic_store(&s->settle_start_seq, next_seq());
        decide(req, ALLOW, RCIP_RESULT_OK);
        if (below(50) == 0) decide(req, ALLOW, RCIP_RESULT_ALREADY_COMPLETED);
        break;
    }
    rcip_policy_request_free(req);
}

/* ------------------------------------------------------------------ */
/* Bindings: handler and availability                                   */

static void on_handler_cancel(void *ud) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    if (!s || tag != T_ONCANCEL) {
        violation(V_STRAY, "on-cancel callback for a retired slot");
        return;
    }
    if (atomic_load(&s->oncancel_frees) != 0) violation(V_AFTER_RELEASE, "%s: on-cancel after release", s->id);
    atomic_fetch_add(&s->oncancel_calls, 1);
}

static void on_handler_cancel_free(void *ud) {
    int tag;
    slot *s = slot_of_ud(ud, &tag);
    if (!s || tag != T_ONCANCEL) {
        violation(V_STRAY, "on-cancel release for a retired slot");
        return;
    }
    atomic_fetch_add(&s->oncancel_frees, 1);
    slot_unref(s);
}

static void complete_ok(slot *s, rcip_invocation *inv) {
    atomic_store(&s->expect, C_SUCCEEDED);
    expect_rc(rcip_invocation_complete(inv, "{\"ok\":true}"), RCIP_RESULT_OK, "rcip_invocation_complete");
}

static char *deep_text(size_t depth) {
    char *t = malloc(2 * depth + 1);
    if (!t) abort();
    memset(t, '[', depth);
    memset(t + depth, ']', depth);
    t[2 * depth] = '\0';
    return t;
}

static void defer_handler(slot *s, rcip_invocation *inv, bind_rec *rec, uint32_t kind, uint64_t delay_us) {
    s->inv = inv;
    s->inv_worker = tl_worker;
    s->inv_rec = rec;
    slot_ref(s);
    atomic_store(&s->inv_state, H_PENDING);
    push_action(mono_us() + delay_us, kind, s, NULL);
}

static void handler(void *ud, rcip_invocation *inv) {
    bind_rec *rec = ud;
    check_alive("handler");
    if (atomic_load(&rec->released)) violation(V_AFTER_RELEASE, "handler of %s started after its user data was released",
                                              CAP_IDS[rec->cap]);
    atomic_fetch_add(&rec->in_cb, 1);
    slot *s = slot_of_id(rcip_invocation_id(inv));
    if (!s) {
        violation(V_STRAY, "handler call for a retired invocation %s", rcip_invocation_id(inv));
        rcip_invocation_free(inv);
        atomic_fetch_sub(&rec->in_cb, 1);
        return;
    }
    atomic_fetch_add(&s->handler_calls, 1);
    uint64_t cancelled_at = atomic_load(&s->cancel_done_seq), settled_at = atomic_load(&s->settle_start_seq);
    if (cancelled_at != 0 && (settled_at == 0 || cancelled_at < settled_at))
        violation(V_HANDLER_AFTER_CANCEL, "%s (plan %d): the handler started although the cancel call returned before the "
                  "policy was settled", s->id, s->plan);
    if (s->plan == PL_PRECANCELLED || s->plan == PL_CANCEL_POLICY)
        violation(V_HANDLER_AFTER_CANCEL, "%s (plan %d): handler called", s->id, s->plan);
    bool rerun = atomic_load(&s->resolves) > 0;
    int plan = rerun ? (below(3) == 0 ? PL_DEFER_HANDLER : PL_INLINE_OK) : s->plan;
    switch (plan) {
    case PL_INLINE_FAIL:
        if (below(4) == 0) {
            atomic_store(&s->expect, C_ABORTED);
            expect_rc(rcip_invocation_fail(inv, true), RCIP_RESULT_OK, "rcip_invocation_fail");
        } else {
            atomic_store(&s->expect, C_EXEC_FAILED);
            expect_rc(rcip_invocation_fail(inv, false), RCIP_RESULT_OK, "rcip_invocation_fail");
        }
        break;
    case PL_BAD_OUTPUT: {
        atomic_store(&s->expect, C_OUTPUT_INVALID);
        uint32_t r = below(4);
        if (r == 0) expect_rc(rcip_invocation_complete(inv, "{\"ok\":"), RCIP_RESULT_OK, "complete (not JSON)");
        else if (r == 1) expect_rc(rcip_invocation_complete(inv, "{\"ok\":\"yes\"}"), RCIP_RESULT_OK, "complete (schema)");
        else if (r == 2) expect_rc(rcip_invocation_complete(inv, "\xff\xfe"), RCIP_RESULT_OK, "complete (not UTF-8)");
        else {
            char *deep = deep_text(1500);
            expect_rc(rcip_invocation_complete(inv, deep), RCIP_RESULT_OK, "complete (too deep)");
            free(deep);
        }
        break;
    }
    case PL_DEFER_HANDLER:
        defer_handler(s, inv, rec, A_COMPLETE, below(1500));
        atomic_fetch_sub(&rec->in_cb, 1);
        return;
    case PL_CANCEL_HANDLER: {
        const rcip_cancel_token *t = rcip_invocation_cancel_token(inv);
        if (rcip_cancel_token_is_cancelled(t)) violation(V_UNEXPECTED_OUTCOME, "%s: handler token cancelled early", s->id);
        slot_ref(s);
        atomic_fetch_add(&s->oncancel_regs, 1);
        expect_rc(rcip_cancel_token_on_cancel(t, on_handler_cancel, ud_of(s, T_ONCANCEL), on_handler_cancel_free),
                  RCIP_RESULT_OK, "rcip_cancel_token_on_cancel");
        defer_handler(s, inv, rec, A_CANCEL_HANDLER, below(1000));
        atomic_fetch_sub(&rec->in_cb, 1);
        return;
    }
    case PL_UNBIND_RUNNING:
        defer_handler(s, inv, rec, A_UNBIND_RUNNING, below(1000));
        atomic_fetch_sub(&rec->in_cb, 1);
        return;
    case PL_FREE_UNSETTLED:
        defer_handler(s, inv, rec, A_FREE_HANDLER, below(1000));
        atomic_fetch_sub(&rec->in_cb, 1);
        return;
    default:
        complete_ok(s, inv);
        if (below(50) == 0) expect_rc(rcip_invocation_fail(inv, false), RCIP_RESULT_ALREADY_COMPLETED, "second settle");
        break;
    }
    rcip_invocation_free(inv);
    atomic_fetch_sub(&rec->in_cb, 1);
}

static int32_t availability(void *ud, rcip_availability_sink *sink) {
    bind_rec *rec = ud;
    check_alive("availability");
    if (atomic_load(&rec->released)) violation(V_AFTER_RELEASE, "availability of %s started after its user data was released",
                                              CAP_IDS[rec->cap]);
    atomic_fetch_add(&rec->in_cb, 1);
    int32_t rc = 0;
    if (rec->cap == CAP_B && atomic_load(&g_flaky)) {
        expect_rc(rcip_availability_set(sink, false, "STRESS_FLAKY", "job.b is resting"), RCIP_RESULT_OK,
                  "rcip_availability_set");
    } else if (rec->cap == CAP_B && below(2000) == 0) {
        rc = 1; /* a failing check: AVAILABILITY_CHECK_FAILED */
    } else {
        expect_rc(rcip_availability_set(sink, true, NULL, NULL), RCIP_RESULT_OK, "rcip_availability_set");
    }
    atomic_fetch_sub(&rec->in_cb, 1);
    return rc;
}

static void bind_free(void *ud) {
    bind_rec *rec = ud;
    if (atomic_load(&rec->failed_reg)) violation(V_AFTER_RELEASE, "user data of a failed bind was released");
    if (atomic_exchange(&rec->released, 1)) violation(V_DUPLICATE, "binding user data released twice");
    if (atomic_load(&rec->in_cb) != 0)
        violation(V_RELEASE_WHILE_RUNNING, "binding of %s released while %d of its callbacks run", CAP_IDS[rec->cap],
                  atomic_load(&rec->in_cb));
}

static bind_rec *new_bind_rec(int cap) {
    bind_rec *rec = calloc(1, sizeof *rec);
    if (!rec) abort();
    rec->cap = cap;
    pthread_mutex_lock(&g_rec_mu);
    rec->next_all = g_all_binds;
    g_all_binds = rec;
    pthread_mutex_unlock(&g_rec_mu);
    return rec;
}

/* Binds a fresh record; the caller holds g_cap_mu[cap] and nothing is bound. */
static void bind_locked(int cap) {
    bind_rec *rec = new_bind_rec(cap);
    rcip_result rc = rcip_host_bind(g_host, CAP_IDS[cap], handler, availability, rec, bind_free, &rec->b);
    atomic_fetch_add(&g_extra[X_BINDS], 1);
    if (rc != RCIP_RESULT_OK) {
        atomic_store(&rec->failed_reg, 1);
        expect_rc(rc, RCIP_RESULT_OK, "rcip_host_bind");
        return;
    }
    g_cur[cap] = rec;
}

/* Unbinds the installed record (if any) and binds a new one. */
static bind_rec *rebind_locked(int cap) {
    bind_rec *old = g_cur[cap];
    g_cur[cap] = NULL;
    if (old) {
        if (below(2)) {
            expect_rc(rcip_binding_unbind(old->b), RCIP_RESULT_OK, "rcip_binding_unbind");
            if (rcip_binding_is_installed(old->b)) violation(V_RESULT, "a binding is still installed after unbind");
            expect_rc(rcip_binding_unbind(old->b), RCIP_RESULT_OK, "rcip_binding_unbind (stale)");
        }
        rcip_binding_free(old->b);
        old->b = NULL;
    }
    bind_locked(cap);
    return old;
}

/* ------------------------------------------------------------------ */
/* Subscribers                                                          */

static void on_revision(void *ud, uint64_t revision) {
    sub_rec *rec = ud;
    check_alive("subscriber");
    if (atomic_load(&rec->released)) violation(V_AFTER_RELEASE, "subscriber notified after its user data was released");
    atomic_fetch_add(&rec->in_cb, 1);
    if (revision > tl_max_notified) tl_max_notified = revision;
    if (rec->permanent && revision < REV_BITS) {
        if (atomic_fetch_add(&g_rev_seen[revision], 1) != 0)
            violation(V_SUBSCRIBER, "revision %" PRIu64 " notified twice to one subscriber", revision);
    }
    atomic_fetch_sub(&rec->in_cb, 1);
}

static void sub_free(void *ud) {
    sub_rec *rec = ud;
    if (atomic_exchange(&rec->released, 1)) violation(V_DUPLICATE, "subscription user data released twice");
    if (atomic_load(&rec->in_cb) != 0) violation(V_RELEASE_WHILE_RUNNING, "subscription released while notified");
}

static sub_rec *new_sub_rec(int permanent) {
    sub_rec *rec = calloc(1, sizeof *rec);
    if (!rec) abort();
    rec->permanent = permanent;
    pthread_mutex_lock(&g_rec_mu);
    rec->next_all = g_all_subs;
    g_all_subs = rec;
    pthread_mutex_unlock(&g_rec_mu);
    atomic_fetch_add(&g_extra[X_SUBSCRIBES], 1);
    return rec;
}

/* ------------------------------------------------------------------ */
/* Confirmations: what happens after confirmation_required              */

static uint64_t mono_at_real_ms(int64_t at_ms, int64_t jitter_us) {
    int64_t delta = at_ms * 1000 - real_us() + jitter_us;
    uint64_t now = mono_us();
    if (delta < 0) return (uint64_t)-delta > now ? 0 : now - (uint64_t)-delta;
    return now + (uint64_t)delta;
}

/* Called from the consumer's outcome callback: confirmation_required. */
static void queue_confirmation_action(slot *s) {
    /* the outcome record is in s->conf_id / s->expires_at, written by the caller */
    slot_ref(s); /* released when both the opened and the closed notice arrived */
    uint64_t now = mono_us();
    uint64_t ttl_us = (uint64_t)g_ttl_ms * 1000u;
    switch (s->plan) {
    case PL_CONFIRM_APPROVE:
        slot_ref(s);
        push_action(now + below((uint32_t)(ttl_us / 2)), A_APPROVE, s, NULL);
        break;
    case PL_CONFIRM_DECLINE:
        slot_ref(s);
        push_action(now + below((uint32_t)(ttl_us / 2)), A_DECLINE, s, NULL);
        break;
    case PL_CONFIRM_CANCEL:
        slot_ref(s);
        push_action(now + 1000 + below((uint32_t)(ttl_us / 3)), A_CANCEL_CONF, s, NULL);
        break;
    case PL_CONFIRM_RACE:
        slot_ref(s);
        push_action(mono_at_real_ms(s->expires_at, (int64_t)below(4000) - 2000), A_APPROVE_RACE, s, NULL);
        break;
    case PL_CONFIRM_EXPIRE:
        if (below(2) == 0) {
            slot_ref(s);
            push_action(mono_at_real_ms(s->expires_at, 2000 + below(8000)), A_LATE_RESOLVE, s, NULL);
        }
        break;
    default:
        violation(V_UNEXPECTED_OUTCOME, "%s (plan %d): confirmation_required", s->id, s->plan);
        break;
    }
}

/* ------------------------------------------------------------------ */
/* Actions                                                              */

static void resolve(slot *s, bool approve) {
    atomic_fetch_add(&s->resolves, 1);
    slot_ref(s);
    atomic_fetch_add(&g_resolves, 1);
    tl_resolving = 1;
    rcip_result rc = rcip_host_resolve_confirmation(g_host, s->conf_id, approve, on_outcome, ud_of(s, T_RESOLVE),
                                                    on_outcome_free);
    tl_resolving = 0;
    if (rc != RCIP_RESULT_OK) {
        expect_rc(rc, RCIP_RESULT_OK, "rcip_host_resolve_confirmation");
        atomic_fetch_sub(&s->resolves, 1);
        slot_unref(s);
    }
}

static bool take(_Atomic int *state) {
    int expected = H_PENDING;
    return atomic_compare_exchange_strong(state, &expected, H_TAKEN);
}

static void count_other_thread(slot *s, int receiver, int which) {
    (void)s;
    if (receiver != tl_worker) {
        atomic_fetch_add(&g_path[P_OTHER_THREAD], 1);
        atomic_fetch_add(&g_extra[which], 1);
    }
}

static void run_action(const action *a) {
    slot *s = a->s;
    switch (a->kind) {
    case A_DECIDE:
    case A_DECIDE_CONFIRM:
        if (take(&s->preq_state)) {
            /* Deciding may open a confirmation that another worker approves
             * at once, and its re-run may stash a new request here: work on
             * a copy. */
            rcip_policy_request *req = s->preq;
            int receiver = s->preq_worker;
            s->preq = NULL;
            bool late = atomic_load(&s->cancelled) != 0;
            atomic_store(&s->settle_start_seq, next_seq());
            decide(req, a->kind == A_DECIDE ? ALLOW : CONFIRM, RCIP_RESULT_OK);
            if (!late) count_other_thread(s, receiver, X_OTHER_THREAD_POLICY);
            rcip_policy_request_free(req);
        }
        break;
    case A_CANCEL_POLICY:
        if (take(&s->preq_state)) {
            atomic_store(&s->cancelled, 1);
            expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel");
            atomic_store(&s->cancel_done_seq, next_seq());
            int code = atomic_load(&s->first_code);
            if (atomic_load(&s->outcomes) != 1 || code != C_ABORTED)
                violation(V_UNEXPECTED_OUTCOME, "%s: cancel during the pending policy did not end it at once (%d outcomes, "
                          "code %d)", s->id, atomic_load(&s->outcomes), code);
            else atomic_fetch_add(&g_path[P_CANCEL_POLICY], 1);
            /* the late answer is accepted and changes nothing */
            rcip_policy_request *req = s->preq;
            s->preq = NULL;
            atomic_store(&s->settle_start_seq, next_seq());
            decide(req, ALLOW, RCIP_RESULT_OK);
            atomic_fetch_add(&g_extra[X_LATE_DECIDE], 1);
            if (atomic_load(&s->outcomes) != 1) violation(V_DUPLICATE, "%s: the late decision changed something", s->id);
            rcip_policy_request_free(req);
        }
        break;
    case A_RACE_CANCEL:
        atomic_store(&s->cancelled, 1);
        expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel");
        atomic_store(&s->cancel_done_seq, next_seq());
        break;
    case A_DUP_THEN_DECIDE:
        if (take(&s->preq_state)) {
            slot_ref(s);
            rcip_result rc = rcip_client_invoke(g_client, CAP_IDS[s->cap], "{\"slot\":0,\"g\":0}", s->id, NULL, on_outcome,
                                                ud_of(s, T_DUP), on_outcome_free, NULL);
            if (rc != RCIP_RESULT_OK) {
                expect_rc(rc, RCIP_RESULT_OK, "rcip_client_invoke (duplicate id)");
                slot_unref(s);
            } else if (atomic_load(&s->dup_outcomes) != 1) {
                violation(V_UNEXPECTED_OUTCOME, "%s: no inline INVOCATION_ALREADY_ACTIVE", s->id);
            }
            rcip_policy_request *req = s->preq;
            s->preq = NULL;
            atomic_store(&s->settle_start_seq, next_seq());
            decide(req, ALLOW, RCIP_RESULT_OK);
            rcip_policy_request_free(req);
        }
        break;
    case A_COMPLETE:
        if (take(&s->inv_state)) {
            rcip_invocation *inv = s->inv;
            s->inv = NULL;
            count_other_thread(s, s->inv_worker, X_OTHER_THREAD_HANDLER);
            complete_ok(s, inv);
            rcip_invocation_free(inv);
        }
        break;
    case A_CANCEL_HANDLER:
        if (take(&s->inv_state)) {
            rcip_invocation *inv = s->inv;
            s->inv = NULL;
            const rcip_cancel_token *ht = rcip_invocation_cancel_token(inv);
            atomic_store(&s->cancelled, 1);
            expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel");
            atomic_store(&s->cancel_done_seq, next_seq());
            bool told = rcip_cancel_token_is_cancelled(ht) && atomic_load(&s->oncancel_calls) == 1;
            if (!told) violation(V_UNEXPECTED_OUTCOME, "%s: the running handler was not told of the cancellation", s->id);
            if (atomic_load(&s->outcomes) != 0)
                violation(V_UNEXPECTED_OUTCOME, "%s: cancelling ended a running handler's invocation", s->id);
            if (below(2)) {
                atomic_store(&s->expect, C_ABORTED);
                expect_rc(rcip_invocation_fail(inv, false), RCIP_RESULT_OK, "rcip_invocation_fail");
            } else {
                complete_ok(s, inv); /* succeeded even though cancelled */
            }
            if (told) atomic_fetch_add(&g_path[P_CANCEL_HANDLER], 1);
            count_other_thread(s, s->inv_worker, X_OTHER_THREAD_HANDLER);
            rcip_invocation_free(inv);
        }
        break;
    case A_UNBIND_RUNNING:
        if (take(&s->inv_state)) {
            rcip_invocation *inv = s->inv;
            s->inv = NULL;
            bool unbound = false;
            pthread_mutex_lock(&g_cap_mu[s->cap]);
            if (g_cur[s->cap] == s->inv_rec && s->inv_rec && rcip_binding_is_installed(s->inv_rec->b)) {
                rebind_locked(s->cap);
                unbound = true;
            }
            pthread_mutex_unlock(&g_cap_mu[s->cap]);
            count_other_thread(s, s->inv_worker, X_OTHER_THREAD_HANDLER);
            complete_ok(s, inv); /* unbinding does not cancel a running handler */
            rcip_invocation_free(inv);
            if (unbound) atomic_fetch_add(&g_path[P_UNBIND_RUNNING], 1);
        }
        break;
    case A_FREE_HANDLER:
        if (take(&s->inv_state)) {
            rcip_invocation *inv = s->inv;
            s->inv = NULL;
            atomic_store(&s->expect, C_EXEC_FAILED);
            rcip_invocation_free(inv);
        }
        break;
    case A_APPROVE:
        resolve(s, true);
        break;
    case A_DECLINE:
        resolve(s, false);
        break;
    case A_CANCEL_CONF: {
        bool registered_before = atomic_load(&s->opened) > 0;
        atomic_store(&s->cancelled, 1);
        expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel");
        atomic_store(&s->cancel_done_seq, next_seq());
        if (!registered_before) atomic_fetch_add(&g_extra[X_CANCEL_CONF_EARLY], 1);
        break;
    }
    case A_APPROVE_RACE: {
        int64_t delta_us = real_us() - s->expires_at * 1000;
        resolve(s, true);
        if (delta_us >= -(int64_t)RACE_WINDOW_MS * 1000 && delta_us <= (int64_t)RACE_WINDOW_MS * 1000) {
            atomic_fetch_add(&g_path[P_APPROVE_RACE], 1);
            int reason = atomic_load(&s->close_reason);
            if (reason == R_APPROVED) atomic_fetch_add(&g_extra[X_RACE_APPROVED], 1);
            else if (reason == R_EXPIRED) atomic_fetch_add(&g_extra[X_RACE_EXPIRED], 1);
            else atomic_fetch_add(&g_extra[X_RACE_OTHER], 1); /* invalidated: context or binding changed */
        }
        break;
    }
    case A_LATE_RESOLVE:
        atomic_fetch_add(&g_extra[X_RECEIPT_ANSWERS], 1);
        resolve(s, below(2) == 0);
        break;
    case A_PF_DECIDE: {
        rcip_policy_request *req = a->ptr;
        decide(req, below(2) ? ALLOW : CONFIRM, RCIP_RESULT_OK);
        rcip_policy_request_free(req);
        break;
    }
    case A_PF_CANCEL:
        expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel (preflight)");
        break;
    default:
        break;
    }
    slot_unref(s);
}

static int run_due_actions(int max) {
    int n = 0;
    action a;
    uint64_t now = mono_us();
    while (n < max && pop_due(now, &a)) {
        run_action(&a);
        n++;
    }
    return n;
}

/* ------------------------------------------------------------------ */
/* Operations                                                           */

static int pick_plan(void) {
    uint32_t r = below(1000), acc = 0;
    for (int p = 0; p < NPLANS; p++) {
        acc += PLAN_WEIGHT[p];
        if (r < acc) return p;
    }
    return PL_INLINE_OK;
}

static void input_for(slot *s, char *buf, size_t n) {
    unsigned idx = (unsigned)(s - g_slots), gen = (unsigned)atomic_load(&s->gen);
    switch (s->plan) {
    case PL_SCHEMA_BAD:
        snprintf(buf, n, below(2) ? "{\"slot\":\"x\",\"g\":%u}" : "{\"slot\":%u,\"g\":%u,\"extra\":1}", idx, gen);
        return;
    case PL_BAD_INPUT:
        switch (below(5)) {
        case 0: snprintf(buf, n, "{\"slot\":%u,\"g\":", idx); return;
        case 1: snprintf(buf, n, "\xef\xbb\xbf{\"slot\":%u,\"g\":%u}", idx, gen); return;
        case 2: snprintf(buf, n, "{\"slot\":%u,\"g\":%u,\"pad\":\"\xc3\"}", idx, gen); return;
        case 3: snprintf(buf, n, "{\"slot\":%u,\"g\":1e999}", idx); return;
        default: {
            size_t depth = 1001 + below(2000);
            if (2 * depth + 1 > n) depth = (n - 1) / 2;
            memset(buf, '[', depth);
            memset(buf + depth, ']', depth);
            buf[2 * depth] = '\0';
            return;
        }
        }
    default: {
        unsigned pad = below(8) == 0 ? below(1024) : below(48);
        int w = snprintf(buf, n, "{\"slot\":%u,\"g\":%u,\"pad\":\"", idx, gen);
        for (unsigned i = 0; i < pad && (size_t)w + 3 < n; i++) buf[w++] = (char)('a' + (i % 26));
        buf[w++] = '"';
        buf[w++] = '}';
        buf[w] = '\0';
    }
    }
}

static int cap_for(int plan) {
    if (plan == PL_UNBIND_RUNNING) return CAP_CHURN;
    if (plan == PL_BLOCKING) return below(2) ? CAP_READ : CAP_A;
    uint32_t r = below(100);
    return r < 80 ? CAP_A : r < 95 ? CAP_B : CAP_CHURN;
}

static char tl_buf_storage[MAX_THREADS][8192];

static void op_invoke(void) {
    int plan = pick_plan();
    int cap = cap_for(plan);
    slot *s = slot_alloc(K_INV, plan, cap);
    if (!s) return;
    char *input = tl_buf_storage[tl_worker];
    input_for(s, input, sizeof tl_buf_storage[0]);
    bool keep_token = plan == PL_CANCEL_POLICY || plan == PL_RACE_POLICY || plan == PL_CANCEL_HANDLER ||
                      plan == PL_CONFIRM_CANCEL;
    bool token = keep_token || plan == PL_PRECANCELLED || below(4) == 0;
    if (token) expect_rc(rcip_cancel_token_new(&s->token), RCIP_RESULT_OK, "rcip_cancel_token_new");
    if (plan == PL_PRECANCELLED) {
        atomic_store(&s->cancelled, 1);
        expect_rc(rcip_cancel_token_cancel(s->token), RCIP_RESULT_OK, "rcip_cancel_token_cancel");
        atomic_store(&s->cancel_done_seq, next_seq());
    }
    const char *cap_id = plan == PL_UNKNOWN_CAP ? "job.nope" : CAP_IDS[cap];
    atomic_fetch_add(&g_invocations, 1);
    if (plan == PL_BLOCKING) {
        char *outcome = NULL;
        slot_ref(s);
        rcip_result rc = rcip_client_invoke_blocking(g_client, cap_id, input, s->id, s->token, &outcome);
        if (rc != RCIP_RESULT_OK) {
            expect_rc(rc, RCIP_RESULT_OK, "rcip_client_invoke_blocking");
            slot_unref(s);
        } else {
            touch_progress();
            int code = parse_outcome(outcome);
            if (code >= 0) {
                atomic_fetch_add(&g_code_count[code], 1);
                check_outcome_id(s, outcome, code);
                check_expectation(s, code, outcome);
            }
            record_first_outcome(s, code, outcome);
            atomic_fetch_add(&s->ud_frees, 1);
            rcip_string_free(outcome);
            slot_unref(s);
        }
    } else {
        char *id_out = NULL;
        bool want_id = below(4) == 0;
        slot_ref(s);
        rcip_result rc = rcip_client_invoke(g_client, cap_id, input, s->id, s->token, on_outcome, ud_of(s, T_INVOKE),
                                            on_outcome_free, want_id ? &id_out : NULL);
        if (rc != RCIP_RESULT_OK) {
            expect_rc(rc, RCIP_RESULT_OK, "rcip_client_invoke");
            slot_unref(s);
        } else if (want_id) {
            if (!id_out || strcmp(id_out, s->id) != 0) violation(V_RESULT, "invocation_id_out differs from the id given");
            rcip_string_free(id_out);
        }
    }
    /* The library keeps its own token reference: plans that never cancel
     * drop theirs at once. */
    if (!keep_token && s->token) {
        rcip_cancel_token_free(s->token);
        s->token = NULL;
    }
    slot_unref(s); /* the driver's */
}

static void op_preflight(void) {
    slot *s = slot_alloc(K_PF, 0, 0);
    if (!s) return;
    unsigned n = 1 + below(3);
    const char *ids[3];
    char inputs[3][96];
    const char *texts[3];
    unsigned idx = (unsigned)(s - g_slots), gen = atomic_load(&s->gen);
    for (unsigned i = 0; i < n; i++) {
        ids[i] = CAP_IDS[below(NCAPS)];
        if (below(10) == 0) snprintf(inputs[i], sizeof inputs[i], "{\"slot\":");
        else snprintf(inputs[i], sizeof inputs[i], "{\"slot\":%u,\"g\":%u}", idx, gen);
        texts[i] = inputs[i];
    }
    s->pf_count = (int)n;
    bool cancel = false;
    if (below(3) == 0) {
        expect_rc(rcip_cancel_token_new(&s->token), RCIP_RESULT_OK, "rcip_cancel_token_new");
        cancel = below(2) == 0;
    }
    slot_ref(s);
    rcip_result rc = rcip_client_preflight(g_client, ids, texts, n, s->token, on_report, ud_of(s, T_REPORT), on_report_free);
    if (rc != RCIP_RESULT_OK) {
        expect_rc(rc, RCIP_RESULT_OK, "rcip_client_preflight");
        slot_unref(s);
    } else if (cancel) {
        slot_ref(s);
        push_action(mono_us() + below(600), A_PF_CANCEL, s, NULL);
    }
    slot_unref(s);
}

static void op_snapshot(void) {
    const rcip_snapshot *snap = NULL;
    expect_rc(rcip_client_snapshot(g_client, &snap), RCIP_RESULT_OK, "rcip_client_snapshot");
    if (!snap) return;
    atomic_fetch_add(&g_extra[X_SNAPSHOT_READS], 1);
    uint64_t rev = rcip_snapshot_revision(snap);
    if (rev < tl_last_rev)
        violation(V_REVISION, "thread %d read revision %" PRIu64 " after %" PRIu64, tl_worker, rev, tl_last_rev);
    if (rev < tl_max_notified)
        violation(V_REVISION, "thread %d read revision %" PRIu64 " after being notified of %" PRIu64, tl_worker, rev,
                  tl_max_notified);
    tl_last_rev = rev;
    const char *json = rcip_snapshot_json(snap);
    int64_t jrev = -1;
    if (!json || !json_int(json, "revision", &jrev) || (uint64_t)jrev != rev)
        violation(V_REVISION, "snapshot JSON revision %" PRId64 " differs from %" PRIu64, jrev, rev);
    const rcip_snapshot *again = NULL;
    expect_rc(rcip_client_snapshot(g_client, &again), RCIP_RESULT_OK, "rcip_client_snapshot");
    if (again) {
        uint64_t rev2 = rcip_snapshot_revision(again);
        if (rev2 < rev) violation(V_REVISION, "second read went back from %" PRIu64 " to %" PRIu64, rev, rev2);
        if (rev2 == rev && again != snap) violation(V_REVISION, "two snapshot objects for revision %" PRIu64, rev);
        tl_last_rev = rev2;
        rcip_snapshot_free(again);
    }
    rcip_snapshot_free(snap);
}

static void op_list(void) {
    static const char *FILTERS[] = {NULL, "{\"context\":\"current\"}", "{\"availableOnly\":true}", "{\"effect\":\"write\"}",
                                    "{\"scopeId\":\"desk\",\"effect\":\"\"}"};
    char *out = NULL;
    if (below(20) == 0) {
        expect_rc(rcip_client_list_capabilities(g_client, "{\"effect\":\"nope\"}", &out), RCIP_RESULT_INVALID_ARGUMENT,
                  "rcip_client_list_capabilities (bad filter)");
        if (out) violation(V_RESULT, "an out-parameter was set on failure");
        return;
    }
    expect_rc(rcip_client_list_capabilities(g_client, FILTERS[below(5)], &out), RCIP_RESULT_OK,
              "rcip_client_list_capabilities");
    if (out && out[0] != '[') violation(V_RESULT, "list is not an array: %s", out);
    rcip_string_free(out);
}

static void op_subscribe_toggle(rcip_subscription **sub) {
    if (*sub) {
        rcip_subscription_free(*sub);
        *sub = NULL;
        return;
    }
    sub_rec *rec = new_sub_rec(0);
    expect_rc(rcip_client_subscribe(g_client, on_revision, rec, sub_free, sub), RCIP_RESULT_OK, "rcip_client_subscribe");
}

static void op_rebind(int cap) {
    pthread_mutex_lock(&g_cap_mu[cap]);
    rebind_locked(cap);
    pthread_mutex_unlock(&g_cap_mu[cap]);
}

static void op_bind_twice(void) {
    int cap = (int)below(NCAPS);
    pthread_mutex_lock(&g_cap_mu[cap]);
    if (g_cur[cap]) {
        bind_rec *rec = new_bind_rec(cap);
        atomic_store(&rec->failed_reg, 1);
        expect_rc(rcip_host_bind(g_host, CAP_IDS[cap], handler, availability, rec, bind_free, &rec->b),
                  RCIP_RESULT_ALREADY_BOUND, "rcip_host_bind (already bound)");
        if (rec->b) violation(V_RESULT, "binding_out set on failure");
    }
    pthread_mutex_unlock(&g_cap_mu[cap]);
}

static void op_set_revision(void) {
    int cap = (int)below(NCAPS);
    pthread_mutex_lock(&g_cap_mu[cap]);
    if (g_cur[cap]) expect_rc(rcip_binding_set_revision(g_cur[cap]->b, rnd()), RCIP_RESULT_OK, "rcip_binding_set_revision");
    pthread_mutex_unlock(&g_cap_mu[cap]);
}

static void op_context(void) {
    static const char *CONTEXTS[] = {"{\"activeScopeIds\":[\"desk\"]}",
                                     "{\"activeScopeIds\":[\"desk\",\"board\",\"desk\"],\"primaryScopeId\":\"board\"}"};
    atomic_fetch_add(&g_extra[X_CONTEXT_CHANGES], 1);
    uint32_t r = below(4);
    if (r == 0) expect_rc(rcip_host_clear_context(g_host), RCIP_RESULT_OK, "rcip_host_clear_context");
    else if (r == 1) expect_rc(rcip_host_set_context(g_host, "{\"activeScopeIds\":[\"nope\"]}"), RCIP_RESULT_UNKNOWN_SCOPE,
                               "rcip_host_set_context (unknown scope)");
    else expect_rc(rcip_host_set_context(g_host, CONTEXTS[r - 2]), RCIP_RESULT_OK, "rcip_host_set_context");
}

static void op_stats(void) {
    char *stats = NULL;
    expect_rc(rcip_runtime_stats(g_runtime, &stats), RCIP_RESULT_OK, "rcip_runtime_stats");
    if (!stats) return;
    int64_t receipts = -1;
    if (!json_int(stats, "receipts", &receipts) || receipts < 0 || receipts > RCIP_RECEIPT_CAPACITY)
        violation(V_RECEIPTS, "stats show %" PRId64 " receipts: %s", receipts, stats);
    uint64_t seen = atomic_load(&g_extra[X_MAX_RECEIPTS]);
    while (receipts > (int64_t)seen && !atomic_compare_exchange_weak(&g_extra[X_MAX_RECEIPTS], &seen, (uint64_t)receipts)) {
    }
    rcip_string_free(stats);
}

/* ------------------------------------------------------------------ */
/* Threads                                                              */

static _Atomic int g_stop;
static _Atomic uint64_t g_drain_deadline;

static void *worker(void *arg) {
    tl_worker = (int)(intptr_t)arg;
    tl_rng = (g_seed * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)(tl_worker + 1) << 32) ^ 0xD1B54A32D192ED03ull;
    rcip_subscription *sub = NULL;
    uint64_t iter = 0;
    for (;;) {
        int ran = run_due_actions(64);
        if (atomic_load(&g_stop)) {
            if ((atomic_load(&g_active) == 0 && queue_len() == 0) || mono_us() > atomic_load(&g_drain_deadline)) break;
            if (!ran) sleep_us(200);
            continue;
        }
        if (atomic_load(&g_active) > MAX_ACTIVE) {
            if (!ran) sleep_us(100);
            continue;
        }
        iter++;
        uint32_t r = below(10000);
        if (r < 8600) op_invoke();
        else if (r < 8900) op_snapshot();
        else if (r < 9050) op_list();
        else if (r < 9450) op_preflight();
        else if (r < 9550) op_subscribe_toggle(&sub);
        else if (r < 9750) op_rebind(CAP_CHURN);
        else if (r < 9752) op_rebind((int)below(2) ? CAP_A : CAP_B);
        else if (r < 9800) op_set_revision();
        else if (r < 9803) op_context();
        else if (r < 9863) {
            atomic_fetch_add(&g_extra[X_REFRESHES], 1);
            expect_rc(rcip_host_refresh(g_host), RCIP_RESULT_OK, "rcip_host_refresh");
        } else if (r < 9913) {
            tl_due_run = 1;
            expect_rc(rcip_runtime_run_due_timers(g_runtime), RCIP_RESULT_OK, "rcip_runtime_run_due_timers");
            tl_due_run = 0;
        } else if (r < 9933) {
            atomic_store(&g_flaky, !atomic_load(&g_flaky));
            expect_rc(rcip_host_refresh(g_host), RCIP_RESULT_OK, "rcip_host_refresh");
        } else if (r < 9953) op_bind_twice();
        else op_stats();
    }
    if (sub) rcip_subscription_free(sub);
    return NULL;
}

static _Atomic int g_watchdog_trips;
static _Atomic int g_watchdog_stop;

static void dump_active(int max) {
    int shown = 0;
    for (uint32_t i = 0; i < NSLOTS && shown < max; i++) {
        slot *s = &g_slots[i];
        if (!atomic_load(&s->active)) continue;
        shown++;
        fprintf(stderr,
                "  %s kind %d plan %d cap %d refs %d outcomes %d frees %d resolves %d/%d/%d opened %d closed %d "
                "(%s) policy %d/%d handler %d/%d events %d/%d/%d oncancel %d/%d/%d reports %d/%d\n",
                s->id, s->kind, s->plan, s->cap, atomic_load(&s->refs), atomic_load(&s->outcomes),
                atomic_load(&s->ud_frees), atomic_load(&s->resolves), atomic_load(&s->resolve_outcomes),
                atomic_load(&s->resolve_frees), atomic_load(&s->opened), atomic_load(&s->closed),
                REASON_NAMES[atomic_load(&s->close_reason)], atomic_load(&s->policy_calls),
                atomic_load(&s->preq_state), atomic_load(&s->handler_calls), atomic_load(&s->inv_state),
                atomic_load(&s->ev_requested), atomic_load(&s->ev_started), atomic_load(&s->ev_terminal),
                atomic_load(&s->oncancel_regs), atomic_load(&s->oncancel_calls), atomic_load(&s->oncancel_frees),
                atomic_load(&s->pf_reports), atomic_load(&s->pf_frees));
    }
}

static void *watchdog(void *arg) {
    (void)arg;
    while (!atomic_load(&g_watchdog_stop)) {
        sleep_us(250000);
        uint64_t last = atomic_load(&g_last_progress), now = mono_us();
        if (atomic_load(&g_active) > 0 && now > last && now - last > WATCHDOG_US) {
            atomic_fetch_add(&g_watchdog_trips, 1);
            fprintf(stderr, "WATCHDOG: no outcome for %.1f s with %u ledger slots open and %zu queued actions\n",
                    (double)(now - last) / 1e6, atomic_load(&g_active), queue_len());
            char *stats = NULL;
            if (rcip_runtime_stats(g_runtime, &stats) == RCIP_RESULT_OK) fprintf(stderr, "  stats: %s\n", stats);
            rcip_string_free(stats);
            dump_active(20);
            fflush(stderr);
            _exit(2);
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* Main                                                                 */

static void usage(void) {
    fprintf(stderr, "usage: stress [--seconds N] [--threads N] [--ttl-ms N] [--min-per-path N] [--seed N] [--quiet]\n");
    exit(64);
}

static uint64_t arg_num(int argc, char **argv, int *i) {
    if (*i + 1 >= argc) usage();
    char *end;
    unsigned long long v = strtoull(argv[++*i], &end, 10);
    if (*end) usage();
    return v;
}

static int64_t stat_of(const char *key) {
    char *stats = NULL;
    int64_t v = -1;
    if (rcip_runtime_stats(g_runtime, &stats) == RCIP_RESULT_OK) json_int(stats, key, &v);
    rcip_string_free(stats);
    return v;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds")) g_seconds = (unsigned)arg_num(argc, argv, &i);
        else if (!strcmp(argv[i], "--threads")) g_threads = (unsigned)arg_num(argc, argv, &i);
        else if (!strcmp(argv[i], "--ttl-ms")) g_ttl_ms = (unsigned)arg_num(argc, argv, &i);
        else if (!strcmp(argv[i], "--min-per-path")) g_min_per_path = arg_num(argc, argv, &i);
        else if (!strcmp(argv[i], "--seed")) g_seed = arg_num(argc, argv, &i);
        else if (!strcmp(argv[i], "--quiet")) g_quiet = true;
        else usage();
    }
    if (g_threads < 1 || g_threads > MAX_THREADS || g_ttl_ms < 5 || g_seconds < 1) usage();

    g_slots = calloc(NSLOTS, sizeof *g_slots);
    g_rev_seen = calloc(REV_BITS, 1);
    if (!g_slots || !g_rev_seen) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    for (uint32_t i = 0; i < NSLOTS; i++) g_free[g_free_n++] = NSLOTS - 1 - i;

    rcip_runtime_builder *builder = NULL;
    if (rcip_catalog_new(CATALOG, &g_catalog) != RCIP_RESULT_OK ||
        rcip_runtime_builder_new(g_catalog, &builder) != RCIP_RESULT_OK ||
        rcip_runtime_builder_set_confirmation_ttl_ms(builder, g_ttl_ms) != RCIP_RESULT_OK ||
        rcip_runtime_builder_set_policy(builder, policy, NULL, runtime_ud_free) != RCIP_RESULT_OK ||
        rcip_runtime_builder_set_confirmation_callback(builder, on_confirmation, NULL, runtime_ud_free) != RCIP_RESULT_OK ||
        rcip_runtime_builder_add_event_observer(builder, on_event, NULL, runtime_ud_free) != RCIP_RESULT_OK ||
        rcip_runtime_builder_build(builder, &g_runtime) != RCIP_RESULT_OK) {
        const char *m = rcip_last_error_message();
        fprintf(stderr, "setup failed: %s\n", m ? m : "?");
        return 1;
    }
    g_client = rcip_runtime_client(g_runtime);
    g_host = rcip_runtime_host(g_runtime);
    expect_rc(rcip_host_set_context(g_host, "{\"activeScopeIds\":[\"desk\"]}"), RCIP_RESULT_OK, "rcip_host_set_context");
    for (int c = 0; c < NCAPS; c++) {
        pthread_mutex_lock(&g_cap_mu[c]);
        bind_locked(c);
        pthread_mutex_unlock(&g_cap_mu[c]);
    }
    rcip_subscription *permanent = NULL;
    sub_rec *permanent_rec = new_sub_rec(1);
    expect_rc(rcip_client_subscribe(g_client, on_revision, permanent_rec, sub_free, &permanent), RCIP_RESULT_OK,
              "rcip_client_subscribe");
    g_rev_start = (uint64_t)stat_of("revision");

    if (!g_quiet)
        printf("stress: %u threads, %u s, confirmation TTL %u ms, minimum %" PRIu64 " per path, seed %" PRIu64 "\n",
               g_threads, g_seconds, g_ttl_ms, g_min_per_path, g_seed);
    fflush(stdout);

    touch_progress();
    pthread_t threads[MAX_THREADS], dog;
    pthread_create(&dog, NULL, watchdog, NULL);
    uint64_t t0 = mono_us();
    for (unsigned i = 0; i < g_threads; i++) pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i);
    uint64_t end = t0 + (uint64_t)g_seconds * 1000000u, next_report = t0 + 10000000u;
    while (mono_us() < end) {
        sleep_us(100000);
        op_stats();
        if (!g_quiet && mono_us() >= next_report) {
            next_report += 10000000u;
            double t = (double)(mono_us() - t0) / 1e6;
            printf("  %5.0f s: %" PRIu64 " invocations (%.0f/s), %u open slots, %zu queued actions\n", t,
                   atomic_load(&g_invocations), (double)atomic_load(&g_invocations) / t, atomic_load(&g_active),
                   queue_len());
            fflush(stdout);
        }
    }
    uint64_t t_stop = mono_us();
    atomic_store(&g_drain_deadline, t_stop + 15000000u);
    atomic_store(&g_stop, 1);
    for (unsigned i = 0; i < g_threads; i++) pthread_join(threads[i], NULL);
    uint64_t t_drained = mono_us();
    /* Work the threads left (expiries still pending on the timer thread). */
    while (atomic_load(&g_active) > 0 && mono_us() < atomic_load(&g_drain_deadline)) {
        tl_worker = 0;
        if (!run_due_actions(64)) sleep_us(1000);
    }
    atomic_store(&g_watchdog_stop, 1);
    pthread_join(dog, NULL);
    double seconds = (double)(t_stop - t0) / 1e6;

    unsigned lost = atomic_load(&g_active);
    if (lost > 0) {
        violation(V_LOST, "%u ledger slots still open %.1f s after the workload stopped", lost,
                  (double)(mono_us() - t_stop) / 1e6);
        dump_active(20);
    }
    /* Quiescent: nothing pending, receipts within bounds. */
    char *stats = NULL;
    expect_rc(rcip_runtime_stats(g_runtime, &stats), RCIP_RESULT_OK, "rcip_runtime_stats");
    int64_t v;
    if (lost == 0 && stats) {
        const char *zero[] = {"pendingInvocations", "pendingConfirmations", "pendingPreflights", "reservedIds"};
        for (int i = 0; i < 4; i++)
            if (!json_int(stats, zero[i], &v) || v != 0) violation(V_LOST, "after the run %s is %" PRId64, zero[i], v);
        if (!json_int(stats, "receipts", &v) || v > RCIP_RECEIPT_CAPACITY) violation(V_RECEIPTS, "%s", stats);
    }
    rcip_string_free(stats);
    /* The permanent subscriber saw every revision exactly once. */
    uint64_t last_rev = (uint64_t)stat_of("revision"), missed = 0;
    for (uint64_t r = g_rev_start + 1; r <= last_rev && r < REV_BITS; r++)
        if (atomic_load(&g_rev_seen[r]) != 1) missed++;
    if (missed) violation(V_SUBSCRIBER, "%" PRIu64 " of revisions %" PRIu64 "..%" PRIu64 " not notified exactly once", missed,
                          g_rev_start + 1, last_rev);

    /* Teardown: everything released exactly once, nothing called after. */
    rcip_subscription_free(permanent);
    for (int c = 0; c < NCAPS; c++) {
        if (g_cur[c]) rcip_binding_free(g_cur[c]->b);
        g_cur[c] = NULL;
    }
    rcip_runtime_free(g_runtime);
    atomic_store(&g_runtime_freed, 1);
    rcip_catalog_free(g_catalog);
    if (atomic_load(&g_runtime_ud_frees) != 3)
        violation(V_TEARDOWN, "%d of 3 runtime user data released", atomic_load(&g_runtime_ud_frees));
    uint64_t binds = 0, unreleased = 0, subs = 0, subs_unreleased = 0;
    for (bind_rec *b = g_all_binds, *next; b; b = next) {
        next = b->next_all;
        binds++;
        if (!atomic_load(&b->failed_reg) && !atomic_load(&b->released)) unreleased++;
        free(b);
    }
    for (sub_rec *r = g_all_subs, *next; r; r = next) {
        next = r->next_all;
        subs++;
        if (!atomic_load(&r->released)) subs_unreleased++;
        free(r);
    }
    if (unreleased || subs_unreleased)
        violation(V_TEARDOWN, "%" PRIu64 " binding and %" PRIu64 " subscription user data never released", unreleased,
                  subs_unreleased);

    /* Report. */
    uint64_t inv = atomic_load(&g_invocations);
    printf("stress: %.1f s, %u threads, %" PRIu64 " invocations (%.0f/s), %" PRIu64 " resolves, drained in %.2f s\n",
           seconds, g_threads, inv, (double)inv / seconds, atomic_load(&g_resolves), (double)(t_drained - t_stop) / 1e6);
    printf("outcomes by code (invocations, resolves and blocking calls):\n");
    for (int c = 0; c < NCODES; c++)
        if (atomic_load(&g_code_count[c])) printf("  %-26s %10" PRIu64 "\n", CODE_NAMES[c], atomic_load(&g_code_count[c]));
    printf("paths (minimum %" PRIu64 " each):\n", g_min_per_path);
    bool short_of = false;
    for (int p = 0; p < NPATHS; p++) {
        uint64_t n = atomic_load(&g_path[p]);
        bool ok = n >= g_min_per_path;
        short_of |= !ok;
        printf("  %-40s %10" PRIu64 "%s\n", PATH_NAMES[p], n, ok ? "" : "  BELOW MINIMUM");
    }
    printf("details:\n");
    for (int x = 0; x < NEXTRA; x++) printf("  %-52s %10" PRIu64 "\n", EXTRA_NAMES[x], atomic_load(&g_extra[x]));
    printf("  %-52s %10" PRIu64 "\n", "bind records", binds);
    printf("  %-52s %10" PRIu64 "\n", "subscription records", subs);
    uint64_t total_v = 0;
    for (int k = 0; k < NV; k++) total_v += atomic_load(&g_viol[k]);
    printf("checks: %" PRIu64 " violations, %d watchdog trips, %" PRIu64 " lost, %" PRIu64 " duplicated or stray\n", total_v,
           atomic_load(&g_watchdog_trips), atomic_load(&g_viol[V_LOST]),
           atomic_load(&g_viol[V_DUPLICATE]) + atomic_load(&g_viol[V_STRAY]));
    for (int k = 0; k < NV; k++)
        if (atomic_load(&g_viol[k])) printf("  %-44s %10" PRIu64 "\n", VNAMES[k], atomic_load(&g_viol[k]));
    free(g_slots);
    free((void *)g_rev_seen);
    free(g_q);
    bool pass = total_v == 0 && !short_of;
    printf("stress: %s\n", pass ? "PASS" : "FAIL");
    return pass ? 0 : 1;
}
