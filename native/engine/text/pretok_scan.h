/*
 * pretok_scan.h — what the pre-tokenizer matchers (pretokenize.c,
 * pretok_o200k.c, pretok_deepseek.c) share: the text they scan, the classes
 * of its code points, and the alternatives several patterns have in common.
 *
 * A matcher answers "how long is the match that starts at i?" (0: none),
 * trying the pattern's alternatives in order with the backtracking of an
 * ECMAScript regex (what llama.cpp runs: std::regex, or its hand-written
 * copies of some patterns).  Positions past the end are nothing: no class
 * matches there and no lookahead sees past it.
 */
#ifndef ADIL_TEXT_PRETOK_SCAN_H
#define ADIL_TEXT_PRETOK_SCAN_H

#include "text/unicode.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct adil_scan {
    const uint32_t *cps; /* (n) code points */
    size_t n;
} adil_scan;

#define ADIL_SCAN_PAST_END 0xFFFFFFFFu

static inline uint32_t adil_scan_cp(const adil_scan *s, size_t i) {
    return i < s->n ? s->cps[i] : ADIL_SCAN_PAST_END;
}

static inline bool adil_scan_in(const adil_scan *s, size_t i) { return i < s->n; }

static inline bool adil_scan_is(const adil_scan *s, size_t i, adil_ucd_class c) {
    return i < s->n && adil_ucd_class_of(s->cps[i]) == c;
}

static inline bool adil_scan_letter(const adil_scan *s, size_t i) {
    return adil_scan_is(s, i, ADIL_UCD_LETTER);
}

static inline bool adil_scan_number(const adil_scan *s, size_t i) {
    return adil_scan_is(s, i, ADIL_UCD_NUMBER);
}

static inline bool adil_scan_space(const adil_scan *s, size_t i) {
    return i < s->n && adil_ucd_is_space(s->cps[i]);
}

static inline bool adil_is_line_break(uint32_t cp) { return cp == '\r' || cp == '\n'; }

/* One pattern of a pre-tokenizer.  A pre-tokenizer applies its patterns one
 * after the other, each to every piece the previous one left: the pattern's
 * matches, leftmost first, and the runs of text between them each become a
 * piece of their own (llama.cpp's unicode_regex_split). */
typedef struct adil_pt_stage {
    /* The match at i, or 0. */
    size_t (*match)(const adil_scan *s, size_t i);
    /* Or, for a pattern a per-position matcher would scan in quadratic time:
     * the first match at or after `from` (false when none). */
    bool (*find)(const adil_scan *s, size_t from, size_t *start, size_t *len);
    /* llama.cpp's hand-written matchers (gpt2, llama3, qwen2) make every
     * unmatched character a piece alone; a regex keeps runs of them together. */
    bool lone_fallback;
} adil_pt_stage;

/* Length of a contraction 's 't 're 've 'm 'll 'd at i (in any case when
 * any_case), or 0. */
size_t adil_pt_contraction(const adil_scan *s, size_t i, bool any_case);

/* \p{N}{1,max_digits} at i, or 0. */
size_t adil_pt_digits(const adil_scan *s, size_t i, size_t max_digits);

/* " ?[^\s\p{L}\p{N}]+[\r\n]*" at i (with '/' among the trailing characters
 * when slash: "[\r\n/]*"), or 0. */
size_t adil_pt_punct(const adil_scan *s, size_t i, bool slash);

/* "\s*[\r\n]+|\s+(?!\S)|\s+" at i, or 0 when i is not blank. */
size_t adil_pt_blanks(const adil_scan *s, size_t i);

/* ---- the patterns of pretok_o200k.c and pretok_deepseek.c ---------------- */

size_t adil_pt_gpt4o(const adil_scan *s, size_t i);
size_t adil_pt_tekken(const adil_scan *s, size_t i);

extern const adil_pt_stage adil_pt_deepseek_llm[6];
extern const adil_pt_stage adil_pt_deepseek_coder[5];
extern const adil_pt_stage adil_pt_deepseek_v3[3];

#endif /* ADIL_TEXT_PRETOK_SCAN_H */
