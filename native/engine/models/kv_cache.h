/*
 * kv_cache.h — the keys and values of every evaluated position, per layer,
 * in f32.  Position p of layer l is row p of that layer's K and V matrices;
 * which positions are valid is the owner's business (the context counts
 * them), so truncating the cache to a prefix is free.
 */
#ifndef ADIL_KV_CACHE_H
#define ADIL_KV_CACHE_H

#include "adil_common.h"

#include <stdint.h>

typedef struct adil_kv_cache {
    int64_t n_ctx; /* positions */
    int64_t n_layer;
    int64_t k_width; /* n_head_kv * head_dim */
    int64_t v_width; /* n_head_kv * head_dim_v */
    float *k;        /* (n_layer, n_ctx, k_width) */
    float *v;        /* (n_layer, n_ctx, v_width) */
} adil_kv_cache;

/* Allocates a cache; ADIL_STATUS_OUT_OF_MEMORY (with the size) when it does
 * not fit, ADIL_STATUS_INVALID_ARGUMENT for non-positive sizes. */
adil_status adil_kv_cache_init(adil_kv_cache *kv, int64_t n_layer, int64_t n_ctx, int64_t k_width,
                               int64_t v_width);
void adil_kv_cache_free(adil_kv_cache *kv);

/* The bytes adil_kv_cache_init allocates for these sizes; UINT64_MAX when
 * that overflows (or a size is not positive). */
uint64_t adil_kv_cache_bytes(int64_t n_layer, int64_t n_ctx, int64_t k_width, int64_t v_width);

/* Row `pos` of layer `il`'s keys / values. */
static inline float *adil_kv_k(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return kv->k + (il * kv->n_ctx + pos) * kv->k_width;
}
static inline float *adil_kv_v(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return kv->v + (il * kv->n_ctx + pos) * kv->v_width;
}

#endif /* ADIL_KV_CACHE_H */
