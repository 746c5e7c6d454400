/*
 * dispatch_desk.c: a maintenance-dispatch host for rcip, in plain C11.
 *
 * This is the first program to read when learning the rcip C ABI. A
 * dispatch desk (24 visits, 6 technicians; examples-c/dispatch/desk.c)
 * declares what an AI agent may do with it in a catalog
 * (examples-c/dispatch/catalog.json), binds a handler to each capability,
 * answers availability, runs a host policy and a confirmation dialog, and
 * then replays an agent's session from a plan (examples-c/dispatch/plan.jsonl,
 * format in README.md, "Plan files"), printing every outcome and
 * lifecycle event and checking each outcome against the plan.
 *
 *   build/dispatch_desk [--json] [--ttl-ms N] [--catalog FILE] [--plan FILE]
 *   build/dispatch_desk --mcp [--mcp-elicit | --mcp-options JSON] [--control FIFO]
 *                       [--json] [--ttl-ms N] [--catalog FILE]
 *
 * Exit status: 0 every outcome was as the plan expected; 1 some differed;
 * 2 the catalog, the plan or the command line could not be used.
 *
 * With --mcp the agent is not a plan but any MCP client (a desktop
 * assistant, an IDE agent) that starts this program: the desk is served
 * over MCP on standard input and output (rcip_mcp_session_serve_stdio),
 * the transcript goes to standard error, and the dispatcher's console is
 * the --control FIFO: each batch of plan lines written to it (desk,
 * set_context, clear_context, sleep, snapshot, list) runs while the desk
 * is being served. See docs/MCP.md.
 *
 * Map of this file:
 *   1. transcript printing (thread-safe: callbacks arrive on other threads)
 *   2. call slots: waiting for an outcome that may arrive on any thread
 *   3. the host: capability handlers, availability checks
 *   4. the host policy and the confirmation dialog
 *   5. lifecycle events and snapshot revisions
 *   6. the plan runner (the agent's side: snapshot, list, invoke, preflight)
 *   7. MCP mode: the dispatcher's console (--control)
 *   8. main: catalog, runtime, bindings, run or serve, teardown
 *
 * Ownership rules shown here (see include/rcip.h for the full contract):
 *   - Handles we create we free: catalog (rcip_catalog_free, right after
 *     building the runtime, which keeps its own reference), runtime
 *     (rcip_runtime_free), bindings (rcip_binding_free), subscription
 *     (rcip_subscription_free), cancellation tokens (rcip_cancel_token_free,
 *     as soon as we no longer need them: an invocation keeps its own
 *     reference), snapshot references (rcip_snapshot_free).
 *   - Strings rcip returns through `char **` are freed with rcip_string_free,
 *     never free(). Strings rcip lends to callbacks are copied if kept.
 *   - Completion handles (rcip_invocation, rcip_policy_request) belong to the
 *     callback that receives them: settle exactly once, inline or later from
 *     any thread, then free. The archive search hands its handle to a
 *     worker thread, which settles and frees it.
 *   - Every registration takes user_data + user_data_free: rcip calls
 *     user_data_free once, after the last callback. When the registering
 *     call fails, neither is ever called and the user data is still ours.
 *   - We never hold a lock of our own while calling rcip (rcip calls our
 *     callbacks from inside its calls, and they take those locks).
 */
#define _POSIX_C_SOURCE 200809L

#include <rcip.h>

#include "dispatch/desk.h"
#include "dispatch/json.h"
#include "dispatch/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/*
 * Confirmation expiry: this host uses the system clock and the library's
 * own expiry timer (the default), as a production host would, so the
 * "expired" notice really arrives on the library's timer thread. A short
 * TTL keeps the demo fast: the plan's wait_expiry step waits about this
 * long. (An event-loop host would instead call
 * rcip_runtime_builder_set_manual_timers and drive expiry itself with
 * rcip_runtime_next_deadline / rcip_runtime_run_due_timers; tests
 * additionally inject a clock with rcip_runtime_builder_set_clock.)
 */
#define DEFAULT_TTL_MS 1500
/* How long a step waits for an outcome before calling it missing. */
#define OUTCOME_TIMEOUT_MS 30000
/* The archive search's simulated duration, and how often it polls its token.
 * A search the plan cancels scans until it sees the cancellation (at most
 * OUTCOME_TIMEOUT_MS), however late the agent's cancel comes. */
#define ARCHIVE_SCAN_MS 800
#define ARCHIVE_POLL_MS 10
/* How often the archive search reports progress (rcip_invocation_report_progress). */
#define ARCHIVE_PROGRESS_MS 100
/* Most worker threads one run starts (archive searches). */
#define MAX_WORKERS 64
/* Confirmation lifetime when serving MCP: a person answers, so rcip's own
 * default (two minutes) rather than the plan runner's short one. */
#define MCP_TTL_MS 120000

/* ======================================================================
 * 1. Transcript printing
 * ====================================================================== */

static struct {
    pthread_mutex_t mutex;
    bool json;    /* --json: one JSON object per line instead of text */
    FILE *stream; /* stdout; stderr with --mcp, where stdout is the protocol's */
} out = {PTHREAD_MUTEX_INITIALIZER, false, NULL};

/* A line of readable text (nothing in --json mode). */
static void say(const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

static void say(const char *format, ...)
{
    if (out.json) {
        return;
    }
    va_list args;
    va_start(args, format);
    pthread_mutex_lock(&out.mutex);
    vfprintf(out.stream, format, args);
    fputc('\n', out.stream);
    fflush(out.stream);
    pthread_mutex_unlock(&out.mutex);
    va_end(args);
}

/* One JSON line (only in --json mode); consumes `sb`. */
static void emit(sbuf *sb)
{
    if (out.json) {
        pthread_mutex_lock(&out.mutex);
        fputs(sb->data ? sb->data : "{}", out.stream);
        fputc('\n', out.stream);
        fflush(out.stream);
        pthread_mutex_unlock(&out.mutex);
    }
    sb_free(sb);
}

/* A host-side log line: what the host did or decided. */
static void host_log(const char *who, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void host_log(const char *who, const char *format, ...)
{
    char text[512];
    va_list args;
    va_start(args, format);
    vsnprintf(text, sizeof text, format, args);
    va_end(args);
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"log\",\"who\":");
        sb_json_str(&sb, who);
        sb_puts(&sb, ",\"message\":");
        sb_json_str(&sb, text);
        sb_putc(&sb, '}');
        emit(&sb);
    } else {
        say("     %-9s %s", who, text);
    }
}

/*
 * Every rcip_result and its name without the prefix (as plans spell it).
 * crates/rcip-capi/tests/bindings.rs checks this table against the
 * header's enum, so a new code cannot print as UNKNOWN.
 */
static const struct {
    rcip_result code;
    const char *name;
} result_names[] = {
    {RCIP_RESULT_OK, "OK"},
    {RCIP_RESULT_NULL_ARGUMENT, "NULL_ARGUMENT"},
    {RCIP_RESULT_INVALID_UTF8, "INVALID_UTF8"},
    {RCIP_RESULT_INVALID_JSON, "INVALID_JSON"},
    {RCIP_RESULT_INVALID_ARGUMENT, "INVALID_ARGUMENT"},
    {RCIP_RESULT_INVALID_CATALOG, "INVALID_CATALOG"},
    {RCIP_RESULT_NOT_IN_CATALOG, "NOT_IN_CATALOG"},
    {RCIP_RESULT_ALREADY_BOUND, "ALREADY_BOUND"},
    {RCIP_RESULT_UNKNOWN_SCOPE, "UNKNOWN_SCOPE"},
    {RCIP_RESULT_PRIMARY_NOT_ACTIVE, "PRIMARY_NOT_ACTIVE"},
    {RCIP_RESULT_ALREADY_USED, "ALREADY_USED"},
    {RCIP_RESULT_ALREADY_COMPLETED, "ALREADY_COMPLETED"},
    {RCIP_RESULT_CLOSED, "CLOSED"},
    {RCIP_RESULT_PREFLIGHT_BATCH_INVALID, "PREFLIGHT_BATCH_INVALID"},
    {RCIP_RESULT_WRONG_CONTEXT, "WRONG_CONTEXT"},
    {RCIP_RESULT_NOT_FOUND, "NOT_FOUND"},
    {RCIP_RESULT_IO, "IO"},
    {RCIP_RESULT_TIMED_OUT, "TIMED_OUT"},
    {RCIP_RESULT_UNSUPPORTED, "UNSUPPORTED"},
    {RCIP_RESULT_PANIC, "PANIC"},
};

/* The name of an rcip_result without its prefix (as plans spell it). */
static const char *result_name(rcip_result rc)
{
    for (size_t i = 0; i < sizeof result_names / sizeof result_names[0]; i++) {
        if (result_names[i].code == rc) {
            return result_names[i].name;
        }
    }
    return "UNKNOWN";
}

/*
 * Checks an rcip call that should not fail: on failure prints the call, the
 * code and rcip_last_error_message() (read at once: the next rcip call on
 * this thread replaces it) and returns false.
 */
static bool rcip_ok(rcip_result rc, const char *call)
{
    if (rc == RCIP_RESULT_OK) {
        return true;
    }
    const char *message = rcip_last_error_message();
    fprintf(stderr, "dispatch_desk: %s failed: %s (%s)\n", call, result_name(rc),
            message ? message : rcip_result_str(rc));
    return false;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* For printing strings that may be absent. */
static const char *str_or(const char *text)
{
    return text ? text : "?";
}

/* The CLOCK_REALTIME time `ms` from now, for pthread_cond_timedwait. */
static struct timespec deadline_in(long ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += ms / 1000;
    deadline.tv_nsec += (ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    return deadline;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* "status CODE" of an outcome or preflight entry, for checks and printing. */
static void outcome_summary(const json_value *o, char *text, size_t size)
{
    const char *status = json_get_str(o, "status");
    const char *code = json_get_str(json_get(o, "error"), "code");
    snprintf(text, size, "%s%s%s", status ? status : "?", code ? " " : "", code ? code : "");
}

/* Prints an outcome in the order rcip delivers it (any thread). */
static void print_outcome(const char *step, const char *source, const char *outcome_json)
{
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"outcome\",\"step\":");
        sb_json_str(&sb, step);
        sb_printf(&sb, ",\"source\":\"%s\",\"outcome\":%s}", source, outcome_json);
        emit(&sb);
        return;
    }
    json_value *o = json_parse(outcome_json, strlen(outcome_json), NULL);
    const char *status = json_get_str(o, "status");
    const char *label = strcmp(source, "invoke") == 0 ? "outcome" : source;
    if (!status) {
        say("     %-9s (unreadable) %s", label, outcome_json);
    } else if (strcmp(status, "succeeded") == 0) {
        const json_value *output = json_get(o, "output");
        int len = output ? (int)output->src_len : 0;
        const char *text = output ? outcome_json + output->src_offset : "";
        say("  => %-9s succeeded: %.*s%s", label, len > 160 ? 160 : len, text,
            len > 160 ? " ..." : "");
    } else if (strcmp(status, "confirmation_required") == 0) {
        const json_value *c = json_get(o, "confirmation");
        const json_value *expires = json_get(c, "expiresAt");
        double in_ms = expires ? expires->number - (double)now_ms() : 0;
        say("  => %-9s confirmation_required: %s \"%s\" (expires in about %.0f ms)", label,
            str_or(json_get_str(c, "id")), str_or(json_get_str(c, "title")), in_ms);
    } else {
        const json_value *error = json_get(o, "error");
        say("  => %-9s %s %s: %s", label, status, str_or(json_get_str(error, "code")),
            str_or(json_get_str(error, "message")));
        const json_value *issues = json_get(error, "validationIssues");
        for (size_t i = 0; issues && i < issues->count; i++) {
            const json_value *issue = json_at(issues, i);
            const char *path = json_get_str(issue, "instancePath");
            say("            issue %s %s: %s", path && path[0] ? path : "(input)",
                str_or(json_get_str(issue, "keyword")), str_or(json_get_str(issue, "message")));
        }
    }
    json_free(o);
}

/* ======================================================================
 * 2. Call slots: waiting for an outcome or report
 *
 * rcip delivers each outcome exactly once through a callback, possibly
 * before rcip_client_invoke returns, possibly later on another thread (a
 * worker completing a handler, the library's expiry timer). A slot is
 * where that callback leaves the outcome for the step waiting on it. It is
 * reference-counted because two parties hold it: the step, and rcip (as
 * the callback's user data, released through user_data_free).
 * ====================================================================== */

typedef struct call_slot {
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    int refs;
    bool done;
    char *json;   /* our copy of the outcome or report */
    char *step;   /* for printing */
    const char *source; /* "invoke", "dialog", "resolve", "preflight" */
} call_slot;

static call_slot *slot_new(const char *step, const char *source)
{
    call_slot *slot = xcalloc(1, sizeof *slot);
    pthread_mutex_init(&slot->mutex, NULL);
    pthread_cond_init(&slot->cond, NULL);
    slot->refs = 1; /* the creator's */
    slot->step = xstrdup(step);
    slot->source = source;
    return slot;
}

/* Another reference: taken before handing the slot to rcip as user data. */
static call_slot *slot_ref(call_slot *slot)
{
    pthread_mutex_lock(&slot->mutex);
    slot->refs++;
    pthread_mutex_unlock(&slot->mutex);
    return slot;
}

/* Drops a reference. Also the rcip_user_data_free_callback of a slot. */
static void slot_release(void *user_data)
{
    call_slot *slot = user_data;
    if (!slot) {
        return;
    }
    pthread_mutex_lock(&slot->mutex);
    int left = --slot->refs;
    pthread_mutex_unlock(&slot->mutex);
    if (left == 0) {
        pthread_cond_destroy(&slot->cond);
        pthread_mutex_destroy(&slot->mutex);
        free(slot->json);
        free(slot->step);
        free(slot);
    }
}

static void slot_fill(call_slot *slot, const char *json)
{
    pthread_mutex_lock(&slot->mutex);
    if (!slot->done) {
        slot->json = xstrdup(json); /* rcip's text is valid during the call only */
        slot->done = true;
    }
    pthread_cond_broadcast(&slot->cond);
    pthread_mutex_unlock(&slot->mutex);
}

/* rcip_outcome_callback: runs once, on whichever thread settles. */
static void on_outcome(void *user_data, const char *outcome_json)
{
    call_slot *slot = user_data;
    print_outcome(slot->step, slot->source, outcome_json);
    slot_fill(slot, outcome_json);
}

/* rcip_report_callback (preflight). */
static void on_report(void *user_data, const char *report_json)
{
    call_slot *slot = user_data;
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"report\",\"step\":");
        sb_json_str(&sb, slot->step);
        sb_printf(&sb, ",\"report\":%s}", report_json);
        emit(&sb);
    }
    slot_fill(slot, report_json);
}

/* Waits for the slot; returns its text (owned by the slot) or NULL on timeout. */
static const char *slot_wait(call_slot *slot, long timeout_ms)
{
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_sec += timeout_ms / 1000;
    deadline.tv_nsec += (timeout_ms % 1000) * 1000000L;
    if (deadline.tv_nsec >= 1000000000L) {
        deadline.tv_sec++;
        deadline.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&slot->mutex);
    while (!slot->done) {
        if (pthread_cond_timedwait(&slot->cond, &slot->mutex, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    const char *json = slot->done ? slot->json : NULL;
    pthread_mutex_unlock(&slot->mutex);
    return json;
}

/* ======================================================================
 * 3. The host: handlers and availability checks
 * ====================================================================== */

typedef enum dialog_answer { DIALOG_HOLD, DIALOG_APPROVE, DIALOG_DECLINE } dialog_answer;

/* A confirmation-closed notice, kept for wait_expiry steps. */
typedef struct closed_notice {
    char *confirmation_id;
    char *reason;
} closed_notice;

typedef struct app {
    desk *desk;
    const rcip_host *host;     /* borrowed views of the runtime */
    const rcip_client *client;

    /* Guards everything below; never held while calling rcip. */
    pthread_mutex_t mutex;
    pthread_cond_t cond;
    /* The dispatcher's answer to the next confirmation dialog, and where
     * its outcome goes (set by an invoke step with "confirm"). */
    dialog_answer dialog;
    call_slot *dialog_slot;
    bool dialog_used;
    closed_notice *closed;
    size_t closed_count, closed_cap;
    pthread_t workers[MAX_WORKERS];
    size_t worker_count;
    /* --mcp-http: archive workers are detached and counted globally (a
     * session's app may go before its workers end; the desk does not). */
    bool detach_workers;
    /* A plan step that cancels an invocation (cancelAfterMs): the next
     * archive search the handler defers keeps scanning until it sees the
     * cancellation (scan_hold_armed, taken by the handler: scan_hold_taken)
     * and reports when its worker has started (scan_started). The agent
     * cancels only after that report, so the planned outcome does not
     * depend on how the threads are scheduled. */
    bool scan_hold_armed, scan_hold_taken, scan_started;
} app;

/* --mcp-http: detached archive workers still running, under their lock. */
static pthread_mutex_t detached_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t detached_cond = PTHREAD_COND_INITIALIZER;
static size_t detached_running;

/*
 * A binding's user data: which desk capability it is. Allocated per
 * binding and freed by rcip through binding_context_free once the binding
 * is released (unbound, or the runtime freed) and its last callback has
 * returned.
 */
typedef struct capability_impl capability_impl;
typedef struct binding_context {
    app *app;
    const capability_impl *impl;
} binding_context;

static void binding_context_free(void *user_data)
{
    free(user_data);
}

/* The handler's input as a tree; NULL (and the handle failed and freed) if unreadable. */
static json_value *read_input(rcip_invocation *invocation)
{
    /* Borrowed from the handle: valid until rcip_invocation_free. */
    const char *input = rcip_invocation_input(invocation);
    json_value *tree = input ? json_parse(input, strlen(input), NULL) : NULL;
    if (!tree) {
        rcip_ok(rcip_invocation_fail(invocation, false), "rcip_invocation_fail");
        rcip_invocation_free(invocation);
    }
    return tree;
}

/*
 * Settles an inline handler and frees its handle (the handler owns it).
 * A desk refusal becomes EXECUTION_FAILED: rcip takes no error text from
 * handlers (redaction), so the host logs its own reason.
 */
static void finish(rcip_invocation *invocation, desk_status status, const char *output)
{
    if (status == DESK_OK && output) {
        rcip_ok(rcip_invocation_complete(invocation, output), "rcip_invocation_complete");
    } else {
        host_log("handler", "%s refused by the desk: %s", rcip_invocation_capability_id(invocation),
                 desk_status_name(status));
        rcip_ok(rcip_invocation_fail(invocation, false), "rcip_invocation_fail");
    }
    rcip_invocation_free(invocation);
}

/* A small count from the input (a custom catalog may not bound it). */
static int json_int_or(const json_value *v, int fallback)
{
    if (!v || v->type != JSON_NUMBER || !(v->number >= 0 && v->number <= 1000000)) {
        return fallback;
    }
    return (int)v->number;
}

static void handle_list_open(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    const json_value *unassigned = json_get(in, "unassignedOnly");
    char *output = desk_list_open(ctx->app->desk, json_get_str(in, "priority"),
                                  json_get_str(in, "technicianId"),
                                  unassigned && unassigned->type == JSON_BOOL && unassigned->boolean,
                                  json_int_or(json_get(in, "limit"), 0));
    finish(invocation, DESK_OK, output);
    free(output);
    json_free(in);
}

/* The archive search, running on its own thread with the completion handle. */
typedef struct archive_job {
    rcip_invocation *invocation; /* owned by this job from now on */
    app *app;                    /* set when the plan cancels this search (hold) */
    desk *desk;
    char *query;
    char *status;
    int limit;
    bool detached; /* counted in detached_running */
} archive_job;

static void *archive_worker(void *arg)
{
    archive_job *job = arg;
    /* The invocation's token is borrowed from the handle: valid until we free it. */
    const rcip_cancel_token *token = rcip_invocation_cancel_token(job->invocation);
    if (!token) {
        host_log("worker", "the invocation has no token (it cannot be cancelled)");
    }
    bool cancelled = false;
    /* A log message to the MCP client whose call this is (rcip; info passes
     * the session's default level). Elsewhere it goes nowhere. */
    (void)rcip_invocation_log(job->invocation, "info", "dispatch_desk", "\"Searching the archive\"");
    long scan_ms = ARCHIVE_SCAN_MS;
    if (job->app) {
        /* Held: report the start, then scan until the agent cancels. */
        scan_ms = OUTCOME_TIMEOUT_MS;
        pthread_mutex_lock(&job->app->mutex);
        job->app->scan_started = true;
        pthread_cond_broadcast(&job->app->cond);
        pthread_mutex_unlock(&job->app->mutex);
    }
    for (long waited = 0; waited < scan_ms; waited += ARCHIVE_POLL_MS) {
        /* Progress in milliseconds scanned of ARCHIVE_SCAN_MS (rcip; a held
         * scan has no known total): an MCP client that sent a progressToken
         * gets notifications/progress, and the value only increases. A
         * refusal (the call was answered or the runtime closed) changes
         * nothing here: the token tells us to stop. */
        if (waited % ARCHIVE_PROGRESS_MS == 0)
            (void)rcip_invocation_report_progress(job->invocation, (double)waited, scan_ms == ARCHIVE_SCAN_MS,
                                                  (double)scan_ms, "Searching the archive");
        if (rcip_cancel_token_is_cancelled(token)) {
            cancelled = true;
            host_log("worker", "archive search cancelled after about %ld ms: failing as aborted",
                     waited);
            break;
        }
        sleep_ms(ARCHIVE_POLL_MS);
    }
    if (cancelled) {
        /* aborted = true: the outcome is failed EXECUTION_ABORTED. */
        rcip_ok(rcip_invocation_fail(job->invocation, true), "rcip_invocation_fail");
    } else {
        char *output = desk_search(job->desk, job->query, job->status, job->limit, true);
        host_log("worker", "archive search done: completing from the worker thread");
        (void)rcip_invocation_report_progress(job->invocation, (double)ARCHIVE_SCAN_MS, true, (double)ARCHIVE_SCAN_MS,
                                              "Archive searched");
        (void)rcip_invocation_log(job->invocation, "info", "dispatch_desk", "\"Archive search done\"");
        /* The outcome callback runs on this thread, before this returns. */
        rcip_ok(rcip_invocation_complete(job->invocation, output), "rcip_invocation_complete");
        free(output);
    }
    rcip_invocation_free(job->invocation);
    bool detached = job->detached;
    free(job->query);
    free(job->status);
    free(job);
    if (detached) {
        pthread_mutex_lock(&detached_mutex);
        detached_running--;
        pthread_cond_broadcast(&detached_cond);
        pthread_mutex_unlock(&detached_mutex);
    }
    return NULL;
}

/* Starts a detached archive worker (--mcp-http), at most MAX_WORKERS at once. */
static bool start_detached(archive_job *job)
{
    pthread_mutex_lock(&detached_mutex);
    bool started = false;
    pthread_t thread;
    if (detached_running < MAX_WORKERS) {
        job->detached = true;
        started = pthread_create(&thread, NULL, archive_worker, job) == 0;
        if (started) {
            pthread_detach(thread);
            detached_running++;
        }
    }
    pthread_mutex_unlock(&detached_mutex);
    return started;
}

static void handle_search(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    const char *query = json_get_str(in, "query");
    const char *status = json_get_str(in, "status");
    int limit = json_int_or(json_get(in, "limit"), 0);
    const json_value *archive = json_get(in, "includeArchive");
    if (!query) {
        finish(invocation, DESK_BAD_INPUT, NULL);
    } else if (!(archive && archive->type == JSON_BOOL && archive->boolean)) {
        /* The live desk is in memory: answer inline. */
        char *output = desk_search(ctx->app->desk, query, status, limit, false);
        finish(invocation, DESK_OK, output);
        free(output);
    } else {
        /* The archive is slow: defer. The handle moves to a worker thread,
         * which settles and frees it; this handler returns at once. */
        archive_job *job = xcalloc(1, sizeof *job);
        job->invocation = invocation;
        job->desk = ctx->app->desk;
        job->query = xstrdup(query);
        job->status = status ? xstrdup(status) : NULL;
        job->limit = limit;
        app *a = ctx->app;
        bool started;
        if (a->detach_workers) {
            started = start_detached(job);
        } else {
            pthread_mutex_lock(&a->mutex);
            if (a->scan_hold_armed) {
                job->app = a;
            }
            started = a->worker_count < MAX_WORKERS &&
                      pthread_create(&a->workers[a->worker_count], NULL, archive_worker, job) == 0;
            if (started) {
                a->worker_count++;
                if (job->app) {
                    a->scan_hold_armed = false;
                    a->scan_hold_taken = true;
                }
            }
            pthread_mutex_unlock(&a->mutex);
        }
        if (started) {
            host_log("handler", "archive search handed to a worker thread (about %d ms)",
                     ARCHIVE_SCAN_MS);
        } else {
            free(job->query);
            free(job->status);
            free(job);
            finish(invocation, DESK_BAD_INPUT, NULL);
        }
    }
    json_free(in);
}

static void handle_assign(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    char *output = NULL;
    desk_status st = desk_assign(ctx->app->desk, json_get_str(in, "visitId"),
                                 json_get_str(in, "technicianId"), &output);
    finish(invocation, st, output);
    free(output);
    json_free(in);
}

static void handle_reschedule(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    char *output = NULL;
    desk_status st = desk_reschedule(ctx->app->desk, json_get_str(in, "visitId"),
                                     json_get_str(in, "date"), json_get_str(in, "window"), &output);
    finish(invocation, st, output);
    free(output);
    json_free(in);
}

static void handle_add_note(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    char *output = NULL;
    desk_status st = desk_add_note(ctx->app->desk, json_get_str(in, "visitId"),
                                   json_get_str(in, "text"), &output);
    finish(invocation, st, output);
    free(output);
    json_free(in);
}

static void handle_close(void *user_data, rcip_invocation *invocation)
{
    binding_context *ctx = user_data;
    json_value *in = read_input(invocation);
    if (!in) {
        return;
    }
    char *output = NULL;
    desk_status st = desk_close(ctx->app->desk, json_get_str(in, "visitId"),
                                json_get_str(in, "resolution"), json_get_str(in, "summary"),
                                &output);
    finish(invocation, st, output);
    free(output);
    json_free(in);
}

/*
 * Availability checks answer through the sink and return 0 (non-zero means
 * "the check failed"). rcip samples them on every refresh (for the
 * snapshot) and live at invoke time; it copies the reason strings.
 */
static int32_t answer(rcip_availability_sink *sink, bool available, const char *code,
                      const char *reason)
{
    return rcip_ok(rcip_availability_set(sink, available, code, reason), "rcip_availability_set")
               ? 0
               : 1;
}

static int32_t writable_available(void *user_data, rcip_availability_sink *sink)
{
    binding_context *ctx = user_data;
    if (desk_is_read_only(ctx->app->desk)) {
        return answer(sink, false, "DESK_READ_ONLY",
                      "The desk is read-only while the nightly sync runs.");
    }
    return answer(sink, true, NULL, NULL);
}

static int32_t assign_available(void *user_data, rcip_availability_sink *sink)
{
    binding_context *ctx = user_data;
    if (desk_is_read_only(ctx->app->desk)) {
        return writable_available(user_data, sink);
    }
    if (!desk_any_technician_free(ctx->app->desk)) {
        return answer(sink, false, "NO_TECHNICIAN_FREE",
                      "No technician on shift has a free slot.");
    }
    return answer(sink, true, NULL, NULL);
}

static int32_t close_available(void *user_data, rcip_availability_sink *sink)
{
    binding_context *ctx = user_data;
    char visit_id[16];
    if (desk_is_read_only(ctx->app->desk)) {
        return writable_available(user_data, sink);
    }
    if (desk_focused_visit_closed(ctx->app->desk, visit_id, sizeof visit_id)) {
        char reason[96];
        snprintf(reason, sizeof reason, "The open visit card (%s) is already closed.", visit_id);
        return answer(sink, false, "VISIT_ALREADY_CLOSED", reason);
    }
    return answer(sink, true, NULL, NULL);
}

struct capability_impl {
    const char *id;
    rcip_handler_callback handler;
    rcip_availability_callback availability; /* NULL: always available */
};

/* The capabilities this desk implements, bound by catalog id. */
static const capability_impl desk_capabilities[] = {
    {"board.listOpenVisits", handle_list_open, NULL},
    {"visits.search", handle_search, NULL},
    {"visits.assignTechnician", handle_assign, assign_available},
    {"visits.reschedule", handle_reschedule, writable_available},
    {"visits.addNote", handle_add_note, writable_available},
    {"visits.close", handle_close, close_available},
};
#define CAPABILITY_COUNT (sizeof desk_capabilities / sizeof desk_capabilities[0])
enum { CAP_LIST, CAP_SEARCH, CAP_ASSIGN, CAP_RESCHEDULE, CAP_ADD_NOTE, CAP_CLOSE };

/* ======================================================================
 * 4. The host policy and the confirmation dialog
 * ====================================================================== */

/* Decides and frees the request (the policy owns it). */
static void decide(rcip_policy_request *request, const char *who, const char *decision,
                   const char *reason)
{
    sbuf sb;
    sb_init(&sb);
    sb_printf(&sb, "{\"decision\":\"%s\"", decision);
    if (reason) {
        sb_puts(&sb, ",\"reason\":");
        sb_json_str(&sb, reason);
    }
    sb_putc(&sb, '}');
    host_log("policy", "%s -> %s%s%s", who, decision, reason ? ": " : "", reason ? reason : "");
    rcip_ok(rcip_policy_request_decide(request, sb.data), "rcip_policy_request_decide");
    sb_free(&sb);
    rcip_policy_request_free(request);
}

/*
 * The host policy (rcip_policy_callback). Reads are allowed. Writes are
 * checked against the desk's records (the semantic context says where
 * the dispatcher is, not which record: record checks are the host's job).
 * Rescheduling and closing go to the dispatcher for confirmation; an
 * approved re-run (`confirmed`) is allowed, the handler rechecks records.
 * It answers inline; it could as well keep the request and decide later
 * from another thread.
 */
static void desk_policy(void *user_data, rcip_policy_request *request)
{
    app *a = user_data;
    const char *context_text = rcip_policy_request_context(request);
    json_value *ctx = context_text ? json_parse(context_text, strlen(context_text), NULL) : NULL;
    if (!ctx) {
        /* Settles as POLICY_EVALUATION_FAILED. */
        rcip_ok(rcip_policy_request_fail(request), "rcip_policy_request_fail");
        rcip_policy_request_free(request);
        return;
    }
    const json_value *capability = json_get(ctx, "capability");
    const char *id = json_get_str(capability, "id");
    const char *effect = json_get_str(capability, "effect");
    const json_value *confirmed = json_get(ctx, "confirmed");
    const json_value *input = json_get(ctx, "input");
    const char *visit_id = json_get_str(input, "visitId");
    /* NULL for a preflight proposal: nothing is reserved then. */
    const char *invocation_id = rcip_policy_request_invocation_id(request);
    char who[160];
    snprintf(who, sizeof who, "%s%s%s", id ? id : "?", invocation_id ? "" : " (preflight)",
             confirmed && confirmed->boolean ? " (approved re-run)" : "");

    char reason[320], visit[200];
    if (!id || !effect) {
        decide(request, who, "deny", "The request names no capability.");
    } else if (strcmp(effect, "read") == 0) {
        decide(request, who, "allow", NULL);
    } else if (confirmed && confirmed->type == JSON_BOOL && confirmed->boolean) {
        decide(request, who, "allow", NULL);
    } else if (strcmp(id, "visits.assignTechnician") == 0) {
        if (desk_check_assign(a->desk, visit_id, json_get_str(input, "technicianId"), reason,
                              sizeof reason) != DESK_OK) {
            decide(request, who, "deny", reason);
        } else {
            decide(request, who, "allow", NULL);
        }
    } else if (strcmp(id, "visits.reschedule") == 0) {
        const char *date = json_get_str(input, "date");
        const char *window = json_get_str(input, "window");
        if (desk_check_reschedule(a->desk, visit_id, date, window, reason, sizeof reason) !=
            DESK_OK) {
            decide(request, who, "deny", reason);
        } else {
            desk_describe_visit(a->desk, visit_id, visit, sizeof visit);
            snprintf(reason, sizeof reason,
                     "Move %s to %s %s? The customer is told by text message.", visit, date,
                     window);
            decide(request, who, "confirm", reason);
        }
    } else if (strcmp(id, "visits.addNote") == 0) {
        if (desk_check_open_visit(a->desk, visit_id, reason, sizeof reason) != DESK_OK) {
            decide(request, who, "deny", reason);
        } else {
            decide(request, who, "allow", NULL);
        }
    } else if (strcmp(id, "visits.close") == 0) {
        if (desk_check_open_visit(a->desk, visit_id, reason, sizeof reason) != DESK_OK) {
            decide(request, who, "deny", reason);
        } else {
            const char *resolution = json_get_str(input, "resolution");
            desk_describe_visit(a->desk, visit_id, visit, sizeof visit);
            snprintf(reason, sizeof reason, "Close %s as %s? A closed visit cannot be reopened.",
                     visit, resolution ? resolution : "?");
            decide(request, who, "confirm", reason);
        }
    } else if (strcmp(effect, "destructive") == 0) {
        decide(request, who, "confirm", NULL);
    } else {
        decide(request, who, "deny", "This desk has no rule for that capability.");
    }
    json_free(ctx);
}

/*
 * The confirmation callback: the desk's dialog. rcip tells it when a
 * confirmation opens (with the captured input, so the dialog shows exactly
 * what will run) and when it ends. The dispatcher's answer comes from the
 * plan: approve or decline inline, from inside this callback (rcip allows
 * that), or hold the dialog open for a later resolve step, or for expiry.
 * It runs on the thread where things happen: the invoking thread, or the
 * library's timer thread for an expiry.
 */
static void on_confirmation(void *user_data, const char *notice_json)
{
    app *a = user_data;
    json_value *n = json_parse(notice_json, strlen(notice_json), NULL);
    const char *event = json_get_str(n, "event");
    if (!event) {
        json_free(n);
        return;
    }
    if (strcmp(event, "closed") == 0) {
        const char *id = json_get_str(n, "confirmationId");
        const char *reason = json_get_str(n, "reason");
        if (out.json) {
            sbuf sb;
            sb_init(&sb);
            sb_printf(&sb, "{\"type\":\"dialog\",\"notice\":%s}", notice_json);
            emit(&sb);
        } else {
            say("     %-9s closed %s: %s", "dialog", id ? id : "?", reason ? reason : "?");
        }
        pthread_mutex_lock(&a->mutex);
        if (a->closed_count == a->closed_cap) {
            a->closed_cap = a->closed_cap ? a->closed_cap * 2 : 8;
            a->closed = xrealloc(a->closed, a->closed_cap * sizeof *a->closed);
        }
        a->closed[a->closed_count].confirmation_id = xstrdup(id ? id : "");
        a->closed[a->closed_count].reason = xstrdup(reason ? reason : "");
        a->closed_count++;
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->mutex);
        json_free(n);
        return;
    }

    /* "opened": take the dispatcher's answer (once), with a reference of
     * our own to its slot, taken under the lock: the step may give up
     * waiting and drop its reference at any time. */
    pthread_mutex_lock(&a->mutex);
    dialog_answer answer_given = DIALOG_HOLD;
    call_slot *slot = NULL;
    if (!a->dialog_used) {
        answer_given = a->dialog;
        slot = slot_ref(a->dialog_slot);
        a->dialog_used = true;
    }
    pthread_mutex_unlock(&a->mutex);

    const json_value *c = json_get(n, "confirmation");
    const char *id = json_get_str(c, "id");
    const char *answer_name = answer_given == DIALOG_APPROVE   ? "approve"
                              : answer_given == DIALOG_DECLINE ? "decline"
                                                               : "hold";
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"dialog\",\"notice\":%s,\"answer\":\"%s\"}", notice_json,
                  answer_name);
        emit(&sb);
    } else {
        const json_value *input = json_get(n, "input");
        const json_value *expires = json_get(c, "expiresAt");
        say("     %-9s opened %s \"%s\" for %s", "dialog", str_or(id),
            str_or(json_get_str(c, "title")), str_or(json_get_str(n, "capabilityId")));
        say("               \"%s\"", str_or(json_get_str(c, "description")));
        say("               input %.*s; expires in about %.0f ms; dispatcher: %s",
            input ? (int)input->src_len : 0, input ? notice_json + input->src_offset : "",
            expires ? expires->number - (double)now_ms() : 0.0, answer_name);
    }
    if (id && slot && answer_given != DIALOG_HOLD) {
        /* Resolve from inside the callback: the outcome (the approved run,
         * or the decline) reaches on_outcome, possibly before this returns.
         * Our slot reference passes to rcip, which releases it. */
        rcip_result rc = rcip_host_resolve_confirmation(a->host, id, answer_given == DIALOG_APPROVE,
                                                        on_outcome, slot, slot_release);
        if (!rcip_ok(rc, "rcip_host_resolve_confirmation")) {
            slot_release(slot); /* the call failed: rcip never took it */
        }
    } else {
        slot_release(slot); /* NULL does nothing */
    }
    json_free(n);
}

/* ======================================================================
 * 5. Lifecycle events and snapshot revisions
 * ====================================================================== */

/* rcip_event_callback: redacted events (no input, output or message). */
static void on_event(void *user_data, const char *event_json)
{
    (void)user_data;
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"event\",\"event\":%s}", event_json);
        emit(&sb);
        return;
    }
    json_value *e = json_parse(event_json, strlen(event_json), NULL);
    const char *code = json_get_str(e, "errorCode");
    say("     %-9s %-22s %-24s %s%s%s", "event", str_or(json_get_str(e, "phase")),
        str_or(json_get_str(e, "capabilityId")), str_or(json_get_str(e, "invocationId")),
        code ? "  " : "", code ? code : "");
    json_free(e);
}

/* rcip_subscriber_callback: once per snapshot revision. */
static void on_revision(void *user_data, uint64_t revision)
{
    (void)user_data;
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"revision\",\"revision\":%llu}", (unsigned long long)revision);
        emit(&sb);
    } else {
        say("     %-9s snapshot revision %llu", "refresh", (unsigned long long)revision);
    }
}

/* ======================================================================
 * 6. The plan runner
 * ====================================================================== */

typedef struct runner {
    app *app;
    const plan *plan;
    rcip_binding *bindings[CAPABILITY_COUNT]; /* NULL when not in the catalog */
    char **outcomes;            /* per step: its invoke outcome (for "of") */
    const rcip_snapshot *last_snapshot; /* a reference we hold */
    long ttl_ms;
    size_t mismatches;
    size_t mismatch_cap;
    size_t *mismatch_steps;     /* step index of each failed check */
} runner;

/* Records and prints one expectation check. */
static void check(runner *r, size_t index, bool ok, const char *expected, const char *got)
{
    const plan_step *s = &r->plan->steps[index];
    if (!ok) {
        if (r->mismatches == r->mismatch_cap) {
            r->mismatch_cap = r->mismatch_cap ? r->mismatch_cap * 2 : 8;
            r->mismatch_steps = xrealloc(r->mismatch_steps,
                                         r->mismatch_cap * sizeof *r->mismatch_steps);
        }
        r->mismatch_steps[r->mismatches++] = index;
    }
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"check\",\"step\":");
        sb_json_str(&sb, s->name);
        sb_printf(&sb, ",\"line\":%zu,\"ok\":%s,\"expected\":", s->line, ok ? "true" : "false");
        sb_json_str(&sb, expected);
        sb_puts(&sb, ",\"got\":");
        sb_json_str(&sb, got);
        sb_putc(&sb, '}');
        emit(&sb);
    } else if (ok) {
        say("     %-9s %s", "ok", expected);
    } else {
        say("  !! MISMATCH  expected %s, got %s (line %zu)", expected, got, s->line);
    }
}

/* Checks a host/client call result against `expect.result` (default OK). */
static bool check_result(runner *r, size_t index, const char *call, rcip_result rc)
{
    const plan_step *s = &r->plan->steps[index];
    /* Read the message at once: any later rcip call on this thread replaces it. */
    const char *message = rc ? rcip_last_error_message() : NULL;
    if (out.json && rc) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"result\",\"step\":");
        sb_json_str(&sb, s->name);
        sb_printf(&sb, ",\"call\":\"%s\",\"result\":\"%s\"", call, result_name(rc));
        if (message) {
            sb_puts(&sb, ",\"message\":");
            sb_json_str(&sb, message);
        }
        sb_putc(&sb, '}');
        emit(&sb);
    } else if (rc) {
        say("  => %-9s %s: %s", call, result_name(rc), message ? message : rcip_result_str(rc));
    }
    const char *expected = s->expect_result ? s->expect_result : "OK";
    bool ok = strcmp(expected, result_name(rc)) == 0;
    if (rc || s->expect_result) {
        char want[64], got[64];
        snprintf(want, sizeof want, "result %s", expected);
        snprintf(got, sizeof got, "result %s", result_name(rc));
        check(r, index, ok, want, got);
    }
    return rc == RCIP_RESULT_OK;
}

static void check_outcome(runner *r, size_t index, const plan_expect *e, const char *json)
{
    if (!e->present) {
        return;
    }
    char want[96], got[96];
    snprintf(want, sizeof want, "%s%s%s", e->status, e->code ? " " : "", e->code ? e->code : "");
    if (!json) {
        check(r, index, false, want, "no outcome in time");
        return;
    }
    json_value *o = json_parse(json, strlen(json), NULL);
    outcome_summary(o, got, sizeof got);
    const char *status = json_get_str(o, "status");
    const char *code = json_get_str(json_get(o, "error"), "code");
    bool ok = status && strcmp(status, e->status) == 0 &&
              (!e->code || (code && strcmp(code, e->code) == 0));
    json_free(o);
    check(r, index, ok, want, got);
}

/* Compares two id lists; `ordered` or as sets. */
static bool same_ids(const plan_ids *want, const char **got, size_t got_count, bool ordered)
{
    if (want->count != got_count) {
        return false;
    }
    for (size_t i = 0; i < got_count; i++) {
        bool found = false;
        for (size_t j = 0; j < want->count && !found; j++) {
            found = (!ordered || i == j) && strcmp(want->ids[j], got[i]) == 0;
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

static void ids_text(char *text, size_t size, const char **ids, size_t count)
{
    size_t used = 0;
    int n = snprintf(text, size, "[");
    used = n > 0 ? (size_t)n : 0;
    for (size_t i = 0; i < count && used < size; i++) {
        n = snprintf(text + used, size - used, "%s%s", i ? ", " : "", ids[i]);
        used += n > 0 ? (size_t)n : 0;
    }
    if (used < size) {
        snprintf(text + used, size - used, "]");
    }
}

static void run_snapshot(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    const rcip_snapshot *snapshot = NULL;
    if (!check_result(r, index, "rcip_client_snapshot",
                      rcip_client_snapshot(r->app->client, &snapshot))) {
        return;
    }
    /* The same handle comes back until the revision changes: a shared,
     * immutable snapshot. We keep one reference across steps to show it. */
    bool shared = snapshot == r->last_snapshot;
    const char *text = rcip_snapshot_json(snapshot); /* owned by the snapshot */
    if (!text) {
        text = "{}";
    }
    json_value *snap = json_parse(text, strlen(text), NULL);
    const json_value *caps = json_get(snap, "capabilities");
    const json_value *context = json_get(snap, "context");
    const json_value *active = json_get(context, "activeScopeIds");
    size_t count = caps ? caps->count : 0;
    const char **available = xcalloc(count, sizeof *available);
    size_t available_count = 0;

    sbuf line;
    sb_init(&line);
    if (out.json) {
        sb_puts(&line, "{\"type\":\"snapshot\",\"step\":");
        sb_json_str(&line, s->name);
        sb_printf(&line, ",\"revision\":%llu,\"shared\":%s,\"context\":%.*s,\"capabilities\":[",
                  (unsigned long long)rcip_snapshot_revision(snapshot), shared ? "true" : "false",
                  context ? (int)context->src_len : 2, context ? text + context->src_offset : "{}");
    } else {
        say("     snapshot revision %llu%s; context %.*s",
            (unsigned long long)rcip_snapshot_revision(snapshot),
            shared ? " (unchanged: the same shared snapshot as before)" : "",
            active ? (int)active->src_len : 2, active ? text + active->src_offset : "[]");
    }
    for (size_t i = 0; i < count; i++) {
        const json_value *cap = json_at(caps, i);
        const char *id = json_get_str(cap, "id");
        const json_value *bound = json_get(cap, "bound");
        const json_value *avail = json_get(cap, "available");
        const json_value *availability = json_get(cap, "availability");
        const char *code = json_get_str(availability, "reasonCode");
        const char *reason = json_get_str(availability, "reason");
        bool is_bound = bound && bound->boolean;
        bool is_available = avail && avail->boolean;
        if (is_available && id) {
            available[available_count++] = id;
        }
        if (out.json) {
            sb_puts(&line, i ? ",{\"id\":" : "{\"id\":");
            sb_json_str(&line, id ? id : "");
            sb_printf(&line, ",\"effect\":\"%s\",\"bound\":%s,\"available\":%s,\"relevance\":\"%s\"",
                      str_or(json_get_str(cap, "effect")), is_bound ? "true" : "false",
                      is_available ? "true" : "false", str_or(json_get_str(cap, "relevance")));
            if (code) {
                sb_puts(&line, ",\"reasonCode\":");
                sb_json_str(&line, code);
            }
            sb_putc(&line, '}');
        } else {
            say("       %-24s %-11s %-7s %-7s %s%s%s", str_or(id),
                str_or(json_get_str(cap, "effect")), str_or(json_get_str(cap, "relevance")),
                is_bound ? "bound" : "unbound", is_available ? "available" : "unavailable",
                code ? " " : "", code ? code : "");
            if (reason) {
                say("       %-24s %s", "", reason);
            }
        }
    }
    if (out.json) {
        sb_puts(&line, "]}");
        emit(&line);
    } else {
        sb_free(&line);
    }
    if (s->expect_available.present) {
        char want[512], got[512];
        ids_text(want, sizeof want, s->expect_available.ids, s->expect_available.count);
        ids_text(got, sizeof got, available, available_count);
        char want_label[540], got_label[540];
        snprintf(want_label, sizeof want_label, "available %s", want);
        snprintf(got_label, sizeof got_label, "available %s", got);
        check(r, index, same_ids(&s->expect_available, available, available_count, false),
              want_label, got_label);
    }
    free(available);
    json_free(snap);
    /* Keep this reference, drop the previous one. */
    rcip_snapshot_free(r->last_snapshot);
    r->last_snapshot = snapshot;
}

static void run_list(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    char *list = NULL;
    if (!out.json) {
        say("     filter %s", s->filter_text ? s->filter_text : "(none)");
    }
    if (!check_result(r, index, "rcip_client_list_capabilities",
                      rcip_client_list_capabilities(r->app->client, s->filter_text, &list))) {
        return;
    }
    json_value *caps = json_parse(list, strlen(list), NULL);
    rcip_string_free(list); /* a string rcip returned: rcip_string_free, not free() */
    size_t count = caps ? caps->count : 0;
    const char **ids = xcalloc(count, sizeof *ids);
    for (size_t i = 0; i < count; i++) {
        ids[i] = json_get_str(json_at(caps, i), "id");
        if (!ids[i]) {
            ids[i] = "?";
        }
    }
    char got[512];
    ids_text(got, sizeof got, ids, count);
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_puts(&sb, "{\"type\":\"list\",\"step\":");
        sb_json_str(&sb, s->name);
        sb_puts(&sb, ",\"ids\":[");
        for (size_t i = 0; i < count; i++) {
            if (i) {
                sb_putc(&sb, ',');
            }
            sb_json_str(&sb, ids[i]);
        }
        sb_puts(&sb, "]}");
        emit(&sb);
    } else {
        say("  => %-9s %s", "ids", got);
    }
    if (s->expect_ids.present) {
        char want[512];
        ids_text(want, sizeof want, s->expect_ids.ids, s->expect_ids.count);
        char want_label[530], got_label[530];
        snprintf(want_label, sizeof want_label, "ids %s", want);
        snprintf(got_label, sizeof got_label, "ids %s", got);
        check(r, index, same_ids(&s->expect_ids, ids, count, true), want_label, got_label);
    }
    free(ids);
    json_free(caps);
}

/* Host-side desk changes, and telling rcip that availability may differ. */
static void run_desk(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    desk *d = r->app->desk;
    if (s->read_only != -1) {
        desk_set_read_only(d, s->read_only == 1);
        host_log("desk", "desk is now %s; rcip_host_refresh (several capabilities change)",
                 s->read_only ? "read-only" : "writable");
        check_result(r, index, "rcip_host_refresh", rcip_host_refresh(r->app->host));
    }
    if (s->technician_id) {
        if (desk_set_on_shift(d, s->technician_id, s->on_shift == 1) != DESK_OK) {
            check(r, index, false, "a known technician", s->technician_id);
        } else if (r->bindings[CAP_ASSIGN]) {
            /* Only assignTechnician depends on shifts: bump its binding
             * revision (a changed value refreshes; the same one does not). */
            uint64_t revision = desk_changes(d);
            host_log("desk", "%s is now %s; rcip_binding_set_revision(assign, %llu)",
                     s->technician_id, s->on_shift ? "on shift" : "off shift",
                     (unsigned long long)revision);
            check_result(r, index, "rcip_binding_set_revision",
                         rcip_binding_set_revision(r->bindings[CAP_ASSIGN], revision));
        }
    }
    if (s->focus_visit_id) {
        if (desk_set_focus(d, s->focus_visit_id) != DESK_OK) {
            check(r, index, false, "a known visit", s->focus_visit_id);
        } else if (r->bindings[CAP_CLOSE]) {
            uint64_t revision = desk_changes(d);
            host_log("desk", "visit card %s%s; rcip_binding_set_revision(close, %llu)",
                     s->focus_visit_id[0] ? "opened: " : "closed", s->focus_visit_id,
                     (unsigned long long)revision);
            check_result(r, index, "rcip_binding_set_revision",
                         rcip_binding_set_revision(r->bindings[CAP_CLOSE], revision));
        }
    }
}

/* Sets up the dispatcher's answer for the confirmation an invoke may open.
 * `a` borrows `slot` until dialog_disarm; the dialog takes its own reference. */
static void dialog_arm(app *a, dialog_answer answer_given, call_slot *slot)
{
    pthread_mutex_lock(&a->mutex);
    a->dialog = answer_given;
    a->dialog_slot = slot;
    a->dialog_used = false;
    pthread_mutex_unlock(&a->mutex);
}

/* Disarms it; true when a confirmation used it. */
static bool dialog_disarm(app *a)
{
    pthread_mutex_lock(&a->mutex);
    bool used = a->dialog_used;
    a->dialog = DIALOG_HOLD;
    a->dialog_slot = NULL;
    a->dialog_used = true;
    pthread_mutex_unlock(&a->mutex);
    return used;
}

static void run_invoke(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    app *a = r->app;
    if (!out.json) {
        say("     %s %s%s%s", s->capability_id, s->input_text,
            s->invocation_id ? "  invocation id " : "", s->invocation_id ? s->invocation_id : "");
    }
    /* A token only when the plan cancels: the consumer's handle, ours to free. */
    rcip_cancel_token *token = NULL;
    if (s->cancel_after_ms >= 0 && !rcip_ok(rcip_cancel_token_new(&token), "rcip_cancel_token_new")) {
        check(r, index, false, "a cancellation token", "none");
        return;
    }
    call_slot *slot = slot_new(s->name, "invoke");
    call_slot *dialog_slot = NULL;
    if (token) {
        pthread_mutex_lock(&a->mutex);
        a->scan_hold_armed = true;
        a->scan_hold_taken = false;
        a->scan_started = false;
        pthread_mutex_unlock(&a->mutex);
    }
    if (s->has_dialog) {
        dialog_slot = slot_new(s->name, "dialog");
        dialog_arm(a, s->dialog_approve ? DIALOG_APPROVE : DIALOG_DECLINE, dialog_slot);
    }
    char *invocation_id = NULL;
    /* rcip holds one reference to the slot (user data) until the outcome
     * was delivered, then calls slot_release. */
    rcip_result rc = rcip_client_invoke(a->client, s->capability_id, s->input_text,
                                        s->invocation_id, token, on_outcome, slot_ref(slot),
                                        slot_release, &invocation_id);
    if (rc != RCIP_RESULT_OK) {
        slot_release(slot); /* the call failed: rcip never took its reference */
        check_result(r, index, "rcip_client_invoke", rc);
    } else {
        rcip_string_free(invocation_id); /* new string: ours to free */
        if (token) {
            /* A deferred archive search: cancel once its worker has started
             * (it then scans until it sees the cancellation). */
            pthread_mutex_lock(&a->mutex);
            a->scan_hold_armed = false;
            if (a->scan_hold_taken) {
                struct timespec deadline = deadline_in(OUTCOME_TIMEOUT_MS);
                while (!a->scan_started &&
                       pthread_cond_timedwait(&a->cond, &a->mutex, &deadline) != ETIMEDOUT) {
                }
                if (!a->scan_started) {
                    check(r, index, false, "the archive worker to start", "not in time");
                }
            }
            a->scan_hold_taken = false;
            pthread_mutex_unlock(&a->mutex);
            if (s->cancel_after_ms > 0) {
                sleep_ms(s->cancel_after_ms);
            }
            host_log("agent", "cancels its token after %ld ms", s->cancel_after_ms);
            rcip_ok(rcip_cancel_token_cancel(token), "rcip_cancel_token_cancel");
        }
        const char *outcome = slot_wait(slot, OUTCOME_TIMEOUT_MS);
        if (outcome) {
            r->outcomes[index] = xstrdup(outcome);
        }
        check_outcome(r, index, &s->expect, outcome);
        if (dialog_slot) {
            const char *resolution = NULL;
            /* The dialog answered inline during the invoke; a deferred handler
             * of the approved run may still be finishing. */
            if (dialog_disarm(a)) {
                resolution = slot_wait(dialog_slot, OUTCOME_TIMEOUT_MS);
                if (!resolution) {
                    check(r, index, false, "a dialog outcome", "none in time");
                }
            } else {
                check(r, index, false, "a confirmation dialog", "no confirmation opened");
            }
            if (resolution) {
                check_outcome(r, index, &s->dialog_expect, resolution);
            }
        }
    }
    dialog_disarm(a);
    slot_release(dialog_slot);
    slot_release(slot);
    rcip_cancel_token_free(token); /* the invocation keeps its own reference */
}

/* The confirmation id in the outcome of step `of`, or NULL. */
static char *confirmation_of(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    const char *outcome = r->outcomes[s->of_index];
    json_value *o = outcome ? json_parse(outcome, strlen(outcome), NULL) : NULL;
    const char *id = json_get_str(json_get(o, "confirmation"), "id");
    char *copy = id ? xstrdup(id) : NULL;
    json_free(o);
    if (!copy) {
        check(r, index, false, "a confirmation_required outcome in step \"of\"", "none");
    }
    return copy;
}

static void run_resolve(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    char *id = confirmation_of(r, index);
    if (!id) {
        return;
    }
    host_log("dispatcher", "%s %s (from step %s)", s->approve ? "approves" : "declines", id, s->of);
    call_slot *slot = slot_new(s->name, "resolve");
    rcip_result rc = rcip_host_resolve_confirmation(r->app->host, id, s->approve, on_outcome,
                                                    slot_ref(slot), slot_release);
    if (rc != RCIP_RESULT_OK) {
        slot_release(slot); /* never taken */
        check_result(r, index, "rcip_host_resolve_confirmation", rc);
    } else {
        check_outcome(r, index, &s->expect, slot_wait(slot, OUTCOME_TIMEOUT_MS));
    }
    slot_release(slot);
    free(id);
}

static void run_wait_expiry(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    app *a = r->app;
    char *id = confirmation_of(r, index);
    if (!id) {
        return;
    }
    /* The wait ends with the closed notice; the bound only turns a lost
     * expiry into a mismatch. It is generous (the library's timer thread
     * may run late on a loaded or serialised machine, e.g. under
     * valgrind): at least OUTCOME_TIMEOUT_MS. */
    long timeout = s->timeout_ms > 0 ? s->timeout_ms : r->ttl_ms + 5000;
    if (s->timeout_ms <= 0 && timeout < OUTCOME_TIMEOUT_MS) {
        timeout = OUTCOME_TIMEOUT_MS;
    }
    host_log("agent", "waits up to %ld ms for %s to expire", timeout, id);
    struct timespec deadline = deadline_in(timeout);
    char reason[32] = "";
    pthread_mutex_lock(&a->mutex);
    for (;;) {
        for (size_t i = 0; i < a->closed_count && !reason[0]; i++) {
            if (strcmp(a->closed[i].confirmation_id, id) == 0) {
                snprintf(reason, sizeof reason, "%s", a->closed[i].reason);
            }
        }
        if (reason[0] || pthread_cond_timedwait(&a->cond, &a->mutex, &deadline) == ETIMEDOUT) {
            break;
        }
    }
    pthread_mutex_unlock(&a->mutex);
    char got[64];
    snprintf(got, sizeof got, "%s", reason[0] ? reason : "still pending");
    check(r, index, strcmp(reason, "expired") == 0, "closed: expired", got);
    free(id);
}

static void run_preflight(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    size_t n = s->proposal_count;
    const char **ids = xcalloc(n, sizeof *ids);
    const char **inputs = xcalloc(n, sizeof *inputs);
    for (size_t i = 0; i < n; i++) {
        ids[i] = s->proposals[i].capability_id;
        inputs[i] = s->proposals[i].input_text;
        if (!out.json) {
            say("     proposal %zu: %s %s", i, ids[i], inputs[i]);
        }
    }
    call_slot *slot = slot_new(s->name, "preflight");
    rcip_result rc = rcip_client_preflight(r->app->client, ids, inputs, n, NULL, on_report,
                                           slot_ref(slot), slot_release);
    if (rc != RCIP_RESULT_OK) {
        slot_release(slot); /* never taken */
    }
    if (!check_result(r, index, "rcip_client_preflight", rc)) {
        slot_release(slot);
        free(ids);
        free(inputs);
        return;
    }
    const char *text = slot_wait(slot, OUTCOME_TIMEOUT_MS);
    json_value *report = text ? json_parse(text, strlen(text), NULL) : NULL;
    const json_value *outcomes = json_get(report, "outcomes");
    const json_value *consistent = json_get(report, "consistent");
    if (!out.json && report) {
        const json_value *revision = json_get(report, "revision");
        say("  => %-9s revision %.0f, consistent %s", "report", revision ? revision->number : 0.0,
            consistent && consistent->boolean ? "true" : "false");
        for (size_t i = 0; outcomes && i < outcomes->count; i++) {
            const json_value *o = json_at(outcomes, i);
            const json_value *error = json_get(o, "error");
            const char *reason = json_get_str(o, "reason");
            say("            %zu %-24s %s%s%s%s%s", i, str_or(json_get_str(o, "capabilityId")),
                str_or(json_get_str(o, "status")), error ? " " : "",
                error ? str_or(json_get_str(error, "code")) : "", reason ? ": " : "",
                reason ? reason : "");
        }
    }
    if (!report) {
        check(r, index, false, "a preflight report", "none in time");
    }
    if (report && s->expect_consistent != -1) {
        bool got = consistent && consistent->boolean;
        check(r, index, got == (s->expect_consistent == 1),
              s->expect_consistent ? "consistent" : "not consistent",
              got ? "consistent" : "not consistent");
    }
    if (report && s->has_expect_outcomes) {
        size_t count = outcomes ? outcomes->count : 0;
        if (count != s->expect_outcome_count) {
            char want[32], got[32];
            snprintf(want, sizeof want, "%zu outcomes", s->expect_outcome_count);
            snprintf(got, sizeof got, "%zu outcomes", count);
            check(r, index, false, want, got);
        } else {
            bool ok = true;
            sbuf want, got;
            sb_init(&want);
            sb_init(&got);
            for (size_t i = 0; i < count; i++) {
                const plan_expect *e = &s->expect_outcomes[i];
                const json_value *o = json_at(outcomes, i);
                const char *status = json_get_str(o, "status");
                const char *code = json_get_str(json_get(o, "error"), "code");
                char summary[96];
                outcome_summary(o, summary, sizeof summary);
                sb_printf(&want, "%s%s%s%s", i ? ", " : "", e->status, e->code ? " " : "",
                          e->code ? e->code : "");
                sb_printf(&got, "%s%s", i ? ", " : "", summary);
                ok = ok && status && strcmp(status, e->status) == 0 &&
                     (!e->code || (code && strcmp(code, e->code) == 0));
            }
            check(r, index, ok, want.data ? want.data : "", got.data ? got.data : "");
            sb_free(&want);
            sb_free(&got);
        }
    }
    json_free(report);
    slot_release(slot);
    free(ids);
    free(inputs);
}

static void print_step_header(const runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"step\",\"index\":%zu,\"line\":%zu,\"step\":", index + 1,
                  s->line);
        sb_json_str(&sb, s->name);
        sb_printf(&sb, ",\"op\":\"%s\"", plan_op_name(s->op));
        if (s->note) {
            sb_puts(&sb, ",\"note\":");
            sb_json_str(&sb, s->note);
        }
        sb_putc(&sb, '}');
        emit(&sb);
        return;
    }
    say("%s", "");
    say("[%zu] %s  (%s, line %zu)", index + 1, s->name, plan_op_name(s->op), s->line);
    if (s->note) {
        say("     # %s", s->note);
    }
}

static void run_step(runner *r, size_t index)
{
    const plan_step *s = &r->plan->steps[index];
    print_step_header(r, index);
    switch (s->op) {
    case OP_SNAPSHOT:
        run_snapshot(r, index);
        break;
    case OP_LIST:
        run_list(r, index);
        break;
    case OP_SET_CONTEXT:
        if (!out.json) {
            say("     context %s", s->context_text);
        }
        check_result(r, index, "rcip_host_set_context",
                     rcip_host_set_context(r->app->host, s->context_text));
        break;
    case OP_CLEAR_CONTEXT:
        check_result(r, index, "rcip_host_clear_context", rcip_host_clear_context(r->app->host));
        break;
    case OP_DESK:
        run_desk(r, index);
        break;
    case OP_INVOKE:
        run_invoke(r, index);
        break;
    case OP_RESOLVE:
        run_resolve(r, index);
        break;
    case OP_WAIT_EXPIRY:
        run_wait_expiry(r, index);
        break;
    case OP_PREFLIGHT:
        run_preflight(r, index);
        break;
    case OP_SLEEP:
        sleep_ms(s->sleep_ms);
        break;
    }
}

/* ======================================================================
 * 6b. Building a desk runtime (the plan, stdio MCP, and each HTTP session)
 * ====================================================================== */

/*
 * Builds a runtime over `catalog` with the desk's policy, confirmation
 * dialog and event observer, each registered with `data` and `data_free`
 * (NULL: nothing to release; else `retain(data)` is called before each
 * registration, since rcip releases each registration once). The builder
 * is consumed by build, on success and failure alike.
 */
static bool desk_runtime_new(rcip_catalog *catalog, long ttl_ms, void *data,
                             rcip_user_data_free_callback data_free, void (*retain)(void *),
                             rcip_runtime **runtime_out)
{
    *runtime_out = NULL;
    rcip_runtime_builder *builder = NULL;
    if (!rcip_ok(rcip_runtime_builder_new(catalog, &builder), "rcip_runtime_builder_new")) {
        return false;
    }
    bool ok = rcip_ok(rcip_runtime_builder_set_confirmation_ttl_ms(builder, (uint64_t)ttl_ms),
                      "rcip_runtime_builder_set_confirmation_ttl_ms");
    for (int step = 0; ok && step < 3; step++) {
        if (retain) {
            retain(data);
        }
        rcip_result rc = step == 0   ? rcip_runtime_builder_set_policy(builder, desk_policy, data, data_free)
                         : step == 1 ? rcip_runtime_builder_set_confirmation_callback(builder, on_confirmation,
                                                                                     data, data_free)
                                     : rcip_runtime_builder_add_event_observer(builder, on_event, data, data_free);
        ok = rcip_ok(rc, step == 0   ? "rcip_runtime_builder_set_policy"
                         : step == 1 ? "rcip_runtime_builder_set_confirmation_callback"
                                     : "rcip_runtime_builder_add_event_observer");
        if (!ok && data_free) {
            data_free(data); /* not registered: undo the retain */
        }
    }
    if (!ok) {
        rcip_runtime_builder_free(builder); /* not built: ours to free */
        return false;
    }
    return rcip_ok(rcip_runtime_builder_build(builder, runtime_out), "rcip_runtime_builder_build");
}

/*
 * Binds the desk's handlers to the catalog's capabilities on `a`'s
 * runtime. Each binding owns a small context that rcip frees with
 * `context_free` once the binding is released (unbound, or the runtime
 * closed) and its last callback has returned; `retain(a)` (when given) is
 * called for each, for a context_free that releases it. A capability the
 * catalog does not declare is skipped; one the desk does not implement
 * stays unbound (CAPABILITY_UNBOUND when invoked).
 */
static bool desk_bind_all(app *a, rcip_binding **bindings, rcip_user_data_free_callback context_free,
                          void (*retain)(void *), size_t *bound_out)
{
    *bound_out = 0;
    for (size_t i = 0; i < CAPABILITY_COUNT; i++) {
        const capability_impl *impl = &desk_capabilities[i];
        binding_context *ctx = xcalloc(1, sizeof *ctx);
        ctx->app = a;
        ctx->impl = impl;
        if (retain) {
            retain(a);
        }
        rcip_result rc = rcip_host_bind(a->host, impl->id, impl->handler, impl->availability, ctx,
                                        context_free, &bindings[i]);
        if (rc == RCIP_RESULT_OK) {
            (*bound_out)++;
            continue;
        }
        context_free(ctx); /* the bind failed: rcip never took ctx */
        if (rc == RCIP_RESULT_NOT_IN_CATALOG) {
            fprintf(stderr, "dispatch_desk: note: the catalog does not declare %s: not bound\n",
                    impl->id);
            continue;
        }
        rcip_ok(rc, "rcip_host_bind");
        return false;
    }
    return true;
}

/* ======================================================================
 * 7. MCP mode: the dispatcher's console
 *
 * While an MCP client drives the desk, the dispatcher keeps working. Each
 * batch of plan lines written to the --control FIFO (open, write, close)
 * runs as soon as it arrives, on the console thread, with the plan
 * runner's own step functions. Only the dispatcher's operations belong
 * here: the agent's (invoke, resolve, preflight) come over MCP.
 * ====================================================================== */

typedef struct console console;
struct console {
    const char *path;         /* a FIFO */
    const runner *desk_runner; /* the app and the bindings (stdio) */
    /* Runs one batch of console lines; NULL: on desk_runner. */
    void (*run_batch)(console *c, const plan *batch);
    void *batch_data;
    pthread_t thread;
    bool started;
    pthread_mutex_t mutex;    /* guards stop and done */
    bool stop;
    bool done;
    bool abandoned; /* console_stop gave up waiting: the thread may still use the mutex */
};

static bool console_op(plan_op op)
{
    return op == OP_DESK || op == OP_SET_CONTEXT || op == OP_CLEAR_CONTEXT || op == OP_SLEEP ||
           op == OP_SNAPSHOT || op == OP_LIST;
}

static bool console_flag(console *c, const bool *flag)
{
    pthread_mutex_lock(&c->mutex);
    bool value = *flag;
    pthread_mutex_unlock(&c->mutex);
    return value;
}

/*
 * Runs the console lines of `batch` on the runtime of `a` (with its
 * bindings); with `session_id`, only the lines for every session or for
 * that one ("session" key, --mcp-http).
 */
static void console_run(app *a, rcip_binding *const *bindings, long ttl_ms, const plan *batch,
                        const char *session_id)
{
    /* A runner of its own: the batch, the desk's app and bindings. */
    runner r;
    memset(&r, 0, sizeof r);
    r.app = a;
    memcpy(r.bindings, bindings, sizeof r.bindings);
    r.ttl_ms = ttl_ms;
    r.plan = batch;
    size_t ran = 0;
    for (size_t i = 0; i < batch->count; i++) {
        const plan_step *s = &batch->steps[i];
        if (session_id && s->session && strcmp(s->session, session_id) != 0) {
            continue;
        }
        if (console_op(s->op)) {
            run_step(&r, i);
            ran++;
        } else {
            host_log("dispatcher", "console: line %zu: %s is the agent's to do (over MCP): skipped",
                     s->line, plan_op_name(s->op));
        }
    }
    host_log("dispatcher", "console%s%s: %zu step(s) done, %zu check(s) differed",
             session_id ? ", session " : "", session_id ? session_id : "", ran, r.mismatches);
    rcip_snapshot_free(r.last_snapshot);
    free(r.mismatch_steps);
}

static void *console_main(void *arg)
{
    console *c = arg;
    for (;;) {
        plan batch;
        char error[512];
        /* Blocks in fopen until the dispatcher opens the FIFO, then reads
         * until the dispatcher closes it. */
        bool loaded = plan_load(c->path, &batch, error, sizeof error);
        if (console_flag(c, &c->stop)) {
            if (loaded) {
                plan_free(&batch);
            }
            break;
        }
        if (!loaded) {
            host_log("dispatcher", "console: %s", error);
            continue;
        }
        if (c->run_batch) {
            c->run_batch(c, &batch);
        } else {
            console_run(c->desk_runner->app, c->desk_runner->bindings, c->desk_runner->ttl_ms, &batch, NULL);
        }
        plan_free(&batch);
    }
    pthread_mutex_lock(&c->mutex);
    c->done = true;
    pthread_mutex_unlock(&c->mutex);
    return NULL;
}

/* Stops the console thread, which may be waiting in fopen for a writer. */
static void console_stop(console *c)
{
    if (!c->started) {
        return;
    }
    pthread_mutex_lock(&c->mutex);
    c->stop = true;
    pthread_mutex_unlock(&c->mutex);
    /* Play the writer: a non-blocking open for writing succeeds only while
     * the thread has the FIFO open for reading (else ENXIO: it is running a
     * batch, and will wait in fopen soon). Closing it at once is its EOF. */
    /* Bounded: a FIFO removed (or replaced) meanwhile can never wake the
     * thread; after two seconds it is left behind, detached. */
    for (int tries = 0; !console_flag(c, &c->done); tries++) {
        if (tries == 200) {
            host_log("dispatcher", "console: %s never opened for writing again: not waited for", c->path);
            pthread_detach(c->thread);
            c->started = false;
            c->abandoned = true;
            return;
        }
        int fd = open(c->path, O_WRONLY | O_NONBLOCK);
        if (fd >= 0) {
            close(fd);
        }
        sleep_ms(10);
    }
    pthread_join(c->thread, NULL);
}

/*
 * Serves the desk to one MCP client over standard input and output until
 * the client closes standard input. The session uses only the client
 * surface (and, with "confirmation": "elicit", resolves confirmations with
 * the MCP user's answer); the dialog keeps holding confirmations for the
 * dispatcher, who is never bypassed otherwise.
 */
static int serve_mcp(const rcip_runtime *runtime, const runner *desk_runner,
                     const char *options, const char *control_path)
{
    rcip_mcp_session *session = NULL;
    /* on_message NULL: rcip writes each message to stdout, one per line. */
    if (!rcip_ok(rcip_mcp_session_new(runtime, options, NULL, NULL, NULL, &session),
                 "rcip_mcp_session_new")) {
        return 2;
    }
    console c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mutex, NULL);
    c.path = control_path;
    c.desk_runner = desk_runner;
    if (control_path) {
        c.started = pthread_create(&c.thread, NULL, console_main, &c) == 0;
        if (!c.started) {
            fprintf(stderr, "dispatch_desk: cannot start the console thread\n");
        }
    }
    host_log("desk", "serving over MCP on standard input and output (options %s)%s%s",
             options ? options : "{}", control_path ? "; dispatcher console: " : "",
             control_path ? control_path : "");
    rcip_result rc = rcip_mcp_session_serve_stdio(session);
    host_log("desk", "the MCP client closed standard input");
    console_stop(&c);
    rcip_mcp_session_free(session);
    if (!c.abandoned) {
        pthread_mutex_destroy(&c.mutex);
    }
    return rcip_ok(rc, "rcip_mcp_session_serve_stdio") ? 0 : 1;
}

/* ======================================================================
 * 7b. MCP over Streamable HTTP (--mcp-http): a desk runtime per session
 * ====================================================================== */

/*
 * One MCP session: a runtime of its own over the one desk (its own
 * bindings, policy and dialog, context, confirmations and events), built
 * by the server's factory. The policy, dialog, observer and each binding
 * context hold a reference on it, and so does the server until the
 * session ends (http_session_ended): it is freed with the last one.
 */
typedef struct http_session {
    app a; /* first: the callbacks' user data is the session */
    rcip_binding *bindings[CAPABILITY_COUNT];
    char *id;
    long refs; /* under refs_mutex */
    struct http_desk *server;
    struct http_session *next; /* the live sessions, under server->mutex */
} http_session;

typedef struct http_desk {
    rcip_catalog *catalog;
    desk *desk;
    long ttl_ms;
    const char *context_map_text; /* clientInfo.name -> context; "*" for any */
    json_value *context_map;
    pthread_mutex_t mutex;
    http_session *sessions;
    rcip_mcp_server *server; /* set once created, before any session */
} http_desk;

static pthread_mutex_t refs_mutex = PTHREAD_MUTEX_INITIALIZER;

static void http_session_retain(void *user_data)
{
    http_session *s = user_data;
    pthread_mutex_lock(&refs_mutex);
    s->refs++;
    pthread_mutex_unlock(&refs_mutex);
}

/* rcip_user_data_free_callback of every registration on the session. */
static void http_session_release(void *user_data)
{
    http_session *s = user_data;
    pthread_mutex_lock(&refs_mutex);
    bool last = --s->refs == 0;
    pthread_mutex_unlock(&refs_mutex);
    if (!last) {
        return;
    }
    for (size_t i = 0; i < CAPABILITY_COUNT; i++) {
        rcip_binding_free(s->bindings[i]);
    }
    for (size_t i = 0; i < s->a.closed_count; i++) {
        free(s->a.closed[i].confirmation_id);
        free(s->a.closed[i].reason);
    }
    free(s->a.closed);
    pthread_cond_destroy(&s->a.cond);
    pthread_mutex_destroy(&s->a.mutex);
    free(s->id);
    free(s);
}

static void http_binding_context_free(void *user_data)
{
    binding_context *ctx = user_data;
    http_session_release(ctx->app); /* the app is the session's first member */
    free(ctx);
}

/* The session ended (DELETE, idle, shutdown): its runtime is closed. */
static void http_session_ended(void *user_data)
{
    http_session *s = user_data;
    http_desk *h = s->server;
    pthread_mutex_lock(&h->mutex);
    for (http_session **p = &h->sessions; *p; p = &(*p)->next) {
        if (*p == s) {
            *p = s->next;
            break;
        }
    }
    pthread_mutex_unlock(&h->mutex);
    host_log("desk", "MCP session %s ended: its runtime is closed", s->id);
    http_session_release(s);
}

/* The context the --context-map gives a client, as JSON text (malloc'd), or NULL. */
static char *context_for(const http_desk *h, const char *client_name)
{
    if (!h->context_map) {
        return NULL;
    }
    const json_value *c = client_name ? json_get(h->context_map, client_name) : NULL;
    if (!c) {
        c = json_get(h->context_map, "*");
    }
    if (!c) {
        return NULL;
    }
    char *text = xcalloc(1, c->src_len + 1);
    memcpy(text, h->context_map_text + c->src_offset, c->src_len);
    return text;
}

/* rcip_mcp_session_factory_callback: on a library worker thread. */
static int32_t desk_factory(void *user_data, rcip_mcp_session_setup *setup)
{
    http_desk *h = user_data;
    http_session *s = xcalloc(1, sizeof *s);
    s->refs = 1;
    s->server = h;
    s->id = xstrdup(rcip_mcp_session_setup_session_id(setup));
    pthread_mutex_init(&s->a.mutex, NULL);
    pthread_cond_init(&s->a.cond, NULL);
    s->a.desk = h->desk;
    s->a.dialog_used = true; /* the dispatcher holds every confirmation */
    s->a.detach_workers = true;
    rcip_runtime *runtime = NULL;
    if (!desk_runtime_new(h->catalog, h->ttl_ms, s, http_session_release, http_session_retain, &runtime)) {
        http_session_release(s);
        return 1;
    }
    s->a.host = rcip_runtime_host(runtime);
    s->a.client = rcip_runtime_client(runtime);
    size_t bound = 0;
    bool ok = desk_bind_all(&s->a, s->bindings, http_binding_context_free, http_session_retain, &bound);
    const char *client = rcip_mcp_session_setup_client_name(setup);
    char *context = ok ? context_for(h, client) : NULL;
    if (context) {
        ok = rcip_ok(rcip_host_set_context(s->a.host, context), "rcip_host_set_context");
    }
    /* The views stay valid while the session lives: accept consumes the runtime. */
    if (ok) {
        http_session_retain(s); /* the server's reference, until http_session_ended */
        ok = rcip_ok(rcip_mcp_session_setup_accept(setup, runtime, s, http_session_ended),
                     "rcip_mcp_session_setup_accept");
        if (!ok) {
            http_session_release(s);
        }
    } else {
        rcip_runtime_free(runtime);
    }
    if (ok) {
        pthread_mutex_lock(&h->mutex);
        s->next = h->sessions;
        h->sessions = s;
        pthread_mutex_unlock(&h->mutex);
        host_log("desk", "MCP session %s for %s: a desk runtime of its own (%zu capabilities bound%s%s)",
                 s->id, client ? client : "an unnamed client", bound, context ? ", context " : "",
                 context ? context : "");
    }
    free(context);
    http_session_release(s); /* the factory's own reference */
    return ok ? 0 : 1;
}

/* The console over HTTP: each batch runs on every live session (or the one a line names). */
static void http_console_batch(console *c, const plan *batch)
{
    http_desk *h = c->batch_data;
    size_t n = 0, cap = 0;
    http_session **live = NULL;
    pthread_mutex_lock(&h->mutex);
    for (http_session *s = h->sessions; s; s = s->next) {
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            live = xrealloc(live, cap * sizeof *live);
        }
        http_session_retain(s);
        live[n++] = s;
    }
    pthread_mutex_unlock(&h->mutex);
    if (n == 0) {
        host_log("dispatcher", "console: no live MCP session: %zu line(s) not run", batch->count);
    }
    for (size_t i = 0; i < n; i++) {
        /* A handle on the session's runtime keeps its memory (and so the
         * views the session's app holds) valid while the lines run, even if
         * the session ends meanwhile (its calls then answer CLOSED). */
        rcip_mcp_server_session *handle = NULL;
        if (rcip_mcp_server_session_find(h->server, live[i]->id, &handle) == RCIP_RESULT_OK) {
            console_run(&live[i]->a, live[i]->bindings, h->ttl_ms, batch, live[i]->id);
            rcip_mcp_server_session_free(handle);
        }
        http_session_release(live[i]);
    }
    free(live);
}

/* The access log: one JSON line per answered HTTP request on stdout (the
 * server's log thread calls it; stdout's lock keeps lines whole). */
static void print_access(void *user_data, const char *record_json)
{
    (void)user_data;
    printf("%s\n", record_json);
    fflush(stdout);
}

/*
 * Serves the desk over MCP Streamable HTTP on `address` until SIGINT or
 * SIGTERM (or `serve_seconds`, when positive): one desk runtime per MCP
 * session, all over the one desk. Prints the URL on standard output.
 */
static int serve_mcp_http(rcip_catalog *catalog, desk *d, long ttl_ms, const char *address,
                          const char *options, const char *context_map, long serve_seconds,
                          const char *control_path, long drain_ms, bool access_log)
{
    http_desk h;
    memset(&h, 0, sizeof h);
    h.catalog = catalog;
    h.desk = d;
    h.ttl_ms = ttl_ms;
    pthread_mutex_init(&h.mutex, NULL);
    if (context_map) {
        json_error err;
        h.context_map_text = context_map;
        h.context_map = json_parse(context_map, strlen(context_map), &err);
        if (!h.context_map || h.context_map->type != JSON_OBJECT) {
            fprintf(stderr, "dispatch_desk: --context-map must be a JSON object of client name to context\n");
            json_free(h.context_map);
            pthread_mutex_destroy(&h.mutex);
            return 2;
        }
    }
    /* Signals are taken by sigtimedwait below: block them before any thread starts. */
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGINT);
    sigaddset(&stop_signals, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop_signals, NULL);

    int status = 2;
    rcip_mcp_server *server = NULL;
    char *url = NULL;
    console c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mutex, NULL);
    if (!rcip_ok(rcip_mcp_server_new(catalog, address, options, desk_factory, &h, NULL, &server),
                 "rcip_mcp_server_new") ||
        !(h.server = server) ||
        !rcip_ok(rcip_mcp_server_url(server, &url), "rcip_mcp_server_url") ||
        (access_log &&
         !rcip_ok(rcip_mcp_server_set_access_log(server, print_access, NULL, NULL), "rcip_mcp_server_set_access_log")) ||
        !rcip_ok(rcip_mcp_server_start(server), "rcip_mcp_server_start")) {
        goto out;
    }
    if (control_path) {
        c.path = control_path;
        c.run_batch = http_console_batch;
        c.batch_data = &h;
        c.started = pthread_create(&c.thread, NULL, console_main, &c) == 0;
    }
    printf("rcip: serving MCP on %s\n", url);
    fflush(stdout);
    host_log("desk", "serving over MCP Streamable HTTP on %s (options %s)%s%s", url, options ? options : "{}",
             control_path ? "; dispatcher console: " : "", control_path ? control_path : "");
    int64_t deadline = serve_seconds > 0 ? now_ms() + serve_seconds * 1000 : 0;
    bool drain = false;
    for (;;) {
        struct timespec wait = {0, 100 * 1000 * 1000};
        int sig = sigtimedwait(&stop_signals, NULL, &wait);
        if (sig == SIGTERM) {
            /* An orchestrator's stop: readiness fails, new work goes
             * elsewhere, calls in flight get --drain-ms to finish. */
            host_log("desk", "SIGTERM: draining for up to %ld ms, then shutting down", drain_ms);
            drain = true;
            break;
        }
        if (sig == SIGINT) {
            host_log("desk", "signal %d: shutting down", sig);
            break;
        }
        if (deadline && now_ms() >= deadline) {
            host_log("desk", "--serve-seconds %ld elapsed: shutting down", serve_seconds);
            break;
        }
    }
    console_stop(&c);
    if (drain) {
        rcip_ok(rcip_mcp_server_drain(server, (uint64_t)drain_ms), "rcip_mcp_server_drain");
    } else {
        rcip_ok(rcip_mcp_server_shutdown(server, 5000), "rcip_mcp_server_shutdown");
    }
    status = 0;
out:
    rcip_mcp_server_free(server); /* every session ended: their runtimes are closed */
    rcip_string_free(url);
    /* Detached archive workers use the desk: wait for them. */
    pthread_mutex_lock(&detached_mutex);
    while (detached_running > 0) {
        pthread_cond_wait(&detached_cond, &detached_mutex);
    }
    pthread_mutex_unlock(&detached_mutex);
    json_free(h.context_map);
    if (!c.abandoned) {
        pthread_mutex_destroy(&c.mutex);
    }
    pthread_mutex_destroy(&h.mutex);
    return status;
}

/* ======================================================================
 * 8. main
 * ====================================================================== */

static char *read_file(const char *path, char *error, size_t error_size)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(error, error_size, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    sbuf sb;
    sb_init(&sb);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        sb_putn(&sb, chunk, n);
    }
    bool failed = ferror(f) != 0;
    fclose(f);
    if (failed) {
        snprintf(error, error_size, "%s: read error", path);
        sb_free(&sb);
        return NULL;
    }
    return sb_take(&sb);
}

static int usage(const char *program, int status)
{
    fprintf(status ? stderr : stdout,
            "usage: %s [--json] [--ttl-ms N] [--catalog FILE] [--plan FILE]\n"
            "       %s --mcp [--mcp-elicit | --mcp-options JSON] [--control FIFO] [--json]\n"
            "                [--ttl-ms N] [--catalog FILE]\n"
            "       %s --mcp-http ADDR [--mcp-elicit | --mcp-options JSON] [--context-map JSON]\n"
            "                [--serve-seconds N] [--drain-ms N] [--access-log] [--control FIFO] [--json]\n"
            "                [--ttl-ms N]\n"
            "                [--catalog FILE]\n"
            "  Runs an agent plan against the dispatch desk and checks every outcome;\n"
            "  with --mcp, serves the desk to an MCP client on stdin/stdout instead.\n"
            "  --catalog  RcipApplicationDefinition JSON (default "
            "examples-c/dispatch/catalog.json)\n"
            "  --plan     JSON Lines plan, see README.md, \"Plan files\" (default "
            "examples-c/dispatch/plan.jsonl)\n"
            "  --ttl-ms   confirmation lifetime in ms (default %d)\n"
            "  --json     print the transcript as JSON lines\n"
            "  --mcp          serve over MCP (stdio); the transcript goes to stderr\n"
            "  --mcp-elicit   let the MCP client's user approve confirmations (elicitation)\n"
            "  --mcp-options  the MCP session's options JSON (docs/MCP.md; with --mcp-http\n"
            "                 also the server's options), or @FILE to read them from FILE\n"
            "  --mcp-http     serve over MCP Streamable HTTP on ADDR (e.g. 127.0.0.1:8080;\n"
            "                 port 0 picks one): one desk runtime per MCP session; prints\n"
            "                 \"rcip: serving MCP on URL\" on stdout; stops on SIGINT/SIGTERM\n"
            "  --context-map  with --mcp-http: {\"<clientInfo.name>\" or \"*\": context} for new sessions\n"
            "  --serve-seconds with --mcp-http: shut down after N seconds\n"
            "  --drain-ms     with --mcp-http: on SIGTERM, let calls in flight finish for up to\n"
            "                 N ms (default 10000) while new work is refused, then stop\n"
            "  --access-log   with --mcp-http: one JSON line per answered HTTP request on stdout\n"
            "                 (after the URL line)\n"
            "  --control      a FIFO: batches of plan lines (desk, set_context, ...) the\n"
            "                 dispatcher runs while serving (default TTL with --mcp: %d ms)\n"
            "Exit status: 0 all outcomes as expected (--mcp: the client hung up), 1 some\n"
            "differed, 2 unusable input.\n",
            program, program, program, DEFAULT_TTL_MS, MCP_TTL_MS);
    return status;
}

/* Prints every catalog problem (rcip_catalog_check) after a failed load. */
static void explain_catalog(const char *path, const char *text)
{
    char *report = NULL;
    if (!rcip_ok(rcip_catalog_check(text, &report), "rcip_catalog_check")) {
        return;
    }
    json_value *r = json_parse(report, strlen(report), NULL);
    const json_value *problems = json_get(r, "problems");
    for (size_t i = 0; problems && i < problems->count; i++) {
        const json_value *p = json_at(problems, i);
        fprintf(stderr, "  %s: %s: %s (%s)\n", path, json_get_str(p, "pointer"),
                json_get_str(p, "message"), json_get_str(p, "rule"));
    }
    json_free(r);
    rcip_string_free(report);
}

int main(int argc, char **argv)
{
    const char *catalog_path = "examples-c/dispatch/catalog.json";
    const char *plan_path = "examples-c/dispatch/plan.jsonl";
    bool plan_given = false, ttl_given = false, mcp = false;
    const char *mcp_options = NULL, *control_path = NULL;
    const char *http_address = NULL, *context_map = NULL;
    long serve_seconds = 0;
    long drain_ms = 10000;
    bool access_log = false;
    char *mcp_options_file = NULL;
    long ttl_ms = DEFAULT_TTL_MS;
    out.stream = stdout;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            out.json = true;
        } else if (strcmp(argv[i], "--catalog") == 0 && i + 1 < argc) {
            catalog_path = argv[++i];
        } else if (strcmp(argv[i], "--plan") == 0 && i + 1 < argc) {
            plan_path = argv[++i];
            plan_given = true;
        } else if (strcmp(argv[i], "--mcp") == 0) {
            mcp = true;
        } else if (strcmp(argv[i], "--mcp-http") == 0 && i + 1 < argc) {
            mcp = true;
            http_address = argv[++i];
        } else if (strcmp(argv[i], "--context-map") == 0 && i + 1 < argc) {
            context_map = argv[++i];
        } else if (strcmp(argv[i], "--serve-seconds") == 0 && i + 1 < argc) {
            char *end;
            serve_seconds = strtol(argv[++i], &end, 10);
            if (*end || serve_seconds < 1) {
                fprintf(stderr, "dispatch_desk: --serve-seconds takes a positive number of seconds\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--access-log") == 0) {
            access_log = true;
        } else if (strcmp(argv[i], "--drain-ms") == 0 && i + 1 < argc) {
            char *end;
            drain_ms = strtol(argv[++i], &end, 10);
            if (*end || drain_ms < 0 || drain_ms > 3600000) {
                fprintf(stderr, "dispatch_desk: --drain-ms takes 0 to 3600000\n");
                return 2;
            }
        } else if ((strcmp(argv[i], "--mcp-elicit") == 0 || strcmp(argv[i], "--mcp-options") == 0) && mcp_options) {
            fprintf(stderr, "dispatch_desk: --mcp-elicit and --mcp-options do not combine (give --mcp-options "
                            "'{\"confirmation\": \"elicit\", ...}' with every option)\n");
            return 2;
        } else if (strcmp(argv[i], "--mcp-elicit") == 0) {
            mcp = true;
            mcp_options = "{\"confirmation\": \"elicit\"}";
        } else if (strcmp(argv[i], "--mcp-options") == 0 && i + 1 < argc) {
            mcp = true;
            mcp_options = argv[++i];
            if (mcp_options[0] == '@') {
                /* The options from a file (a secret-free place for them). */
                char error[512];
                mcp_options_file = read_file(mcp_options + 1, error, sizeof error);
                if (!mcp_options_file) {
                    fprintf(stderr, "dispatch_desk: --mcp-options %s\n", error);
                    return 2;
                }
                mcp_options = mcp_options_file;
            }
        } else if (strcmp(argv[i], "--control") == 0 && i + 1 < argc) {
            control_path = argv[++i];
        } else if (strcmp(argv[i], "--ttl-ms") == 0 && i + 1 < argc) {
            ttl_given = true;
            char *end;
            ttl_ms = strtol(argv[++i], &end, 10);
            if (*end || ttl_ms < 1 || ttl_ms > 3600000) {
                fprintf(stderr, "dispatch_desk: --ttl-ms takes 1 to 3600000\n");
                return 2;
            }
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            return usage(argv[0], 0);
        } else {
            return usage(argv[0], 2);
        }
    }
    if (mcp) {
        /* Standard output belongs to the protocol now (over HTTP: the URL only). */
        out.stream = stderr;
        signal(SIGPIPE, SIG_IGN); /* a client that hangs up is not a crash */
        if (!ttl_given) {
            ttl_ms = MCP_TTL_MS;
        }
        struct stat st;
        if (plan_given) {
            fprintf(stderr, "dispatch_desk: --plan and --mcp exclude each other (the agent is the MCP client)\n");
            return 2;
        }
        if (control_path && (stat(control_path, &st) != 0 || !S_ISFIFO(st.st_mode))) {
            fprintf(stderr, "dispatch_desk: --control %s: not a FIFO (create it with mkfifo)\n",
                    control_path);
            return 2;
        }
    } else if (control_path) {
        fprintf(stderr, "dispatch_desk: --control needs --mcp\n");
        return 2;
    }
    if ((context_map || serve_seconds) && !http_address) {
        fprintf(stderr, "dispatch_desk: --context-map and --serve-seconds need --mcp-http\n");
        return 2;
    }

    /* The header and the library must agree. */
    if (rcip_abi_version() != RCIP_ABI_VERSION) {
        fprintf(stderr, "dispatch_desk: built against rcip ABI %d, running with %u\n",
                RCIP_ABI_VERSION, rcip_abi_version());
        return 2;
    }

    /* Read the whole plan first: a bad line stops us before anything runs. */
    char error[512];
    plan agent_plan = {NULL, 0};
    if (!mcp && !plan_load(plan_path, &agent_plan, error, sizeof error)) {
        fprintf(stderr, "dispatch_desk: %s\n", error);
        return 2;
    }
    char *catalog_text = read_file(catalog_path, error, sizeof error);
    if (!catalog_text) {
        fprintf(stderr, "dispatch_desk: %s\n", error);
        plan_free(&agent_plan);
        return 2;
    }

    int status = 2;
    rcip_catalog *catalog = NULL;
    rcip_runtime *runtime = NULL;
    rcip_subscription *subscription = NULL;
    runner r;
    memset(&r, 0, sizeof r);
    app a;
    memset(&a, 0, sizeof a);
    pthread_mutex_init(&a.mutex, NULL);
    pthread_cond_init(&a.cond, NULL);
    a.dialog_used = true;

    /* 1. The catalog: checked and compiled once; immutable and shareable. */
    if (!rcip_ok(rcip_catalog_new(catalog_text, &catalog), "rcip_catalog_new")) {
        explain_catalog(catalog_path, catalog_text);
        goto done;
    }
    a.desk = desk_new();
    if (!a.desk) {
        fprintf(stderr, "dispatch_desk: out of memory\n");
        goto done;
    }
    if (http_address) {
        /* 2'. Or serve over HTTP: each MCP session builds its own runtime. */
        status = serve_mcp_http(catalog, a.desk, ttl_ms, http_address, mcp_options, context_map,
                                serve_seconds, control_path, drain_ms, access_log);
        goto done;
    }

    /* 2. The runtime: a builder, its settings, then build (which consumes
     * the builder, on success and failure alike). The policy, dialog and
     * observer share `a`, which outlives the runtime: no user_data_free. */
    if (!desk_runtime_new(catalog, ttl_ms, &a, NULL, NULL, &runtime)) {
        goto done;
    }
    /* The runtime holds its own catalog reference: drop ours now. */
    rcip_catalog_free(catalog);
    catalog = NULL;
    a.host = rcip_runtime_host(runtime);     /* borrowed views, never freed */
    a.client = rcip_runtime_client(runtime);

    /* 3. Bind the desk's handlers to the catalog's capabilities. */
    size_t bound = 0;
    if (!desk_bind_all(&a, r.bindings, binding_context_free, NULL, &bound)) {
        goto done;
    }
    /* 4. Watch snapshot revisions (after binding: binding refreshes too). */
    if (!rcip_ok(rcip_client_subscribe(a.client, on_revision, NULL, NULL, &subscription),
                 "rcip_client_subscribe")) {
        goto done;
    }

    r.app = &a;
    r.ttl_ms = ttl_ms;
    if (mcp) {
        /* 5'. Or serve the desk to an MCP client until it hangs up. */
        status = serve_mcp(runtime, &r, mcp_options, control_path);
        goto done;
    }

    /* 5. Run the plan. */
    r.plan = &agent_plan;
    r.outcomes = xcalloc(agent_plan.count, sizeof *r.outcomes);
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"start\",\"rcip\":\"%s\",\"abi\":%u,\"catalog\":",
                  rcip_version(), rcip_abi_version());
        sb_json_str(&sb, catalog_path);
        sb_puts(&sb, ",\"plan\":");
        sb_json_str(&sb, plan_path);
        sb_printf(&sb, ",\"steps\":%zu,\"bound\":%zu,\"confirmationTtlMs\":%ld}", agent_plan.count,
                  bound, ttl_ms);
        emit(&sb);
    } else {
        say("rcip %s: dispatch desk with %d visits and %d technicians", rcip_version(),
            DESK_VISITS, DESK_TECHNICIANS);
        say("catalog %s (%zu capabilities bound), plan %s (%zu steps), confirmation TTL %ld ms",
            catalog_path, bound, plan_path, agent_plan.count, ttl_ms);
    }
    for (size_t i = 0; i < agent_plan.count; i++) {
        run_step(&r, i);
    }

    /* 6. Summary, with the runtime's own counters. */
    char *stats = NULL;
    if (!rcip_ok(rcip_runtime_stats(runtime, &stats), "rcip_runtime_stats")) {
        stats = NULL;
    }
    if (out.json) {
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"type\":\"summary\",\"steps\":%zu,\"mismatches\":%zu,\"mismatchedSteps\":[",
                  agent_plan.count, r.mismatches);
        for (size_t i = 0; i < r.mismatches; i++) {
            if (i) {
                sb_putc(&sb, ',');
            }
            sb_json_str(&sb, agent_plan.steps[r.mismatch_steps[i]].name);
        }
        sb_printf(&sb, "],\"stats\":%s}", stats ? stats : "null");
        emit(&sb);
    } else {
        say("%s", "");
        say("runtime stats: %s", stats ? stats : "(unavailable)");
        if (r.mismatches == 0) {
            say("all %zu steps went as the plan expected", agent_plan.count);
        } else {
            say("%zu check(s) differed from the plan:", r.mismatches);
            for (size_t i = 0; i < r.mismatches; i++) {
                const plan_step *s = &agent_plan.steps[r.mismatch_steps[i]];
                say("  line %zu: %s", s->line, s->name);
            }
        }
    }
    rcip_string_free(stats);
    status = r.mismatches ? 1 : 0;

done:
    /* Teardown: stop listening, let worker threads finish (they own
     * completion handles), free the runtime (pending work gets its outcome
     * now; binding and subscription user data is released), then free the
     * handles we still hold: they stay valid after the runtime is gone. */
    rcip_subscription_free(subscription);
    pthread_mutex_lock(&a.mutex);
    size_t workers = a.worker_count;
    pthread_mutex_unlock(&a.mutex);
    for (size_t i = 0; i < workers; i++) {
        pthread_join(a.workers[i], NULL);
    }
    rcip_runtime_free(runtime);
    for (size_t i = 0; i < CAPABILITY_COUNT; i++) {
        rcip_binding_free(r.bindings[i]);
    }
    rcip_snapshot_free(r.last_snapshot);
    rcip_catalog_free(catalog);
    for (size_t i = 0; r.outcomes && i < agent_plan.count; i++) {
        free(r.outcomes[i]);
    }
    free(r.outcomes);
    free(r.mismatch_steps);
    for (size_t i = 0; i < a.closed_count; i++) {
        free(a.closed[i].confirmation_id);
        free(a.closed[i].reason);
    }
    free(a.closed);
    pthread_cond_destroy(&a.cond);
    pthread_mutex_destroy(&a.mutex);
    desk_free(a.desk);
    free(catalog_text);
    free(mcp_options_file);
    plan_free(&agent_plan);
    return status;
}
