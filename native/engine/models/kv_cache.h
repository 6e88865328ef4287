/*
 * kv_cache.h — the keys and values of every evaluated position, per layer,
 * as IEEE half (the default: half the bytes, and what llama.cpp keeps too)
 * or f32 (a reference for tests: ADIL_KV_TYPE=f32).  Position p of layer l
 * is row p of that layer's K and V matrices; which positions are valid is
 * the owner's business (the context counts them), so truncating the cache to
 * a prefix is free.  Rows are computed in f32 and stored once
 * (adil_kv_store), so rounding to half happens at one place.
 */
#ifndef ADIL_KV_CACHE_H
#define ADIL_KV_CACHE_H

#include "adil_common.h"
#include "compute/attention.h"

#include <stddef.h>
#include <stdint.h>

typedef struct adil_kv_cache {
    adil_kv_type type;
    int64_t n_ctx; /* positions */
    int64_t n_layer;
    int64_t k_width; /* n_head_kv * head_dim */
    int64_t v_width; /* n_head_kv * head_dim_v */
    void *k;         /* (n_layer, n_ctx, k_width) elements of `type` */
    void *v;         /* (n_layer, n_ctx, v_width) */
} adil_kv_cache;

/* The type the environment asks for: ADIL_KV_TYPE=f32 gives f32, anything
 * else (or nothing) f16.  Read when a context is made, so a test can make
 * an f32 context next to an f16 one in the same process. */
adil_kv_type adil_kv_type_from_env(void);

/* Bytes of one element of `type`. */
size_t adil_kv_type_size(adil_kv_type type);

/* Allocates a cache; ADIL_STATUS_OUT_OF_MEMORY (with the size) when it does
 * not fit, ADIL_STATUS_INVALID_ARGUMENT for non-positive sizes. */
adil_status adil_kv_cache_init(adil_kv_cache *kv, adil_kv_type type, int64_t n_layer, int64_t n_ctx,
                               int64_t k_width, int64_t v_width);
void adil_kv_cache_free(adil_kv_cache *kv);

/* The bytes adil_kv_cache_init allocates for these sizes; UINT64_MAX when
 * that overflows (or a size is not positive). */
uint64_t adil_kv_cache_bytes(adil_kv_type type, int64_t n_layer, int64_t n_ctx, int64_t k_width,
                             int64_t v_width);

/* Row `pos` of layer `il`'s keys / values (elements of kv->type). */
static inline void *adil_kv_k(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return (char *)kv->k + (size_t)((il * kv->n_ctx + pos) * kv->k_width) * adil_kv_type_size(kv->type);
}
static inline void *adil_kv_v(const adil_kv_cache *kv, int64_t il, int64_t pos) {
    return (char *)kv->v + (size_t)((il * kv->n_ctx + pos) * kv->v_width) * adil_kv_type_size(kv->type);
}

/* Stores T rows of f32 keys k (T, k_width) and values v (T, v_width) as
 * positions pos0 .. pos0 + T - 1 of layer il, converted to kv->type. */
void adil_kv_store(adil_kv_cache *kv, int64_t il, int64_t pos0, int64_t T, const float *k, const float *v);

#endif /* ADIL_KV_CACHE_H */
