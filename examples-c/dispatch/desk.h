/*
 * desk.h: the dispatch desk itself, an in-memory maintenance-dispatch board
 * of 24 visits and 6 technicians. It knows nothing about rcip: it is the
 * application a host exposes through capabilities.
 *
 * Every function takes the desk's own mutex for the duration of the call
 * and releases it before returning, so callers never hold it while they
 * call into rcip (rcip may call the availability checks from inside such a
 * call, on the same or another thread).
 *
 * Output texts (`char **json_out`) are new JSON texts that the caller frees
 * with free(). `reason` buffers receive a sentence for people.
 */
#ifndef DISPATCH_DESK_H
#define DISPATCH_DESK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DESK_VISITS 24
#define DESK_TECHNICIANS 6
/* Most open visits (new or assigned) one technician carries. */
#define DESK_TECH_CAPACITY 3
/* Most notes on one visit. */
#define DESK_MAX_NOTES 16
/* The desk's "today": reschedules before it are refused. */
#define DESK_TODAY "2026-01-05"

typedef struct desk desk;

/* Why a desk check or change did not go through. */
typedef enum desk_status {
    DESK_OK = 0,
    DESK_NO_VISIT,          /* no visit with that id */
    DESK_VISIT_CLOSED,      /* the visit is closed */
    DESK_NO_TECHNICIAN,     /* no technician with that id */
    DESK_TECH_OFF_SHIFT,    /* the technician is off shift */
    DESK_TECH_FULL,         /* the technician carries DESK_TECH_CAPACITY visits */
    DESK_SKILL_MISMATCH,    /* the technician lacks the visit's skill */
    DESK_BAD_DATE,          /* not a calendar date, or before DESK_TODAY */
    DESK_NOTES_FULL,        /* DESK_MAX_NOTES notes already */
    DESK_READ_ONLY,         /* the desk is read-only */
    DESK_BAD_INPUT          /* a required field is missing or of the wrong type */
} desk_status;

/* A new desk with the seeded visits and technicians; NULL when out of memory. */
desk *desk_new(void);
void desk_free(desk *d);

/* ---- state the availability checks read ------------------------------ */
bool desk_is_read_only(desk *d);
/* True when some technician is on shift and below capacity. */
bool desk_any_technician_free(desk *d);
/* When the dispatcher's open visit card shows a closed visit: true, and its id. */
bool desk_focused_visit_closed(desk *d, char *visit_id_out, size_t visit_id_size);
/* A counter that grows with every change (a binding revision source). */
uint64_t desk_changes(desk *d);

/* ---- host-side changes (the dispatcher's own actions) ---------------- */
void desk_set_read_only(desk *d, bool read_only);
desk_status desk_set_on_shift(desk *d, const char *technician_id, bool on_shift);
/* Opens a visit card (focus), or closes it with "" . */
desk_status desk_set_focus(desk *d, const char *visit_id);

/* ---- queries (capability outputs) ----------------------------------- */
/* Open visits (not closed); NULL / 0 / false filter nothing. */
char *desk_list_open(desk *d, const char *priority, const char *technician_id,
                     bool unassigned_only, int limit);
/* Visits whose site, issue or notes contain `query` (ASCII case-insensitive). */
char *desk_search(desk *d, const char *query, const char *status, int limit,
                  bool include_archive);

/* ---- checks for the policy (no change) ------------------------------ */
desk_status desk_check_open_visit(desk *d, const char *visit_id, char *reason, size_t size);
desk_status desk_check_assign(desk *d, const char *visit_id, const char *technician_id,
                              char *reason, size_t size);
desk_status desk_check_reschedule(desk *d, const char *visit_id, const char *date,
                                  const char *window, char *reason, size_t size);
/* One line describing a visit for a confirmation dialog. */
void desk_describe_visit(desk *d, const char *visit_id, char *text, size_t size);

/* ---- changes (capability handlers) ---------------------------------- */
desk_status desk_assign(desk *d, const char *visit_id, const char *technician_id, char **json_out);
desk_status desk_reschedule(desk *d, const char *visit_id, const char *date, const char *window,
                            char **json_out);
desk_status desk_add_note(desk *d, const char *visit_id, const char *text, char **json_out);
desk_status desk_close(desk *d, const char *visit_id, const char *resolution, const char *summary,
                       char **json_out);

/* A short name for a status ("VISIT_CLOSED", ...). */
const char *desk_status_name(desk_status status);

#endif /* DISPATCH_DESK_H */
