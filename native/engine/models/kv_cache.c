/*
 * kv_cache.c — allocation of the KV cache and the one place its rows are
 * written (see kv_cache.h).
 */
#include "models/kv_cache.h"

#include "compute/weight_types.h"

#include <stdlib.h>
#include <string.h>

adil_kv_type adil_kv_type_from_env(void) {
    const char *s = getenv("ADIL_KV_TYPE");
    return s && strcmp(s, "f32") == 0 ? ADIL_KV_F32 : ADIL_KV_F16;
}

size_t adil_kv_type_size(adil_kv_type type) {
    return type == ADIL_KV_F32 ? sizeof(float) : sizeof(adil_fp16);
}

/* n_layer * n_ctx * width elements of `size` bytes, or 0 when the bytes
 * overflow size_t. */
static size_t cache_elems(int64_t n_layer, int64_t n_ctx, int64_t width, size_t size) {
    uint64_t a = (uint64_t)n_layer, b = (uint64_t)n_ctx, c = (uint64_t)width;
    if (b && a > SIZE_MAX / b) return 0;
    if (c && a * b > SIZE_MAX / c) return 0;
    if (a * b * c > SIZE_MAX / size) return 0;
    return (size_t)(a * b * c);
}

uint64_t adil_kv_cache_bytes(adil_kv_type type, int64_t n_layer, int64_t n_ctx, int64_t k_width,
                             int64_t v_width) {
    if (n_layer <= 0 || n_ctx <= 0 || k_width <= 0 || v_width <= 0) return UINT64_MAX;
    const size_t size = adil_kv_type_size(type);
    const size_t nk = cache_elems(n_layer, n_ctx, k_width, size);
    const size_t nv = cache_elems(n_layer, n_ctx, v_width, size);
    if (!nk || !nv || nk > (SIZE_MAX / size) - nv) return UINT64_MAX;
    return (uint64_t)(nk + nv) * size;
}

adil_status adil_kv_cache_init(adil_kv_cache *kv, adil_kv_type type, int64_t n_layer, int64_t n_ctx,
                               int64_t k_width, int64_t v_width) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || k_width <= 0 || v_width <= 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "kv cache: expected positive sizes, got layers %lld, n_ctx %lld, "
                         "widths %lld/%lld",
                         (long long)n_layer, (long long)n_ctx, (long long)k_width, (long long)v_width);
    const size_t size = adil_kv_type_size(type);
    size_t nk = cache_elems(n_layer, n_ctx, k_width, size);
    size_t nv = cache_elems(n_layer, n_ctx, v_width, size);
    if (!nk || !nv)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: size of %lld positions overflows",
                         (long long)n_ctx);
    /* malloc, not calloc: rows are written before they are read, and the
     * pages of an unused tail of the window are never touched. */
    kv->k = malloc(nk * size);
    kv->v = malloc(nv * size);
    if (!kv->k || !kv->v) {
        adil_kv_cache_free(kv);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: cannot allocate %.1f MiB for %lld positions",
                         (double)(nk + nv) * (double)size / 1048576.0, (long long)n_ctx);
    }
    kv->type = type;
    kv->n_ctx = n_ctx;
    kv->n_layer = n_layer;
    kv->k_width = k_width;
    kv->v_width = v_width;
    return ADIL_OK;
}

void adil_kv_cache_free(adil_kv_cache *kv) {
    free(kv->k);
    free(kv->v);
    memset(kv, 0, sizeof *kv);
}

/* n floats of src into dst as kv->type. */
static void store_row(const adil_kv_cache *kv, void *dst, const float *src, int64_t n) {
    if (kv->type == ADIL_KV_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    adil_fp16 *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = adil_f32_to_fp16(src[i]);
}

void adil_kv_store(adil_kv_cache *kv, int64_t il, int64_t pos0, int64_t T, const float *k, const float *v) {
    /* rows of one layer are consecutive, so a batch is one run of each */
    store_row(kv, adil_kv_k(kv, il, pos0), k, T * kv->k_width);
    store_row(kv, adil_kv_v(kv, il, pos0), v, T * kv->v_width);
}
