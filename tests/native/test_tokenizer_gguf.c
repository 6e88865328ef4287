/*
 * test_tokenizer_gguf.c — tokenizers built from GGUF metadata, on small
 * images written in memory (no tensors):
 *  - a byte-level BPE ("gpt2", pre "llama-bpe") file: merges applied in rank
 *    order, as derived by hand below; BOS from the file's key;
 *  - a SentencePiece ("llama") file without the optional keys: llama.cpp's
 *    defaults (BOS 1, EOS 2, add BOS, space prefix);
 *  - broken metadata: a missing or mistyped key is a format error naming the
 *    key, an unknown model or pre-tokenizer a capability error naming it; a
 *    file without a pre-tokenizer name gets llama.cpp's "default".
 * The real gemma3 file is checked against llama.cpp in
 * tests/test_tokenizer_gemma.py.
 */
#include "format/gguf.h"
#include "text/tokenizer_gguf.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a GGUF v3 metadata writer ------------------------------------------------ */

typedef struct image {
    uint8_t *buf;
    size_t n, cap;
    uint64_t n_kv;
    size_t n_kv_at;
} image;

static void put(image *m, const void *p, size_t n) {
    if (m->n + n > m->cap) {
        m->cap = (m->n + n) * 2;
        m->buf = realloc(m->buf, m->cap);
        if (!m->buf) {
            abort(); /* out of memory in the test itself */
        }
    }
    memcpy(m->buf + m->n, p, n);
    m->n += n;
}

static void put_u32(image *m, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    put(m, b, 4);
}

static void put_u64(image *m, uint64_t v) {
    put_u32(m, (uint32_t)v);
    put_u32(m, (uint32_t)(v >> 32));
}

static void put_str(image *m, const char *s, size_t len) {
    put_u64(m, len);
    put(m, s, len);
}

static void begin(image *m) {
    memset(m, 0, sizeof *m);
    put(m, "GGUF", 4);
    put_u32(m, 3);
    put_u64(m, 0); /* tensors */
    m->n_kv_at = m->n;
    put_u64(m, 0); /* kv count, patched by finish() */
}

static void key(image *m, const char *k, uint32_t type) {
    put_str(m, k, strlen(k));
    put_u32(m, type);
    m->n_kv++;
}

static void kv_str(image *m, const char *k, const char *v) {
    key(m, k, GGUF_TYPE_STRING);
    put_str(m, v, strlen(v));
}

static void kv_u32(image *m, const char *k, uint32_t v) {
    key(m, k, GGUF_TYPE_UINT32);
    put_u32(m, v);
}

static void kv_bool(image *m, const char *k, bool v) {
    key(m, k, GGUF_TYPE_BOOL);
    uint8_t b = v;
    put(m, &b, 1);
}

static void kv_strs(image *m, const char *k, const char *const *v, const uint32_t *lens, size_t n) {
    key(m, k, GGUF_TYPE_ARRAY);
    put_u32(m, GGUF_TYPE_STRING);
    put_u64(m, n);
    for (size_t i = 0; i < n; i++) {
        put_str(m, v[i], lens ? lens[i] : strlen(v[i]));
    }
}

static void kv_f32s(image *m, const char *k, const float *v, size_t n) {
    key(m, k, GGUF_TYPE_ARRAY);
    put_u32(m, GGUF_TYPE_FLOAT32);
    put_u64(m, n);
    put(m, v, n * sizeof *v); /* this test runs on little-endian machines only */
}

static void kv_i32s(image *m, const char *k, const int32_t *v, size_t n) {
    key(m, k, GGUF_TYPE_ARRAY);
    put_u32(m, GGUF_TYPE_INT32);
    put_u64(m, n);
    put(m, v, n * sizeof *v);
}

static gguf_file *finish(image *m) {
    for (int i = 0; i < 8; i++) {
        m->buf[m->n_kv_at + (size_t)i] = (uint8_t)(m->n_kv >> (8 * i));
    }
    gguf_file *f = NULL;
    if (gguf_open_memory(m->buf, m->n, &f) != ADIL_OK) {
        fprintf(stderr, "gguf_open_memory: %s\n", adil_last_error());
    }
    return f;
}

/* ---- a byte-level BPE vocabulary -------------------------------------------- */

/* Ids 0..255: the 256 byte tokens in byte order (GPT-2's printable forms),
 * then the merged tokens and two control tokens. */
typedef struct bpe_vocab {
    char storage[256][4];
    const char *text[270];
    uint32_t len[270];
    int32_t type[270];
    uint32_t n;
} bpe_vocab;

static void bpe_fill(bpe_vocab *v) {
    uint32_t next = 0x100;
    for (unsigned b = 0; b < 256; b++) {
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
        uint32_t cp = printable ? b : next++;
        if (cp < 0x80) {
            v->storage[b][0] = (char)cp;
            v->len[b] = 1;
        } else {
            v->storage[b][0] = (char)(0xC0 | (cp >> 6));
            v->storage[b][1] = (char)(0x80 | (cp & 0x3F));
            v->len[b] = 2;
        }
        v->text[b] = v->storage[b];
        v->type[b] = ADIL_TOKEN_TYPE_NORMAL;
    }
    static const char *const extra[] = {
        "\xc4\xa0w", "or", "\xc4\xa0wor", "ld", "\xc4\xa0world", "<|begin_of_text|>", "<|end_of_text|>"};
    v->n = 256;
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++, v->n++) {
        v->text[v->n] = extra[i];
        v->len[v->n] = (uint32_t)strlen(extra[i]);
        v->type[v->n] = i >= 5 ? ADIL_TOKEN_TYPE_CONTROL : ADIL_TOKEN_TYPE_NORMAL;
    }
}

enum { SP_W = 256, OR = 257, SP_WOR = 258, LD = 259, SP_WORLD = 260, BOT = 261, EOT = 262 };

/* Ranks: 0 "Ġ w", 1 "o r", 2 "Ġw or", 3 "l d", 4 "Ġwor ld". */
static const char *const k_merges[] = {"\xc4\xa0 w", "o r", "\xc4\xa0w or", "l d", "\xc4\xa0wor ld"};

static gguf_file *bpe_image(image *m, const char *model, const char *pre, bool with_merges) {
    static bpe_vocab v;
    bpe_fill(&v);
    begin(m);
    kv_str(m, "general.architecture", "llama");
    kv_str(m, "tokenizer.ggml.model", model);
    if (pre) {
        kv_str(m, "tokenizer.ggml.pre", pre);
    }
    kv_strs(m, "tokenizer.ggml.tokens", v.text, v.len, v.n);
    kv_i32s(m, "tokenizer.ggml.token_type", v.type, v.n);
    if (with_merges) {
        kv_strs(m, "tokenizer.ggml.merges", k_merges, NULL, 5);
    }
    kv_u32(m, "tokenizer.ggml.bos_token_id", BOT);
    kv_u32(m, "tokenizer.ggml.eos_token_id", EOT);
    return finish(m);
}

static void expect(const adil_tokenizer *tok, const char *text, int32_t add_bos, const int32_t *want,
                   size_t n_want, int line) {
    int32_t got[32];
    size_t n = 0;
    adil_status st = adil_tokenizer_tokenize(tok, text, strlen(text), add_bos, 1, got, 32, &n);
    if (st != ADIL_OK || n != n_want || memcmp(got, want, n * sizeof *got) != 0) {
        fprintf(stderr, "line %d: \"%s\": status %d, %zu ids:", line, text, st, n);
        for (size_t i = 0; i < n && i < 32; i++) {
            fprintf(stderr, " %d", got[i]);
        }
        fprintf(stderr, "\n");
        test_failures++;
    }
}

#define EXPECT(tok, text, bos, ...)                        \
    expect(tok, text, bos, (const int32_t[]){__VA_ARGS__}, \
           sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t), __LINE__)

static void test_bpe_file(void) {
    image m;
    gguf_file *f = bpe_image(&m, "gpt2", "llama-bpe", true);
    adil_tokenizer *tok = NULL;
    CHECK(f != NULL && adil_tokenizer_from_gguf(f, &tok) == ADIL_OK);
    gguf_close(f);
    free(m.buf);
    if (!tok) {
        fprintf(stderr, "from_gguf: %s\n", adil_last_error());
        return;
    }
    /* "hello world": words "hello", " world".
     * "hello": no merge applies -> h e l l o.
     * " world" = Ġ w o r l d: Ġ+w (0) -> Ġw; o+r (1) -> or; Ġw+or (2) -> Ġwor;
     * l+d (3) -> ld; Ġwor+ld (4) -> Ġworld. */
    EXPECT(tok, "hello world", 0, 'h', 'e', 'l', 'l', 'o', SP_WORLD);
    /* " word": Ġw or d (no "Ġwor d" merge). */
    EXPECT(tok, " word", 0, SP_WOR, 'd');
    /* "or ld": "or" merges; " ld" = Ġ + ld. */
    EXPECT(tok, "or ld", 0, OR, ' ', LD);
    /* The file's BOS; llama-bpe adds it by default; control tokens parsed. */
    EXPECT(tok, "<|end_of_text|>", -1, BOT, EOT);
    adil_tokenizer_info info;
    adil_tokenizer_get_info(tok, &info);
    CHECK(info.n_vocab == 263 && info.bos_id == BOT && info.eos_id == EOT && info.add_bos);
    CHECK(!info.is_spm && !info.add_space_prefix);
    char buf[16];
    size_t n = 0;
    CHECK(adil_tokenizer_token_to_piece(tok, SP_WORLD, 0, buf, sizeof buf, &n) == ADIL_OK);
    CHECK(n == 6 && memcmp(buf, " world", 6) == 0);
    adil_tokenizer_free(tok);
}

static void test_spm_defaults(void) {
    /* <unk> <s> </s> ▁ h i ▁hi ▁h; no ids or flags in the file. */
    static const char *const toks[] = {"<unk>", "<s>", "</s>",           "\xe2\x96\x81",
                                       "h",     "i",   "\xe2\x96\x81hi", "\xe2\x96\x81h"};
    static const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1};
    static const float scores[] = {0, 0, 0, -1, -2, -2, -1, -1.5f};
    image m;
    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, NULL, 8);
    kv_i32s(&m, "tokenizer.ggml.token_type", types, 8);
    kv_f32s(&m, "tokenizer.ggml.scores", scores, 8);
    gguf_file *f = finish(&m);
    adil_tokenizer *tok = NULL;
    CHECK(f != NULL && adil_tokenizer_from_gguf(f, &tok) == ADIL_OK);
    gguf_close(f);
    free(m.buf);
    if (!tok) {
        return;
    }
    adil_tokenizer_info info;
    adil_tokenizer_get_info(tok, &info);
    CHECK(info.bos_id == 1 && info.eos_id == 2 && info.unk_id == 0);
    CHECK(info.add_bos && info.add_space_prefix && info.is_spm);
    /* "hi" -> "▁hi" (space prefix): ▁+h (-1.5) then ▁h+i -> "▁hi", after BOS. */
    EXPECT(tok, "hi", -1, 1, 6);
    adil_tokenizer_free(tok);

    /* The flags from the file win. */
    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, NULL, 8);
    kv_i32s(&m, "tokenizer.ggml.token_type", types, 8);
    kv_f32s(&m, "tokenizer.ggml.scores", scores, 8);
    kv_bool(&m, "tokenizer.ggml.add_bos_token", false);
    kv_bool(&m, "tokenizer.ggml.add_space_prefix", false);
    kv_u32(&m, "tokenizer.ggml.bos_token_id", 999); /* out of range: the default stays */
    f = finish(&m);
    CHECK(f != NULL && adil_tokenizer_from_gguf(f, &tok) == ADIL_OK);
    gguf_close(f);
    free(m.buf);
    if (!tok) {
        return;
    }
    adil_tokenizer_get_info(tok, &info);
    CHECK(info.bos_id == 1 && !info.add_bos && !info.add_space_prefix);
    EXPECT(tok, "hi", -1, 4, 5);
    adil_tokenizer_free(tok);
}

static void expect_refused(gguf_file *f, adil_status want, const char *needle, int line) {
    adil_tokenizer *tok = (adil_tokenizer *)&tok; /* must be reset to NULL */
    adil_status st = f ? adil_tokenizer_from_gguf(f, &tok) : ADIL_STATUS_INTERNAL;
    if (st != want || tok != NULL || strstr(adil_last_error(), needle) == NULL) {
        fprintf(stderr, "line %d: status %d (want %d), message \"%s\" (want \"%s\")\n", line, st, want,
                adil_last_error(), needle);
        test_failures++;
    }
    gguf_close(f);
}

static void test_refusals(void) {
    image m;
    gguf_file *f = bpe_image(&m, "gpt2", "llama-bpe", false);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.merges", __LINE__);
    free(m.buf);

    f = bpe_image(&m, "gpt2", "chameleon", true);
    expect_refused(f, ADIL_STATUS_CAPABILITY, "chameleon", __LINE__);
    free(m.buf);

    /* No tokenizer.ggml.pre: llama.cpp's "default" patterns, as llama.cpp
     * reads such a file (with a warning). */
    f = bpe_image(&m, "gpt2", NULL, true);
    adil_tokenizer *tok = NULL;
    CHECK(f != NULL && adil_tokenizer_from_gguf(f, &tok) == ADIL_OK && tok != NULL);
    adil_tokenizer_free(tok);
    gguf_close(f);
    free(m.buf);

    f = bpe_image(&m, "bert", NULL, true);
    expect_refused(f, ADIL_STATUS_CAPABILITY, "bert", __LINE__);
    free(m.buf);

    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    f = finish(&m);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.tokens", __LINE__);
    free(m.buf);

    begin(&m);
    kv_u32(&m, "tokenizer.ggml.model", 7);
    f = finish(&m);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.model", __LINE__);
    free(m.buf);

    /* Fewer scores than tokens. */
    static const char *const toks[] = {"a", "b", "c"};
    static const float scores[] = {0, 0};
    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, NULL, 3);
    kv_f32s(&m, "tokenizer.ggml.scores", scores, 2);
    f = finish(&m);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.scores", __LINE__);
    free(m.buf);

    /* Token types of the wrong element type. */
    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, NULL, 3);
    kv_f32s(&m, "tokenizer.ggml.token_type", (const float[]){1, 1, 1}, 3);
    f = finish(&m);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.token_type", __LINE__);
    free(m.buf);

    /* An empty vocabulary. */
    begin(&m);
    kv_str(&m, "tokenizer.ggml.model", "llama");
    kv_strs(&m, "tokenizer.ggml.tokens", toks, NULL, 0);
    f = finish(&m);
    expect_refused(f, ADIL_STATUS_MODEL_FORMAT, "tokenizer.ggml.tokens", __LINE__);
    free(m.buf);
}

int main(void) {
    test_bpe_file();
    test_spm_defaults();
    test_refusals();
    return test_report("test_tokenizer_gguf");
}
