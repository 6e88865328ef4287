/*
 * json.c — the strict JSON reader of adil_json.h.
 *
 * A recursive-descent parser over a byte range.  Every read checks the
 * position against the end of the input first; nesting is bounded, so the
 * recursion is too.  On any error the partial tree is freed before returning,
 * so callers only ever free complete trees.
 */
#include "adil_json.h"

#include "adil_containers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
    const char *src;
    size_t len;
    size_t pos;
    adil_status on_error;
    const char *what;
    int max_depth;
} parser;

/* A growable byte buffer for decoded strings. */
typedef struct byte_buf {
    char *data;
    size_t len;
    size_t cap;
} byte_buf;

static adil_status parse_value(parser *p, int depth, adil_json *out);

/* ---- errors ------------------------------------------------------------ */

static adil_status fail_at(const parser *p, size_t offset, const char *expected) {
    char got[32];
    if (offset >= p->len)
        snprintf(got, sizeof got, "end of input");
    else if ((unsigned char)p->src[offset] >= 0x20 && (unsigned char)p->src[offset] < 0x7f)
        snprintf(got, sizeof got, "'%c'", p->src[offset]);
    else
        snprintf(got, sizeof got, "byte 0x%02x", (unsigned char)p->src[offset]);
    return adil_fail(p->on_error, "%s: invalid JSON: expected %s, got %s at offset %zu", p->what, expected,
                     got, offset);
}

static adil_status out_of_memory(const parser *p) {
    return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: out of memory while reading JSON at offset %zu", p->what,
                     p->pos);
}

/* ---- small readers ----------------------------------------------------- */

static void skip_whitespace(parser *p) {
    while (p->pos < p->len) {
        char c = p->src[p->pos];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
        p->pos++;
    }
}

static bool at(const parser *p, char c) { return p->pos < p->len && p->src[p->pos] == c; }

static bool is_digit_at(const parser *p) {
    return p->pos < p->len && p->src[p->pos] >= '0' && p->src[p->pos] <= '9';
}

static bool buf_push(byte_buf *b, const char *bytes, size_t n) {
    if (adil_grow((void **)&b->data, &b->cap, b->len + n + 1, 1, "JSON string") != ADIL_OK) return false;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
    b->data[b->len] = '\0';
    return true;
}

/* ---- strings ----------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at p->pos (RFC 3629: no overlongs, no
 * surrogates, nothing above U+10FFFF), or 0 when it is not valid. */
static size_t utf8_sequence(const parser *p) {
    const unsigned char *s = (const unsigned char *)p->src + p->pos;
    size_t left = p->len - p->pos;
    unsigned char c = s[0];
    size_t n;
    unsigned char lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c == 0xE0) {
        n = 3;
        lo = 0xA0;
    } else if (c >= 0xE1 && c <= 0xEC)
        n = 3;
    else if (c == 0xED) {
        n = 3;
        hi = 0x9F;
    } else if (c >= 0xEE && c <= 0xEF)
        n = 3;
    else if (c == 0xF0) {
        n = 4;
        lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3)
        n = 4;
    else if (c == 0xF4) {
        n = 4;
        hi = 0x8F;
    } else
        return 0;
    if (left < n || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF) return 0;
    return n;
}

static bool read_hex4(parser *p, uint32_t *out) {
    if (p->len - p->pos < 4) return false;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p->src[p->pos + i];
        uint32_t d;
        if (c >= '0' && c <= '9')
            d = (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            d = (uint32_t)(c - 'A' + 10);
        else
            return false;
        v = v * 16 + d;
    }
    p->pos += 4;
    *out = v;
    return true;
}

static size_t utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX, with a following \uXXXX when the first is a high surrogate. */
static adil_status read_unicode_escape(parser *p, byte_buf *b) {
    size_t start = p->pos - 2; /* the backslash */
    uint32_t cp;
    if (!read_hex4(p, &cp)) return fail_at(p, p->pos, "four hex digits after \\u");
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return fail_at(p, start, "a high surrogate before a low one (lone \\u surrogate)");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        uint32_t low;
        if (p->len - p->pos < 2 || p->src[p->pos] != '\\' || p->src[p->pos + 1] != 'u')
            return fail_at(p, p->pos, "a \\u low surrogate after a high surrogate");
        p->pos += 2;
        if (!read_hex4(p, &low) || low < 0xDC00 || low > 0xDFFF)
            return fail_at(p, p->pos - 2, "a \\u low surrogate (DC00-DFFF)");
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    char bytes[4];
    size_t n = utf8_encode(cp, bytes);
    return buf_push(b, bytes, n) ? ADIL_OK : out_of_memory(p);
}

static adil_status read_escape(parser *p, byte_buf *b) {
    p->pos++; /* the backslash */
    if (p->pos >= p->len) return fail_at(p, p->pos, "an escape character");
    char c = p->src[p->pos++];
    char decoded;
    switch (c) {
    case '"':
        decoded = '"';
        break;
    case '\\':
        decoded = '\\';
        break;
    case '/':
        decoded = '/';
        break;
    case 'b':
        decoded = '\b';
        break;
    case 'f':
        decoded = '\f';
        break;
    case 'n':
        decoded = '\n';
        break;
    case 'r':
        decoded = '\r';
        break;
    case 't':
        decoded = '\t';
        break;
    case 'u':
        return read_unicode_escape(p, b);
    default:
        return fail_at(p, p->pos - 1, "one of \" \\ / b f n r t u after a backslash");
    }
    return buf_push(b, &decoded, 1) ? ADIL_OK : out_of_memory(p);
}

/* Reads the string whose opening quote is at p->pos. */
static adil_status read_string(parser *p, char **out, size_t *out_len) {
    byte_buf b = {0};
    if (!buf_push(&b, "", 0)) return out_of_memory(p);
    p->pos++;
    for (;;) {
        adil_status st = ADIL_OK;
        if (p->pos >= p->len) {
            st = fail_at(p, p->pos, "a closing '\"'");
        } else {
            unsigned char c = (unsigned char)p->src[p->pos];
            if (c == '"') {
                p->pos++;
                *out = b.data;
                *out_len = b.len;
                return ADIL_OK;
            } else if (c == '\\') {
                st = read_escape(p, &b);
            } else if (c < 0x20) {
                st = fail_at(p, p->pos, "a string character (control characters must be escaped)");
            } else if (c < 0x80) {
                st = buf_push(&b, (const char *)&c, 1) ? ADIL_OK : out_of_memory(p);
                p->pos++;
            } else {
                size_t n = utf8_sequence(p);
                if (n == 0)
                    st = fail_at(p, p->pos, "valid UTF-8");
                else if (!buf_push(&b, p->src + p->pos, n))
                    st = out_of_memory(p);
                p->pos += n;
            }
        }
        if (st != ADIL_OK) {
            free(b.data);
            return st;
        }
    }
}

/* ---- numbers and literals ---------------------------------------------- */

static adil_status read_number(parser *p, adil_json *out) {
    bool negative = at(p, '-');
    if (negative) p->pos++;
    if (!is_digit_at(p)) return fail_at(p, p->pos, "a digit");
    bool fits = true;
    uint64_t magnitude = 0;
    if (at(p, '0')) {
        p->pos++;
    } else {
        while (is_digit_at(p)) {
            uint64_t d = (uint64_t)(p->src[p->pos++] - '0');
            if (magnitude > (UINT64_MAX - d) / 10)
                fits = false;
            else
                magnitude = magnitude * 10 + d;
        }
    }
    bool integral = true;
    if (at(p, '.')) {
        integral = false;
        p->pos++;
        if (!is_digit_at(p)) return fail_at(p, p->pos, "a digit after '.'");
        while (is_digit_at(p)) p->pos++;
    }
    if (at(p, 'e') || at(p, 'E')) {
        integral = false;
        p->pos++;
        if (at(p, '+') || at(p, '-')) p->pos++;
        if (!is_digit_at(p)) return fail_at(p, p->pos, "a digit in the exponent");
        while (is_digit_at(p)) p->pos++;
    }
    out->kind = ADIL_JSON_NUMBER;
    uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    out->is_integer = integral && fits && magnitude <= limit;
    if (out->is_integer) out->integer = negative ? (int64_t)(0 - magnitude) : (int64_t)magnitude;
    return ADIL_OK;
}

static adil_status read_literal(parser *p, const char *word, adil_json *out) {
    size_t n = strlen(word);
    if (p->len - p->pos < n || memcmp(p->src + p->pos, word, n) != 0)
        return fail_at(p, p->pos, "a value (true, false, null, a number, a string, [ or {)");
    p->pos += n;
    if (word[0] == 'n') {
        out->kind = ADIL_JSON_NULL;
    } else {
        out->kind = ADIL_JSON_BOOL;
        out->boolean = word[0] == 't';
    }
    return ADIL_OK;
}

/* ---- arrays and objects ------------------------------------------------ */

static adil_status read_array(parser *p, int depth, adil_json *out) {
    out->kind = ADIL_JSON_ARRAY;
    p->pos++;
    skip_whitespace(p);
    if (at(p, ']')) {
        p->pos++;
        return ADIL_OK;
    }
    size_t cap = 0;
    for (;;) {
        if (adil_grow((void **)&out->items, &cap, out->n_items + 1, sizeof *out->items, "JSON array") !=
            ADIL_OK)
            return out_of_memory(p);
        adil_status st = parse_value(p, depth + 1, &out->items[out->n_items]);
        if (st != ADIL_OK) return st;
        out->n_items++;
        skip_whitespace(p);
        if (at(p, ']')) {
            p->pos++;
            return ADIL_OK;
        }
        if (!at(p, ',')) return fail_at(p, p->pos, "',' or ']' in an array");
        p->pos++;
    }
}

static adil_status read_member(parser *p, int depth, adil_json_member *m) {
    skip_whitespace(p);
    if (!at(p, '"')) return fail_at(p, p->pos, "a '\"' starting an object key");
    m->key_offset = p->pos;
    adil_status st = read_string(p, &m->key, &m->key_len);
    if (st != ADIL_OK) return st;
    skip_whitespace(p);
    if (!at(p, ':')) {
        free(m->key);
        return fail_at(p, p->pos, "':' after an object key");
    }
    p->pos++;
    st = parse_value(p, depth + 1, &m->value);
    if (st != ADIL_OK) free(m->key);
    return st;
}

static adil_status read_object(parser *p, int depth, adil_json *out) {
    out->kind = ADIL_JSON_OBJECT;
    p->pos++;
    skip_whitespace(p);
    if (at(p, '}')) {
        p->pos++;
        return ADIL_OK;
    }
    size_t cap = 0;
    for (;;) {
        if (adil_grow((void **)&out->members, &cap, out->n_members + 1, sizeof *out->members,
                      "JSON object") != ADIL_OK)
            return out_of_memory(p);
        adil_status st = read_member(p, depth, &out->members[out->n_members]);
        if (st != ADIL_OK) return st;
        out->n_members++;
        skip_whitespace(p);
        if (at(p, '}')) {
            p->pos++;
            return ADIL_OK;
        }
        if (!at(p, ',')) return fail_at(p, p->pos, "',' or '}' in an object");
        p->pos++;
    }
}

/* ---- values ------------------------------------------------------------ */

static adil_status parse_value(parser *p, int depth, adil_json *out) {
    memset(out, 0, sizeof *out);
    skip_whitespace(p);
    if (depth > p->max_depth)
        return adil_fail(p->on_error, "%s: invalid JSON: nesting deeper than %d levels at offset %zu",
                         p->what, p->max_depth, p->pos);
    out->start = p->pos;
    if (p->pos >= p->len) return fail_at(p, p->pos, "a value");
    adil_status st;
    switch (p->src[p->pos]) {
    case '{':
        st = read_object(p, depth, out);
        break;
    case '[':
        st = read_array(p, depth, out);
        break;
    case '"':
        out->kind = ADIL_JSON_STRING;
        st = read_string(p, &out->str, &out->str_len);
        break;
    case 't':
        st = read_literal(p, "true", out);
        break;
    case 'f':
        st = read_literal(p, "false", out);
        break;
    case 'n':
        st = read_literal(p, "null", out);
        break;
    default:
        if (p->src[p->pos] == '-' || is_digit_at(p))
            st = read_number(p, out);
        else
            st = fail_at(p, p->pos, "a value (true, false, null, a number, a string, [ or {)");
        break;
    }
    if (st != ADIL_OK) {
        adil_json_free(out);
        return st;
    }
    out->end = p->pos;
    return ADIL_OK;
}

adil_status adil_json_parse(const char *src, size_t len, adil_status on_error, const char *what,
                            adil_json *out) {
    return adil_json_parse_deep(src, len, on_error, what, ADIL_JSON_MAX_DEPTH, out);
}

adil_status adil_json_parse_deep(const char *src, size_t len, adil_status on_error, const char *what,
                                 int max_depth, adil_json *out) {
    parser p = {src, len, 0, on_error, what, max_depth};
    memset(out, 0, sizeof *out);
    if (src == NULL && len > 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "%s: expected JSON text, got NULL", what);
    adil_status st = parse_value(&p, 1, out);
    if (st != ADIL_OK) return st;
    skip_whitespace(&p);
    if (p.pos != p.len) {
        adil_json_free(out);
        return fail_at(&p, p.pos, "the end of the input after the top-level value");
    }
    return ADIL_OK;
}

/* ---- access ------------------------------------------------------------ */

void adil_json_free(adil_json *value) {
    if (value == NULL) return;
    for (size_t i = 0; i < value->n_items; i++) adil_json_free(&value->items[i]);
    for (size_t i = 0; i < value->n_members; i++) {
        free(value->members[i].key);
        adil_json_free(&value->members[i].value);
    }
    free(value->items);
    free(value->members);
    free(value->str);
    value->items = NULL;
    value->members = NULL;
    value->str = NULL;
    value->n_items = 0;
    value->n_members = 0;
}

const adil_json *adil_json_get(const adil_json *object, const char *key) {
    if (object == NULL || object->kind != ADIL_JSON_OBJECT) return NULL;
    size_t n = strlen(key);
    for (size_t i = 0; i < object->n_members; i++) {
        const adil_json_member *m = &object->members[i];
        if (m->key_len == n && memcmp(m->key, key, n) == 0) return &m->value;
    }
    return NULL;
}

const char *adil_json_kind_name(adil_json_kind kind) {
    switch (kind) {
    case ADIL_JSON_NULL:
        return "null";
    case ADIL_JSON_BOOL:
        return "boolean";
    case ADIL_JSON_NUMBER:
        return "number";
    case ADIL_JSON_STRING:
        return "string";
    case ADIL_JSON_ARRAY:
        return "array";
    case ADIL_JSON_OBJECT:
        return "object";
    }
    return "unknown";
}
