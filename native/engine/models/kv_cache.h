/*
 * kv_cache.h — the keys and values of the evaluated positions, per layer,
 * as IEEE half (the default: half the bytes, and what llama.cpp keeps too),
 * Q8_0 blocks (an option: 34 bytes per 32 elements, 53% of half's; each
 * head's key and value cut into whole blocks) or f32 (a reference for tests:
 * ADIL_KV_TYPE=f32).
 *
 * A layer that sees every earlier position keeps n_ctx rows, position p in
 * row p.  A sliding-window layer only ever reads the last `window`
 * positions, so it keeps a ring of rows = window + n_batch (at most n_ctx)
 * rows, position p in row p % rows: a batch of up to n_batch tokens writes
 * its own rows without overwriting any key its earliest query still needs
 * (window + n_batch - 1 rows are read at most), and a cut back inside the
 * last batch (lookup decoding) finds every row it needs.  Which positions
 * are valid is the owner's business (the context counts them); a cut back
 * further than the ring still holds must re-evaluate (adil_kv_cache_keeps).
 * Rows are computed in f32 and stored once (adil_kv_store), so rounding to
 * half or quantizing to Q8_0 happens at one place.
 */
#ifndef ADIL_KV_CACHE_H
#define ADIL_KV_CACHE_H

#include "adil_common.h"
#include "compute/attention.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct adil_kv_cache {
    adil_kv_type type;
    int64_t n_ctx; /* positions */
    int64_t n_layer;
    int64_t k_width; /* n_head_kv * head_dim */
    int64_t v_width; /* n_head_kv * head_dim_v */
    int64_t *rows;   /* (n_layer) rows of each layer: n_ctx, or a window's ring */
    size_t *start;   /* (n_layer) first row of each layer in k and v */
    int64_t window;  /* positions a ring layer sees (0: no ring layer) */
    int64_t ring;    /* rows of a ring layer (n_ctx when there is none) */
    void *k;         /* (Σ rows, k_width) elements of `type` */
    void *v;         /* (Σ rows, v_width) */
} adil_kv_cache;

/* The type the environment asks for: ADIL_KV_TYPE=f32 gives f32, q8_0
 * Q8_0, anything else (or nothing) f16.  Read when a context is made, so a
 * test can make an f32 context next to an f16 one in the same process. */
adil_kv_type adil_kv_type_from_env(void);

/* ADIL_OK when keys of heads of head_dim and values of head_dim_v elements
 * can be kept as `type`; ADIL_STATUS_CAPABILITY (message naming `what` and
 * the widths) for Q8_0 when either is not a multiple of its block. */
adil_status adil_kv_type_check(const char *what, adil_kv_type type, int64_t head_dim, int64_t head_dim_v);

/* Whether sliding-window layers get rings: not when ADIL_KV_RING=0 (a full
 * cache for every layer, the reference the ring is tested against). */
bool adil_kv_ring_from_env(void);

/* The shape of a cache: n_layer layers of n_ctx positions, keys and values
 * of k_width / v_width, layer il seeing the last window[il] positions (0:
 * all), batches of up to n_batch tokens; ring: whether windowed layers get
 * rings (else every layer keeps n_ctx rows). */
typedef struct adil_kv_shape {
    adil_kv_type type;
    int64_t n_layer, n_ctx, n_batch, k_width, v_width;
    const int64_t *window; /* (n_layer) */
    bool ring;
} adil_kv_shape;

/* Allocates a cache; ADIL_STATUS_OUT_OF_MEMORY (with the size) when it does
 * not fit, ADIL_STATUS_INVALID_ARGUMENT for non-positive sizes.  The caller
 * has checked the type (adil_kv_type_check); a Q8_0 cache needs k_width and
 * v_width to be multiples of the block. */
adil_status adil_kv_cache_init(adil_kv_cache *kv, const adil_kv_shape *shape);
void adil_kv_cache_free(adil_kv_cache *kv);

/* The bytes adil_kv_cache_init allocates for this shape; UINT64_MAX when
 * that overflows (or a size is not positive). */
uint64_t adil_kv_cache_bytes(const adil_kv_shape *shape);

/* Row `pos` of layer `il`'s keys / values (elements of kv->type). */
static inline size_t adil_kv_row(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return kv->start[il] + (size_t)(pos % kv->rows[il]);
}
static inline void *adil_kv_k(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return (char *)kv->k + adil_kv_bytes_of(kv->type, adil_kv_row(kv, il, pos) * (size_t)kv->k_width);
}
static inline void *adil_kv_v(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return (char *)kv->v + adil_kv_bytes_of(kv->type, adil_kv_row(kv, il, pos) * (size_t)kv->v_width);
}

/* Stores T rows of f32 keys k (T, k_width) and values v (T, v_width) as
 * positions pos0 .. pos0 + T - 1 of layer il, converted to kv->type. */
void adil_kv_store(adil_kv_cache *kv, int64_t il, int64_t pos0, int64_t T, const float *k, const float *v);

/* Whether the rings still hold what a context cut back to its first n_keep
 * positions needs, when positions up to `high` (exclusive) have been
 * written since the cache was last filled from position 0: every position
 * of the window before n_keep (a ring row is lost once a position `ring`
 * later has been written over it). */
bool adil_kv_cache_keeps(const adil_kv_cache *kv, int64_t n_keep, int64_t high);

#endif /* ADIL_KV_CACHE_H */
