/*
 * json.c: the dispatch-desk demo's JSON reader and writer (see json.h).
 *
 * A recursive-descent parser over a (pointer, length) pair: every read is
 * checked against the end, nesting is limited to JSON_MAX_DEPTH, and on any
 * error everything built so far is freed.
 */
#include "json.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- allocation ------------------------------------------------------ */

static void out_of_memory(void)
{
    fputs("dispatch_desk: out of memory\n", stderr);
    exit(3);
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        out_of_memory();
    }
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        out_of_memory();
    }
    return p;
}

void *xrealloc(void *pointer, size_t size)
{
    void *p = realloc(pointer, size ? size : 1);
    if (!p) {
        out_of_memory();
    }
    return p;
}

char *xstrndup(const char *text, size_t len)
{
    char *copy = xmalloc(len + 1);
    memcpy(copy, text, len);
    copy[len] = '\0';
    return copy;
}

char *xstrdup(const char *text)
{
    return xstrndup(text, strlen(text));
}

/* ---- writer ---------------------------------------------------------- */

void sb_init(sbuf *sb)
{
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
}

void sb_free(sbuf *sb)
{
    free(sb->data);
    sb_init(sb);
}

static void sb_reserve(sbuf *sb, size_t extra)
{
    if (extra > SIZE_MAX - sb->len - 1) {
        out_of_memory();
    }
    size_t need = sb->len + extra + 1;
    if (need <= sb->cap) {
        return;
    }
    size_t cap = sb->cap ? sb->cap : 64;
    while (cap < need) {
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    }
    sb->data = xrealloc(sb->data, cap);
    sb->cap = cap;
}

char *sb_take(sbuf *sb)
{
    sb_reserve(sb, 0);
    sb->data[sb->len] = '\0'; /* an empty buffer was never terminated */
    char *text = sb->data;
    sb_init(sb);
    return text;
}

void sb_putn(sbuf *sb, const char *text, size_t len)
{
    sb_reserve(sb, len);
    memcpy(sb->data + sb->len, text, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
}

void sb_puts(sbuf *sb, const char *text)
{
    sb_putn(sb, text, strlen(text));
}

void sb_putc(sbuf *sb, char c)
{
    sb_putn(sb, &c, 1);
}

void sb_printf(sbuf *sb, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, format, copy);
    va_end(copy);
    if (n < 0) {
        va_end(args);
        return;
    }
    sb_reserve(sb, (size_t)n);
    vsnprintf(sb->data + sb->len, (size_t)n + 1, format, args);
    va_end(args);
    sb->len += (size_t)n;
}

void sb_json_strn(sbuf *sb, const char *text, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    sb_putc(sb, '"');
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        switch (c) {
        case '"': sb_puts(sb, "\\\""); break;
        case '\\': sb_puts(sb, "\\\\"); break;
        case '\n': sb_puts(sb, "\\n"); break;
        case '\r': sb_puts(sb, "\\r"); break;
        case '\t': sb_puts(sb, "\\t"); break;
        case '\b': sb_puts(sb, "\\b"); break;
        case '\f': sb_puts(sb, "\\f"); break;
        default:
            if (c < 0x20) {
                char esc[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                sb_putn(sb, esc, sizeof esc);
            } else {
                sb_putc(sb, (char)c);
            }
        }
    }
    sb_putc(sb, '"');
}

void sb_json_str(sbuf *sb, const char *text)
{
    sb_json_strn(sb, text, strlen(text));
}

/* ---- reader ---------------------------------------------------------- */

typedef struct parser {
    const char *text;
    size_t len;
    size_t pos;
    json_error *error;
    bool failed;
} parser;

static void fail_at(parser *p, size_t offset, const char *message)
{
    if (p->failed) {
        return;
    }
    p->failed = true;
    if (p->error) {
        p->error->offset = offset;
        snprintf(p->error->message, sizeof p->error->message, "%s", message);
    }
}

static void skip_ws(parser *p)
{
    while (p->pos < p->len) {
        char c = p->text[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            break;
        }
        p->pos++;
    }
}

static bool at_end(const parser *p)
{
    return p->pos >= p->len;
}

static char peek(const parser *p)
{
    return at_end(p) ? '\0' : p->text[p->pos];
}

void json_free(json_value *value)
{
    if (!value) {
        return;
    }
    for (size_t i = 0; i < value->count; i++) {
        free(value->members[i].key);
        json_free(value->members[i].value);
    }
    free(value->members);
    free(value->string);
    free(value);
}

static json_value *new_value(json_type type, size_t offset)
{
    json_value *v = xcalloc(1, sizeof *v);
    v->type = type;
    v->src_offset = offset;
    return v;
}

/* Length of the valid UTF-8 sequence starting at s[0] (n bytes left), or 0. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t need;
    unsigned char lo = 0x80, hi = 0xBF; /* range of the second byte */
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        if (c == 0xE0) {
            lo = 0xA0; /* no overlong forms */
        } else if (c == 0xED) {
            hi = 0x9F; /* no UTF-16 surrogates */
        }
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        if (c == 0xF0) {
            lo = 0x90;
        } else if (c == 0xF4) {
            hi = 0x8F; /* nothing above U+10FFFF */
        }
    } else {
        return 0;
    }
    if (n < need || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < need; i++) {
        if ((s[i] & 0xC0) != 0x80) {
            return 0;
        }
    }
    return need;
}

static void put_utf8(sbuf *sb, uint32_t cp)
{
    char out[4];
    size_t n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    sb_putn(sb, out, n);
}

/* Reads 4 hex digits at p->pos into *out. */
static bool read_hex4(parser *p, uint32_t *out)
{
    if (p->len - p->pos < 4) {
        fail_at(p, p->pos, "truncated \\u escape");
        return false;
    }
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->text[p->pos + (size_t)i];
        v <<= 4;
        if (c >= '0' && c <= '9') {
            v |= (uint32_t)(c - '0');
        } else if (c >= 'a' && c <= 'f') {
            v |= (uint32_t)(c - 'a' + 10);
        } else if (c >= 'A' && c <= 'F') {
            v |= (uint32_t)(c - 'A' + 10);
        } else {
            fail_at(p, p->pos + (size_t)i, "bad hex digit in \\u escape");
            return false;
        }
    }
    p->pos += 4;
    *out = v;
    return true;
}

/* Parses a string at p->pos (which holds the opening quote). */
static bool parse_string_raw(parser *p, char **out, size_t *out_len)
{
    size_t start = p->pos;
    p->pos++; /* opening quote */
    sbuf sb;
    sb_init(&sb);
    for (;;) {
        if (at_end(p)) {
            fail_at(p, start, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)p->text[p->pos];
        if (c == '"') {
            p->pos++;
            *out_len = sb.len;
            *out = sb_take(&sb);
            return true;
        }
        if (c < 0x20) {
            fail_at(p, p->pos, "control character in string");
            break;
        }
        if (c != '\\') {
            size_t n = utf8_sequence((const unsigned char *)p->text + p->pos, p->len - p->pos);
            if (n == 0) {
                fail_at(p, p->pos, "invalid UTF-8 in string");
                break;
            }
            sb_putn(&sb, p->text + p->pos, n);
            p->pos += n;
            continue;
        }
        p->pos++; /* backslash */
        if (at_end(p)) {
            fail_at(p, p->pos, "unterminated escape");
            break;
        }
        char e = p->text[p->pos++];
        switch (e) {
        case '"': sb_putc(&sb, '"'); continue;
        case '\\': sb_putc(&sb, '\\'); continue;
        case '/': sb_putc(&sb, '/'); continue;
        case 'b': sb_putc(&sb, '\b'); continue;
        case 'f': sb_putc(&sb, '\f'); continue;
        case 'n': sb_putc(&sb, '\n'); continue;
        case 'r': sb_putc(&sb, '\r'); continue;
        case 't': sb_putc(&sb, '\t'); continue;
        case 'u': break;
        default:
            fail_at(p, p->pos - 1, "unknown escape in string");
            sb_free(&sb);
            return false;
        }
        uint32_t cp;
        if (!read_hex4(p, &cp)) {
            break;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
            fail_at(p, p->pos - 6, "lone low surrogate escape");
            break;
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low;
            if (p->len - p->pos < 2 || p->text[p->pos] != '\\' || p->text[p->pos + 1] != 'u') {
                fail_at(p, p->pos - 6, "lone high surrogate escape");
                break;
            }
            p->pos += 2;
            if (!read_hex4(p, &low)) {
                break;
            }
            if (low < 0xDC00 || low > 0xDFFF) {
                fail_at(p, p->pos - 6, "high surrogate not followed by a low one");
                break;
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        }
        put_utf8(&sb, cp);
    }
    sb_free(&sb);
    return false;
}

static json_value *parse_value(parser *p, int depth);

static json_value *parse_number(parser *p)
{
    size_t start = p->pos;
    if (peek(p) == '-') {
        p->pos++;
    }
    if (peek(p) == '0') {
        p->pos++;
    } else if (peek(p) >= '1' && peek(p) <= '9') {
        while (peek(p) >= '0' && peek(p) <= '9') {
            p->pos++;
        }
    } else {
        fail_at(p, p->pos, "bad number");
        return NULL;
    }
    if (peek(p) == '.') {
        p->pos++;
        if (!(peek(p) >= '0' && peek(p) <= '9')) {
            fail_at(p, p->pos, "digit expected after decimal point");
            return NULL;
        }
        while (peek(p) >= '0' && peek(p) <= '9') {
            p->pos++;
        }
    }
    if (peek(p) == 'e' || peek(p) == 'E') {
        p->pos++;
        if (peek(p) == '+' || peek(p) == '-') {
            p->pos++;
        }
        if (!(peek(p) >= '0' && peek(p) <= '9')) {
            fail_at(p, p->pos, "digit expected in exponent");
            return NULL;
        }
        while (peek(p) >= '0' && peek(p) <= '9') {
            p->pos++;
        }
    }
    /* strtod needs a NUL-terminated copy: the source may continue. */
    char *copy = xstrndup(p->text + start, p->pos - start);
    double d = strtod(copy, NULL);
    free(copy);
    if (!isfinite(d)) {
        fail_at(p, start, "number out of range");
        return NULL;
    }
    json_value *v = new_value(JSON_NUMBER, start);
    v->number = d;
    return v;
}

static bool match_word(parser *p, const char *word)
{
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->text + p->pos, word, n) != 0) {
        fail_at(p, p->pos, "unexpected characters");
        return false;
    }
    p->pos += n;
    return true;
}

/* Parses an array or object at p->pos (its opening bracket). */
static json_value *parse_container(parser *p, int depth, bool is_object)
{
    if (depth >= JSON_MAX_DEPTH) {
        fail_at(p, p->pos, "nesting too deep");
        return NULL;
    }
    json_value *v = new_value(is_object ? JSON_OBJECT : JSON_ARRAY, p->pos);
    char close = is_object ? '}' : ']';
    size_t cap = 0;
    p->pos++;
    skip_ws(p);
    if (peek(p) == close) {
        p->pos++;
        return v;
    }
    for (;;) {
        char *key = NULL;
        size_t key_len = 0;
        skip_ws(p);
        if (is_object) {
            if (peek(p) != '"') {
                fail_at(p, p->pos, "object key (a string) expected");
                break;
            }
            if (!parse_string_raw(p, &key, &key_len)) {
                break;
            }
            skip_ws(p);
            if (peek(p) != ':') {
                fail_at(p, p->pos, "':' expected after object key");
                free(key);
                break;
            }
            p->pos++;
        }
        json_value *item = parse_value(p, depth + 1);
        if (!item) {
            free(key);
            break;
        }
        if (v->count == cap) {
            cap = cap ? cap * 2 : 4;
            v->members = xrealloc(v->members, cap * sizeof *v->members);
        }
        v->members[v->count].key = key;
        v->members[v->count].key_len = key_len;
        v->members[v->count].value = item;
        v->count++;
        skip_ws(p);
        if (peek(p) == ',') {
            p->pos++;
            skip_ws(p);
            if (peek(p) == close) {
                fail_at(p, p->pos, "trailing comma");
                break;
            }
            continue;
        }
        if (peek(p) == close) {
            p->pos++;
            return v;
        }
        fail_at(p, p->pos, is_object ? "',' or '}' expected" : "',' or ']' expected");
        break;
    }
    json_free(v);
    return NULL;
}

static json_value *parse_value(parser *p, int depth)
{
    skip_ws(p);
    size_t start = p->pos;
    json_value *v = NULL;
    switch (peek(p)) {
    case '{':
        v = parse_container(p, depth, true);
        break;
    case '[':
        v = parse_container(p, depth, false);
        break;
    case '"': {
        char *s;
        size_t n;
        if (parse_string_raw(p, &s, &n)) {
            v = new_value(JSON_STRING, start);
            v->string = s;
            v->string_len = n;
        }
        break;
    }
    case 't':
        if (match_word(p, "true")) {
            v = new_value(JSON_BOOL, start);
            v->boolean = true;
        }
        break;
    case 'f':
        if (match_word(p, "false")) {
            v = new_value(JSON_BOOL, start);
        }
        break;
    case 'n':
        if (match_word(p, "null")) {
            v = new_value(JSON_NULL, start);
        }
        break;
    default:
        if (peek(p) == '-' || (peek(p) >= '0' && peek(p) <= '9')) {
            v = parse_number(p);
        } else if (at_end(p)) {
            fail_at(p, p->pos, "value expected, found the end");
        } else {
            fail_at(p, p->pos, "value expected");
        }
    }
    if (v) {
        v->src_len = p->pos - start;
    }
    return v;
}

json_value *json_parse(const char *text, size_t len, json_error *error)
{
    if (error) {
        error->offset = 0;
        error->message[0] = '\0';
    }
    if (!text) {
        if (error) {
            snprintf(error->message, sizeof error->message, "no text");
        }
        return NULL;
    }
    parser p = {text, len, 0, error, false};
    json_value *v = parse_value(&p, 0);
    if (!v) {
        return NULL;
    }
    skip_ws(&p);
    if (!at_end(&p)) {
        fail_at(&p, p.pos, "unexpected text after the value");
        json_free(v);
        return NULL;
    }
    return v;
}

/* ---- access ---------------------------------------------------------- */

const json_value *json_get(const json_value *object, const char *key)
{
    if (!object || object->type != JSON_OBJECT || !key) {
        return NULL;
    }
    size_t n = strlen(key);
    const json_value *found = NULL;
    for (size_t i = 0; i < object->count; i++) {
        const json_member *m = &object->members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0) {
            found = m->value; /* the last duplicate wins */
        }
    }
    return found;
}

const char *json_str(const json_value *value)
{
    return value && value->type == JSON_STRING ? value->string : NULL;
}

const char *json_get_str(const json_value *object, const char *key)
{
    return json_str(json_get(object, key));
}

bool json_is_c_string(const json_value *value)
{
    return value && value->type == JSON_STRING && strlen(value->string) == value->string_len;
}

const json_value *json_at(const json_value *array, size_t index)
{
    if (!array || array->type != JSON_ARRAY || index >= array->count) {
        return NULL;
    }
    return array->members[index].value;
}

const char *json_type_name(json_type type)
{
    switch (type) {
    case JSON_NULL: return "null";
    case JSON_BOOL: return "boolean";
    case JSON_NUMBER: return "number";
    case JSON_STRING: return "string";
    case JSON_ARRAY: return "array";
    case JSON_OBJECT: return "object";
    }
    return "value";
}
