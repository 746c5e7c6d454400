/*
 * desk.c: the in-memory dispatch desk (see desk.h). Plain C, no rcip.
 */
#define _POSIX_C_SOURCE 200809L

#include "desk.h"
#include "json.h"

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct technician {
    const char *id;
    const char *name;
    const char *skills[2]; /* NULL-padded */
    bool on_shift;
} technician;

typedef struct visit {
    const char *id;
    const char *site;
    const char *issue;
    const char *skill;    /* "hvac", "plumbing" or "electrical" */
    const char *priority; /* "low", "normal" or "urgent" */
    char status[12];      /* "new", "assigned" or "closed" */
    char technician[8];   /* "" when unassigned */
    char date[11];        /* YYYY-MM-DD */
    char window[12];      /* "morning" or "afternoon" */
    char resolution[24];  /* set when closed */
    char *notes[DESK_MAX_NOTES];
    int note_count;
} visit;

typedef struct archived_visit {
    const char *id;
    const char *site;
    const char *issue;
    const char *closed_on;
} archived_visit;

struct desk {
    pthread_mutex_t mutex;
    technician technicians[DESK_TECHNICIANS];
    visit visits[DESK_VISITS];
    bool read_only;
    char focus[8]; /* the visit card the dispatcher has open, "" for none */
    uint64_t changes;
};

/* ---- seed data -------------------------------------------------------- */

static const technician seed_technicians[DESK_TECHNICIANS] = {
    {"T-01", "Ana Ruiz", {"hvac", "electrical"}, true},
    {"T-02", "Ben Okafor", {"plumbing", "hvac"}, true},
    {"T-03", "Chloe Martin", {"electrical", NULL}, true},
    {"T-04", "Dev Patel", {"plumbing", NULL}, true},
    {"T-05", "Eva Lindqvist", {"hvac", NULL}, false},
    {"T-06", "Farid Haddad", {"electrical", "plumbing"}, false},
};

typedef struct seed_visit {
    const char *id, *site, *issue, *skill, *priority, *status, *technician, *date, *window, *note;
} seed_visit;

/*
 * Loads: T-01 and T-03 carry 3 open visits (full), T-04 two, T-02 and T-05
 * one, T-06 none; T-05 and T-06 are off shift. So T-02 and T-04 are free.
 */
static const seed_visit seed_visits[DESK_VISITS] = {
    {"V-1001", "Northgate Library", "Boiler loses pressure overnight", "hvac", "normal", "assigned", "T-01", "2026-01-05", "morning", NULL},
    {"V-1002", "Juniper Dental", "Autoclave circuit breaker trips", "electrical", "urgent", "assigned", "T-03", "2026-01-05", "morning", NULL},
    {"V-1003", "Harbor Bakery", "Walk-in cooler compressor short-cycling", "hvac", "urgent", "new", "", "2026-01-05", "afternoon", "Cooler read 9 C at 07:00; stock moved to the van."},
    {"V-1004", "Elm Street Apartments 4B", "Kitchen sink leaking under the cabinet", "plumbing", "normal", "assigned", "T-04", "2026-01-05", "afternoon", NULL},
    {"V-1005", "Riverside Gym", "Shower drains slow in the locker room", "plumbing", "low", "new", "", "2026-01-06", "morning", NULL},
    {"V-1006", "Cedar Primary School", "Gym lights flicker", "electrical", "normal", "assigned", "T-03", "2026-01-06", "morning", NULL},
    {"V-1007", "Maple Clinic", "Rooftop unit gives no heat", "hvac", "urgent", "assigned", "T-01", "2026-01-05", "afternoon", NULL},
    {"V-1008", "Old Mill Lofts", "Annual boiler service", "hvac", "low", "closed", "T-05", "2026-01-02", "morning", NULL},
    {"V-1009", "Pine Hotel", "Room 214 thermostat is blank", "electrical", "normal", "new", "", "2026-01-06", "afternoon", NULL},
    {"V-1010", "Lakeside Cafe", "Grease trap backing up", "plumbing", "urgent", "assigned", "T-04", "2026-01-05", "morning", NULL},
    {"V-1011", "Orchard Offices", "Server room air conditioning alarm", "hvac", "urgent", "assigned", "T-05", "2026-01-05", "morning", "Assigned technician is off shift today."},
    {"V-1012", "Birch Daycare", "Water heater pilot keeps going out", "plumbing", "urgent", "new", "", "2026-01-05", "morning", NULL},
    {"V-1013", "Quarry Road Warehouse", "Dock door heater does not start", "hvac", "normal", "new", "", "2026-01-07", "morning", NULL},
    {"V-1014", "Willow Care Home", "Toilet running in room 3", "plumbing", "low", "closed", "T-04", "2026-01-02", "afternoon", NULL},
    {"V-1015", "Summit Bank", "Emergency lighting test failed", "electrical", "normal", "assigned", "T-01", "2026-01-06", "afternoon", NULL},
    {"V-1016", "Ash Lane Bakery", "Oven hood fan is noisy", "electrical", "low", "new", "", "2026-01-08", "morning", NULL},
    {"V-1017", "Bayview Dental", "Compressed air line leaking", "plumbing", "normal", "new", "", "2026-01-07", "afternoon", NULL},
    {"V-1018", "Granite Gym", "Sauna heater relay failed", "electrical", "normal", "assigned", "T-03", "2026-01-06", "morning", NULL},
    {"V-1019", "Hillside Library", "Radiator valve stuck", "hvac", "low", "closed", "T-01", "2026-01-03", "morning", NULL},
    {"V-1020", "Corner Grocery", "Freezer aisle drain blocked", "plumbing", "normal", "assigned", "T-02", "2026-01-05", "afternoon", NULL},
    {"V-1021", "Station Hostel", "Boiler makes a banging noise", "hvac", "normal", "new", "", "2026-01-06", "morning", NULL},
    {"V-1022", "Museum of Clocks", "Gallery outlets dead", "electrical", "urgent", "new", "", "2026-01-05", "afternoon", NULL},
    {"V-1023", "Fern Street Flats", "Leaking shower valve", "plumbing", "low", "closed", "T-02", "2026-01-02", "afternoon", NULL},
    {"V-1024", "Tannery Studios", "Heat pump defrost fault", "hvac", "normal", "new", "", "2026-01-08", "afternoon", NULL},
};

/* Last year's closed visits, searched only on request (slowly: see the handler). */
static const archived_visit archive[] = {
    {"A-0412", "Harbor Bakery", "Compressor replaced on the walk-in cooler", "2025-08-14"},
    {"A-0388", "Northgate Library", "Boiler expansion vessel recharged", "2025-06-02"},
    {"A-0301", "Maple Clinic", "Rooftop unit belt replaced", "2025-03-19"},
    {"A-0275", "Lakeside Cafe", "Grease trap pumped", "2025-02-07"},
    {"A-0190", "Station Hostel", "Boiler pump replaced", "2024-11-28"},
};

static void copy_text(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

desk *desk_new(void)
{
    desk *d = calloc(1, sizeof *d);
    if (!d) {
        return NULL;
    }
    if (pthread_mutex_init(&d->mutex, NULL) != 0) {
        free(d);
        return NULL;
    }
    memcpy(d->technicians, seed_technicians, sizeof seed_technicians);
    for (int i = 0; i < DESK_VISITS; i++) {
        const seed_visit *s = &seed_visits[i];
        visit *v = &d->visits[i];
        v->id = s->id;
        v->site = s->site;
        v->issue = s->issue;
        v->skill = s->skill;
        v->priority = s->priority;
        copy_text(v->status, sizeof v->status, s->status);
        copy_text(v->technician, sizeof v->technician, s->technician);
        copy_text(v->date, sizeof v->date, s->date);
        copy_text(v->window, sizeof v->window, s->window);
        if (strcmp(s->status, "closed") == 0) {
            copy_text(v->resolution, sizeof v->resolution, "fixed");
        }
        if (s->note) {
            v->notes[v->note_count++] = xstrdup(s->note);
        }
    }
    return d;
}

void desk_free(desk *d)
{
    if (!d) {
        return;
    }
    for (int i = 0; i < DESK_VISITS; i++) {
        for (int n = 0; n < d->visits[i].note_count; n++) {
            free(d->visits[i].notes[n]);
        }
    }
    pthread_mutex_destroy(&d->mutex);
    free(d);
}

/* ---- helpers (the caller holds the mutex) ----------------------------- */

static visit *find_visit(desk *d, const char *id)
{
    for (int i = 0; id && i < DESK_VISITS; i++) {
        if (strcmp(d->visits[i].id, id) == 0) {
            return &d->visits[i];
        }
    }
    return NULL;
}

static technician *find_technician(desk *d, const char *id)
{
    for (int i = 0; id && i < DESK_TECHNICIANS; i++) {
        if (strcmp(d->technicians[i].id, id) == 0) {
            return &d->technicians[i];
        }
    }
    return NULL;
}

static bool is_closed(const visit *v)
{
    return strcmp(v->status, "closed") == 0;
}

static int technician_load(const desk *d, const char *technician_id)
{
    int load = 0;
    for (int i = 0; i < DESK_VISITS; i++) {
        const visit *v = &d->visits[i];
        if (!is_closed(v) && strcmp(v->technician, technician_id) == 0) {
            load++;
        }
    }
    return load;
}

static bool has_skill(const technician *t, const char *skill)
{
    for (int i = 0; i < 2; i++) {
        if (t->skills[i] && strcmp(t->skills[i], skill) == 0) {
            return true;
        }
    }
    return false;
}

static bool contains_ci(const char *haystack, const char *needle)
{
    size_t n = strlen(needle);
    if (n == 0) {
        return true;
    }
    for (const char *h = haystack; *h; h++) {
        size_t i = 0;
        while (i < n && h[i] &&
               tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) {
            i++;
        }
        if (i == n) {
            return true;
        }
    }
    return false;
}

static void write_visit(sbuf *sb, const visit *v)
{
    sb_puts(sb, "{\"id\":");
    sb_json_str(sb, v->id);
    sb_puts(sb, ",\"site\":");
    sb_json_str(sb, v->site);
    sb_puts(sb, ",\"issue\":");
    sb_json_str(sb, v->issue);
    sb_printf(sb, ",\"skill\":\"%s\",\"priority\":\"%s\",\"status\":\"%s\"", v->skill,
              v->priority, v->status);
    if (v->technician[0]) {
        sb_printf(sb, ",\"technicianId\":\"%s\"", v->technician);
    }
    sb_printf(sb, ",\"date\":\"%s\",\"window\":\"%s\",\"notes\":%d}", v->date, v->window,
              v->note_count);
}

/* Fills `reason` for a status about a visit or technician. */
static desk_status explain(desk_status status, const char *visit_id, const char *technician_id,
                           const char *skill, char *reason, size_t size)
{
    if (!reason || size == 0) {
        return status;
    }
    switch (status) {
    case DESK_OK: snprintf(reason, size, "ok"); break;
    case DESK_NO_VISIT: snprintf(reason, size, "There is no visit %s on the desk.", visit_id); break;
    case DESK_VISIT_CLOSED: snprintf(reason, size, "Visit %s is already closed.", visit_id); break;
    case DESK_NO_TECHNICIAN:
        snprintf(reason, size, "There is no technician %s.", technician_id);
        break;
    case DESK_TECH_OFF_SHIFT:
        snprintf(reason, size, "Technician %s is off shift today.", technician_id);
        break;
    case DESK_TECH_FULL:
        snprintf(reason, size, "Technician %s already carries %d open visits.", technician_id,
                 DESK_TECH_CAPACITY);
        break;
    case DESK_SKILL_MISMATCH:
        snprintf(reason, size, "Technician %s does not have the %s skill visit %s needs.",
                 technician_id, skill ? skill : "required", visit_id);
        break;
    case DESK_BAD_DATE:
        snprintf(reason, size, "The date is not a calendar date on or after %s.", DESK_TODAY);
        break;
    case DESK_NOTES_FULL:
        snprintf(reason, size, "Visit %s already has %d notes.", visit_id, DESK_MAX_NOTES);
        break;
    case DESK_READ_ONLY: snprintf(reason, size, "The desk is read-only."); break;
    case DESK_BAD_INPUT: snprintf(reason, size, "The request is missing a field."); break;
    }
    return status;
}

static bool valid_date(const char *date)
{
    if (!date || strlen(date) != 10 || date[4] != '-' || date[7] != '-') {
        return false;
    }
    for (int i = 0; i < 10; i++) {
        if (i != 4 && i != 7 && !isdigit((unsigned char)date[i])) {
            return false;
        }
    }
    int year = atoi(date), month = atoi(date + 5), day = atoi(date + 8);
    static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (month < 1 || month > 12 || day < 1) {
        return false;
    }
    bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    int max = days[month - 1] + (month == 2 && leap ? 1 : 0);
    return day <= max && strcmp(date, DESK_TODAY) >= 0; /* ISO dates sort as text */
}

static bool valid_window(const char *window)
{
    return window && (strcmp(window, "morning") == 0 || strcmp(window, "afternoon") == 0);
}

/* Checks for a change of visit_id (mutex held). */
static desk_status check_open_visit_locked(desk *d, const char *visit_id, char *reason, size_t size)
{
    if (!visit_id) {
        return explain(DESK_BAD_INPUT, "", "", NULL, reason, size);
    }
    visit *v = find_visit(d, visit_id);
    if (!v) {
        return explain(DESK_NO_VISIT, visit_id, "", NULL, reason, size);
    }
    if (is_closed(v)) {
        return explain(DESK_VISIT_CLOSED, visit_id, "", NULL, reason, size);
    }
    return explain(DESK_OK, visit_id, "", NULL, reason, size);
}

static desk_status check_assign_locked(desk *d, const char *visit_id, const char *technician_id,
                                       char *reason, size_t size)
{
    desk_status st = check_open_visit_locked(d, visit_id, reason, size);
    if (st != DESK_OK) {
        return st;
    }
    if (!technician_id) {
        return explain(DESK_BAD_INPUT, visit_id, "", NULL, reason, size);
    }
    visit *v = find_visit(d, visit_id);
    technician *t = find_technician(d, technician_id);
    if (!t) {
        return explain(DESK_NO_TECHNICIAN, visit_id, technician_id, NULL, reason, size);
    }
    if (!t->on_shift) {
        return explain(DESK_TECH_OFF_SHIFT, visit_id, technician_id, NULL, reason, size);
    }
    if (!has_skill(t, v->skill)) {
        return explain(DESK_SKILL_MISMATCH, visit_id, technician_id, v->skill, reason, size);
    }
    if (strcmp(v->technician, technician_id) != 0 &&
        technician_load(d, technician_id) >= DESK_TECH_CAPACITY) {
        return explain(DESK_TECH_FULL, visit_id, technician_id, NULL, reason, size);
    }
    return DESK_OK;
}

/* ---- state ------------------------------------------------------------ */

bool desk_is_read_only(desk *d)
{
    pthread_mutex_lock(&d->mutex);
    bool read_only = d->read_only;
    pthread_mutex_unlock(&d->mutex);
    return read_only;
}

bool desk_any_technician_free(desk *d)
{
    bool free_found = false;
    pthread_mutex_lock(&d->mutex);
    for (int i = 0; i < DESK_TECHNICIANS && !free_found; i++) {
        const technician *t = &d->technicians[i];
        free_found = t->on_shift && technician_load(d, t->id) < DESK_TECH_CAPACITY;
    }
    pthread_mutex_unlock(&d->mutex);
    return free_found;
}

bool desk_focused_visit_closed(desk *d, char *visit_id_out, size_t visit_id_size)
{
    pthread_mutex_lock(&d->mutex);
    visit *v = d->focus[0] ? find_visit(d, d->focus) : NULL;
    bool closed = v && is_closed(v);
    if (closed && visit_id_out) {
        copy_text(visit_id_out, visit_id_size, v->id);
    }
    pthread_mutex_unlock(&d->mutex);
    return closed;
}

uint64_t desk_changes(desk *d)
{
    pthread_mutex_lock(&d->mutex);
    uint64_t changes = d->changes;
    pthread_mutex_unlock(&d->mutex);
    return changes;
}

void desk_set_read_only(desk *d, bool read_only)
{
    pthread_mutex_lock(&d->mutex);
    d->read_only = read_only;
    d->changes++;
    pthread_mutex_unlock(&d->mutex);
}

desk_status desk_set_on_shift(desk *d, const char *technician_id, bool on_shift)
{
    desk_status st = DESK_NO_TECHNICIAN;
    pthread_mutex_lock(&d->mutex);
    technician *t = find_technician(d, technician_id);
    if (t) {
        t->on_shift = on_shift;
        d->changes++;
        st = DESK_OK;
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_set_focus(desk *d, const char *visit_id)
{
    desk_status st = DESK_OK;
    pthread_mutex_lock(&d->mutex);
    if (visit_id[0] && !find_visit(d, visit_id)) {
        st = DESK_NO_VISIT;
    } else {
        copy_text(d->focus, sizeof d->focus, visit_id);
        d->changes++;
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

/* ---- queries ------------------------------------------------------------ */

char *desk_list_open(desk *d, const char *priority, const char *technician_id,
                     bool unassigned_only, int limit)
{
    sbuf sb;
    sb_init(&sb);
    int total = 0, shown = 0;
    sb_puts(&sb, "{\"visits\":[");
    pthread_mutex_lock(&d->mutex);
    for (int i = 0; i < DESK_VISITS; i++) {
        const visit *v = &d->visits[i];
        if (is_closed(v) || (priority && strcmp(v->priority, priority) != 0) ||
            (technician_id && strcmp(v->technician, technician_id) != 0) ||
            (unassigned_only && v->technician[0])) {
            continue;
        }
        total++;
        if (limit > 0 && shown >= limit) {
            continue;
        }
        if (shown++) {
            sb_putc(&sb, ',');
        }
        write_visit(&sb, v);
    }
    pthread_mutex_unlock(&d->mutex);
    sb_printf(&sb, "],\"total\":%d}", total);
    return sb_take(&sb);
}

char *desk_search(desk *d, const char *query, const char *status, int limit, bool include_archive)
{
    sbuf sb;
    sb_init(&sb);
    int total = 0, shown = 0;
    sb_puts(&sb, "{\"visits\":[");
    pthread_mutex_lock(&d->mutex);
    for (int i = 0; i < DESK_VISITS; i++) {
        const visit *v = &d->visits[i];
        if (status && strcmp(v->status, status) != 0) {
            continue;
        }
        bool hit = contains_ci(v->site, query) || contains_ci(v->issue, query);
        for (int n = 0; !hit && n < v->note_count; n++) {
            hit = contains_ci(v->notes[n], query);
        }
        if (!hit) {
            continue;
        }
        total++;
        if (limit > 0 && shown >= limit) {
            continue;
        }
        if (shown++) {
            sb_putc(&sb, ',');
        }
        write_visit(&sb, v);
    }
    pthread_mutex_unlock(&d->mutex);
    sb_printf(&sb, "],\"total\":%d", total);
    if (include_archive) {
        int found = 0;
        sb_puts(&sb, ",\"archive\":[");
        for (size_t i = 0; i < sizeof archive / sizeof archive[0]; i++) {
            const archived_visit *a = &archive[i];
            if (!contains_ci(a->site, query) && !contains_ci(a->issue, query)) {
                continue;
            }
            if (found++) {
                sb_putc(&sb, ',');
            }
            sb_printf(&sb, "{\"id\":\"%s\",\"site\":", a->id);
            sb_json_str(&sb, a->site);
            sb_puts(&sb, ",\"issue\":");
            sb_json_str(&sb, a->issue);
            sb_printf(&sb, ",\"closedOn\":\"%s\"}", a->closed_on);
        }
        sb_putc(&sb, ']');
    }
    sb_putc(&sb, '}');
    return sb_take(&sb);
}

/* ---- checks --------------------------------------------------------------- */

desk_status desk_check_open_visit(desk *d, const char *visit_id, char *reason, size_t size)
{
    pthread_mutex_lock(&d->mutex);
    desk_status st = check_open_visit_locked(d, visit_id, reason, size);
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_check_assign(desk *d, const char *visit_id, const char *technician_id,
                              char *reason, size_t size)
{
    pthread_mutex_lock(&d->mutex);
    desk_status st = check_assign_locked(d, visit_id, technician_id, reason, size);
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_check_reschedule(desk *d, const char *visit_id, const char *date,
                                  const char *window, char *reason, size_t size)
{
    pthread_mutex_lock(&d->mutex);
    desk_status st = check_open_visit_locked(d, visit_id, reason, size);
    if (st == DESK_OK && (!valid_date(date) || !valid_window(window))) {
        st = explain(DESK_BAD_DATE, visit_id, "", NULL, reason, size);
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

void desk_describe_visit(desk *d, const char *visit_id, char *text, size_t size)
{
    pthread_mutex_lock(&d->mutex);
    const visit *v = find_visit(d, visit_id);
    if (v) {
        snprintf(text, size, "%s %s (%s, %s), %s %s", v->id, v->site, v->issue, v->priority,
                 v->date, v->window);
    } else {
        snprintf(text, size, "%s (unknown visit)", visit_id ? visit_id : "?");
    }
    pthread_mutex_unlock(&d->mutex);
}

/* ---- changes -------------------------------------------------------------- */

desk_status desk_assign(desk *d, const char *visit_id, const char *technician_id, char **json_out)
{
    *json_out = NULL;
    pthread_mutex_lock(&d->mutex);
    desk_status st = d->read_only ? DESK_READ_ONLY
                                  : check_assign_locked(d, visit_id, technician_id, NULL, 0);
    if (st == DESK_OK) {
        visit *v = find_visit(d, visit_id);
        const technician *t = find_technician(d, technician_id);
        copy_text(v->technician, sizeof v->technician, technician_id);
        copy_text(v->status, sizeof v->status, "assigned");
        d->changes++;
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"visitId\":\"%s\",\"technicianId\":\"%s\",\"technicianName\":", v->id,
                  t->id);
        sb_json_str(&sb, t->name);
        sb_printf(&sb, ",\"status\":\"assigned\",\"technicianLoad\":%d}",
                  technician_load(d, t->id));
        *json_out = sb_take(&sb);
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_reschedule(desk *d, const char *visit_id, const char *date, const char *window,
                            char **json_out)
{
    *json_out = NULL;
    pthread_mutex_lock(&d->mutex);
    desk_status st = d->read_only ? DESK_READ_ONLY
                                  : check_open_visit_locked(d, visit_id, NULL, 0);
    if (st == DESK_OK && (!valid_date(date) || !valid_window(window))) {
        st = DESK_BAD_DATE;
    }
    if (st == DESK_OK) {
        visit *v = find_visit(d, visit_id);
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb,
                  "{\"visitId\":\"%s\",\"date\":\"%s\",\"window\":\"%s\","
                  "\"previousDate\":\"%s\",\"previousWindow\":\"%s\"}",
                  v->id, date, window, v->date, v->window);
        copy_text(v->date, sizeof v->date, date);
        copy_text(v->window, sizeof v->window, window);
        d->changes++;
        *json_out = sb_take(&sb);
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_add_note(desk *d, const char *visit_id, const char *text, char **json_out)
{
    *json_out = NULL;
    pthread_mutex_lock(&d->mutex);
    desk_status st = d->read_only ? DESK_READ_ONLY
                                  : check_open_visit_locked(d, visit_id, NULL, 0);
    visit *v = find_visit(d, visit_id);
    if (st == DESK_OK && !text) {
        st = DESK_BAD_INPUT;
    }
    if (st == DESK_OK && v->note_count >= DESK_MAX_NOTES) {
        st = DESK_NOTES_FULL;
    }
    if (st == DESK_OK) {
        v->notes[v->note_count++] = xstrdup(text);
        d->changes++;
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"visitId\":\"%s\",\"noteCount\":%d}", v->id, v->note_count);
        *json_out = sb_take(&sb);
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

desk_status desk_close(desk *d, const char *visit_id, const char *resolution, const char *summary,
                       char **json_out)
{
    *json_out = NULL;
    pthread_mutex_lock(&d->mutex);
    desk_status st = d->read_only ? DESK_READ_ONLY
                                  : check_open_visit_locked(d, visit_id, NULL, 0);
    if (st == DESK_OK && (!resolution || !summary)) {
        st = DESK_BAD_INPUT;
    }
    if (st == DESK_OK && find_visit(d, visit_id)->note_count >= DESK_MAX_NOTES) {
        st = DESK_NOTES_FULL; /* the summary is kept as the closing note */
    }
    if (st == DESK_OK) {
        visit *v = find_visit(d, visit_id);
        copy_text(v->status, sizeof v->status, "closed");
        copy_text(v->resolution, sizeof v->resolution, resolution);
        v->notes[v->note_count++] = xstrdup(summary);
        d->changes++;
        sbuf sb;
        sb_init(&sb);
        sb_printf(&sb, "{\"visitId\":\"%s\",\"status\":\"closed\",\"resolution\":", v->id);
        sb_json_str(&sb, resolution);
        sb_putc(&sb, '}');
        *json_out = sb_take(&sb);
    }
    pthread_mutex_unlock(&d->mutex);
    return st;
}

const char *desk_status_name(desk_status status)
{
    switch (status) {
    case DESK_OK: return "OK";
    case DESK_NO_VISIT: return "NO_VISIT";
    case DESK_VISIT_CLOSED: return "VISIT_CLOSED";
    case DESK_NO_TECHNICIAN: return "NO_TECHNICIAN";
    case DESK_TECH_OFF_SHIFT: return "TECHNICIAN_OFF_SHIFT";
    case DESK_TECH_FULL: return "TECHNICIAN_FULL";
    case DESK_SKILL_MISMATCH: return "SKILL_MISMATCH";
    case DESK_BAD_DATE: return "BAD_DATE";
    case DESK_NOTES_FULL: return "NOTES_FULL";
    case DESK_READ_ONLY: return "READ_ONLY";
    case DESK_BAD_INPUT: return "BAD_INPUT";
    }
    return "UNKNOWN";
}
