/*
 * vocab.c — string -> id lookup for the tokenizer: the vocabulary index
 * (262,144 strings for gemma) and the gpt2 merge index, both hash indexes of
 * native/common (adil_containers.h) over the tokenizer's arrays.
 */
#include "text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- growable id list ---------------------------------------------------- */

adil_status adil_ids_push(adil_ids *ids, int32_t id) {
    adil_status st =
        adil_grow((void **)&ids->data, &ids->cap, ids->n + 1, sizeof *ids->data, "tokenize: ids");
    if (st != ADIL_OK) {
        return st;
    }
    ids->data[ids->n++] = id;
    return ADIL_OK;
}

void adil_ids_free(adil_ids *ids) {
    free(ids->data);
    ids->data = NULL;
    ids->n = ids->cap = 0;
}

/* ---- vocabulary ------------------------------------------------------------ */

typedef struct text_key {
    const char *text;
    size_t len;
} text_key;

static bool vocab_eq(const void *ctx, uint64_t pos, const void *key) {
    const adil_tokenizer *tok = ctx;
    const text_key *k = key;
    return tok->vocab[pos].len == k->len && memcmp(adil_vocab_text(tok, (int32_t)pos), k->text, k->len) == 0;
}

static uint32_t *vocab_slot(const adil_tokenizer *tok, const char *text, size_t len) {
    const text_key key = {text, len};
    return adil_hash_index_slot(&tok->by_text, adil_hash_bytes(ADIL_HASH_SEED, text, len), vocab_eq, tok,
                                &key);
}

adil_status adil_vocab_index(adil_tokenizer *tok) {
    adil_status st = adil_hash_index_init(&tok->by_text, tok->n_vocab, "tokenizer: vocabulary");
    for (uint32_t id = 0; st == ADIL_OK && id < tok->n_vocab; id++) {
        /* A duplicate string takes over the slot: llama.cpp's map keeps
         * the last id written for a string. */
        *vocab_slot(tok, adil_vocab_text(tok, (int32_t)id), tok->vocab[id].len) = id + 1;
    }
    return st;
}

int32_t adil_vocab_find(const adil_tokenizer *tok, const char *text, size_t len) {
    const uint32_t *slot = vocab_slot(tok, text, len);
    return slot != NULL ? (int32_t)*slot - 1 : -1;
}

/* ---- merges ---------------------------------------------------------------- */

typedef struct pair_key {
    const char *left, *right;
    size_t left_len, right_len;
} pair_key;

static bool merge_eq(const void *ctx, uint64_t rank, const void *key) {
    const adil_tokenizer *tok = ctx;
    const pair_key *k = key;
    uint32_t split = tok->merge_split[rank];
    const char *m = tok->merge_text + tok->merge_offset[rank];
    return split == k->left_len && tok->merge_len[rank] == k->left_len + 1 + k->right_len &&
           memcmp(m, k->left, k->left_len) == 0 && memcmp(m + k->left_len + 1, k->right, k->right_len) == 0;
}

static uint32_t *merge_slot(const adil_tokenizer *tok, const pair_key *key) {
    uint64_t h = adil_hash_bytes(ADIL_HASH_SEED, key->left, key->left_len);
    h = adil_hash_bytes(h, " ", 1);
    h = adil_hash_bytes(h, key->right, key->right_len);
    return adil_hash_index_slot(&tok->by_merge, h, merge_eq, tok, key);
}

adil_status adil_merges_index(adil_tokenizer *tok) {
    adil_status st = adil_hash_index_init(&tok->by_merge, tok->n_merges, "tokenizer: merges");
    for (uint32_t r = 0; st == ADIL_OK && r < tok->n_merges; r++) {
        uint32_t split = tok->merge_split[r];
        if (split == UINT32_MAX) {
            continue; /* no separator: llama.cpp stores an empty pair, never looked up */
        }
        const char *m = tok->merge_text + tok->merge_offset[r];
        const pair_key key = {m, m + split + 1, split, tok->merge_len[r] - split - 1};
        uint32_t *slot = merge_slot(tok, &key);
        if (*slot == 0) {
            *slot = r + 1; /* a repeated pair keeps its first (best) rank */
        }
    }
    return st;
}

int32_t adil_merge_rank(const adil_tokenizer *tok, const char *left, size_t left_len, const char *right,
                        size_t right_len) {
    const pair_key key = {left, right, left_len, right_len};
    const uint32_t *slot = merge_slot(tok, &key);
    return slot != NULL ? (int32_t)*slot - 1 : -1;
}
