/*
 * vocab.c — string -> id lookup for the tokenizer: the vocabulary table
 * (262,144 strings for gemma) and the gpt2 merge table, both open-addressing
 * hash tables with linear probing at most half full.
 */
#include "text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- growable id list ---------------------------------------------------- */

adil_status adil_ids_push(adil_ids *ids, int32_t id)
{
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? ids->cap * 2 : 64;
        int32_t *data = realloc(ids->data, cap * sizeof *data);
        if (!data) {
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu ids", cap);
        }
        ids->data = data;
        ids->cap = cap;
    }
    ids->data[ids->n++] = id;
    return ADIL_OK;
}

void adil_ids_free(adil_ids *ids)
{
    free(ids->data);
    ids->data = NULL;
    ids->n = ids->cap = 0;
}

/* ---- hashing --------------------------------------------------------------- */

/* FNV-1a, 64 bit: continuing from `h` lets a key be hashed in pieces (the
 * merge table hashes "left", " ", "right" without building the string). */
uint64_t adil_hash_bytes(uint64_t h, const void *data, size_t len)
{
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static adil_status table_alloc(adil_str_table *t, uint64_t n_keys, const char *what)
{
    uint64_t cap = 16;
    while (cap < 2 * n_keys) {
        cap *= 2;
    }
    t->slots = calloc((size_t)cap, sizeof *t->slots);
    if (!t->slots) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for the %s table "
                         "(%llu slots)", what, (unsigned long long)cap);
    }
    t->mask = cap - 1;
    return ADIL_OK;
}

void adil_str_table_free(adil_str_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->mask = 0;
}

/* ---- vocabulary ------------------------------------------------------------ */

static bool vocab_eq(const adil_tokenizer *tok, int32_t id, const char *text, size_t len)
{
    return tok->vocab[id].len == len && memcmp(adil_vocab_text(tok, id), text, len) == 0;
}

adil_status adil_vocab_index(adil_tokenizer *tok)
{
    adil_status st = table_alloc(&tok->by_text, tok->n_vocab, "vocabulary");
    if (st != ADIL_OK) {
        return st;
    }
    for (uint32_t id = 0; id < tok->n_vocab; id++) {
        const char *s = adil_vocab_text(tok, (int32_t)id);
        size_t len = tok->vocab[id].len;
        uint64_t i = adil_hash_bytes(ADIL_HASH_SEED, s, len) & tok->by_text.mask;
        for (;; i = (i + 1) & tok->by_text.mask) {
            uint32_t slot = tok->by_text.slots[i];
            /* A duplicate string takes over the slot: llama.cpp's map keeps
             * the last id written for a string. */
            if (slot == 0 || vocab_eq(tok, (int32_t)(slot - 1), s, len)) {
                tok->by_text.slots[i] = id + 1;
                break;
            }
        }
    }
    return ADIL_OK;
}

int32_t adil_vocab_find(const adil_tokenizer *tok, const char *text, size_t len)
{
    uint64_t i = adil_hash_bytes(ADIL_HASH_SEED, text, len) & tok->by_text.mask;
    for (;; i = (i + 1) & tok->by_text.mask) {
        uint32_t slot = tok->by_text.slots[i];
        if (slot == 0) {
            return -1;
        }
        if (vocab_eq(tok, (int32_t)(slot - 1), text, len)) {
            return (int32_t)(slot - 1);
        }
    }
}

/* ---- merges ---------------------------------------------------------------- */

static uint64_t pair_hash(const char *left, size_t left_len, const char *right, size_t right_len)
{
    uint64_t h = adil_hash_bytes(ADIL_HASH_SEED, left, left_len);
    h = adil_hash_bytes(h, " ", 1);
    return adil_hash_bytes(h, right, right_len);
}

static bool merge_eq(const adil_tokenizer *tok, uint32_t rank, const char *left, size_t left_len,
                     const char *right, size_t right_len)
{
    uint32_t split = tok->merge_split[rank];
    const char *m = tok->merge_text + tok->merge_offset[rank];
    return split == left_len && tok->merge_len[rank] == left_len + 1 + right_len &&
           memcmp(m, left, left_len) == 0 && memcmp(m + left_len + 1, right, right_len) == 0;
}

adil_status adil_merges_index(adil_tokenizer *tok)
{
    adil_status st = table_alloc(&tok->by_merge, tok->n_merges, "merge");
    if (st != ADIL_OK) {
        return st;
    }
    for (uint32_t r = 0; r < tok->n_merges; r++) {
        uint32_t split = tok->merge_split[r];
        if (split == UINT32_MAX) {
            continue; /* no separator: llama.cpp stores an empty pair, never looked up */
        }
        const char *m = tok->merge_text + tok->merge_offset[r];
        const char *right = m + split + 1;
        size_t right_len = tok->merge_len[r] - split - 1;
        uint64_t i = pair_hash(m, split, right, right_len) & tok->by_merge.mask;
        for (;; i = (i + 1) & tok->by_merge.mask) {
            uint32_t slot = tok->by_merge.slots[i];
            if (slot == 0) {
                tok->by_merge.slots[i] = r + 1;
                break;
            }
            if (merge_eq(tok, slot - 1, m, split, right, right_len)) {
                break; /* a repeated pair keeps its first (best) rank */
            }
        }
    }
    return ADIL_OK;
}

int32_t adil_merge_rank(const adil_tokenizer *tok, const char *left, size_t left_len,
                        const char *right, size_t right_len)
{
    if (tok->n_merges == 0) {
        return -1;
    }
    uint64_t i = pair_hash(left, left_len, right, right_len) & tok->by_merge.mask;
    for (;; i = (i + 1) & tok->by_merge.mask) {
        uint32_t slot = tok->by_merge.slots[i];
        if (slot == 0) {
            return -1;
        }
        if (merge_eq(tok, slot - 1, left, left_len, right, right_len)) {
            return (int32_t)(slot - 1);
        }
    }
}
