/*
 * json.h: a small JSON reader and writer for the dispatch-desk demo.
 *
 * The reader parses RFC 8259 text into a tree (strict: no comments, no
 * trailing commas, UTF-8 checked, lone surrogate escapes refused, nesting
 * limited). Every value also remembers where it sits in the source text, so
 * the demo can pass a plan's `input` to rcip exactly as the user wrote it.
 * The writer is a growable string buffer with a JSON string escaper.
 *
 * Ownership: json_parse returns a tree owned by the caller (json_free);
 * pointers obtained from a tree (strings, children) are borrowed from it.
 * Thread safety: none needed; trees are not shared between threads.
 */
#ifndef DISPATCH_JSON_H
#define DISPATCH_JSON_H

#include <stdbool.h>
#include <stddef.h>

/* Deepest nesting the reader accepts (arrays and objects). */
#define JSON_MAX_DEPTH 256

typedef enum json_type {
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT
} json_type;

typedef struct json_value json_value;

/* One array element (key NULL) or object member. */
typedef struct json_member {
    char *key;         /* decoded, NUL-terminated; NULL in arrays */
    size_t key_len;    /* bytes, without the NUL */
    json_value *value;
} json_member;

struct json_value {
    json_type type;
    size_t src_offset;  /* where the value's text starts in the source */
    size_t src_len;     /* length of the value's text in the source */
    bool boolean;       /* JSON_BOOL */
    double number;      /* JSON_NUMBER */
    char *string;       /* JSON_STRING: decoded UTF-8, NUL-terminated */
    size_t string_len;  /* JSON_STRING: bytes, without the NUL */
    json_member *members; /* JSON_ARRAY / JSON_OBJECT, in source order */
    size_t count;
};

/* Where and why parsing failed. */
typedef struct json_error {
    size_t offset;        /* byte offset in the source */
    char message[128];
} json_error;

/*
 * Parses `len` bytes of `text` (which need not be NUL-terminated) as one
 * JSON value surrounded by optional whitespace. Returns NULL and fills
 * `*error` when the text is not JSON (or allocation failed).
 */
json_value *json_parse(const char *text, size_t len, json_error *error);

/* Frees a tree from json_parse; NULL does nothing. */
void json_free(json_value *value);

/*
 * The member `key` of an object (the last one when the key repeats, as
 * JSON.parse does), or NULL when `object` is NULL, not an object, or has no
 * such member.
 */
const json_value *json_get(const json_value *object, const char *key);

/* The string of `value` when it is a string, else NULL. */
const char *json_str(const json_value *value);

/* A string member of `object`, or NULL (absent, or not a string). */
const char *json_get_str(const json_value *object, const char *key);

/* True when `value` is a string without an embedded NUL (usable as a C string). */
bool json_is_c_string(const json_value *value);

/* The i-th element of an array, or NULL. */
const json_value *json_at(const json_value *array, size_t index);

/* A name for a type, for error messages ("object", "string", ...). */
const char *json_type_name(json_type type);

/* ---- writer ---------------------------------------------------------- */

/* A growable NUL-terminated string. Allocation failure ends the program. */
typedef struct sbuf {
    char *data;
    size_t len;
    size_t cap;
} sbuf;

void sb_init(sbuf *sb);
void sb_free(sbuf *sb);
/* Hands the text to the caller (free() it); the buffer is empty afterwards. */
char *sb_take(sbuf *sb);
void sb_putn(sbuf *sb, const char *text, size_t len);
void sb_puts(sbuf *sb, const char *text);
void sb_putc(sbuf *sb, char c);
void sb_printf(sbuf *sb, const char *format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends `text` (`len` bytes, UTF-8) as a quoted, escaped JSON string. */
void sb_json_strn(sbuf *sb, const char *text, size_t len);
/* As sb_json_strn for a NUL-terminated string. */
void sb_json_str(sbuf *sb, const char *text);

/* malloc / strdup that end the program with a message when memory runs out. */
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *pointer, size_t size);
char *xstrdup(const char *text);
char *xstrndup(const char *text, size_t len);

#endif /* DISPATCH_JSON_H */
