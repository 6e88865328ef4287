/*
 * pretokenize.c — the pre-tokenizer patterns of the gpt2 model, by hand.
 *
 * llama-3 and qwen2 split text with (case-insensitive contractions aside):
 *
 *   's|'t|'re|'ve|'m|'ll|'d          contractions
 *   [^\r\n\p{L}\p{N}]?\p{L}+          a word, with one leading non-letter
 *   \p{N}{1,3}   (llama-3)            numbers in groups of up to three digits
 *   \p{N}        (qwen2)              or one digit at a time
 *    ?[^\s\p{L}\p{N}]+[\r\n]*         punctuation runs, with a leading space
 *   \s*[\r\n]+                        line breaks with the blanks before them
 *   \s+(?!\S)                         blanks not followed by a non-blank
 *   \s+                               other blanks
 *
 * smollm (llama.cpp's LLAMA_VOCAB_PRE_TYPE_SMOLLM, like starcoder) applies two
 * patterns one after the other: \p{N} makes every digit a word of its own,
 * then GPT-2's pattern splits each run between digits on its own, the run's
 * end counting as the end of the text:
 *
 *   's|'t|'re|'ve|'m|'ll|'d          contractions, lower case only
 *    ?\p{L}+| ?\p{N}+                 letters or digits, with a leading space
 *    ?[^\s\p{L}\p{N}]+               punctuation runs, with a leading space
 *   \s+(?!\S)|\s+                     blanks as above (no line-break rule)
 *
 * We scan code points once, trying the alternatives in that order at each
 * position, exactly as llama.cpp's hand-written matchers do (their behaviour,
 * not a regex engine's, is the reference).
 */
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

/* What the matcher asks of a position; positions past the end are nothing. */
typedef struct scan {
    const uint32_t *cps;
    size_t n;
} scan;

#define PAST_END 0xFFFFFFFFu

static uint32_t cp_at(const scan *s, size_t i) { return i < s->n ? s->cps[i] : PAST_END; }

static bool in_range(const scan *s, size_t i) { return i < s->n; }

static bool is_letter(const scan *s, size_t i) {
    return i < s->n && adil_ucd_class_of(s->cps[i]) == ADIL_UCD_LETTER;
}

static bool is_number(const scan *s, size_t i) {
    return i < s->n && adil_ucd_class_of(s->cps[i]) == ADIL_UCD_NUMBER;
}

static bool is_space(const scan *s, size_t i) { return i < s->n && adil_ucd_is_space(s->cps[i]); }

static bool is_line_break(uint32_t cp) { return cp == '\r' || cp == '\n'; }

static uint32_t ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

/* Length of a contraction ('s 't 'm 'd 're 've 'll; in any case when
 * any_case) at i, or 0. */
static size_t match_contraction(const scan *s, size_t i, bool any_case) {
    if (cp_at(s, i) != '\'' || !in_range(s, i + 1)) {
        return 0;
    }
    uint32_t a = any_case ? ascii_lower(cp_at(s, i + 1)) : cp_at(s, i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        return 2;
    }
    if (!in_range(s, i + 2)) {
        return 0;
    }
    uint32_t b = any_case ? ascii_lower(cp_at(s, i + 2)) : cp_at(s, i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        return 3;
    }
    return 0;
}

/* [^\r\n\p{L}\p{N}]?\p{L}+ at i, or 0. */
static size_t match_word(const scan *s, size_t i) {
    uint32_t cp = cp_at(s, i);
    if (is_line_break(cp) || is_number(s, i)) {
        return 0;
    }
    if (!is_letter(s, i) && !is_letter(s, i + 1)) {
        return 0;
    }
    size_t j = i + 1;
    while (is_letter(s, j)) {
        j++;
    }
    return j - i;
}

/* \p{N}{1,3} (max_digits 3) or \p{N} (max_digits 1) at i, or 0. */
static size_t match_number(const scan *s, size_t i, size_t max_digits) {
    size_t j = i;
    while (j - i < max_digits && is_number(s, j)) {
        j++;
    }
    return j - i;
}

/* " ?[^\s\p{L}\p{N}]+[\r\n]*" at i, or 0. */
static size_t match_punct(const scan *s, size_t i) {
    size_t j = i + (cp_at(s, i) == ' ' ? 1 : 0);
    /* The first character after the optional space must be punctuation; a
     * lone space at the very end also ends up here (as in llama.cpp). */
    if (is_space(s, j) || is_letter(s, j) || is_number(s, j)) {
        return 0;
    }
    while (in_range(s, j) && !is_space(s, j) && !is_letter(s, j) && !is_number(s, j)) {
        j++;
    }
    while (is_line_break(cp_at(s, j))) {
        j++;
    }
    return j - i;
}

/* \s+(?!\S)|\s+ over the n blanks at i. */
static size_t blank_run(const scan *s, size_t i, size_t n) {
    if (n > 1 && in_range(s, i + n)) {
        return n - 1; /* \s+(?!\S): leave one blank for the next word */
    }
    return n; /* \s+ */
}

/* The three blank alternatives at i, or 0 when i is not blank. */
static size_t match_blanks(const scan *s, size_t i) {
    size_t n = 0, end_of_breaks = 0;
    while (is_space(s, i + n)) {
        if (is_line_break(cp_at(s, i + n))) {
            end_of_breaks = i + n + 1;
        }
        n++;
    }
    if (end_of_breaks > 0) {
        return end_of_breaks - i; /* \s*[\r\n]+ */
    }
    return blank_run(s, i, n);
}

static size_t match_at(const scan *s, size_t i, size_t max_digits) {
    size_t m = match_contraction(s, i, true);
    if (m == 0) {
        m = match_word(s, i);
    }
    if (m == 0) {
        m = match_number(s, i, max_digits);
    }
    if (m == 0) {
        m = match_punct(s, i);
    }
    if (m == 0) {
        m = match_blanks(s, i);
    }
    return m > 0 ? m : 1; /* nothing matched: the character alone */
}

/* ---- GPT-2's pattern (smollm) ------------------------------------------------- */

typedef enum cp_class { CLS_END, CLS_BLANK, CLS_LETTER, CLS_NUMBER, CLS_OTHER } cp_class;

static cp_class class_at(const scan *s, size_t i) {
    if (!in_range(s, i)) {
        return CLS_END;
    }
    return is_space(s, i)    ? CLS_BLANK
           : is_letter(s, i) ? CLS_LETTER
           : is_number(s, i) ? CLS_NUMBER
                             : CLS_OTHER;
}

/* " ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+" at i: the class of the character
 * after the optional space decides which, or 0. */
static size_t match_class_run(const scan *s, size_t i) {
    size_t j = i + (cp_at(s, i) == ' ' ? 1 : 0);
    const cp_class c = class_at(s, j);
    if (c == CLS_END || c == CLS_BLANK) {
        return 0;
    }
    while (class_at(s, j) == c) {
        j++;
    }
    return j - i;
}

static size_t match_gpt2_at(const scan *s, size_t i) {
    size_t m = match_contraction(s, i, false);
    if (m == 0) {
        m = match_class_run(s, i);
    }
    if (m == 0) {
        size_t n = 0;
        while (is_space(s, i + n)) {
            n++;
        }
        m = blank_run(s, i, n);
    }
    return m > 0 ? m : 1;
}

/* smollm: each digit alone; GPT-2's pattern within each run between them. */
static size_t split_smollm(const uint32_t *cps, size_t n, size_t *lens) {
    const scan all = {.cps = cps, .n = n};
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && !is_number(&all, end)) {
            end++;
        }
        const scan run = {.cps = cps + i, .n = end - i};
        for (size_t k = 0; k < run.n;) {
            size_t m = match_gpt2_at(&run, k);
            lens[w++] = m;
            k += m;
        }
        if (end < n) {
            lens[w++] = 1; /* the digit */
            end++;
        }
        i = end;
    }
    return w;
}

void adil_pretokenize(adil_pretok kind, const uint32_t *cps, size_t n, size_t *lens, size_t *n_words) {
    if (kind == ADIL_PRETOK_SMOLLM) {
        *n_words = split_smollm(cps, n, lens);
        return;
    }
    scan s = {.cps = cps, .n = n};
    size_t max_digits = kind == ADIL_PRETOK_LLAMA3 ? 3 : 1;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        size_t m = match_at(&s, i, max_digits);
        lens[w++] = m;
        i += m;
    }
    *n_words = w;
}
