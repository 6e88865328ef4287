/*
 * strlex.h — the byte-by-byte lexer of a JSON string's content (after the
 * opening quote): UTF-8 checked as it comes (no overlong forms, no encoded
 * surrogates, nothing above U+10FFFF), escapes, and \u surrogate pairs (a
 * high half must be followed by a low half; a lone low half is refused).
 * Each step says whether the byte started a code point, so that callers
 * count lengths as Python's len() does (a surrogate pair is one).
 */
#ifndef ADIL_GRAMMAR_STRLEX_H
#define ADIL_GRAMMAR_STRLEX_H

#include "grammar_internal.h"

#include <string.h>

typedef enum lex_result {
    LEX_REJECT, /* the byte cannot come here */
    LEX_CHAR,   /* the byte starts a code point */
    LEX_MORE,   /* the byte continues one (UTF-8 or an escape) */
    LEX_CLOSE   /* the closing quote */
} lex_result;

enum {
    ESC_NONE = 0,
    ESC_BACKSLASH,            /* after '\' */
    ESC_U0,                   /* \u, then 4 hex digits: ESC_U0 .. ESC_U0 + 3 */
    ESC_WANT_BS = ESC_U0 + 4, /* after a high surrogate: '\' of the low half */
    ESC_WANT_U                /* ... then 'u' */
};

static inline int hex_value(uint8_t b) {
    if (b >= '0' && b <= '9') return b - '0';
    if (b >= 'a' && b <= 'f') return b - 'a' + 10;
    if (b >= 'A' && b <= 'F') return b - 'A' + 10;
    return -1;
}

/* A \u digit: checked as it comes so that no accepted prefix is a dead end
 * (a lone low surrogate is refused at its second digit). */
static inline lex_result lex_hex(strlex *s, uint8_t b) {
    const int v = hex_value(b);
    const int k = s->esc - ESC_U0;
    if (v < 0) return LEX_REJECT;
    const uint16_t acc = (uint16_t)(s->acc * 16 + v);
    if (k == 0 && s->high && v != 0xD) return LEX_REJECT;
    if (k == 1 && s->high && v < 0xC) return LEX_REJECT;
    if (k == 1 && !s->high && acc >= 0xDC && acc <= 0xDF) return LEX_REJECT; /* a lone low half */
    s->acc = acc;
    if (k < 3) {
        s->esc++;
        return LEX_MORE;
    }
    if (!s->high && acc >= 0xD800 && acc <= 0xDBFF) {
        s->high = acc;
        s->esc = ESC_WANT_BS;
    } else {
        s->high = 0;
        s->esc = ESC_NONE;
    }
    s->acc = 0;
    return LEX_MORE;
}

/* The continuation range after a UTF-8 lead byte; need 0 = not a lead byte. */
static inline void utf8_lead(uint8_t b, uint8_t *need, uint8_t *lo, uint8_t *hi) {
    *need = 0;
    *lo = 0x80;
    *hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
        *need = 1;
    else if (b >= 0xE0 && b <= 0xEF)
        *need = 2;
    else if (b >= 0xF0 && b <= 0xF4)
        *need = 3;
    if (b == 0xE0) *lo = 0xA0;
    if (b == 0xED) *hi = 0x9F;
    if (b == 0xF0) *lo = 0x90;
    if (b == 0xF4) *hi = 0x8F;
}

static inline lex_result lex_byte(strlex *s, uint8_t b, bool allow_escape) {
    if (s->need) {
        if (b < s->lo || b > s->hi) return LEX_REJECT;
        s->need--;
        s->lo = 0x80;
        s->hi = 0xBF;
        return LEX_MORE;
    }
    switch (s->esc) {
    case ESC_NONE:
        break;
    case ESC_BACKSLASH:
        if (b == 'u') {
            s->esc = ESC_U0;
            s->acc = 0;
            return LEX_MORE;
        }
        if (!strchr("\"\\/bfnrt", b) || b == 0) return LEX_REJECT;
        s->esc = ESC_NONE;
        return LEX_MORE;
    case ESC_WANT_BS:
        if (b != '\\') return LEX_REJECT;
        s->esc = ESC_WANT_U;
        return LEX_MORE;
    case ESC_WANT_U:
        if (b != 'u') return LEX_REJECT;
        s->esc = ESC_U0;
        s->acc = 0;
        return LEX_MORE;
    default:
        return lex_hex(s, b);
    }
    if (b == '"') return LEX_CLOSE;
    if (b == '\\') {
        if (!allow_escape) return LEX_REJECT;
        s->esc = ESC_BACKSLASH;
        return LEX_CHAR;
    }
    if (b < 0x20) return LEX_REJECT;
    if (b < 0x80) return LEX_CHAR;
    utf8_lead(b, &s->need, &s->lo, &s->hi);
    return s->need ? LEX_CHAR : LEX_REJECT;
}

/* True when the lexer stands between characters (no escape, no UTF-8 tail). */
static inline bool lex_clean(const strlex *s) { return s->esc == ESC_NONE && s->need == 0; }

#endif /* ADIL_GRAMMAR_STRLEX_H */
