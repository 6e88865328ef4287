/*
 * matmul.h — matrix products with (quantized) weight matrices, and row
 * lookup.
 *
 * A weight matrix is `rows` rows of `cols` elements of one ggml type, row r
 * at data + r * adil_row_size(type, cols) — exactly the layout of a 2-D GGUF
 * tensor with ne[0] = cols, ne[1] = rows.
 *
 * adil_matmul computes y = x · Wᵀ:
 *     x  [n_tokens x cols]  float, row-major (activations)
 *     y  [n_tokens x rows]  float, row-major
 * It first quantizes each row of x to the weight type's activation type
 * (Q8_0 / Q8_K / F32, see weight_types.h) into `scratch`, then splits the
 * weight rows over the pool's threads.  With n_tokens > 1 (prefill) each
 * thread walks tiles of weight rows × tokens so a weight row is read once
 * from memory and reused for a tile of tokens while it is in cache.
 * Decode is the same call with n_tokens = 1.  The kernels are those of the
 * CPU level selected at first use (cpu_level.h); results are bit-identical
 * for any thread count and tiling at a given level.
 */
#ifndef ADIL_MATMUL_H
#define ADIL_MATMUL_H

#include "adil_common.h"
#include "compute/threadpool.h"

#include <stddef.h>
#include <stdint.h>

typedef struct adil_weight {
    uint32_t type;    /* ADIL_WT_* with kernels (adil_wtype_has_kernels) */
    int64_t rows;     /* output features */
    int64_t cols;     /* input features; a multiple of the type's block size */
    const void *data; /* rows * adil_row_size(type, cols) bytes */
} adil_weight;

/* Bytes of scratch adil_matmul needs for this weight and n_tokens (the
 * quantized activations).  0 when none is needed (F32/F16/BF16 weights read x
 * directly) or the weight is invalid. */
size_t adil_matmul_scratch_size(const adil_weight *w, int64_t n_tokens);

/* y = x · Wᵀ as described above.  `scratch` holds at least
 * adil_matmul_scratch_size(w, n_tokens) bytes, aligned to 16 (malloc'ed
 * memory is); it is clobbered.  x and y must not overlap.  pool may be NULL
 * (single-threaded).  Returns ADIL_STATUS_INVALID_ARGUMENT for a type without
 * kernels, cols not a multiple of the block size, n_tokens < 1, NULL
 * pointers or too small a scratch; ADIL_OK otherwise. */
adil_status adil_matmul(adil_pool *pool, const adil_weight *w, const float *x, int64_t n_tokens,
                        float *y, void *scratch, size_t scratch_size);

/* Embedding lookup: dst[i] = dequantized row ids[i] of W, i < n_ids;
 * dst is [n_ids x cols] floats.  Returns ADIL_STATUS_INVALID_ARGUMENT when an
 * id is outside [0, rows) (message names the id) or the type has no
 * dequantize kernel. */
adil_status adil_get_rows(const adil_weight *w, const int32_t *ids, int64_t n_ids, float *dst);

#endif /* ADIL_MATMUL_H */
