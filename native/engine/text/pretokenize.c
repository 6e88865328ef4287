/*
 * pretokenize.c — splitting text into words before BPE: the driver that runs
 * a pre-tokenizer's patterns one after the other, the table of which patterns
 * each pre-tokenizer has, and the patterns of the gpt2 family by hand.
 *
 * llama-3, qwen2 and qwen35 split text with (case-insensitive contractions
 * aside):
 *
 *   's|'t|'re|'ve|'m|'ll|'d          contractions
 *   [^\r\n\p{L}\p{N}]?\p{L}+          a word, with one leading non-letter
 *                                     (qwen35: [\p{L}\p{M}]+, marks in words)
 *   \p{N}{1,3}   (llama-3)            numbers in groups of up to three digits
 *   \p{N}        (qwen2, qwen35)      or one digit at a time
 *    ?[^\s\p{L}\p{N}]+[\r\n]*         punctuation runs, with a leading space
 *                                     (qwen35: no marks in them either)
 *   \s*[\r\n]+                        line breaks with the blanks before them
 *   \s+(?!\S)                         blanks not followed by a non-blank
 *   \s+                               other blanks
 *
 * GPT-2 (gpt-2, phi-2, ...) splits with
 *
 *   's|'t|'re|'ve|'m|'ll|'d          contractions, lower case only
 *    ?\p{L}+| ?\p{N}+                 letters or digits, with a leading space
 *    ?[^\s\p{L}\p{N}]+               punctuation runs, with a leading space
 *   \s+(?!\S)                         blanks not followed by a non-blank
 *
 * and smollm (llama.cpp's LLAMA_VOCAB_PRE_TYPE_SMOLLM, like starcoder) first
 * makes every digit a piece of its own (\p{N}), then splits each run between
 * digits with GPT-2's pattern, the run's end counting as the end of the text.
 * llama.cpp's "default" (a gpt2 file without tokenizer.ggml.pre) has four
 * patterns: [\p{P}\$\+<=>\^~\|]+, GPT-2's, \p{N}+, then [0-9][0-9][0-9].
 *
 * The llama-3, qwen2, qwen35 and GPT-2 patterns copy llama.cpp's
 * hand-written matchers (an unmatched character is a word alone); default's
 * other three, gpt-4o/tekken (pretok_o200k.c) and the deepseek family
 * (pretok_deepseek.c) copy what its std::regex does (unmatched runs stay
 * whole).
 */
#include "text/pretok_scan.h"
#include "text/tokenizer_internal.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- patterns every family shares ------------------------------------------- */

static uint32_t ascii_lower(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') ? cp + 32 : cp; }

size_t adil_pt_contraction(const adil_scan *s, size_t i, bool any_case) {
    if (adil_scan_cp(s, i) != '\'' || !adil_scan_in(s, i + 1)) {
        return 0;
    }
    uint32_t a = any_case ? ascii_lower(adil_scan_cp(s, i + 1)) : adil_scan_cp(s, i + 1);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') {
        return 2;
    }
    if (!adil_scan_in(s, i + 2)) {
        return 0;
    }
    uint32_t b = any_case ? ascii_lower(adil_scan_cp(s, i + 2)) : adil_scan_cp(s, i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) {
        return 3;
    }
    return 0;
}

size_t adil_pt_digits(const adil_scan *s, size_t i, size_t max_digits) {
    size_t j = i;
    while (j - i < max_digits && adil_scan_number(s, j)) {
        j++;
    }
    return j - i;
}

static bool is_punct_char(const adil_scan *s, size_t i) {
    return adil_scan_in(s, i) && !adil_scan_space(s, i) && !adil_scan_letter(s, i) && !adil_scan_number(s, i);
}

size_t adil_pt_punct(const adil_scan *s, size_t i, bool slash) {
    size_t j = i + (adil_scan_cp(s, i) == ' ' ? 1 : 0);
    if (!is_punct_char(s, j)) {
        return 0; /* a lone space before a blank, letter or the end: the blanks' */
    }
    while (is_punct_char(s, j)) {
        j++;
    }
    for (uint32_t cp = adil_scan_cp(s, j); adil_is_line_break(cp) || (slash && cp == '/');
         cp = adil_scan_cp(s, j)) {
        j++;
    }
    return j - i;
}

/* \s+(?!\S)|\s+ over the n blanks at i. */
static size_t blank_run(const adil_scan *s, size_t i, size_t n) {
    if (n > 1 && adil_scan_in(s, i + n)) {
        return n - 1; /* \s+(?!\S): leave one blank for the next word */
    }
    return n; /* \s+ */
}

size_t adil_pt_blanks(const adil_scan *s, size_t i) {
    size_t n = 0, end_of_breaks = 0;
    while (adil_scan_space(s, i + n)) {
        if (adil_is_line_break(adil_scan_cp(s, i + n))) {
            end_of_breaks = i + n + 1;
        }
        n++;
    }
    if (end_of_breaks > 0) {
        return end_of_breaks - i; /* \s*[\r\n]+ */
    }
    return blank_run(s, i, n);
}

/* ---- llama-3 and qwen2 ---------------------------------------------------------- */

static bool is_word_char(const adil_scan *s, size_t i, bool marks) {
    return adil_scan_letter(s, i) || (marks && adil_scan_is(s, i, ADIL_UCD_MARK));
}

/* [^\r\n\p{L}\p{N}]?\p{L}+ at i (with marks as letters when marks), or 0. */
static size_t match_word(const adil_scan *s, size_t i, bool marks) {
    if (adil_is_line_break(adil_scan_cp(s, i)) || adil_scan_number(s, i)) {
        return 0;
    }
    if (!is_word_char(s, i, marks) && !is_word_char(s, i + 1, marks)) {
        return 0;
    }
    size_t j = i + 1;
    while (is_word_char(s, j, marks)) {
        j++;
    }
    return j - i;
}

/*  ?[^\s\p{L}\p{M}\p{N}]+[\r\n]* (qwen35's punctuation) at i, or 0. */
static size_t match_punct_no_marks(const adil_scan *s, size_t i) {
    size_t j = i + (adil_scan_cp(s, i) == ' ' ? 1 : 0);
    size_t k = j;
    while (adil_scan_in(s, k) && !adil_scan_space(s, k) && !is_word_char(s, k, true) &&
           !adil_scan_number(s, k)) {
        k++;
    }
    if (k == j) {
        return 0;
    }
    while (adil_is_line_break(adil_scan_cp(s, k))) {
        k++;
    }
    return k - i;
}

static size_t match_llama_like(const adil_scan *s, size_t i, size_t max_digits, bool marks) {
    size_t m = adil_pt_contraction(s, i, true);
    if (m == 0) {
        m = match_word(s, i, marks);
    }
    if (m == 0) {
        m = adil_pt_digits(s, i, max_digits);
    }
    if (m == 0) {
        m = marks ? match_punct_no_marks(s, i) : adil_pt_punct(s, i, false);
    }
    if (m == 0) {
        m = adil_pt_blanks(s, i);
    }
    return m;
}

static size_t match_llama3(const adil_scan *s, size_t i) { return match_llama_like(s, i, 3, false); }

static size_t match_qwen2(const adil_scan *s, size_t i) { return match_llama_like(s, i, 1, false); }

static size_t match_qwen35(const adil_scan *s, size_t i) { return match_llama_like(s, i, 1, true); }

/* ---- GPT-2 ------------------------------------------------------------------------ */

typedef enum cp_class { CLS_END, CLS_BLANK, CLS_LETTER, CLS_NUMBER, CLS_OTHER } cp_class;

static cp_class class_at(const adil_scan *s, size_t i) {
    if (!adil_scan_in(s, i)) {
        return CLS_END;
    }
    return adil_scan_space(s, i)    ? CLS_BLANK
           : adil_scan_letter(s, i) ? CLS_LETTER
           : adil_scan_number(s, i) ? CLS_NUMBER
                                    : CLS_OTHER;
}

/* " ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+" at i: the class of the character
 * after the optional space decides which, or 0. */
static size_t match_class_run(const adil_scan *s, size_t i) {
    size_t j = i + (adil_scan_cp(s, i) == ' ' ? 1 : 0);
    const cp_class c = class_at(s, j);
    if (c == CLS_END || c == CLS_BLANK) {
        return 0;
    }
    while (class_at(s, j) == c) {
        j++;
    }
    return j - i;
}

static size_t match_gpt2(const adil_scan *s, size_t i) {
    size_t m = adil_pt_contraction(s, i, false);
    if (m == 0) {
        m = match_class_run(s, i);
    }
    if (m == 0) {
        size_t n = 0;
        while (adil_scan_space(s, i + n)) {
            n++;
        }
        m = blank_run(s, i, n);
    }
    return m;
}

static size_t match_one_digit(const adil_scan *s, size_t i) { return adil_pt_digits(s, i, 1); }

/* ---- llama.cpp's default -------------------------------------------------------- */

static bool is_default_punct(const adil_scan *s, size_t i) {
    uint32_t cp = adil_scan_cp(s, i);
    return adil_scan_is(s, i, ADIL_UCD_PUNCTUATION) || cp == '$' || cp == '+' || cp == '<' || cp == '=' ||
           cp == '>' || cp == '^' || cp == '~' || cp == '|';
}

/* [\p{P}\$\+<=>\^~\|]+ */
static size_t match_default_punct(const adil_scan *s, size_t i) {
    size_t j = i;
    while (is_default_punct(s, j)) {
        j++;
    }
    return j - i;
}

/* \p{N}+ */
static size_t match_numbers(const adil_scan *s, size_t i) { return adil_pt_digits(s, i, SIZE_MAX); }

/* [0-9][0-9][0-9] */
static size_t match_three_ascii_digits(const adil_scan *s, size_t i) {
    for (size_t k = 0; k < 3; k++) {
        uint32_t cp = adil_scan_cp(s, i + k);
        if (cp < '0' || cp > '9') {
            return 0;
        }
    }
    return 3;
}

/* ---- the pre-tokenizers ------------------------------------------------------------- */

static const adil_pt_stage k_llama3[] = {{.match = match_llama3, .lone_fallback = true}};
static const adil_pt_stage k_qwen2[] = {{.match = match_qwen2, .lone_fallback = true}};
static const adil_pt_stage k_qwen35[] = {{.match = match_qwen35, .lone_fallback = true}};
static const adil_pt_stage k_gpt2[] = {{.match = match_gpt2, .lone_fallback = true}};
static const adil_pt_stage k_smollm[] = {{.match = match_one_digit},
                                         {.match = match_gpt2, .lone_fallback = true}};
static const adil_pt_stage k_default[] = {{.match = match_default_punct},
                                          {.match = match_gpt2, .lone_fallback = true},
                                          {.match = match_numbers},
                                          {.match = match_three_ascii_digits}};
static const adil_pt_stage k_gpt4o[] = {{.match = adil_pt_gpt4o}};
static const adil_pt_stage k_tekken[] = {{.match = adil_pt_tekken}};

typedef struct pt_def {
    const adil_pt_stage *stages;
    size_t n_stages;
} pt_def;

static pt_def def_of(adil_pretok kind) {
    switch (kind) {
    case ADIL_PRETOK_LLAMA3:
        return (pt_def){k_llama3, N_OF(k_llama3)};
    case ADIL_PRETOK_QWEN2:
        return (pt_def){k_qwen2, N_OF(k_qwen2)};
    case ADIL_PRETOK_QWEN35:
        return (pt_def){k_qwen35, N_OF(k_qwen35)};
    case ADIL_PRETOK_SMOLLM:
        return (pt_def){k_smollm, N_OF(k_smollm)};
    case ADIL_PRETOK_GPT2:
        return (pt_def){k_gpt2, N_OF(k_gpt2)};
    case ADIL_PRETOK_DEFAULT:
        return (pt_def){k_default, N_OF(k_default)};
    case ADIL_PRETOK_GPT4O:
        return (pt_def){k_gpt4o, N_OF(k_gpt4o)};
    case ADIL_PRETOK_TEKKEN:
        return (pt_def){k_tekken, N_OF(k_tekken)};
    case ADIL_PRETOK_DEEPSEEK_LLM:
        return (pt_def){adil_pt_deepseek_llm, N_OF(adil_pt_deepseek_llm)};
    case ADIL_PRETOK_DEEPSEEK_CODER:
        return (pt_def){adil_pt_deepseek_coder, N_OF(adil_pt_deepseek_coder)};
    case ADIL_PRETOK_DEEPSEEK_V3:
        return (pt_def){adil_pt_deepseek_v3, N_OF(adil_pt_deepseek_v3)};
    case ADIL_PRETOK_NONE:
        break;
    }
    return (pt_def){NULL, 0}; /* no pattern: the whole text is one word */
}

/* ---- the driver ------------------------------------------------------------------------ */

/* The first match of `st` at or after `from` in s. */
static bool next_match(const adil_pt_stage *st, const adil_scan *s, size_t from, size_t *start, size_t *len) {
    if (st->find) {
        return st->find(s, from, start, len);
    }
    for (size_t i = from; i < s->n; i++) {
        size_t m = st->match(s, i);
        if (m == 0 && st->lone_fallback) {
            m = 1;
        }
        if (m > 0) {
            *start = i;
            *len = m;
            return true;
        }
    }
    return false;
}

typedef struct pt_out {
    size_t *lens; /* (n code points) room for one word per code point */
    size_t n;
} pt_out;

/* Splits cps[0..n) with stages[0], then each piece with the stages after
 * it; the last stage's pieces are the words.  Pieces go on depth first, so
 * the words come out in text order (and the depth is the stage count). */
static void split(const adil_pt_stage *stages, size_t n_stages, const uint32_t *cps, size_t n, pt_out *o) {
    if (n == 0) {
        return;
    }
    if (n_stages == 0) {
        o->lens[o->n++] = n;
        return;
    }
    const adil_scan s = {.cps = cps, .n = n};
    size_t done = 0, start, len;
    while (done < n && next_match(&stages[0], &s, done, &start, &len)) {
        split(stages + 1, n_stages - 1, cps + done, start - done, o); /* the run before it */
        split(stages + 1, n_stages - 1, cps + start, len, o);
        done = start + len;
    }
    split(stages + 1, n_stages - 1, cps + done, n - done, o);
}

void adil_pretokenize(adil_pretok kind, const uint32_t *cps, size_t n, size_t *lens, size_t *n_words) {
    pt_def def = def_of(kind);
    pt_out o = {.lens = lens, .n = 0};
    split(def.stages, def.n_stages, cps, n, &o);
    *n_words = o.n;
}
