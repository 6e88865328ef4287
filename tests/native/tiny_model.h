/*
 * tiny_model.h — writes a tiny but complete llama GGUF file that the CPU
 * engine loads and runs through the ABI: F32 weights (deterministic
 * pseudo-random values, norms 1), a SentencePiece vocabulary of single
 * characters, and the metadata strings a test wants to spoil (architecture,
 * general.name, chat template, with explicit lengths so they may hold NUL).
 * Default shapes: 2 layers, width 64, 2 query heads and 1 KV head of 32,
 * FFN 128, 32 tokens.  With zero_weights the data section is left a hole
 * (ftruncate), so that wide shapes cost no disk.
 *
 * The file layout follows gguf.h: header, key/values, tensor infos, padding
 * to 32, tensor data at 32-aligned offsets.  Little-endian machines only.
 */
#ifndef TINY_MODEL_H
#define TINY_MODEL_H

#include "format/gguf.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct tiny_spec {
    const char *arch; /* general.architecture, arch_len bytes */
    size_t arch_len;
    const char *name; /* general.name, or NULL for none */
    size_t name_len;
    const char *chat_template; /* tokenizer.chat_template, or NULL */
    size_t chat_template_len;
    int64_t n_layer, n_embd, n_head, n_head_kv, head_dim, n_ff;
    bool zero_weights; /* leave the data a hole: every weight 0 */
    /* A vocabulary of n_vocab tokens instead of the default one (NULL): the
     * strings (NUL-terminated, "▁" for a space) and their GGUF token types. */
    const char *const *vocab;
    const int32_t *token_types;
    uint32_t n_vocab;
} tiny_spec;

#define TINY_N_VOCAB 32

static inline uint64_t tiny_n_vocab(const tiny_spec *s) { return s->vocab ? s->n_vocab : TINY_N_VOCAB; }

static inline tiny_spec tiny_default(void) {
    return (tiny_spec){.arch = "llama",
                       .arch_len = 5,
                       .name = "tiny",
                       .name_len = 4,
                       .n_layer = 2,
                       .n_embd = 64,
                       .n_head = 2,
                       .n_head_kv = 1,
                       .head_dim = 32,
                       .n_ff = 128};
}

/* ---- a growable little-endian writer ------------------------------------- */

typedef struct tiny_buf {
    uint8_t *p;
    size_t n, cap;
    uint64_t n_kv;
} tiny_buf;

static inline void tiny_put(tiny_buf *b, const void *src, size_t n) {
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 4096;
        b->p = realloc(b->p, b->cap);
        if (b->p == NULL) abort(); /* out of memory in the test itself */
    }
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static inline void tiny_u32(tiny_buf *b, uint32_t v) { tiny_put(b, &v, 4); }
static inline void tiny_u64(tiny_buf *b, uint64_t v) { tiny_put(b, &v, 8); }

static inline void tiny_str(tiny_buf *b, const char *s, size_t len) {
    tiny_u64(b, len);
    tiny_put(b, s, len);
}

static inline void tiny_key(tiny_buf *b, const char *key, uint32_t type) {
    tiny_str(b, key, strlen(key));
    tiny_u32(b, type);
    b->n_kv++;
}

static inline void tiny_kv_u32(tiny_buf *b, const char *key, uint32_t v) {
    tiny_key(b, key, GGUF_TYPE_UINT32);
    tiny_u32(b, v);
}

static inline void tiny_kv_str(tiny_buf *b, const char *key, const char *s, size_t len) {
    tiny_key(b, key, GGUF_TYPE_STRING);
    tiny_str(b, s, len);
}

/* ---- the model ---------------------------------------------------------- */

typedef struct tiny_tensor {
    char name[48];
    uint64_t ne0, ne1; /* ne1 = 1 for vectors */
    bool norm;         /* filled with 1 */
} tiny_tensor;

/* The tensors of the spec, in file order; returns their count. */
static inline int tiny_tensors(const tiny_spec *s, tiny_tensor *t) {
    const uint64_t E = (uint64_t)s->n_embd, F = (uint64_t)s->n_ff;
    const uint64_t Q = (uint64_t)(s->n_head * s->head_dim), KV = (uint64_t)(s->n_head_kv * s->head_dim);
    int n = 0;
    t[n++] = (tiny_tensor){"token_embd.weight", E, tiny_n_vocab(s), false};
    t[n++] = (tiny_tensor){"output_norm.weight", E, 1, true};
    for (int64_t il = 0; il < s->n_layer; il++) {
        static const char *const names[] = {"attn_norm", "attn_q",   "attn_k", "attn_v",  "attn_output",
                                            "ffn_norm",  "ffn_gate", "ffn_up", "ffn_down"};
        const uint64_t shape[9][2] = {{E, 1}, {E, Q}, {E, KV}, {E, KV}, {Q, E},
                                      {E, 1}, {E, F}, {E, F},  {F, E}};
        for (int k = 0; k < 9; k++) {
            snprintf(t[n].name, sizeof t[n].name, "blk.%d.%s.weight", (int)il, names[k]);
            t[n].ne0 = shape[k][0];
            t[n].ne1 = shape[k][1];
            t[n].norm = shape[k][1] == 1;
            n++;
        }
    }
    return n;
}

/* "<arch>.<key>" = v (a uint32). */
static inline void tiny_hp(tiny_buf *b, const tiny_spec *s, const char *key, int64_t v) {
    char name[96];
    snprintf(name, sizeof name, "%.*s.%s", (int)s->arch_len, s->arch, key);
    tiny_kv_u32(b, name, (uint32_t)v);
}

/* <unk> <s> </s>, then "▁" and single characters */
static inline void tiny_default_vocab(tiny_buf *b) {
    tiny_key(b, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
    tiny_u32(b, GGUF_TYPE_STRING);
    tiny_u64(b, TINY_N_VOCAB);
    static const char *const specials[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81"};
    for (int i = 0; i < TINY_N_VOCAB; i++) {
        char c = (char)('a' + (i - 4));
        if (i < 4)
            tiny_str(b, specials[i], strlen(specials[i]));
        else
            tiny_str(b, &c, 1);
    }
    tiny_key(b, "tokenizer.ggml.token_type", GGUF_TYPE_ARRAY);
    tiny_u32(b, GGUF_TYPE_INT32);
    tiny_u64(b, TINY_N_VOCAB);
    for (int i = 0; i < TINY_N_VOCAB; i++) tiny_u32(b, i == 0 ? 2u : i < 3 ? 3u : 1u);
}

static inline void tiny_metadata(tiny_buf *b, const tiny_spec *s) {
    tiny_kv_str(b, "general.architecture", s->arch, s->arch_len);
    if (s->name != NULL) tiny_kv_str(b, "general.name", s->name, s->name_len);
    tiny_hp(b, s, "embedding_length", s->n_embd);
    tiny_hp(b, s, "block_count", s->n_layer);
    tiny_hp(b, s, "feed_forward_length", s->n_ff);
    tiny_hp(b, s, "attention.head_count", s->n_head);
    tiny_hp(b, s, "attention.head_count_kv", s->n_head_kv);
    tiny_hp(b, s, "attention.key_length", s->head_dim);
    tiny_hp(b, s, "attention.value_length", s->head_dim);
    tiny_hp(b, s, "context_length", 256);
    tiny_kv_str(b, "tokenizer.ggml.model", "llama", 5);
    if (s->vocab != NULL) {
        tiny_key(b, "tokenizer.ggml.tokens", GGUF_TYPE_ARRAY);
        tiny_u32(b, GGUF_TYPE_STRING);
        tiny_u64(b, s->n_vocab);
        for (uint32_t i = 0; i < s->n_vocab; i++) tiny_str(b, s->vocab[i], strlen(s->vocab[i]));
        tiny_key(b, "tokenizer.ggml.token_type", GGUF_TYPE_ARRAY);
        tiny_u32(b, GGUF_TYPE_INT32);
        tiny_u64(b, s->n_vocab);
        for (uint32_t i = 0; i < s->n_vocab; i++) tiny_u32(b, (uint32_t)s->token_types[i]);
    } else {
        tiny_default_vocab(b);
    }
    if (s->chat_template != NULL)
        tiny_kv_str(b, "tokenizer.chat_template", s->chat_template, s->chat_template_len);
}

/* Writes the model to a new temporary file; its path goes to path[64].
 * False (with a message) when the file cannot be written. */
static inline bool tiny_write(const tiny_spec *s, char path[64]) {
    tiny_tensor *t = calloc((size_t)(2 + 9 * s->n_layer), sizeof *t);
    tiny_buf b = {0};
    if (t == NULL) abort();
    const int n_tensors = tiny_tensors(s, t);
    tiny_put(&b, "GGUF", 4);
    tiny_u32(&b, 3);
    tiny_u64(&b, (uint64_t)n_tensors);
    const size_t n_kv_at = b.n;
    tiny_u64(&b, 0); /* patched below */
    tiny_metadata(&b, s);
    memcpy(b.p + n_kv_at, &b.n_kv, 8);
    uint64_t offset = 0;
    for (int i = 0; i < n_tensors; i++) {
        tiny_str(&b, t[i].name, strlen(t[i].name));
        tiny_u32(&b, t[i].ne1 == 1 ? 1u : 2u);
        tiny_u64(&b, t[i].ne0);
        if (t[i].ne1 != 1) tiny_u64(&b, t[i].ne1);
        tiny_u32(&b, 0); /* F32 */
        tiny_u64(&b, offset);
        offset += (t[i].ne0 * t[i].ne1 * 4 + 31) / 32 * 32;
    }
    while (b.n % 32) tiny_put(&b, "", 1);
    const size_t data_at = b.n;
    uint32_t seed = 12345;
    for (int i = 0; !s->zero_weights && i < n_tensors; i++) {
        for (uint64_t k = 0; k < t[i].ne0 * t[i].ne1; k++) {
            seed = seed * 1664525u + 1013904223u; /* a fixed LCG: the same file every time */
            float x = t[i].norm ? 1.0f : ((float)(seed >> 8) / 16777216.0f - 0.5f) * 0.2f;
            tiny_put(&b, &x, 4);
        }
        while ((b.n - data_at) % 32) tiny_put(&b, "", 1);
    }
    snprintf(path, 64, "/tmp/adil_tiny_model_XXXXXX");
    int fd = mkstemp(path);
    bool ok = fd >= 0 && write(fd, b.p, b.n) == (ssize_t)b.n && ftruncate(fd, (off_t)(data_at + offset)) == 0;
    if (fd >= 0) close(fd);
    if (!ok) fprintf(stderr, "tiny_write: cannot write %s\n", path);
    free(b.p);
    free(t);
    return ok;
}

#endif /* TINY_MODEL_H */
