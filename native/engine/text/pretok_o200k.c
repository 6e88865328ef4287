/*
 * pretok_o200k.c — the pre-tokenizer of OpenAI's o200k vocabulary ("gpt-4o":
 * gpt-oss, llama4, ...) and Mistral's tekken, as llama.cpp runs them.
 *
 * The tokenizer.json patterns split words at case changes with the Unicode
 * case classes ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]* then [\p{Ll}\p{Lm}\p{Lo}\p{M}]+).
 * llama.cpp's std::regex cannot ask for those, so it runs an adapted pattern
 * on text where every non-ASCII letter is the same byte:
 *
 *   [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+C?
 *   |[^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*C?
 *   |\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * with C = '[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD] (gpt-4o only)
 * and \p{N} instead of \p{N}{1,3} for tekken.  So "upper" is a letter other
 * than a-z and "lower" a letter other than A-Z: a non-ASCII letter is both,
 * and combining marks are not letters at all.  That adapted pattern, with
 * ECMAScript's backtracking, is what we copy (llama.cpp's token ids are the
 * reference, not the tokenizer.json's).
 */
#include "text/pretok_scan.h"

static bool is_upper(const adil_scan *s, size_t i) {
    uint32_t cp = adil_scan_cp(s, i);
    return adil_scan_letter(s, i) && !(cp >= 'a' && cp <= 'z');
}

static bool is_lower(const adil_scan *s, size_t i) {
    uint32_t cp = adil_scan_cp(s, i);
    return adil_scan_letter(s, i) && !(cp >= 'A' && cp <= 'Z');
}

/* Where the letters start: after the optional [^\r\n\p{L}\p{N}].  (Without
 * it the letters would have to start at i, which is then no letter.) */
static size_t letters_start(const adil_scan *s, size_t i) {
    bool prefix = adil_scan_in(s, i) && !adil_is_line_break(adil_scan_cp(s, i)) && !adil_scan_letter(s, i) &&
                  !adil_scan_number(s, i);
    return prefix ? i + 1 : i;
}

static size_t lower_run_end(const adil_scan *s, size_t j) {
    while (is_lower(s, j)) {
        j++;
    }
    return j;
}

/* upper* lower+ from p: the end, or 0.  upper* takes the whole upper run
 * and gives back letters until a lower one can follow: the letter after the
 * run when it is a-z, else the run's last non-ASCII letter (which then ends
 * the match, the letter after it being A-Z or no letter). */
static size_t upper_star_lower_plus(const adil_scan *s, size_t p) {
    size_t r = p;
    while (is_upper(s, r)) {
        r++;
    }
    if (is_lower(s, r)) {
        return lower_run_end(s, r);
    }
    for (size_t q = r; q > p; q--) {
        if (is_lower(s, q - 1)) {
            return q;
        }
    }
    return 0;
}

/* upper+ lower* from p: the end, or 0. */
static size_t upper_plus_lower_star(const adil_scan *s, size_t p) {
    size_t r = p;
    while (is_upper(s, r)) {
        r++;
    }
    return r > p ? lower_run_end(s, r) : 0;
}

/* The two word alternatives at i (with the contraction after them when
 * contractions), or 0. */
static size_t match_cased_word(const adil_scan *s, size_t i, bool contractions) {
    size_t p = letters_start(s, i);
    size_t end = upper_star_lower_plus(s, p);
    if (end == 0) {
        end = upper_plus_lower_star(s, p);
    }
    if (end == 0) {
        return 0;
    }
    if (contractions) {
        end += adil_pt_contraction(s, end, true);
    }
    return end - i;
}

static size_t match_o200k_like(const adil_scan *s, size_t i, bool contractions, size_t max_digits) {
    size_t m = match_cased_word(s, i, contractions);
    if (m == 0) {
        m = adil_pt_digits(s, i, max_digits);
    }
    if (m == 0) {
        m = adil_pt_punct(s, i, true);
    }
    if (m == 0) {
        m = adil_pt_blanks(s, i);
    }
    return m;
}

size_t adil_pt_gpt4o(const adil_scan *s, size_t i) { return match_o200k_like(s, i, true, 3); }

size_t adil_pt_tekken(const adil_scan *s, size_t i) { return match_o200k_like(s, i, false, 1); }
