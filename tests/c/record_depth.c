/*
 * record_depth.c: rcip_record_parse and rcip_record_free on records nested
 * up to the documented 100,000 levels, on a host thread whose stack is
 * 64 KiB (issue 27, item 6). Before the fix these overflowed such a stack
 * (SIGSEGV) far below the bound: nested preflight `outcomes` and plain
 * nested arrays were read, written and freed by recursion, a frame per
 * level. Also run by `make test-asan` and `make valgrind-c`.
 *
 * Checks, on the small stack: every depth from 2 to 100,000 parses, reads
 * back whole (the output text, the innermost entry) and frees; 100,001
 * levels are refused with RCIP_RESULT_INVALID_JSON and a NULL record; a
 * record parsed on the main thread frees on the small stack.
 */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rcip.h"

#define SMALL_STACK (64 * 1024)

static int g_failures;

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                    #cond);                                                  \
            g_failures++;                                                    \
        }                                                                    \
    } while (0)

/* An outcome whose output nests `levels - 1` arrays around 1 (`levels` in
 * all with the record object). Caller frees. */
static char *nested_output(size_t levels) {
    const char *head = "{\"status\": \"succeeded\", \"output\": ";
    size_t n = levels - 1, len = strlen(head) + 2 * n + 3;
    char *s = malloc(len);
    if (!s) abort();
    char *p = s + strlen(head);
    memcpy(s, head, strlen(head));
    memset(p, '[', n);
    p += n;
    *p++ = '1';
    memset(p, ']', n);
    p += n;
    *p++ = '}';
    *p = '\0';
    return s;
}

/* A preflight report nested `entries` deep in its first entry's outcomes;
 * the innermost entry is blocked. Caller frees. */
static char *nested_outcomes(size_t entries) {
    const char *open = "{\"status\": \"ready\", \"outcomes\": [";
    const char *inner = "{\"status\": \"blocked\", \"error\": {\"code\": \"INPUT_INVALID\"}}";
    size_t len = entries * (strlen(open) + 2) + strlen(inner) + 1;
    char *s = malloc(len);
    if (!s) abort();
    char *p = s;
    for (size_t i = 0; i < entries; i++) {
        memcpy(p, open, strlen(open));
        p += strlen(open);
    }
    memcpy(p, inner, strlen(inner));
    p += strlen(inner);
    for (size_t i = 0; i < entries; i++) {
        *p++ = ']';
        *p++ = '}';
    }
    *p = '\0';
    return s;
}

static void *deep_arrays(void *arg) {
    (void)arg;
    static const size_t depths[] = {2, 9, 17, 100, 999, 1000, 1001, 20000, 100000};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        char *json = nested_output(depths[k]);
        rcip_record *rec = NULL;
        CHECK(rcip_record_parse(json, &rec) == RCIP_RESULT_OK);
        if (rec) {
            const char *out = rcip_record_output(rec);
            CHECK(out && strlen(out) == 2 * (depths[k] - 1) + 1);
            CHECK(out && out[0] == (depths[k] > 1 ? '[' : '1'));
            rcip_record_free(rec);
        }
        free(json);
    }
    char *json = nested_output(100001);
    rcip_record *rec = (rcip_record *)&rec; /* must be set to NULL */
    CHECK(rcip_record_parse(json, &rec) == RCIP_RESULT_INVALID_JSON);
    CHECK(rec == NULL);
    free(json);
    return NULL;
}

static void *deep_outcomes(void *arg) {
    (void)arg;
    static const size_t depths[] = {1, 499, 5000, 49998};
    for (size_t k = 0; k < sizeof depths / sizeof depths[0]; k++) {
        char *json = nested_outcomes(depths[k]);
        rcip_record *rec = NULL;
        CHECK(rcip_record_parse(json, &rec) == RCIP_RESULT_OK);
        const rcip_record *at = rec;
        for (size_t i = 0; at && i < depths[k]; i++) {
            CHECK(rcip_record_entry_count(at) == 1);
            at = rcip_record_entry(at, 0);
        }
        CHECK(at && rcip_record_entry_count(at) == 0);
        CHECK(at && rcip_record_status(at) && strcmp(rcip_record_status(at), "blocked") == 0);
        CHECK(at && rcip_record_error_code(at) && strcmp(rcip_record_error_code(at), "INPUT_INVALID") == 0);
        rcip_record_free(rec);
        free(json);
    }
    return NULL;
}

static void *free_only(void *arg) {
    rcip_record_free((rcip_record *)arg);
    return NULL;
}

static void on_small_stack(void *(*fn)(void *), void *arg) {
    pthread_attr_t attr;
    pthread_t t;
    CHECK(pthread_attr_init(&attr) == 0);
    CHECK(pthread_attr_setstacksize(&attr, SMALL_STACK) == 0);
    CHECK(pthread_create(&t, &attr, fn, arg) == 0);
    CHECK(pthread_join(t, NULL) == 0);
    pthread_attr_destroy(&attr);
}

int main(void) {
    on_small_stack(deep_arrays, NULL);
    on_small_stack(deep_outcomes, NULL);
    /* Parsed here, freed on the small stack. */
    char *json = nested_outcomes(49998);
    rcip_record *rec = NULL;
    CHECK(rcip_record_parse(json, &rec) == RCIP_RESULT_OK);
    free(json);
    on_small_stack(free_only, rec);
    if (g_failures) {
        fprintf(stderr, "record_depth: %d check(s) failed\n", g_failures);
        return 1;
    }
    printf("record_depth: ok\n");
    return 0;
}
