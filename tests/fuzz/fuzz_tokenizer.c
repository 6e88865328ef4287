/*
 * fuzz_tokenizer.c — any text through thirteen fixed tokenizers (text/tokenizer.h).
 *
 * The vocabularies are built once, in memory, the way a GGUF's
 * tokenizer.ggml.* arrays describe them:
 *   0  SentencePiece ("llama") with the space prefix, gemma-like: control
 *      tokens, <unk>, the 256 <0xXX> byte tokens, user-defined runs of
 *      newlines and tabs, scored pieces (ASCII words, accents, CJK, emoji);
 *   1  the same without the space prefix;
 *   2  byte-level BPE ("gpt2", pre "llama-bpe"): the 256 byte tokens, ranked
 *      merges that spell a word list, llama-3 control tokens, EOS added;
 *   3  the same vocabulary with the "qwen2" pre-tokenizer;
 *   4..12  the same with "gpt-4o", "tekken", "deepseek-llm", "smollm",
 *      "deepseek-coder", "deepseek-v3", "phi-2", "qwen35" and "default".
 *
 * Input: byte 0 chooses the tokenizer ((bits 5-7) * 4 + (bits 0-1), modulo
 * 13: a byte below 0x20 picks 0..3, 0x23 smollm), parse_special (bit 2) and
 * add_bos (bits 3-4: -1, 0, 1, -1); the rest is the text.
 *
 * Invariants per input:
 *  - the pre-tokenizer's words cover the text's code points exactly, none
 *    empty;
 *  - tokenize succeeds; asking again with the room it asked for gives the
 *    same count, and a half-size buffer gets the same first ids;
 *  - every id is in [0, n_vocab); BOS first / EOS last exactly when asked;
 *  - every id has a piece, and the piece's length does not depend on the
 *    buffer it is written to;
 *  - the pieces (special = 1) spell the text back: byte for byte for BPE
 *    (after invalid UTF-8 becomes U+FFFD, as the decoder reads it); for
 *    SentencePiece with "▁" read as a space on both sides, and with the space
 *    prefix up to spaces.
 */
#include "text/tokenizer.h"
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"

/* ---- a vocabulary builder ------------------------------------------------ */

#define MAX_TOKENS 1024
#define MAX_MERGES 512
#define POOL_BYTES 16384

typedef struct vocab {
    const char *text[MAX_TOKENS];
    uint32_t len[MAX_TOKENS];
    float score[MAX_TOKENS];
    int32_t type[MAX_TOKENS];
    uint32_t n;
    const char *merge[MAX_MERGES];
    uint32_t merge_len[MAX_MERGES];
    uint32_t n_merges;
    char pool[POOL_BYTES]; /* storage of generated strings */
    size_t pool_used;
} vocab;

static const char *store(vocab *v, const char *s, size_t len) {
    REQUIRE(v->pool_used + len <= POOL_BYTES);
    char *p = v->pool + v->pool_used;
    memcpy(p, s, len);
    v->pool_used += len;
    return p;
}

static int32_t find(const vocab *v, const char *s, size_t len) {
    for (uint32_t i = 0; i < v->n; i++) {
        if (v->len[i] == len && memcmp(v->text[i], s, len) == 0) {
            return (int32_t)i;
        }
    }
    return -1;
}

/* Adds a token (unless the text is already one); returns its id. */
static int32_t add(vocab *v, const char *s, size_t len, float score, int32_t type) {
    int32_t id = find(v, s, len);
    if (id >= 0) {
        return id;
    }
    REQUIRE(v->n < MAX_TOKENS);
    v->text[v->n] = store(v, s, len);
    v->len[v->n] = (uint32_t)len;
    v->score[v->n] = score;
    v->type[v->n] = type;
    return (int32_t)v->n++;
}

static int32_t add_str(vocab *v, const char *s, int32_t type) { return add(v, s, strlen(s), 0.0f, type); }

/* ---- SentencePiece vocabulary ---------------------------------------------- */

static const char *const k_words[] = {
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "hello",
    "world",
    "Paris",
    "model",
    "user",
    "function",
    "return",
    "don't",
    "2024",
    "caf\xc3\xa9",
    "HELLO",
    "World",
    "ÉCOLE",
    "中文",
    "na\xc3\xafve",
    "\303\274ber",
    "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e",             /* 日本語 */
    "\xf0\x9f\x98\x80",                                 /* 😀 */
    "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82", /* привет */
};

#define SPACE_MARK "\xe2\x96\x81" /* U+2581 */

/* Scored pieces: each word's prefixes, with and without "▁" in front;
 * longer pieces score higher, so merges prefer them. */
static void spm_pieces(vocab *v) {
    char buf[64];
    add(v, SPACE_MARK, 3, 1.0f, ADIL_TOKEN_TYPE_NORMAL);
    for (int c = 0x21; c < 0x7f; c++) {
        char ch = (char)c;
        add(v, &ch, 1, 1.0f, ADIL_TOKEN_TYPE_NORMAL);
    }
    for (size_t w = 0; w < sizeof k_words / sizeof k_words[0]; w++) {
        size_t len = strlen(k_words[w]);
        for (size_t k = 1; k <= len; k++) {
            if (k < len && (k_words[w][k] & 0xC0) == 0x80) {
                continue; /* inside a UTF-8 character */
            }
            add(v, k_words[w], k, (float)k, ADIL_TOKEN_TYPE_NORMAL);
            memcpy(buf, SPACE_MARK, 3);
            memcpy(buf + 3, k_words[w], k);
            add(v, buf, k + 3, (float)k + 0.5f, ADIL_TOKEN_TYPE_NORMAL);
        }
    }
}

static void build_spm(vocab *v, adil_tokenizer_desc *d) {
    static const char *const controls[] = {"<pad>", "<eos>", "<bos>"};
    for (size_t i = 0; i < 3; i++) {
        add_str(v, controls[i], ADIL_TOKEN_TYPE_CONTROL);
    }
    add_str(v, "<unk>", ADIL_TOKEN_TYPE_UNKNOWN);
    add_str(v, "<start_of_turn>", ADIL_TOKEN_TYPE_CONTROL);
    add_str(v, "<end_of_turn>", ADIL_TOKEN_TYPE_CONTROL);
    for (unsigned b = 0; b < 256; b++) {
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        add_str(v, hex, ADIL_TOKEN_TYPE_BYTE);
    }
    static const char *const user[] = {"\n\n", "\n\n\n", "\t\t", "<b>", "</b>"};
    for (size_t i = 0; i < sizeof user / sizeof user[0]; i++) {
        add_str(v, user[i], ADIL_TOKEN_TYPE_USER_DEFINED);
    }
    add_str(v, "<unused0>", ADIL_TOKEN_TYPE_UNUSED);
    spm_pieces(v);
    d->model = "llama";
    d->pad_id = 0;
    d->eos_id = 1;
    d->bos_id = 2;
    d->unk_id = 3;
}

/* ---- byte-level BPE vocabulary ------------------------------------------- */

/* GPT-2's printable code point of byte b (as bpe.c maps it), UTF-8 encoded. */
static size_t gpt2_char(unsigned b, char out[4]) {
    unsigned next = 0x100;
    for (unsigned c = 0; c < b; c++) {
        bool printable = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
        next += !printable;
    }
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    return adil_utf8_encode(printable ? b : next, (uint8_t *)out);
}

/* Merges that spell `word` left to right, each result a token. */
static void bpe_spell(vocab *v, const char *word) {
    char left[128], merge[160];
    size_t n_left = gpt2_char((uint8_t)word[0], left);
    for (size_t i = 1; word[i]; i++) {
        char c[4];
        size_t n_c = gpt2_char((uint8_t)word[i], c);
        memcpy(merge, left, n_left);
        merge[n_left] = ' ';
        memcpy(merge + n_left + 1, c, n_c);
        size_t n_merge = n_left + 1 + n_c;
        bool known = false;
        for (uint32_t m = 0; m < v->n_merges && !known; m++) {
            known = v->merge_len[m] == n_merge && memcmp(v->merge[m], merge, n_merge) == 0;
        }
        if (!known) {
            REQUIRE(v->n_merges < MAX_MERGES);
            v->merge[v->n_merges] = store(v, merge, n_merge);
            v->merge_len[v->n_merges++] = (uint32_t)n_merge;
        }
        memcpy(left + n_left, c, n_c);
        n_left += n_c;
        add(v, left, n_left, 0.0f, ADIL_TOKEN_TYPE_NORMAL);
    }
}

static void build_bpe(vocab *v, adil_tokenizer_desc *d) {
    for (unsigned b = 0; b < 256; b++) {
        char c[4];
        add(v, c, gpt2_char(b, c), 0.0f, ADIL_TOKEN_TYPE_NORMAL);
    }
    char buf[64];
    for (size_t w = 0; w < sizeof k_words / sizeof k_words[0]; w++) {
        bpe_spell(v, k_words[w]);
        snprintf(buf, sizeof buf, " %s", k_words[w]);
        bpe_spell(v, buf);
    }
    static const char *const more[] = {"\n\n", "    ", "123", "'s", "'t", " '", "...", "=="};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++) {
        bpe_spell(v, more[i]);
    }
    d->bos_id = add_str(v, "<|begin_of_text|>", ADIL_TOKEN_TYPE_CONTROL);
    d->eos_id = add_str(v, "<|end_of_text|>", ADIL_TOKEN_TYPE_CONTROL);
    add_str(v, "<|eot_id|>", ADIL_TOKEN_TYPE_CONTROL);
    add_str(v, "<|start_header_id|>", ADIL_TOKEN_TYPE_CONTROL);
    add_str(v, "<|end_header_id|>", ADIL_TOKEN_TYPE_CONTROL);
    add_str(v, "<tool_call>", ADIL_TOKEN_TYPE_USER_DEFINED);
    d->model = "gpt2";
    d->merges = v->merge;
    d->merge_lens = v->merge_len;
    d->n_merges = v->n_merges;
}

/* ---- the tokenizers ------------------------------------------------------------- */

enum { N_TOKENIZERS = 13 };
static vocab g_vocab[2];
static adil_tokenizer *g_tok[N_TOKENIZERS];

static adil_tokenizer *make(vocab *v, adil_tokenizer_desc d, const char *pre, int32_t space_prefix,
                            int32_t add_eos) {
    d.pre = pre;
    d.n_vocab = v->n;
    d.tokens = v->text;
    d.token_lens = v->len;
    d.scores = v->score;
    d.token_types = v->type;
    d.add_space_prefix = space_prefix;
    d.add_eos = add_eos;
    adil_tokenizer *tok = NULL;
    if (adil_tokenizer_new(&d, &tok) != ADIL_OK) {
        fprintf(stderr, "fuzz_tokenizer: adil_tokenizer_new: %s\n", adil_last_error());
        abort();
    }
    return tok;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    adil_tokenizer_desc spm, bpe;
    adil_tokenizer_desc_init(&spm);
    adil_tokenizer_desc_init(&bpe);
    build_spm(&g_vocab[0], &spm);
    build_bpe(&g_vocab[1], &bpe);
    g_tok[0] = make(&g_vocab[0], spm, NULL, 1, -1);
    g_tok[1] = make(&g_vocab[0], spm, NULL, 0, -1);
    g_tok[2] = make(&g_vocab[1], bpe, "llama-bpe", -1, 1);
    static const char *const more_pre[] = {"qwen2",  "gpt-4o",         "tekken",      "deepseek-llm",
                                           "smollm", "deepseek-coder", "deepseek-v3", "phi-2",
                                           "qwen35", "default"};
    _Static_assert(sizeof more_pre / sizeof more_pre[0] == N_TOKENIZERS - 3, "one name per BPE tokenizer");
    for (size_t i = 0; i < sizeof more_pre / sizeof more_pre[0]; i++) {
        g_tok[3 + i] = make(&g_vocab[1], bpe, more_pre[i], -1, -1);
    }
    return 0;
}

/* ---- the checks ------------------------------------------------------------ */

typedef struct bytes {
    char *data;
    size_t n, cap;
} bytes;

static void append(bytes *b, const char *s, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->data = realloc(b->data, b->cap);
        REQUIRE(b->data != NULL);
    }
    if (n > 0) {
        memcpy(b->data + b->n, s, n);
    }
    b->n += n;
}

/* Tokenizes with the documented buffer protocol; returns the ids (malloc). */
static int32_t *tokenize(const adil_tokenizer *tok, const char *text, size_t len, int32_t add_bos,
                         int32_t special, size_t *n) {
    REQUIRE(adil_tokenizer_tokenize(tok, text, len, add_bos, special, NULL, 0, n) == ADIL_OK);
    int32_t *ids = malloc((*n ? *n : 1) * sizeof *ids);
    REQUIRE(ids != NULL);
    size_t again = 0;
    REQUIRE(adil_tokenizer_tokenize(tok, text, len, add_bos, special, ids, *n, &again) == ADIL_OK);
    REQUIRE(again == *n);
    if (*n >= 2) {
        size_t half = *n / 2;
        int32_t *part = malloc(half * sizeof *part);
        REQUIRE(part != NULL);
        REQUIRE(adil_tokenizer_tokenize(tok, text, len, add_bos, special, part, half, &again) == ADIL_OK);
        REQUIRE(again == *n && memcmp(part, ids, half * sizeof *part) == 0);
        free(part);
    }
    return ids;
}

/* The piece of `id`, appended to `out`. */
static void piece(const adil_tokenizer *tok, int32_t id, bytes *out) {
    size_t need = 0, got = 0;
    REQUIRE(adil_tokenizer_token_to_piece(tok, id, 1, NULL, 0, &need) == ADIL_OK);
    char small[4];
    REQUIRE(adil_tokenizer_token_to_piece(tok, id, 1, small, sizeof small, &got) == ADIL_OK);
    REQUIRE(got == need);
    char *buf = malloc(need ? need : 1);
    REQUIRE(buf != NULL);
    REQUIRE(adil_tokenizer_token_to_piece(tok, id, 1, buf, need, &got) == ADIL_OK && got == need);
    append(out, buf, need);
    free(buf);
}

/* SentencePiece's escape undone: every "▁" written as a space. */
static bytes unescape(const char *s, size_t len) {
    bytes out = {0};
    append(&out, "", 0);
    for (size_t pos = 0; pos < len;) {
        bool mark = pos + 3 <= len && memcmp(s + pos, SPACE_MARK, 3) == 0;
        append(&out, mark ? " " : s + pos, 1);
        pos += mark ? 3 : 1;
    }
    return out;
}

/* The text as the UTF-8 decoder reads it: invalid sequences become U+FFFD. */
static bytes decoded(const char *s, size_t len) {
    bytes out = {0};
    append(&out, "", 0);
    for (size_t pos = 0; pos < len;) {
        uint8_t enc[4];
        uint32_t cp = adil_utf8_decode((const uint8_t *)s, len, &pos);
        append(&out, (const char *)enc, adil_utf8_encode(cp, enc));
    }
    return out;
}

static size_t drop_spaces(char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ') {
            s[k++] = s[i];
        }
    }
    return k;
}

static void dump(const char *what, const char *s, size_t n) {
    fprintf(stderr, "%s:", what);
    for (size_t i = 0; i < n; i++) {
        fprintf(stderr, " %02x", (uint8_t)s[i]);
    }
    fprintf(stderr, "\n");
}

/* What the pieces spell against what the text says.  BPE: the text as the
 * decoder reads it, byte for byte.  SentencePiece: both sides unescaped,
 * since byte-fallback tokens may spell an escaped space as the bytes of
 * "▁" (as llama.cpp's do when an invalid UTF-8 lead byte swallows it);
 * with the space prefix, also up to spaces. */
static void check_round_trip(const adil_tokenizer_info *info, const char *text, size_t len,
                             const int32_t *ids, size_t n_ids, const bytes *spelled) {
    bytes want = info->is_spm ? unescape(text, len) : decoded(text, len);
    bytes got = {0};
    if (info->is_spm) {
        got = unescape(spelled->data, spelled->n);
    } else {
        append(&got, spelled->data, spelled->n);
    }
    if (info->is_spm && info->add_space_prefix) {
        want.n = drop_spaces(want.data, want.n);
        got.n = drop_spaces(got.data, got.n);
    }
    if (got.n != want.n || memcmp(got.data, want.data, want.n) != 0) {
        fprintf(stderr, "round trip: %zu bytes in, %zu expected, %zu spelled\nids:", len, want.n, got.n);
        for (size_t i = 0; i < n_ids; i++) {
            fprintf(stderr, " %d", ids[i]);
        }
        fprintf(stderr, "\n");
        dump("text", text, len);
        dump("expected", want.data, want.n);
        dump("spelled", got.data, got.n);
        abort();
    }
    free(want.data);
    free(got.data);
}

/* The pre-tokenizer's words partition the decoded text: no word is empty
 * and their lengths add up to the code point count. */
static void check_words(const adil_tokenizer *tok, const char *text, size_t len) {
    uint32_t *cps = malloc((len ? len : 1) * sizeof *cps);
    size_t *lens = malloc((len ? len : 1) * sizeof *lens);
    REQUIRE(cps != NULL && lens != NULL);
    size_t n = 0, n_words = 0, total = 0;
    for (size_t pos = 0; pos < len;) {
        cps[n++] = adil_utf8_decode((const uint8_t *)text, len, &pos);
    }
    adil_pretokenize(tok->pretok, cps, n, lens, &n_words);
    REQUIRE(n_words <= n);
    for (size_t w = 0; w < n_words; w++) {
        REQUIRE(lens[w] > 0);
        total += lens[w];
    }
    REQUIRE(total == n);
    free(cps);
    free(lens);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) {
        return 0;
    }
    const int which = (((data[0] >> 5) & 7) * 4 + (data[0] & 3)) % N_TOKENIZERS;
    const adil_tokenizer *tok = g_tok[which];
    int32_t special = (data[0] >> 2) & 1;
    static const int32_t bos_modes[4] = {-1, 0, 1, -1};
    int32_t add_bos = bos_modes[(data[0] >> 3) & 3];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    adil_tokenizer_info info;
    adil_tokenizer_get_info(tok, &info);
    bool want_bos = add_bos == 1 || (add_bos < 0 && info.add_bos);
    bool want_eos = add_bos != 0 && info.add_eos;

    if (!info.is_spm) {
        check_words(tok, text, len);
    }
    size_t n = 0;
    int32_t *ids = tokenize(tok, text, len, add_bos, special, &n);
    REQUIRE(n >= (size_t)want_bos + (size_t)want_eos);
    for (size_t i = 0; i < n; i++) {
        REQUIRE(ids[i] >= 0 && (uint32_t)ids[i] < info.n_vocab);
    }
    size_t first = 0, end = n;
    if (want_bos) {
        REQUIRE(ids[0] == info.bos_id);
        first = 1;
    }
    if (want_eos) {
        REQUIRE(ids[n - 1] == info.eos_id);
        end = n - 1;
    }
    bytes spelled = {0};
    append(&spelled, "", 0);
    for (size_t i = first; i < end; i++) {
        piece(tok, ids[i], &spelled);
    }
    check_round_trip(&info, text, len, ids, n, &spelled);

    /* The whole text as one vocabulary string, when it is one. */
    int32_t id = adil_tokenizer_find(tok, text, len);
    if (id >= 0) {
        REQUIRE(tok->vocab[id].len == len && memcmp(adil_vocab_text(tok, id), text, len) == 0);
    }
    free(spelled.data);
    free(ids);
    return 0;
}
