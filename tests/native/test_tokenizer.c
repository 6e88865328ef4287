/*
 * test_tokenizer.c — the tokenizer on tiny hand-made vocabularies whose
 * answers are derived by hand in the comments:
 *  - SentencePiece ("llama"): best-score merges, leftmost on ties, the space
 *    prefix, byte fallback, control / user-defined tokens, BOS/EOS, pieces;
 *  - byte-level BPE ("gpt2"): rank order, the llama-3, qwen2 and smollm
 *    pre-tokenizers (digit groups, contractions, blanks), llama-3's whole-word
 *    shortcut, invalid UTF-8, pieces; the word splits of smollm, gpt-2,
 *    qwen35, gpt-4o, tekken and the deepseek family on their own (llama.cpp's ids for
 *    all of them: tests/test_pretokenizers_llamacpp.py);
 *  - the contract: capacity and n_needed, NULL arguments, unknown models.
 */
#include "text/tokenizer.h"
#include "test_util.h"
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a vocabulary builder ---------------------------------------------------- */

#define MAX_TOKENS 600

typedef struct vocab {
    const char *text[MAX_TOKENS];
    uint32_t len[MAX_TOKENS];
    float score[MAX_TOKENS];
    int32_t type[MAX_TOKENS];
    char bytes[MAX_TOKENS][8]; /* storage for generated texts */
    uint32_t n;
} vocab;

static int32_t add(vocab *v, const char *text, float score, int32_t type) {
    v->text[v->n] = text;
    v->len[v->n] = (uint32_t)strlen(text);
    v->score[v->n] = score;
    v->type[v->n] = type;
    return (int32_t)v->n++;
}

/* Adds a token whose text is stored in the builder (len bytes). */
static int32_t add_stored(vocab *v, const char *text, uint32_t len, float score, int32_t type) {
    memcpy(v->bytes[v->n], text, len);
    v->text[v->n] = v->bytes[v->n];
    v->len[v->n] = len;
    v->score[v->n] = score;
    v->type[v->n] = type;
    return (int32_t)v->n++;
}

static adil_tokenizer *build(const vocab *v, const char *model, const char *pre, const char *const *merges,
                             uint32_t n_merges, int32_t bos, int32_t eos, int32_t space_prefix) {
    uint32_t merge_lens[32];
    for (uint32_t i = 0; i < n_merges; i++) {
        merge_lens[i] = (uint32_t)strlen(merges[i]);
    }
    adil_tokenizer_desc d;
    adil_tokenizer_desc_init(&d);
    d.model = model;
    d.pre = pre;
    d.n_vocab = v->n;
    d.tokens = v->text;
    d.token_lens = v->len;
    d.scores = v->score;
    d.token_types = v->type;
    d.merges = merges;
    d.merge_lens = merge_lens;
    d.n_merges = n_merges;
    d.bos_id = bos;
    d.eos_id = eos;
    d.add_space_prefix = space_prefix;
    adil_tokenizer *tok = NULL;
    adil_status st = adil_tokenizer_new(&d, &tok);
    if (st != ADIL_OK) {
        fprintf(stderr, "adil_tokenizer_new: %s\n", adil_last_error());
    }
    return tok;
}

/* Tokenizes and compares with the expected ids (terminated by -2). */
static void expect_ids(const adil_tokenizer *tok, const char *text, size_t len, int32_t add_bos,
                       int32_t special, const int32_t *want, int line) {
    int32_t got[64];
    size_t n = 0, n_want = 0;
    while (want[n_want] != -2) {
        n_want++;
    }
    adil_status st = adil_tokenizer_tokenize(tok, text, len, add_bos, special, got, 64, &n);
    bool ok = st == ADIL_OK && n == n_want && memcmp(got, want, n * sizeof *got) == 0;
    if (!ok) {
        fprintf(stderr, "line %d: tokenize(\"%.*s\", bos %d, special %d): status %d, got", line, (int)len,
                text, add_bos, special, st);
        for (size_t i = 0; i < n && i < 64; i++) {
            fprintf(stderr, " %d", got[i]);
        }
        fprintf(stderr, ", want");
        for (size_t i = 0; i < n_want; i++) {
            fprintf(stderr, " %d", want[i]);
        }
        fprintf(stderr, "\n");
        test_failures++;
    }
}

#define IDS(...)                        ((const int32_t[]){__VA_ARGS__, -2})
#define NO_IDS                          ((const int32_t[]){-2})
#define EXPECT(tok, text, bos, sp, ids) expect_ids(tok, text, strlen(text), bos, sp, ids, __LINE__)

static void expect_piece(const adil_tokenizer *tok, int32_t id, int32_t special, const char *want,
                         size_t want_len, int line) {
    char buf[64];
    size_t n = 99;
    adil_status st = adil_tokenizer_token_to_piece(tok, id, special, buf, sizeof buf, &n);
    if (st != ADIL_OK || n != want_len || memcmp(buf, want, n) != 0) {
        fprintf(stderr, "line %d: piece(%d, special %d): status %d, got %zu bytes \"%.*s\"\n", line, id,
                special, st, n, (int)(n < 64 ? n : 64), buf);
        test_failures++;
    }
}

#define PIECE(tok, id, sp, want) expect_piece(tok, id, sp, want, strlen(want), __LINE__)

/* ---- SentencePiece ------------------------------------------------------------ */

enum { UNK = 0, BOS = 1, EOS = 2, BYTE0 = 3 }; /* byte token of b is BYTE0 + b */

typedef struct spm_ids {
    int32_t sp, a, b, c, ab, bc, sp_a, sp_ab, x, y, z, xy, yz, start, two_spaces, nl, unused, e_acute;
} spm_ids;

static adil_tokenizer *spm_vocab(vocab *v, spm_ids *id, int32_t space_prefix) {
    v->n = 0;
    add(v, "<unk>", 0, ADIL_TOKEN_TYPE_UNKNOWN);
    add(v, "<s>", 0, ADIL_TOKEN_TYPE_CONTROL);
    add(v, "</s>", 0, ADIL_TOKEN_TYPE_CONTROL);
    for (int b = 0; b < 256; b++) {
        char t[8];
        snprintf(t, sizeof t, "<0x%02X>", b);
        add_stored(v, t, 6, 0, ADIL_TOKEN_TYPE_BYTE);
    }
    id->sp = add(v, "\xe2\x96\x81", -1.0f, ADIL_TOKEN_TYPE_NORMAL); /* "▁" */
    id->a = add(v, "a", -2.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->b = add(v, "b", -2.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->c = add(v, "c", -3.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->ab = add(v, "ab", -1.5f, ADIL_TOKEN_TYPE_NORMAL);
    id->bc = add(v, "bc", -0.5f, ADIL_TOKEN_TYPE_NORMAL);
    id->sp_a = add(v,
                   "\xe2\x96\x81"
                   "a",
                   -1.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->sp_ab = add(v,
                    "\xe2\x96\x81"
                    "ab",
                    -0.8f, ADIL_TOKEN_TYPE_NORMAL);
    id->x = add(v, "x", -2.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->y = add(v, "y", -2.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->z = add(v, "z", -2.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->xy = add(v, "xy", -1.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->yz = add(v, "yz", -1.0f, ADIL_TOKEN_TYPE_NORMAL);
    id->start = add(v, "<start>", 0, ADIL_TOKEN_TYPE_CONTROL);
    id->two_spaces = add(v, "  ", 0, ADIL_TOKEN_TYPE_USER_DEFINED);
    id->nl = add(v, "\n", 0, ADIL_TOKEN_TYPE_USER_DEFINED);
    id->unused = add(v, "<unused0>", 0, ADIL_TOKEN_TYPE_UNUSED);
    id->e_acute = add(v, "\xc3\xa9", -4.0f, ADIL_TOKEN_TYPE_NORMAL); /* "é" */
    return build(v, "llama", NULL, NULL, 0, BOS, EOS, space_prefix);
}

static void test_spm_merges(void) {
    static vocab v;
    spm_ids id;
    adil_tokenizer *tok = spm_vocab(&v, &id, 0);
    CHECK(tok != NULL);
    if (!tok) {
        return;
    }
    /* a b c: "bc" (-0.5) beats "ab" (-1.5); then "abc" is no token. */
    EXPECT(tok, "abc", 0, 0, IDS(id.a, id.bc));
    /* a b: the only pair merges. */
    EXPECT(tok, "ab", 0, 0, IDS(id.ab));
    /* x y z: "xy" and "yz" tie at -1; the leftmost pair merges first. */
    EXPECT(tok, "xyz", 0, 0, IDS(id.xy, id.z));
    /* "a b": the space is "▁"; ▁b is no token, a▁ neither. */
    EXPECT(tok, "a b", 0, 0, IDS(id.a, id.sp, id.b));
    /* " ab": ▁ a b: "ab" (-1.5) < "▁a" (-1): ▁a first, then ▁ab (-0.8). */
    EXPECT(tok, " ab", 0, 0, IDS(id.sp_ab));
    /* Byte fallback: "ñ" = C3 B1 is no token; "é" is one. */
    EXPECT(tok, "\xc3\xb1", 0, 0, IDS(BYTE0 + 0xC3, BYTE0 + 0xB1));
    EXPECT(tok, "\xc3\xa9", 0, 0, IDS(id.e_acute));
    /* A truncated character at the end keeps its byte. */
    EXPECT(tok, "a\xe2\x96", 0, 0, IDS(id.a, BYTE0 + 0xE2, BYTE0 + 0x96));
    /* A NUL byte is text like any other. */
    expect_ids(tok, "a\0b", 3, 0, 0, IDS(id.a, BYTE0 + 0, id.b), __LINE__);
    adil_tokenizer_free(tok);
}

static void test_spm_specials_and_bos(void) {
    static vocab v;
    spm_ids id;
    adil_tokenizer *tok = spm_vocab(&v, &id, 1);
    CHECK(tok != NULL);
    if (!tok) {
        return;
    }
    /* The space prefix goes in front of the text and after each special. */
    EXPECT(tok, "abc", 0, 0, IDS(id.sp_a, id.bc));
    EXPECT(tok, "a<start>b", 0, 1, IDS(id.sp_a, id.start, id.sp, id.b));
    /* Without parse_special the control token is plain text (bytes here). */
    EXPECT(tok, "<start>", 0, 0,
           IDS(id.sp, BYTE0 + '<', BYTE0 + 's', BYTE0 + 't', id.a, BYTE0 + 'r', BYTE0 + 't', BYTE0 + '>'));
    /* User-defined tokens are cut out either way. */
    EXPECT(tok, "a  b", 0, 0, IDS(id.sp_a, id.two_spaces, id.sp, id.b));
    EXPECT(tok, "a\nb", 0, 1, IDS(id.sp_a, id.nl, id.sp, id.b));
    /* Longer specials first: "   " = "  " + " ". */
    EXPECT(tok, "   ", 0, 0, IDS(id.two_spaces, id.sp, id.sp));
    /* BOS: -1 = as the model asks (it does), 0 = no, 1 = yes; EOS not asked. */
    EXPECT(tok, "ab", -1, 0, IDS(BOS, id.sp_ab));
    EXPECT(tok, "ab", 1, 0, IDS(BOS, id.sp_ab));
    EXPECT(tok, "", -1, 0, IDS(BOS));
    EXPECT(tok, "", 0, 0, NO_IDS);
    /* Pieces: ▁ becomes a space; bytes; control only with special. */
    PIECE(tok, id.sp_ab, 0, " ab");
    PIECE(tok, BYTE0 + 0x41, 0, "A");
    PIECE(tok, id.start, 0, "");
    PIECE(tok, id.start, 1, "<start>");
    PIECE(tok, UNK, 0, "");
    PIECE(tok, UNK, 1, "<unk>");
    PIECE(tok, id.two_spaces, 0, "  ");
    PIECE(tok, id.unused, 1, "");
    /* EOS and "</s>" end generation; "<start>" does not. */
    CHECK(adil_tokenizer_is_eog(tok, EOS));
    CHECK(!adil_tokenizer_is_eog(tok, id.start));
    CHECK(!adil_tokenizer_is_eog(tok, -1));
    CHECK(adil_tokenizer_find(tok, "bc", 2) == id.bc);
    CHECK(adil_tokenizer_find(tok, "cb", 2) == -1);
    CHECK(adil_tokenizer_token_type(tok, id.start) == ADIL_TOKEN_TYPE_CONTROL);
    CHECK(adil_tokenizer_token_type(tok, id.two_spaces) == ADIL_TOKEN_TYPE_USER_DEFINED);
    adil_tokenizer_info info;
    adil_tokenizer_get_info(tok, &info);
    CHECK(info.n_vocab == v.n && info.bos_id == BOS && info.eos_id == EOS);
    CHECK(info.add_bos && !info.add_eos && info.add_space_prefix && info.is_spm);
    adil_tokenizer_free(tok);
}

static void test_contract(void) {
    static vocab v;
    spm_ids id;
    adil_tokenizer *tok = spm_vocab(&v, &id, 0);
    CHECK(tok != NULL);
    if (!tok) {
        return;
    }
    /* Too little room: the first ids are written, the needed count returned. */
    int32_t ids[2] = {-7, -7};
    size_t n = 0;
    CHECK(adil_tokenizer_tokenize(tok, "a b", 3, 0, 0, ids, 1, &n) == ADIL_OK);
    CHECK(n == 3 && ids[0] == id.a && ids[1] == -7);
    CHECK(adil_tokenizer_tokenize(tok, "a b", 3, 0, 0, NULL, 0, &n) == ADIL_OK && n == 3);
    CHECK(adil_tokenizer_tokenize(tok, NULL, 3, 0, 0, ids, 2, &n) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_tokenizer_tokenize(tok, NULL, 0, 0, 0, ids, 2, &n) == ADIL_OK && n == 0);
    CHECK(adil_tokenizer_tokenize(tok, "a", 1, 0, 0, NULL, 2, &n) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_tokenizer_tokenize(tok, "a", 1, 0, 0, ids, 2, NULL) == ADIL_STATUS_INVALID_ARGUMENT);
    char buf[4];
    CHECK(adil_tokenizer_token_to_piece(tok, id.sp_ab, 0, buf, 2, &n) == ADIL_OK && n == 3);
    CHECK(memcmp(buf, " a", 2) == 0);
    CHECK(adil_tokenizer_token_to_piece(tok, (int32_t)v.n, 0, buf, 4, &n) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_tokenizer_token_to_piece(tok, -1, 0, buf, 4, &n) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(adil_last_error(), "token") != NULL);
    adil_tokenizer_free(tok);
    adil_tokenizer_free(NULL);

    /* Unknown models and pre-tokenizers are refused, naming them. */
    adil_tokenizer_desc d;
    adil_tokenizer_desc_init(&d);
    const char *t[1] = {"a"};
    uint32_t l[1] = {1};
    d.n_vocab = 1;
    d.tokens = t;
    d.token_lens = l;
    d.model = "t5";
    adil_tokenizer *bad = NULL;
    CHECK(adil_tokenizer_new(&d, &bad) == ADIL_STATUS_CAPABILITY && bad == NULL);
    CHECK(strstr(adil_last_error(), "t5") != NULL);
    d.model = "gpt2";
    d.pre = "chameleon";
    CHECK(adil_tokenizer_new(&d, &bad) == ADIL_STATUS_CAPABILITY);
    CHECK(strstr(adil_last_error(), "chameleon") != NULL);
    d.model = NULL;
    CHECK(adil_tokenizer_new(&d, &bad) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_tokenizer_new(NULL, &bad) == ADIL_STATUS_INVALID_ARGUMENT);
}

/* ---- byte-level BPE -------------------------------------------------------------- */

/* GPT-2's printable form of byte b, UTF-8 encoded (2 bytes at most). */
static uint32_t gpt2_char(unsigned b, char out[4]) {
    bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
    unsigned cp = b;
    if (!printable) {
        unsigned k = 0;
        for (unsigned c = 0; c < b; c++) {
            bool p = (c >= 0x21 && c <= 0x7E) || (c >= 0xA1 && c <= 0xAC) || c >= 0xAE;
            k += !p;
        }
        cp = 0x100 + k;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
}

/* Ids 0..255: the byte tokens in byte order.  Then (in rank order) merges
 * Ġ+t, h+e, Ġt+he, l+o, lo+w, e+r, 1+2, 12+3, and the tokens they make. */
static const char *const k_merges[] = {
    "\xc4\xa0 t", "h e", "\xc4\xa0t he", "l o", "lo w", "e r", "1 2", "12 3",
};

typedef struct bpe_ids {
    int32_t sp_t, he, sp_the, lo, low, er, n12, n123, eot, bot, sp_lower;
} bpe_ids;

static adil_tokenizer *bpe_vocab(vocab *v, bpe_ids *id, const char *pre) {
    v->n = 0;
    for (unsigned b = 0; b < 256; b++) {
        char c[4];
        uint32_t n = gpt2_char(b, c);
        add_stored(v, c, n, 0, ADIL_TOKEN_TYPE_NORMAL);
    }
    id->sp_t = add(v, "\xc4\xa0t", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->he = add(v, "he", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->sp_the = add(v, "\xc4\xa0the", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->lo = add(v, "lo", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->low = add(v, "low", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->er = add(v, "er", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->n12 = add(v, "12", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->n123 = add(v, "123", 0, ADIL_TOKEN_TYPE_NORMAL);
    id->eot = add(v, "<|eot_id|>", 0, ADIL_TOKEN_TYPE_CONTROL);
    id->bot = add(v, "<|begin_of_text|>", 0, ADIL_TOKEN_TYPE_CONTROL);
    /* A whole-word token no merge reaches: only llama-3 takes it as is. */
    id->sp_lower = add(v, "\xc4\xa0lower", 0, ADIL_TOKEN_TYPE_NORMAL);
    return build(v, "gpt2", pre, k_merges, 8, id->bot, id->eot, -1);
}

typedef enum { PRE_LLAMA3, PRE_QWEN2, PRE_SMOLLM } pre_kind;

static void test_bpe(const char *pre, pre_kind kind) {
    const bool llama3 = kind == PRE_LLAMA3;
    static vocab v;
    bpe_ids id;
    adil_tokenizer *tok = bpe_vocab(&v, &id, pre);
    CHECK(tok != NULL);
    if (!tok) {
        return;
    }
    const int32_t SP = ' ', NL = '\n'; /* byte tokens have the byte's id */
    /* "the": t h e -> h+e (rank 1) -> t he; "t he" is no merge. */
    EXPECT(tok, "the", 0, 0, IDS('t', id.he));
    /* " the": Ġ+t (0), h+e (1), Ġt+he (2) -> Ġthe. */
    EXPECT(tok, " the", 0, 0, IDS(id.sp_the));
    /* " low": Ġ l o w -> l+o (3), lo+w (4) -> Ġ low. */
    EXPECT(tok, " low", 0, 0, IDS(SP, id.low));
    /* " lower": merges give Ġ low er; llama-3 takes the whole word token. */
    if (llama3) {
        EXPECT(tok, " lower", 0, 0, IDS(id.sp_lower));
    } else {
        EXPECT(tok, " lower", 0, 0, IDS(SP, id.low, id.er));
    }
    /* Digits: llama-3 groups three ("123" "45"), qwen2 takes them one by one. */
    if (llama3) {
        EXPECT(tok, "12345", 0, 0, IDS(id.n123, '4', '5'));
    } else {
        EXPECT(tok, "12345", 0, 0, IDS('1', '2', '3', '4', '5'));
    }
    /* Contractions split off: "it" "'s" (no merges apply). */
    EXPECT(tok, "it's", 0, 0, IDS('i', 't', '\'', 's'));
    /* Blanks: "a", " " (all but the last blank), " b". */
    EXPECT(tok, "a  b", 0, 0, IDS('a', SP, SP, 'b'));
    EXPECT(tok, "a\n\nb", 0, 0, IDS('a', NL, NL, 'b'));
    /* " 12" is one GPT-2 word (" ?\p{N}+") but smollm cuts every digit first. */
    if (kind == PRE_SMOLLM) {
        EXPECT(tok, "x 123", 0, 0, IDS('x', SP, '1', '2', '3'));
    }
    /* Special tokens with and without parse_special. */
    EXPECT(tok, "<|eot_id|>x", 0, 1, IDS(id.eot, 'x'));
    EXPECT(tok, "<|eot|>", 0, 0, IDS('<', '|', 'e', 'o', 't', '|', '>'));
    /* "é" = C3 A9: each byte is one byte-level token. */
    EXPECT(tok, "\xc3\xa9", 0, 0, IDS(0xC3, 0xA9));
    /* Invalid UTF-8 becomes U+FFFD = EF BF BD. */
    EXPECT(tok, "\xff", 0, 0, IDS(0xEF, 0xBF, 0xBD));
    /* BOS only for llama-3 by default. */
    if (llama3) {
        EXPECT(tok, "the", -1, 0, IDS(id.bot, 't', id.he));
    } else {
        EXPECT(tok, "the", -1, 0, IDS('t', id.he));
    }
    /* Pieces: byte-level code points back to bytes. */
    PIECE(tok, id.sp_the, 0, " the");
    PIECE(tok, NL, 0, "\n");
    PIECE(tok, 0xC3, 0, "\xc3");
    PIECE(tok, id.eot, 0, "");
    PIECE(tok, id.eot, 1, "<|eot_id|>");
    CHECK(adil_tokenizer_is_eog(tok, id.eot));
    adil_tokenizer_free(tok);
}

/* The words of `text` (UTF-8) under `kind`, "|" between them. */
static void words_of(adil_pretok kind, const char *text, char *out, size_t cap) {
    uint32_t cps[128];
    size_t lens[128], n = 0, n_words = 0, len = strlen(text);
    for (size_t pos = 0; pos < len && n < 128;) {
        cps[n++] = adil_utf8_decode((const uint8_t *)text, len, &pos);
    }
    adil_pretokenize(kind, cps, n, lens, &n_words);
    size_t k = 0, at = 0;
    for (size_t w = 0; w < n_words; w++) {
        if (w > 0 && k + 1 < cap) {
            out[k++] = '|';
        }
        for (size_t j = 0; j < lens[w] && at < n; j++) {
            uint8_t enc[4];
            size_t m = adil_utf8_encode(cps[at++], enc);
            if (k + m < cap) {
                memcpy(out + k, enc, m);
                k += m;
            }
        }
    }
    out[k] = '\0';
    CHECK(at == n);
}

/* Table-driven splits: cases[i] = {text, its words with "|" between}. */
static void check_words(adil_pretok kind, const char *name, const char *const (*cases)[2], size_t n_cases) {
    for (size_t c = 0; c < n_cases; c++) {
        char got[512];
        words_of(kind, cases[c][0], got, sizeof got);
        if (strcmp(got, cases[c][1]) != 0) {
            fprintf(stderr, "%s split of case %zu: expected \"%s\", got \"%s\"\n", name, c, cases[c][1], got);
        }
        CHECK(strcmp(got, cases[c][1]) == 0);
    }
}

#define CHECK_WORDS(kind, cases) check_words(kind, #kind, cases, sizeof cases / sizeof cases[0])

/* smollm's words (as HF's Digits(individual) + ByteLevel split them). */
static void test_smollm_words(void) {
    static const char *const cases[][2] = {
        {"Hello world! 123", "Hello| world|!| |1|2|3"},
        {"it's IT'S", "it|'s| IT|'|S"}, /* contractions in lower case only */
        {"a  b   ", "a| | b|   "},      /* \s+(?!\S), then \s+ at the end */
        {"a\n\nb", "a|\n|\n|b"},        /* no line-break rule; " ?" is a space only */
        {"x12y", "x|1|2|y"},            /* digits end a run like the text's end */
        {"a  1", "a|  |1"},             /* ... so the blanks before a digit stay whole */
        {" ?! ...x", " ?!| ...|x"},     /* punctuation with its leading space */
        {"don't", "don|'t"},
    };
    CHECK_WORDS(ADIL_PRETOK_SMOLLM, cases);
}

/* GPT-2's pattern alone (gpt-2, phi-2): digits stay in one run. */
static void test_gpt2_words(void) {
    static const char *const cases[][2] = {
        {"Hello world's 123!!", "Hello| world|'s| 123|!!"},
        {"IT'S", "IT|'|S"},
        {"x  12", "x| | 12"},
    };
    CHECK_WORDS(ADIL_PRETOK_GPT2, cases);
}

/* qwen35: combining marks belong to words, not to punctuation (qwen2 for
 * comparison). */
static void test_qwen35_words(void) {
    static const char *const qwen35[][2] = {
        {"e\u0301 cafe\u0301s", "e\u0301| cafe\u0301s"},
        {"?!\u0301 12", "?!|\u0301| |1|2"},
    };
    static const char *const qwen2[][2] = {
        {"e\u0301 cafe\u0301s", "e|\u0301| cafe|\u0301s"}, /* a mark may lead a word */
        {"?!\u0301 12", "?!\u0301| |1|2"},
    };
    CHECK_WORDS(ADIL_PRETOK_QWEN35, qwen35);
    CHECK_WORDS(ADIL_PRETOK_QWEN2, qwen2);
}

/* o200k (gpt-4o): upper* lower+ | upper+ lower*, where a non-ASCII letter
 * counts as both and A-Z / a-z only as one; contractions stay on the word. */
static void test_gpt4o_words(void) {
    static const char *const cases[][2] = {
        {"HELLOworld hello", "HELLOworld| hello"},
        {"helloWORLD", "hello|WORLD"},
        /* "ÉCOLE": upper* gives back É (non-ASCII, so also lower), the
         * rest is upper+; " école": é is upper, "cole" lower. */
        {"ÉCOLE école", "É|COLE| école"},
        {"don't DON'T", "don't| DON'T"},
        {"12345", "123|45"},
        {"a\n/\nb", "a|\n|/\n|b"}, /* '/' and line breaks after punctuation */
        {"x//\n\n/y", "x|//\n\n/|y"},
        {"e\u0301", "e|\u0301"}, /* a combining mark is no letter */
        {"a  b", "a| | b"},
    };
    CHECK_WORDS(ADIL_PRETOK_GPT4O, cases);
}

/* tekken: the same without contractions, digits one by one. */
static void test_tekken_words(void) {
    static const char *const cases[][2] = {
        {"HELLOworld helloWORLD", "HELLOworld| hello|WORLD"},
        {"don't", "don|'t"},
        {"12345", "1|2|3|4|5"},
    };
    CHECK_WORDS(ADIL_PRETOK_TEKKEN, cases);
}

/* deepseek-llm: line breaks; letters of the cased scripts (with a blank
 * before); ASCII punctuation, which takes letters too (":-~"); blanks at a
 * piece's end; CJK; numbers. */
static void test_deepseek_llm_words(void) {
    static const char *const cases[][2] = {
        {"Hello, World!\n  123 中文", "Hello|,| World|!|\n|  |123| |中文"},
        {"ab  ", "ab|  "},
    };
    CHECK_WORDS(ADIL_PRETOK_DEEPSEEK_LLM, cases);
}

/* deepseek-coder: \s?\p{L}+ and \s?\p{P}+ words, CJK, single digits. */
static void test_deepseek_coder_words(void) {
    static const char *const cases[][2] = {
        {"Hello, world! 12 中文\n", "Hello|,| world|!| |1|2| |中文|\n"},
    };
    CHECK_WORDS(ADIL_PRETOK_DEEPSEEK_CODER, cases);
}

/* deepseek-v3: digit groups of three, CJK and kana runs, then words. */
static void test_deepseek_v3_words(void) {
    static const char *const cases[][2] = {
        {"Hello, world! 12345 日本語テキスト", "Hello|,| world|!| |123|45| |日本語テキスト"},
        {"#include <stdio.h>", "#include| <|stdio|.h|>"},
    };
    CHECK_WORDS(ADIL_PRETOK_DEEPSEEK_V3, cases);
}

int main(void) {
    test_spm_merges();
    test_spm_specials_and_bos();
    test_contract();
    test_bpe("llama-bpe", PRE_LLAMA3);
    test_bpe("qwen2", PRE_QWEN2);
    test_bpe("smollm", PRE_SMOLLM);
    test_smollm_words();
    test_gpt2_words();
    test_qwen35_words();
    test_gpt4o_words();
    test_tekken_words();
    test_deepseek_llm_words();
    test_deepseek_coder_words();
    test_deepseek_v3_words();
    return test_report("test_tokenizer");
}
