/*
 * test_hooks.c — the adil_internal_* functions (see adil_internal.h): thin
 * wrappers that let the Python tests reach the GGUF reader and the kernels
 * through libadil_engine_hooks.  Each checks its arguments, since Python
 * passes whatever a test builds.
 */
#include "adil_internal.h"

#include "adil_common.h"
#include "compute/matmul.h"
#include "compute/threadpool.h"
#include "compute/kernels.h"
#include "format/gguf.h"

#include <inttypes.h>
#include <stdlib.h>

ADIL_API adil_status adil_internal_gguf_check(const void *data, size_t size) {
    gguf_file *f = NULL;
    adil_status st = gguf_open_memory(data, size, &f);
    gguf_close(f);
    return st;
}

ADIL_API adil_status adil_internal_gguf_check_file(const char *path) {
    gguf_file *f = NULL;
    adil_status st = gguf_open_file(path, &f);
    gguf_close(f);
    return st;
}

ADIL_API size_t adil_internal_row_size(uint32_t type, int64_t n) { return adil_row_size(type, n); }

/* The kernels of `type` when it has the function `what` needs and n is whole
 * blocks, else NULL with the last error set. */
static const adil_wtype_kernels *kernels_for(uint32_t type, int64_t n, bool has_fn, const char *what) {
    const adil_wtype_facts *f = adil_wtype_facts_get(type);
    if (f == NULL || !has_fn) {
        adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                  "%s: type %" PRIu32 " (%s): expected one with "
                  "this kernel",
                  what, type, adil_wtype_name(type));
        return NULL;
    }
    if (n < 0 || n % f->block_size != 0) {
        adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "%s: n: expected a multiple of %" PRId64 ", got %" PRId64,
                  what, f->block_size, n);
        return NULL;
    }
    return adil_wtype_kernels_get(type);
}

ADIL_API adil_status adil_internal_dequantize(uint32_t type, const void *src, int64_t n, float *dst) {
    const adil_wtype_kernels *k = adil_wtype_kernels_get(type);
    k = kernels_for(type, n, k != NULL && k->dequantize_row != NULL, "dequantize");
    if (k == NULL) {
        return ADIL_STATUS_INVALID_ARGUMENT;
    }
    k->dequantize_row(src, dst, n);
    return ADIL_OK;
}

ADIL_API adil_status adil_internal_quantize(uint32_t type, const float *src, int64_t n, void *dst) {
    const adil_wtype_kernels *k = adil_wtype_kernels_get(type);
    k = kernels_for(type, n, k != NULL && k->quantize_row != NULL, "quantize");
    if (k == NULL) {
        return ADIL_STATUS_INVALID_ARGUMENT;
    }
    k->quantize_row(src, dst, n);
    return ADIL_OK;
}

ADIL_API adil_status adil_internal_vec_dot(uint32_t type, int64_t n, const void *weight_row, const float *x,
                                           float *out) {
    /* One row through the real matmul path: quantizes x the same way. */
    return adil_internal_matmul(type, 1, n, weight_row, 1, x, out, 1);
}

ADIL_API adil_status adil_internal_matmul(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                          int64_t n_tokens, const float *x, float *y, int n_threads) {
    adil_weight weight = {type, rows, cols, w, ADIL_LAYOUT_ROWS};
    adil_pool *pool = NULL;
    adil_status st = adil_pool_create(n_threads, &pool);
    if (st != ADIL_OK) {
        return st;
    }
    size_t size = adil_matmul_scratch_size(&weight, n_tokens);
    void *scratch = size > 0 ? malloc(size) : NULL;
    if (size > 0 && scratch == NULL) {
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "matmul scratch of %zu bytes", size);
    } else {
        st = adil_matmul(pool, &weight, x, n_tokens, y, scratch, size);
    }
    free(scratch);
    adil_pool_free(pool);
    return st;
}

ADIL_API adil_status adil_internal_get_rows(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                            const int32_t *ids, int64_t n_ids, float *dst) {
    adil_weight weight = {type, rows, cols, w, ADIL_LAYOUT_ROWS};
    return adil_get_rows(&weight, ids, n_ids, dst);
}
