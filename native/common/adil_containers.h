/*
 * adil_containers.h — the two containers both engines use, implemented in
 * containers.c: arrays that grow by doubling, and a hash index of byte-string
 * keys over entries the caller keeps (GGUF keys and tensor names, the
 * tokenizer's vocabulary and merges).  Not part of the ABI.
 */
#ifndef ADIL_CONTAINERS_H
#define ADIL_CONTAINERS_H

#include "adil/adil.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- growing arrays --------------------------------------------------- */

/* Makes room for `need` elements of `item_size` bytes in the array *items of
 * capacity *cap elements: the capacity doubles (from 4: the stub's JSON
 * arrays and objects are mostly small) until it holds `need`.  Does nothing when it already does.  On failure *items and *cap
 * are unchanged (the caller still owns and frees *items) and the status is
 * ADIL_STATUS_OUT_OF_MEMORY, naming `what` and the elements asked for.
 *     adil_grow((void **)&list->data, &list->cap, list->n + 1, sizeof *list->data, "ids") */
static inline adil_status adil_grow(void **items, size_t *cap, size_t need, size_t item_size,
                                    const char *what);

/* adil_grow's reallocation, out of line; call adil_grow. */
adil_status adil_grow_realloc(void **items, size_t *cap, size_t need, size_t item_size, const char *what);

/* Inline, so that a push that fits costs one comparison. */
static inline adil_status adil_grow(void **items, size_t *cap, size_t need, size_t item_size,
                                    const char *what) {
    return need <= *cap ? ADIL_OK : adil_grow_realloc(items, cap, need, item_size, what);
}

/* ---- hash index ------------------------------------------------------- */

/* FNV-1a, 64 bit, continuing from `h`: start from ADIL_HASH_SEED; a key can
 * be hashed in pieces (the merge table hashes "left", " ", "right").  Inline,
 * like adil_hash_index_slot: lookups are the tokenizer's inner loop. */
#define ADIL_HASH_SEED 0xcbf29ce484222325ull
static inline uint64_t adil_hash_bytes(uint64_t h, const void *data, size_t len) {
    const uint8_t *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* An open-addressing index of entries the caller keeps in an array: a slot
 * holds an entry's position + 1, 0 = empty.  Linear probing, at most half
 * full, so every probe ends at an empty slot. */
typedef struct adil_hash_index {
    uint32_t *slots; /* 4 bytes a slot: the tokenizer's indexes hold 2^18-2^20 */
    uint64_t mask;   /* capacity - 1, the capacity a power of two */
} adil_hash_index;

/* True when the caller's entry at `pos` has the key `key` (of whatever form
 * the caller looks up: a string and its length, a pair of strings, ...). */
typedef bool (*adil_key_eq_fn)(const void *ctx, uint64_t pos, const void *key);

/* An empty index with room for n entries (capacity: the smallest power of
 * two, at least 16, that is at least 2n); ADIL_STATUS_OUT_OF_MEMORY naming
 * `what` for n over ADIL_HASH_INDEX_MAX or when the slots cannot be had. */
#define ADIL_HASH_INDEX_MAX (UINT32_MAX / 2)
adil_status adil_hash_index_init(adil_hash_index *ix, uint64_t n, const char *what);
void adil_hash_index_free(adil_hash_index *ix);

/* The slot for `key`, whose hash is `hash`: the one holding the entry whose
 * key it is (eq(ctx, pos, key)), else the empty slot where it would go.  The
 * caller inserts by writing position + 1 into an empty slot, at most n
 * times.  NULL for an index that was never initialised.  Inline, so that
 * the compiler can inline `eq` into a caller's lookup loop. */
static inline uint32_t *adil_hash_index_slot(const adil_hash_index *ix, uint64_t hash, adil_key_eq_fn eq,
                                             const void *ctx, const void *key) {
    if (ix->slots == NULL) {
        return NULL;
    }
    uint64_t i = hash & ix->mask;
    while (ix->slots[i] != 0 && !eq(ctx, ix->slots[i] - 1, key)) {
        i = (i + 1) & ix->mask;
    }
    return &ix->slots[i];
}

#endif /* ADIL_CONTAINERS_H */
