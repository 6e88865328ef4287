/*
 * pretok_deepseek.c — the pre-tokenizers of the DeepSeek family, as
 * llama.cpp runs them (std::regex, one pattern after the other):
 *
 * deepseek-llm:    [\r\n]
 *                  \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+      letters of the cased scripts
 *                  \s?[!-/:-~！-／：-～‘-‟　-。]+  ASCII and full-width punctuation
 *                  \s+$                            blanks at the end of a piece
 *                  [一-龥ࠀ-一가-퟿]+               CJK and other BMP scripts
 *                  \p{N}+
 * deepseek-coder:  [\r\n]  \s?\p{L}+  \s?\p{P}+  [一-龥ࠀ-一가-퟿]+  \p{N}
 * deepseek-v3:     \p{N}{1,3}
 *                  [一-龥぀-ゟ゠-ヿ]+               CJK, hiragana, katakana
 *                  [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
 *                  |[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*
 *                  |\s*[\r\n]+|\s+(?!\S)|\s+
 *
 * llama.cpp gives the patterns without \p{..} to std::wregex with every
 * non-ASCII blank replaced by U+000B, so a blank is never in a listed range
 * (U+3000 "　" is not punctuation here): in_ranges() below says so too.
 */
#include "text/pretok_scan.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

typedef struct cp_range {
    uint32_t first, last;
} cp_range;

/* cp is in one of ranges[0..n) (sorted) and is no blank. */
static bool in_ranges(const cp_range *ranges, size_t n, const adil_scan *s, size_t i) {
    if (!adil_scan_in(s, i) || adil_scan_space(s, i)) {
        return false;
    }
    uint32_t cp = s->cps[i];
    for (size_t k = 0; k < n && ranges[k].first <= cp; k++) {
        if (cp <= ranges[k].last) {
            return true;
        }
    }
    return false;
}

/* The end of the run of code points in the ranges from j. */
static size_t ranges_run_end(const cp_range *ranges, size_t n, const adil_scan *s, size_t j) {
    while (in_ranges(ranges, n, s, j)) {
        j++;
    }
    return j;
}

/* "\s?[set]+" at i: the set as ranges or as a class test. */
static size_t space_then_run(const adil_scan *s, size_t i, bool (*in_set)(const adil_scan *, size_t)) {
    size_t j = i;
    if (adil_scan_space(s, i) && in_set(s, i + 1)) {
        j = i + 1;
    } else if (!in_set(s, i)) {
        return 0;
    }
    while (in_set(s, j)) {
        j++;
    }
    return j - i;
}

/* ---- shared patterns ------------------------------------------------------- */

/* [\r\n] */
static size_t match_line_break(const adil_scan *s, size_t i) {
    return adil_is_line_break(adil_scan_cp(s, i)) ? 1 : 0;
}

/* [一-龥ࠀ-一가-퟿]+ */
static const cp_range k_cjk_wide[] = {{0x0800, 0x4E00}, {0x4E00, 0x9FA5}, {0xAC00, 0xD7FF}};

static size_t match_cjk_wide(const adil_scan *s, size_t i) {
    return ranges_run_end(k_cjk_wide, N_OF(k_cjk_wide), s, i) - i;
}

/* ---- deepseek-llm ------------------------------------------------------------ */

/* The letters of deepseek-llm's second pattern (tokenizer.json's ranges,
 * adjacent ones joined). */
static const cp_range k_llm_letters[] = {
    {0x0041, 0x005A},   {0x0061, 0x007A},   {0x00B5, 0x00B5},   {0x00C0, 0x00D6},   {0x00D8, 0x00F6},
    {0x00F8, 0x01BA},   {0x01BC, 0x01BF},   {0x01C4, 0x0293},   {0x0295, 0x02AF},   {0x0370, 0x0373},
    {0x0376, 0x0377},   {0x037B, 0x037D},   {0x037F, 0x037F},   {0x0386, 0x0386},   {0x0388, 0x038A},
    {0x038C, 0x038C},   {0x038E, 0x03A1},   {0x03A3, 0x03F5},   {0x03F7, 0x0481},   {0x048A, 0x052F},
    {0x0531, 0x0556},   {0x10A0, 0x10C5},   {0x13A0, 0x13F5},   {0x13F8, 0x13FD},   {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF},   {0x1D00, 0x1D2B},   {0x1D6B, 0x1D77},   {0x1D79, 0x1D9A},   {0x1E00, 0x1F15},
    {0x1F18, 0x1F1D},   {0x1F20, 0x1F45},   {0x1F48, 0x1F4D},   {0x1F50, 0x1F57},   {0x1F59, 0x1F59},
    {0x1F5B, 0x1F5B},   {0x1F5D, 0x1F5D},   {0x1F5F, 0x1F7D},   {0x1F80, 0x1FB4},   {0x1FB6, 0x1FBC},
    {0x1FBE, 0x1FBE},   {0x1FC2, 0x1FC4},   {0x1FC6, 0x1FCC},   {0x1FD0, 0x1FD3},   {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC},   {0x1FF2, 0x1FF4},   {0x1FF6, 0x1FFC},   {0x2102, 0x2102},   {0x2107, 0x2107},
    {0x210A, 0x2113},   {0x2115, 0x2115},   {0x2119, 0x211D},   {0x2124, 0x2124},   {0x2126, 0x2126},
    {0x2128, 0x2128},   {0x212A, 0x212D},   {0x212F, 0x2134},   {0x2139, 0x2139},   {0x213C, 0x213F},
    {0x2145, 0x2149},   {0x214E, 0x214E},   {0x2183, 0x2184},   {0x2C00, 0x2C7B},   {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE},   {0x2CF2, 0x2CF3},   {0xA640, 0xA66D},   {0xA680, 0xA69B},   {0xA722, 0xA76F},
    {0xA771, 0xA787},   {0xA78B, 0xA78E},   {0xAB70, 0xABBF},   {0xFB00, 0xFB06},   {0xFB13, 0xFB17},
    {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
};

/* !-/ :-~ ！-／ ：-～ ‘-‟ 　-。 (sorted) */
static const cp_range k_llm_punct[] = {{0x0021, 0x002F}, {0x003A, 0x007E}, {0x2018, 0x201F},
                                       {0x3000, 0x3002}, {0xFF01, 0xFF0F}, {0xFF1A, 0xFF5E}};

static bool is_llm_letter(const adil_scan *s, size_t i) {
    return in_ranges(k_llm_letters, N_OF(k_llm_letters), s, i);
}

static bool is_llm_punct(const adil_scan *s, size_t i) {
    return in_ranges(k_llm_punct, N_OF(k_llm_punct), s, i);
}

static size_t match_llm_letters(const adil_scan *s, size_t i) { return space_then_run(s, i, is_llm_letter); }

static size_t match_llm_punct(const adil_scan *s, size_t i) { return space_then_run(s, i, is_llm_punct); }

/* \s+$: the blanks that end the piece (found once, not tried at every
 * blank: that would be quadratic in a long run of them). */
static bool find_trailing_blanks(const adil_scan *s, size_t from, size_t *start, size_t *len) {
    size_t t = s->n;
    while (t > from && adil_scan_space(s, t - 1)) {
        t--;
    }
    if (t == s->n) {
        return false;
    }
    *start = t;
    *len = s->n - t;
    return true;
}

/* \p{N}+ */
static size_t match_numbers(const adil_scan *s, size_t i) { return adil_pt_digits(s, i, SIZE_MAX); }

const adil_pt_stage adil_pt_deepseek_llm[6] = {
    {.match = match_line_break},    {.match = match_llm_letters}, {.match = match_llm_punct},
    {.find = find_trailing_blanks}, {.match = match_cjk_wide},    {.match = match_numbers},
};

/* ---- deepseek-coder ---------------------------------------------------------- */

static bool is_letter(const adil_scan *s, size_t i) { return adil_scan_letter(s, i); }

static bool is_punctuation(const adil_scan *s, size_t i) { return adil_scan_is(s, i, ADIL_UCD_PUNCTUATION); }

static size_t match_space_letters(const adil_scan *s, size_t i) { return space_then_run(s, i, is_letter); }

static size_t match_space_punctuation(const adil_scan *s, size_t i) {
    return space_then_run(s, i, is_punctuation);
}

static size_t match_one_number(const adil_scan *s, size_t i) { return adil_pt_digits(s, i, 1); }

const adil_pt_stage adil_pt_deepseek_coder[5] = {
    {.match = match_line_break}, {.match = match_space_letters}, {.match = match_space_punctuation},
    {.match = match_cjk_wide},   {.match = match_one_number},
};

/* ---- deepseek-v3 --------------------------------------------------------------- */

static size_t match_three_numbers(const adil_scan *s, size_t i) { return adil_pt_digits(s, i, 3); }

/* [一-龥぀-ゟ゠-ヿ]+ */
static const cp_range k_cjk_kana[] = {{0x3040, 0x309F}, {0x30A0, 0x30FF}, {0x4E00, 0x9FA5}};

static size_t match_cjk_kana(const adil_scan *s, size_t i) {
    return ranges_run_end(k_cjk_kana, N_OF(k_cjk_kana), s, i) - i;
}

static bool is_ascii_punct(uint32_t cp) {
    return (cp >= 0x21 && cp <= 0x2F) || (cp >= 0x3A && cp <= 0x40) || (cp >= 0x5B && cp <= 0x60) ||
           (cp >= 0x7B && cp <= 0x7E);
}

static bool is_ascii_letter(uint32_t cp) { return (cp >= 'A' && cp <= 'Z') || (cp >= 'a' && cp <= 'z'); }

/* [!"#...~][A-Za-z]+ */
static size_t match_punct_ascii_word(const adil_scan *s, size_t i) {
    if (!is_ascii_punct(adil_scan_cp(s, i)) || !is_ascii_letter(adil_scan_cp(s, i + 1))) {
        return 0;
    }
    size_t j = i + 1;
    while (is_ascii_letter(adil_scan_cp(s, j))) {
        j++;
    }
    return j - i;
}

static bool is_letter_or_mark(const adil_scan *s, size_t i) {
    return adil_scan_letter(s, i) || adil_scan_is(s, i, ADIL_UCD_MARK);
}

static bool is_punct_or_symbol(const adil_scan *s, size_t i) {
    return adil_scan_is(s, i, ADIL_UCD_PUNCTUATION) || adil_scan_is(s, i, ADIL_UCD_SYMBOL);
}

/* [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+: a mark may be the prefix or the
 * first of the letters (it is the prefix when letters follow it). */
static size_t match_marked_word(const adil_scan *s, size_t i) {
    bool prefix = adil_scan_in(s, i) && !adil_is_line_break(adil_scan_cp(s, i)) && !adil_scan_letter(s, i) &&
                  !is_punct_or_symbol(s, i);
    size_t j = i;
    if (prefix && is_letter_or_mark(s, i + 1)) {
        j = i + 1;
    } else if (!is_letter_or_mark(s, i)) {
        return 0;
    }
    while (is_letter_or_mark(s, j)) {
        j++;
    }
    return j - i;
}

/*  ?[\p{P}\p{S}]+[\r\n]* */
static size_t match_space_punct_symbols(const adil_scan *s, size_t i) {
    size_t j = i + (adil_scan_cp(s, i) == ' ' ? 1 : 0);
    if (!is_punct_or_symbol(s, j)) {
        return 0;
    }
    while (is_punct_or_symbol(s, j)) {
        j++;
    }
    while (adil_is_line_break(adil_scan_cp(s, j))) {
        j++;
    }
    return j - i;
}

static size_t match_v3_words(const adil_scan *s, size_t i) {
    size_t m = match_punct_ascii_word(s, i);
    if (m == 0) {
        m = match_marked_word(s, i);
    }
    if (m == 0) {
        m = match_space_punct_symbols(s, i);
    }
    if (m == 0) {
        m = adil_pt_blanks(s, i);
    }
    return m;
}

const adil_pt_stage adil_pt_deepseek_v3[3] = {
    {.match = match_three_numbers},
    {.match = match_cjk_kana},
    {.match = match_v3_words},
};
