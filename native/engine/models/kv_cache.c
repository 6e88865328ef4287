/*
 * kv_cache.c — allocation of the KV cache, its rings, and the one place its
 * rows are written (see kv_cache.h).
 */
#include "models/kv_cache.h"

#include "compute/kernels.h"
#include "compute/weight_types.h"

#include <stdlib.h>
#include <string.h>

adil_kv_type adil_kv_type_from_env(void) {
    const char *s = getenv("ADIL_KV_TYPE");
    if (s && strcmp(s, "f32") == 0) return ADIL_KV_F32;
    return s && strcmp(s, "q8_0") == 0 ? ADIL_KV_Q8_0 : ADIL_KV_F16;
}

adil_status adil_kv_type_check(const char *what, adil_kv_type type, int64_t head_dim, int64_t head_dim_v) {
    if (type != ADIL_KV_Q8_0 || (head_dim % ADIL_KV_Q8_0_BLOCK == 0 && head_dim_v % ADIL_KV_Q8_0_BLOCK == 0))
        return ADIL_OK;
    return adil_fail(ADIL_STATUS_CAPABILITY,
                     "%s: kv_type q8_0 needs head widths that are multiples of %d, got keys %lld and "
                     "values %lld (use f16)",
                     what, ADIL_KV_Q8_0_BLOCK, (long long)head_dim, (long long)head_dim_v);
}

bool adil_kv_ring_from_env(void) {
    const char *s = getenv("ADIL_KV_RING");
    return !(s && strcmp(s, "0") == 0);
}

/* Positive sizes, and widths of whole blocks for Q8_0. */
static bool shape_ok(const adil_kv_shape *s) {
    if (s->type == ADIL_KV_Q8_0 && (s->k_width % ADIL_KV_Q8_0_BLOCK || s->v_width % ADIL_KV_Q8_0_BLOCK))
        return false;
    return s->n_layer > 0 && s->n_ctx > 0 && s->n_batch > 0 && s->k_width > 0 && s->v_width > 0;
}

/* Rows layer il keeps: a window's ring when it has one and it is smaller. */
static int64_t layer_rows(const adil_kv_shape *s, int64_t il) {
    const int64_t w = s->window[il];
    if (!s->ring || w <= 0 || w >= s->n_ctx || s->n_batch >= s->n_ctx - w) return s->n_ctx;
    return w + s->n_batch;
}

/* Σ rows over the layers, or 0 when the bytes of the keys and values (at
 * most 4 bytes an element) overflow size_t. */
static uint64_t total_rows(const adil_kv_shape *s) {
    if ((uint64_t)s->n_ctx > UINT32_MAX || s->n_layer > INT32_MAX) return 0;
    uint64_t n = 0; /* < 2^31 layers * 2^32 rows */
    for (int64_t il = 0; il < s->n_layer; il++) n += (uint64_t)layer_rows(s, il);
    const uint64_t widest = (uint64_t)(s->k_width > s->v_width ? s->k_width : s->v_width);
    if (widest > SIZE_MAX / 8) return 0;
    return n > SIZE_MAX / 8 / widest ? 0 : n; /* n * 2 widths * 4 bytes fits */
}

uint64_t adil_kv_cache_bytes(const adil_kv_shape *s) {
    if (!shape_ok(s)) return UINT64_MAX;
    const uint64_t n = total_rows(s);
    if (!n) return UINT64_MAX;
    return adil_kv_bytes_of(s->type, (size_t)n * (size_t)s->k_width) +
           adil_kv_bytes_of(s->type, (size_t)n * (size_t)s->v_width);
}

/* The per-layer rows and starts of kv for shape s. */
static adil_status layout(adil_kv_cache *kv, const adil_kv_shape *s) {
    kv->rows = malloc((size_t)s->n_layer * sizeof *kv->rows);
    kv->start = malloc((size_t)s->n_layer * sizeof *kv->start);
    if (!kv->rows || !kv->start) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: out of memory");
    size_t at = 0;
    kv->ring = s->n_ctx;
    for (int64_t il = 0; il < s->n_layer; il++) {
        kv->rows[il] = layer_rows(s, il);
        kv->start[il] = at;
        at += (size_t)kv->rows[il];
        if (kv->rows[il] < s->n_ctx) {
            kv->ring = kv->rows[il];
            kv->window = s->window[il];
        }
    }
    return ADIL_OK;
}

adil_status adil_kv_cache_init(adil_kv_cache *kv, const adil_kv_shape *s) {
    memset(kv, 0, sizeof *kv);
    if (!shape_ok(s) || s->n_layer > INT32_MAX)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "kv cache: expected positive sizes (widths of whole blocks for q8_0), got layers "
                         "%lld, n_ctx %lld, n_batch %lld, widths %lld/%lld",
                         (long long)s->n_layer, (long long)s->n_ctx, (long long)s->n_batch,
                         (long long)s->k_width, (long long)s->v_width);
    const uint64_t bytes = adil_kv_cache_bytes(s);
    if (bytes == UINT64_MAX)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: size of %lld positions overflows",
                         (long long)s->n_ctx);
    adil_status st = layout(kv, s);
    const size_t n = (size_t)total_rows(s);
    /* malloc, not calloc: rows are written before they are read, and the
     * pages of an unused tail of the window are never touched. */
    if (st == ADIL_OK) {
        kv->k = malloc(adil_kv_bytes_of(s->type, n * (size_t)s->k_width));
        kv->v = malloc(adil_kv_bytes_of(s->type, n * (size_t)s->v_width));
        if (!kv->k || !kv->v)
            st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "kv cache: cannot allocate %.1f MiB for %lld positions",
                           (double)bytes / 1048576.0, (long long)s->n_ctx);
    }
    if (st != ADIL_OK) {
        adil_kv_cache_free(kv);
        return st;
    }
    kv->type = s->type;
    kv->n_ctx = s->n_ctx;
    kv->n_layer = s->n_layer;
    kv->k_width = s->k_width;
    kv->v_width = s->v_width;
    return ADIL_OK;
}

void adil_kv_cache_free(adil_kv_cache *kv) {
    free(kv->k);
    free(kv->v);
    free(kv->rows);
    free(kv->start);
    memset(kv, 0, sizeof *kv);
}

/* n floats of src into dst as kv->type (Q8_0: n a multiple of the block;
 * the selected level's quantizer, whose bytes equal the reference's). */
static void store_row(const adil_kv_cache *kv, void *dst, const float *src, int64_t n) {
    if (kv->type == ADIL_KV_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    if (kv->type == ADIL_KV_Q8_0) {
        adil_wtype_kernels_get(ADIL_WT_Q8_0)->quantize_row(src, dst, n);
        return;
    }
    adil_fp16 *h = dst;
    for (int64_t i = 0; i < n; i++) h[i] = adil_f32_to_fp16(src[i]);
}

void adil_kv_store(adil_kv_cache *kv, int64_t il, int64_t pos0, int64_t T, const float *k, const float *v) {
    /* consecutive positions are consecutive rows until a ring wraps: store
     * runs up to the end of the layer's rows */
    for (int64_t t = 0; t < T;) {
        const int64_t row = (pos0 + t) % kv->rows[il];
        const int64_t run = T - t < kv->rows[il] - row ? T - t : kv->rows[il] - row;
        store_row(kv, adil_kv_k(kv, il, pos0 + t), k + t * kv->k_width, run * kv->k_width);
        store_row(kv, adil_kv_v(kv, il, pos0 + t), v + t * kv->v_width, run * kv->v_width);
        t += run;
    }
}

bool adil_kv_cache_keeps(const adil_kv_cache *kv, int64_t n_keep, int64_t high) {
    if (kv->ring >= kv->n_ctx || n_keep == 0) return true;
    /* the oldest position the next query needs, and the lowest one the ring
     * has not overwritten since */
    const int64_t oldest = n_keep - kv->window + 1 > 0 ? n_keep - kv->window + 1 : 0;
    return oldest >= high - kv->ring;
}
