/*
 * plan.c: reads and checks an agent plan (see plan.h and the README, "Plan files").
 *
 * Every line is checked before anything runs, so a typo in line 30 is
 * reported before line 1 touches the desk: unknown ops, unknown keys,
 * wrong types, misspelt statuses or error codes and dangling `of`
 * references are all "PATH:LINE: message" errors.
 */
#define _POSIX_C_SOURCE 200809L

#include "plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

typedef struct loader {
    const char *path;
    size_t line;
    char *error;
    size_t error_size;
    bool failed;
} loader;

static bool fail(loader *l, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static bool fail(loader *l, const char *format, ...)
{
    if (l->failed) {
        return false;
    }
    l->failed = true;
    char message[384];
    va_list args;
    va_start(args, format);
    vsnprintf(message, sizeof message, format, args);
    va_end(args);
    snprintf(l->error, l->error_size, "%s:%zu: %s", l->path, l->line, message);
    return false;
}

static const char *const op_names[] = {
    "snapshot", "list", "set_context", "clear_context", "desk",
    "invoke", "resolve", "wait_expiry", "preflight", "sleep",
};

const char *plan_op_name(plan_op op)
{
    return op_names[op];
}

/* Keys each op accepts besides `step`, `op` and `note`. */
static const char *const op_keys[][8] = {
    [OP_SNAPSHOT] = {"expect", NULL},
    [OP_LIST] = {"filter", "expect", NULL},
    [OP_SET_CONTEXT] = {"context", "expect", NULL},
    [OP_CLEAR_CONTEXT] = {"expect", NULL},
    [OP_DESK] = {"readOnly", "technicianId", "onShift", "focusVisitId", NULL},
    [OP_INVOKE] = {"capabilityId", "input", "inputRaw", "invocationId", "cancelAfterMs", "confirm",
                   "expect", NULL},
    [OP_RESOLVE] = {"of", "approve", "expect", NULL},
    [OP_WAIT_EXPIRY] = {"of", "timeoutMs", NULL},
    [OP_PREFLIGHT] = {"proposals", "expect", NULL},
    [OP_SLEEP] = {"ms", NULL},
};

static const char *const outcome_statuses[] = {
    "succeeded", "failed", "denied", "confirmation_required", NULL,
};

static const char *const preflight_statuses[] = {
    "ready", "confirmation_required", "blocked", NULL,
};

/* The RCIP error codes (PIPELINE.md sections 4 to 6). */
static const char *const error_codes[] = {
    "INVOCATION_ALREADY_ACTIVE", "INPUT_INVALID", "CAPABILITY_NOT_FOUND",
    "CAPABILITY_UNBOUND", "CAPABILITY_UNAVAILABLE", "POLICY_EVALUATION_FAILED",
    "POLICY_DENIED", "EXECUTION_ABORTED", "EXECUTION_FAILED", "OUTPUT_INVALID",
    "CONFIRMATION_DECLINED", "CONFIRMATION_EXPIRED", "CONFIRMATION_NOT_FOUND",
    "PREFLIGHT_STALE", NULL,
};

/* The rcip_result names without their RCIP_RESULT_ prefix (checked against
 * include/rcip.h by crates/rcip-capi/tests/bindings.rs). */
static const char *const result_names[] = {
    "OK", "NULL_ARGUMENT", "INVALID_UTF8", "INVALID_JSON", "INVALID_ARGUMENT",
    "INVALID_CATALOG", "NOT_IN_CATALOG", "ALREADY_BOUND", "UNKNOWN_SCOPE",
    "PRIMARY_NOT_ACTIVE", "ALREADY_USED", "ALREADY_COMPLETED", "CLOSED",
    "PREFLIGHT_BATCH_INVALID", "WRONG_CONTEXT", "NOT_FOUND", "IO", "TIMED_OUT",
    "UNSUPPORTED", "PANIC", NULL,
};

static bool in_list(const char *value, const char *const *list)
{
    for (size_t i = 0; list[i]; i++) {
        if (strcmp(value, list[i]) == 0) {
            return true;
        }
    }
    return false;
}

static void list_text(char *buf, size_t size, const char *const *list)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; list[i] && used < size; i++) {
        int n = snprintf(buf + used, size - used, "%s%s", i ? ", " : "", list[i]);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
}

/* Refuses keys not in `allowed` (and, at the top level, step/op/note). */
static bool check_keys(loader *l, const json_value *object, const char *const *allowed,
                       bool top_level, const char *where)
{
    for (size_t i = 0; i < object->count; i++) {
        const char *key = object->members[i].key;
        if (top_level && (strcmp(key, "step") == 0 || strcmp(key, "op") == 0 ||
                          strcmp(key, "note") == 0 || strcmp(key, "session") == 0)) {
            continue;
        }
        if (strlen(key) != object->members[i].key_len || !in_list(key, allowed)) {
            char accepted[256];
            list_text(accepted, sizeof accepted, allowed);
            return fail(l, "unknown key \"%.60s\" in %s (accepted: %s%s)", key, where,
                        top_level ? "step, op, note, session, " : "", accepted);
        }
        for (size_t j = 0; j < i; j++) {
            if (strcmp(object->members[j].key, key) == 0) {
                return fail(l, "key \"%.60s\" appears twice in %s", key, where);
            }
        }
    }
    return true;
}

/* A string field usable as a C string; NULL (and no error) when absent. */
static const char *get_string(loader *l, const json_value *object, const char *key, bool required,
                              const char *where)
{
    const json_value *v = json_get(object, key);
    if (!v) {
        if (required) {
            fail(l, "%s needs \"%s\" (a string)", where, key);
        }
        return NULL;
    }
    if (v->type != JSON_STRING) {
        fail(l, "\"%s\" in %s must be a string, not %s", key, where, json_type_name(v->type));
        return NULL;
    }
    if (!json_is_c_string(v)) {
        fail(l, "\"%s\" in %s contains a NUL character", key, where);
        return NULL;
    }
    return v->string;
}

/* -1 when absent, else 0 / 1. */
static int get_bool(loader *l, const json_value *object, const char *key, bool required,
                    const char *where)
{
    const json_value *v = json_get(object, key);
    if (!v) {
        if (required) {
            fail(l, "%s needs \"%s\" (true or false)", where, key);
        }
        return -1;
    }
    if (v->type != JSON_BOOL) {
        fail(l, "\"%s\" in %s must be true or false, not %s", key, where,
             json_type_name(v->type));
        return -1;
    }
    return v->boolean ? 1 : 0;
}

/* -1 when absent, else an integer in [min, max]. */
static long get_int(loader *l, const json_value *object, const char *key, long min, long max,
                    bool required, const char *where)
{
    const json_value *v = json_get(object, key);
    if (!v) {
        if (required) {
            fail(l, "%s needs \"%s\" (an integer)", where, key);
        }
        return -1;
    }
    /* Range first, so the cast to long is defined; then "is it whole". */
    if (v->type != JSON_NUMBER || !(v->number >= (double)min && v->number <= (double)max) ||
        (double)(long)v->number != v->number) {
        fail(l, "\"%s\" in %s must be an integer from %ld to %ld", key, where, min, max);
        return -1;
    }
    return (long)v->number;
}

static bool parse_expect_outcome(loader *l, const json_value *v, plan_expect *out,
                                 const char *const *statuses, const char *where)
{
    static const char *const keys[] = {"status", "code", NULL};
    out->present = false;
    if (!v) {
        return true;
    }
    if (v->type != JSON_OBJECT) {
        return fail(l, "%s must be an object like {\"status\": \"failed\", \"code\": ...}", where);
    }
    if (!check_keys(l, v, keys, false, where)) {
        return false;
    }
    out->status = get_string(l, v, "status", true, where);
    out->code = get_string(l, v, "code", false, where);
    if (l->failed) {
        return false;
    }
    if (!in_list(out->status, statuses)) {
        char accepted[160];
        list_text(accepted, sizeof accepted, statuses);
        return fail(l, "unknown status \"%.60s\" in %s (one of: %s)", out->status, where,
                    accepted);
    }
    if (out->code && !in_list(out->code, error_codes)) {
        return fail(l, "unknown error code \"%.60s\" in %s (see the README, \"Plan files\")", out->code,
                    where);
    }
    out->present = true;
    return true;
}

static bool parse_ids(loader *l, const json_value *v, plan_ids *out, const char *where)
{
    if (!v) {
        return true;
    }
    if (v->type != JSON_ARRAY) {
        return fail(l, "%s must be an array of capability ids", where);
    }
    out->ids = xcalloc(v->count, sizeof *out->ids);
    out->count = v->count;
    out->present = true;
    for (size_t i = 0; i < v->count; i++) {
        const json_value *item = v->members[i].value;
        if (!json_is_c_string(item)) {
            return fail(l, "%s must hold strings only (item %zu)", where, i);
        }
        out->ids[i] = item->string;
    }
    return true;
}

/* Copies the source text of `value` (a JSON value inside `step->line_text`). */
static char *raw_text(const plan_step *step, const json_value *value)
{
    return xstrndup(step->line_text + value->src_offset, value->src_len);
}

/* `input` (any JSON, passed as written) or `inputRaw` (a string passed as is). */
static char *parse_input(loader *l, const plan_step *step, const json_value *object,
                         const char *where)
{
    const json_value *input = json_get(object, "input");
    const json_value *raw = json_get(object, "inputRaw");
    if (input && raw) {
        fail(l, "%s has both \"input\" and \"inputRaw\": give one", where);
        return NULL;
    }
    if (raw) {
        if (!json_is_c_string(raw)) {
            fail(l, "\"inputRaw\" in %s must be a string without NUL characters", where);
            return NULL;
        }
        return xstrdup(raw->string);
    }
    if (!input) {
        fail(l, "%s needs \"input\" (the capability input) or \"inputRaw\"", where);
        return NULL;
    }
    return raw_text(step, input);
}

static const json_value *get_expect(loader *l, const json_value *root)
{
    const json_value *e = json_get(root, "expect");
    if (e && e->type != JSON_OBJECT) {
        fail(l, "\"expect\" must be an object");
        return NULL;
    }
    return e;
}

static bool parse_expect_result(loader *l, plan_step *step, const json_value *expect)
{
    step->expect_result = get_string(l, expect, "result", false, "\"expect\"");
    if (step->expect_result && !in_list(step->expect_result, result_names)) {
        char accepted[400];
        list_text(accepted, sizeof accepted, result_names);
        return fail(l, "unknown result \"%.60s\" in \"expect\" (one of: %s)", step->expect_result,
                    accepted);
    }
    return !l->failed;
}

static bool parse_invoke(loader *l, plan_step *s, const json_value *root)
{
    static const char *const confirm_keys[] = {"approve", "expect", NULL};
    s->capability_id = get_string(l, root, "capabilityId", true, "an invoke step");
    s->invocation_id = get_string(l, root, "invocationId", false, "an invoke step");
    s->cancel_after_ms = get_int(l, root, "cancelAfterMs", 0, 60000, false, "an invoke step");
    if (l->failed) {
        return false;
    }
    s->input_text = parse_input(l, s, root, "an invoke step");
    if (!s->input_text) {
        return false;
    }
    const json_value *confirm = json_get(root, "confirm");
    if (confirm) {
        if (confirm->type != JSON_OBJECT) {
            return fail(l, "\"confirm\" must be an object like {\"approve\": true}");
        }
        if (!check_keys(l, confirm, confirm_keys, false, "\"confirm\"")) {
            return false;
        }
        int approve = get_bool(l, confirm, "approve", true, "\"confirm\"");
        if (l->failed) {
            return false;
        }
        s->has_dialog = true;
        s->dialog_approve = approve == 1;
        const json_value *e = json_get(confirm, "expect");
        if (!parse_expect_outcome(l, e, &s->dialog_expect, outcome_statuses, "\"confirm.expect\"")) {
            return false;
        }
    }
    const json_value *e = get_expect(l, root);
    if (l->failed) {
        return false;
    }
    return parse_expect_outcome(l, e, &s->expect, outcome_statuses, "\"expect\"");
}

static bool parse_preflight(loader *l, plan_step *s, const json_value *root)
{
    static const char *const proposal_keys[] = {"capabilityId", "input", "inputRaw", NULL};
    static const char *const expect_keys[] = {"result", "consistent", "outcomes", NULL};
    const json_value *list = json_get(root, "proposals");
    if (!list || list->type != JSON_ARRAY) {
        return fail(l, "a preflight step needs \"proposals\": an array of "
                       "{\"capabilityId\", \"input\"}");
    }
    if (list->count > PLAN_MAX_PROPOSALS) {
        return fail(l, "\"proposals\" lists %zu entries; at most %d", list->count,
                    PLAN_MAX_PROPOSALS);
    }
    s->proposals = xcalloc(list->count, sizeof *s->proposals);
    s->proposal_count = list->count;
    for (size_t i = 0; i < list->count; i++) {
        const json_value *p = list->members[i].value;
        char where[48];
        snprintf(where, sizeof where, "proposal %zu", i);
        if (p->type != JSON_OBJECT) {
            return fail(l, "%s must be an object", where);
        }
        if (!check_keys(l, p, proposal_keys, false, where)) {
            return false;
        }
        s->proposals[i].capability_id = get_string(l, p, "capabilityId", true, where);
        if (l->failed) {
            return false;
        }
        s->proposals[i].input_text = parse_input(l, s, p, where);
        if (!s->proposals[i].input_text) {
            return false;
        }
    }
    const json_value *e = get_expect(l, root);
    if (l->failed) {
        return false;
    }
    if (!e) {
        return true;
    }
    if (!check_keys(l, e, expect_keys, false, "\"expect\"") || !parse_expect_result(l, s, e)) {
        return false;
    }
    s->expect_consistent = get_bool(l, e, "consistent", false, "\"expect\"");
    const json_value *outcomes = json_get(e, "outcomes");
    if (outcomes) {
        if (outcomes->type != JSON_ARRAY) {
            return fail(l, "\"expect.outcomes\" must be an array of {\"status\", \"code\"?}");
        }
        s->has_expect_outcomes = true;
        s->expect_outcomes = xcalloc(outcomes->count, sizeof *s->expect_outcomes);
        s->expect_outcome_count = outcomes->count;
        for (size_t i = 0; i < outcomes->count; i++) {
            char where[48];
            snprintf(where, sizeof where, "\"expect.outcomes\" item %zu", i);
            if (!parse_expect_outcome(l, outcomes->members[i].value, &s->expect_outcomes[i],
                                      preflight_statuses, where)) {
                return false;
            }
        }
    }
    return !l->failed;
}

/* Finds the earlier invoke step named `of`. */
static bool resolve_of(loader *l, plan *p, plan_step *s)
{
    for (size_t i = 0; i < p->count; i++) {
        if (strcmp(p->steps[i].name, s->of) == 0) {
            if (p->steps[i].op != OP_INVOKE) {
                return fail(l, "\"of\": step \"%.60s\" is a %s step, not an invoke step", s->of,
                            plan_op_name(p->steps[i].op));
            }
            s->of_index = i;
            return true;
        }
    }
    return fail(l, "\"of\": no earlier step is named \"%.60s\"", s->of);
}

static bool parse_step(loader *l, plan *p, plan_step *s)
{
    char line_name[32];
    s->root = NULL;
    json_error err;
    size_t len = strlen(s->line_text);
    s->root = json_parse(s->line_text, len, &err);
    if (!s->root) {
        return fail(l, "not JSON: %s at column %zu", err.message, err.offset + 1);
    }
    const json_value *root = s->root;
    if (root->type != JSON_OBJECT) {
        return fail(l, "a step must be a JSON object, not %s", json_type_name(root->type));
    }
    const char *op = get_string(l, root, "op", true, "a step");
    if (l->failed) {
        return false;
    }
    size_t n_ops = sizeof op_names / sizeof op_names[0];
    size_t index = n_ops;
    for (size_t i = 0; i < n_ops; i++) {
        if (strcmp(op, op_names[i]) == 0) {
            index = i;
        }
    }
    if (index == n_ops) {
        char accepted[200];
        const char *names[sizeof op_names / sizeof op_names[0] + 1];
        memcpy(names, op_names, sizeof op_names);
        names[n_ops] = NULL;
        list_text(accepted, sizeof accepted, names);
        return fail(l, "unknown op \"%.60s\" (one of: %s)", op, accepted);
    }
    s->op = (plan_op)index;
    char where[40];
    snprintf(where, sizeof where, "a%s %s step", strchr("aeiou", op[0]) ? "n" : "", op);
    if (!check_keys(l, root, op_keys[s->op], true, where)) {
        return false;
    }
    const char *name = get_string(l, root, "step", false, "a step");
    s->note = get_string(l, root, "note", false, "a step");
    s->session = get_string(l, root, "session", false, "a step");
    if (l->failed) {
        return false;
    }
    if (name) {
        if (name[0] == '\0') {
            return fail(l, "\"step\" must not be empty");
        }
        for (size_t i = 0; i < p->count; i++) {
            if (strcmp(p->steps[i].name, name) == 0) {
                return fail(l, "step name \"%.60s\" is already used on line %zu", name,
                            p->steps[i].line);
            }
        }
        s->name = xstrdup(name);
    } else {
        snprintf(line_name, sizeof line_name, "line %zu", s->line);
        s->name = xstrdup(line_name);
    }
    s->cancel_after_ms = -1;
    s->timeout_ms = -1;
    s->read_only = -1;
    s->on_shift = -1;
    s->expect_consistent = -1;

    static const char *const result_only[] = {"result", NULL};
    const json_value *expect = NULL;
    switch (s->op) {
    case OP_SNAPSHOT: {
        static const char *const keys[] = {"available", NULL};
        expect = get_expect(l, root);
        if (expect && check_keys(l, expect, keys, false, "\"expect\"")) {
            parse_ids(l, json_get(expect, "available"), &s->expect_available,
                      "\"expect.available\"");
        }
        break;
    }
    case OP_LIST: {
        static const char *const keys[] = {"ids", "result", NULL};
        const json_value *filter = json_get(root, "filter");
        if (filter) {
            s->filter_text = raw_text(s, filter);
        }
        expect = get_expect(l, root);
        if (expect && check_keys(l, expect, keys, false, "\"expect\"") &&
            parse_expect_result(l, s, expect)) {
            parse_ids(l, json_get(expect, "ids"), &s->expect_ids, "\"expect.ids\"");
            if (s->expect_ids.present && s->expect_result) {
                fail(l, "\"expect\" gives both \"ids\" and \"result\": give one");
            }
        }
        break;
    }
    case OP_SET_CONTEXT: {
        const json_value *context = json_get(root, "context");
        if (!context) {
            return fail(l, "a set_context step needs \"context\": {\"activeScopeIds\": [...]}");
        }
        s->context_text = raw_text(s, context);
        expect = get_expect(l, root);
        if (expect && check_keys(l, expect, result_only, false, "\"expect\"")) {
            parse_expect_result(l, s, expect);
        }
        break;
    }
    case OP_CLEAR_CONTEXT:
        expect = get_expect(l, root);
        if (expect && check_keys(l, expect, result_only, false, "\"expect\"")) {
            parse_expect_result(l, s, expect);
        }
        break;
    case OP_DESK:
        s->read_only = get_bool(l, root, "readOnly", false, where);
        s->technician_id = get_string(l, root, "technicianId", false, where);
        s->on_shift = get_bool(l, root, "onShift", false, where);
        s->focus_visit_id = get_string(l, root, "focusVisitId", false, where);
        if (l->failed) {
            return false;
        }
        if ((s->technician_id != NULL) != (s->on_shift != -1)) {
            return fail(l, "a desk step gives \"technicianId\" and \"onShift\" together");
        }
        if (s->read_only == -1 && !s->technician_id && !s->focus_visit_id) {
            return fail(l, "a desk step changes something: \"readOnly\", "
                           "\"technicianId\" + \"onShift\", or \"focusVisitId\"");
        }
        break;
    case OP_INVOKE:
        return parse_invoke(l, s, root);
    case OP_RESOLVE: {
        s->of = get_string(l, root, "of", true, where);
        int approve = get_bool(l, root, "approve", true, where);
        if (l->failed || !resolve_of(l, p, s)) {
            return false;
        }
        s->approve = approve == 1;
        expect = get_expect(l, root);
        if (l->failed) {
            return false;
        }
        return parse_expect_outcome(l, expect, &s->expect, outcome_statuses, "\"expect\"");
    }
    case OP_WAIT_EXPIRY:
        s->of = get_string(l, root, "of", true, where);
        s->timeout_ms = get_int(l, root, "timeoutMs", 1, 600000, false, where);
        if (l->failed || !resolve_of(l, p, s)) {
            return false;
        }
        break;
    case OP_PREFLIGHT:
        return parse_preflight(l, s, root);
    case OP_SLEEP:
        s->sleep_ms = get_int(l, root, "ms", 0, 60000, true, where);
        break;
    }
    return !l->failed;
}

static void step_free(plan_step *s)
{
    free(s->name);
    free(s->input_text);
    free(s->filter_text);
    free(s->context_text);
    free(s->expect_ids.ids);
    free(s->expect_available.ids);
    for (size_t i = 0; i < s->proposal_count; i++) {
        free(s->proposals[i].input_text);
    }
    free(s->proposals);
    free(s->expect_outcomes);
    json_free(s->root);
    free(s->line_text);
}

void plan_free(plan *p)
{
    for (size_t i = 0; i < p->count; i++) {
        step_free(&p->steps[i]);
    }
    free(p->steps);
    p->steps = NULL;
    p->count = 0;
}

static bool is_blank(const char *text)
{
    for (; *text; text++) {
        if (*text != ' ' && *text != '\t' && *text != '\r' && *text != '\n') {
            return false;
        }
    }
    return true;
}

bool plan_load(const char *path, plan *out, char *error, size_t error_size)
{
    loader l = {path, 0, error, error_size, false};
    out->steps = NULL;
    out->count = 0;
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(error, error_size, "%s: cannot open: %s", path, strerror(errno));
        return false;
    }
    size_t cap = 0;
    char *buffer = NULL;
    size_t buffer_cap = 0;
    ssize_t n;
    while (!l.failed && (n = getline(&buffer, &buffer_cap, f)) >= 0) {
        l.line++;
        size_t len = (size_t)n;
        if (len > PLAN_MAX_LINE) {
            fail(&l, "line longer than %d bytes", PLAN_MAX_LINE);
            break;
        }
        if (memchr(buffer, '\0', len)) {
            fail(&l, "NUL byte in the line");
            break;
        }
        while (len > 0 && (buffer[len - 1] == '\n' || buffer[len - 1] == '\r')) {
            buffer[--len] = '\0';
        }
        if (is_blank(buffer)) {
            continue;
        }
        if (out->count == cap) {
            cap = cap ? cap * 2 : 32;
            out->steps = xrealloc(out->steps, cap * sizeof *out->steps);
        }
        plan_step *s = &out->steps[out->count];
        memset(s, 0, sizeof *s);
        s->line = l.line;
        s->line_text = xstrndup(buffer, len);
        bool ok = parse_step(&l, out, s);
        out->count++; /* counted even on failure, so plan_free frees it */
        if (!ok) {
            break;
        }
    }
    if (!l.failed && ferror(f)) {
        snprintf(error, error_size, "%s: read error: %s", path, strerror(errno));
        l.failed = true;
    }
    free(buffer);
    fclose(f);
    if (!l.failed && out->count == 0) {
        snprintf(error, error_size, "%s: the plan has no steps", path);
        l.failed = true;
    }
    if (l.failed) {
        plan_free(out);
        return false;
    }
    return true;
}
