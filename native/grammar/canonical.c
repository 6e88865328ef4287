/*
 * canonical.c — the canonical JSON text of a schema's enum/const values, as
 * Python writes them (json.dumps(v, separators=(",", ":"),
 * ensure_ascii=False)): the texts a grammar's literals are matched against.
 * Integers are written as integers (-0 as 0), other numbers as Python's
 * repr() of their double: the shortest digits that read back the same, in
 * fixed notation from 1e-4 up to 1e16 and in exponent notation outside it.
 */
#include "adil_json.h"
#include "grammar_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool grammar_pool_add(adil_grammar *g, const void *bytes, size_t len, gtext *out) {
    if (len > UINT32_MAX / 2 - g->pool_len) return false;
    if (g->pool_len + len > g->pool_cap) {
        uint32_t cap = g->pool_cap ? g->pool_cap : 256;
        while (cap < g->pool_len + len) cap *= 2;
        uint8_t *grown = realloc(g->pool, cap);
        if (!grown) return false;
        g->pool = grown;
        g->pool_cap = cap;
    }
    if (len) memcpy(g->pool + g->pool_len, bytes, len);
    out->off = g->pool_len;
    out->len = (uint32_t)len;
    g->pool_len += (uint32_t)len;
    return true;
}

typedef struct writer {
    adil_grammar *g;
    uint32_t start;
    bool ok;
} writer;

static void put(writer *w, const void *bytes, size_t len) {
    gtext ignored;
    if (w->ok && !grammar_pool_add(w->g, bytes, len, &ignored)) w->ok = false;
}

static void put_string(writer *w, const char *s, size_t len) {
    put(w, "\"", 1);
    for (size_t i = 0; i < len; i++) {
        const unsigned char c = (unsigned char)s[i];
        char esc[8];
        const char *named = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                            : c == '\b' ? "\\b"
                            : c == '\f' ? "\\f"
                                        : NULL;
        if (named) {
            put(w, named, strlen(named));
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            put(w, esc, 6);
        } else {
            put(w, &s[i], 1);
        }
    }
    put(w, "\"", 1);
}

/* Python's repr() of a finite double. */
static void put_float(writer *w, double x) {
    if (x == 0) {
        put(w, signbit(x) ? "-0.0" : "0.0", signbit(x) ? 4 : 3);
        return;
    }
    char sci[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(sci, sizeof sci, "%.*e", p - 1, x);
        if (strtod(sci, NULL) == x) break;
    }
    /* sci = [-]d[.ddd]e[+-]XX: the digits and the decimal exponent. */
    char digits[24];
    size_t nd = 0;
    const char *s = sci;
    const bool neg = *s == '-';
    if (neg) s++;
    for (; *s && *s != 'e'; s++)
        if (*s != '.' && nd < sizeof digits - 1) digits[nd++] = *s;
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    const int exp = atoi(s + 1);
    char out[64];
    size_t n = 0;
    if (neg) out[n++] = '-';
    if (exp < -4 || exp >= 16) {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            for (size_t i = 1; i < nd; i++) out[n++] = digits[i];
        }
        n += (size_t)snprintf(out + n, sizeof out - n, "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
    } else if (exp < 0) {
        out[n++] = '0';
        out[n++] = '.';
        for (int i = -1; i > exp; i--) out[n++] = '0';
        for (size_t i = 0; i < nd; i++) out[n++] = digits[i];
    } else {
        for (int i = 0; i <= exp; i++) out[n++] = (size_t)i < nd ? digits[i] : '0';
        out[n++] = '.';
        if ((size_t)exp + 1 < nd)
            for (size_t i = (size_t)exp + 1; i < nd; i++) out[n++] = digits[i];
        else
            out[n++] = '0';
    }
    put(w, out, n);
}

static bool integer_text(const char *t, size_t len) {
    for (size_t i = 0; i < len; i++)
        if (t[i] == '.' || t[i] == 'e' || t[i] == 'E') return false;
    return true;
}

static void put_number(writer *w, const char *src, const adil_json *v) {
    const char *t = src + v->start;
    const size_t len = v->end - v->start;
    if (integer_text(t, len)) {
        if (!v->is_integer || v->integer > GRAMMAR_MAX_EXACT || v->integer < -GRAMMAR_MAX_EXACT) {
            w->ok = false; /* outside ±(2^53-1): no tool could get it exactly */
            return;
        }
        char out[32];
        put(w, out, (size_t)snprintf(out, sizeof out, "%lld", (long long)v->integer));
        return;
    }
    const double x = strtod(t, NULL);
    if (!isfinite(x) || fabs(x) > (double)GRAMMAR_MAX_EXACT) {
        w->ok = false;
        return;
    }
    put_float(w, x);
}

static void put_value(writer *w, const char *src, const adil_json *v) {
    switch (v->kind) {
    case ADIL_JSON_NULL:
        put(w, "null", 4);
        break;
    case ADIL_JSON_BOOL:
        put(w, v->boolean ? "true" : "false", v->boolean ? 4 : 5);
        break;
    case ADIL_JSON_NUMBER:
        put_number(w, src, v);
        break;
    case ADIL_JSON_STRING:
        put_string(w, v->str, v->str_len);
        break;
    case ADIL_JSON_ARRAY:
        put(w, "[", 1);
        for (size_t i = 0; i < v->n_items; i++) {
            if (i) put(w, ",", 1);
            put_value(w, src, &v->items[i]);
        }
        put(w, "]", 1);
        break;
    case ADIL_JSON_OBJECT:
        put(w, "{", 1);
        for (size_t i = 0; i < v->n_members; i++) {
            if (i) put(w, ",", 1);
            put_string(w, v->members[i].key, v->members[i].key_len);
            put(w, ":", 1);
            put_value(w, src, &v->members[i].value);
        }
        put(w, "}", 1);
        break;
    }
}

bool grammar_canonical(adil_grammar *g, const char *src, const struct adil_json *value, gtext *out) {
    writer w = {g, g->pool_len, true};
    put_value(&w, src, value);
    if (!w.ok) {
        g->pool_len = w.start;
        return false;
    }
    out->off = w.start;
    out->len = g->pool_len - w.start;
    return true;
}

bool grammar_string_text(adil_grammar *g, const char *s, size_t len, bool quotes, gtext *out) {
    writer w = {g, g->pool_len, true};
    put_string(&w, s, len);
    if (!w.ok) {
        g->pool_len = w.start;
        return false;
    }
    out->off = w.start + (quotes ? 0 : 1);
    out->len = g->pool_len - w.start - (quotes ? 0 : 2);
    return true;
}
