/*
 * kv_cache.c — allocation of the f32 KV cache (see kv_cache.h).
 */
#include "models/kv_cache.h"

#include <stdlib.h>
#include <string.h>

/* n_layer * n_ctx * width floats, or 0 when that overflows size_t. */
static size_t cache_floats(int64_t n_layer, int64_t n_ctx, int64_t width) {
    uint64_t a = (uint64_t)n_layer, b = (uint64_t)n_ctx, c = (uint64_t)width;
    if (b && a > SIZE_MAX / b) return 0;
    if (c && a * b > SIZE_MAX / c) return 0;
    if (a * b * c > SIZE_MAX / sizeof(float)) return 0;
    return (size_t)(a * b * c);
}

uint64_t adil_kv_cache_bytes(int64_t n_layer, int64_t n_ctx, int64_t k_width, int64_t v_width) {
    if (n_layer <= 0 || n_ctx <= 0 || k_width <= 0 || v_width <= 0) return UINT64_MAX;
    const size_t nk = cache_floats(n_layer, n_ctx, k_width);
    const size_t nv = cache_floats(n_layer, n_ctx, v_width);
    if (!nk || !nv || nk > (SIZE_MAX / sizeof(float)) - nv) return UINT64_MAX;
    return (uint64_t)(nk + nv) * sizeof(float);
}

adil_status adil_kv_cache_init(adil_kv_cache *kv, int64_t n_layer, int64_t n_ctx, int64_t k_width,
                               int64_t v_width) {
    memset(kv, 0, sizeof *kv);
    if (n_layer <= 0 || n_ctx <= 0 || k_width <= 0 || v_width <= 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "kv cache: expected positive sizes, got layers %lld, n_ctx %lld, "
                         "widths %lld/%lld",
                         (long long)n_layer, (long long)n_ctx, (long long)k_width, (long long)v_width);
    size_t nk = cache_floats(n_layer, n_ctx, k_width);
    size_t nv = cache_floats(n_layer, n_ctx, v_width);
    if (!nk || !nv)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: size of %lld positions overflows",
                         (long long)n_ctx);
    /* malloc, not calloc: rows are written before they are read, and the
     * pages of an unused tail of the window are never touched. */
    kv->k = malloc(nk * sizeof(float));
    kv->v = malloc(nv * sizeof(float));
    if (!kv->k || !kv->v) {
        adil_kv_cache_free(kv);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: cannot allocate %.1f MiB for %lld positions",
                         (double)(nk + nv) * sizeof(float) / 1048576.0, (long long)n_ctx);
    }
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
