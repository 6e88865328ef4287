/*
 * matmul.h — matrix products with (quantized) weight matrices, and row
 * lookup.
 *
 * A weight matrix is `rows` rows of `cols` elements of one ggml type, row r
 * at data + r * adil_row_size(type, cols) — exactly the layout of a 2-D GGUF
 * tensor with ne[0] = cols, ne[1] = rows — or, after the model's load
 * repacked it (layout ADIL_LAYOUT_R8, compute/repack.h), in groups of 8
 * interleaved rows that the type's tile_dot_r8 kernel reads.
 *
 * One driver, adil_matmul_group, computes for one input
 *     y[i] = x · W[i]ᵀ,  i < n  (n <= ADIL_MM_GROUP_MAX)
 *     x     [n_tokens x cols]     float, row-major (activations)
 *     y[i]  [n_tokens x rows[i]]  float, row-major
 * as a layer's q/k/v projections or its FFN gate and up projections need;
 * adil_matmul is the group of one weight.  Decode is the same call with
 * n_tokens = 1.
 *
 * x is first quantized to each activation type the group needs (Q8_0 / Q8_K,
 * or none for F32/F16/BF16 weights, see kernels.h), once for the whole
 * group.  Then the rows of all the weights are cut into chunks of roughly
 * equal bytes, several per thread, claimed by whichever thread is free
 * (adil_pool_for), so a thread that starts late or loses its core for a
 * while costs little.  Within a chunk, several tokens (prefill) go by tiles
 * of weight rows × tokens, so a weight row is read from memory once per tile
 * of tokens.  With an epilogue, a chunk is the same rows [r0, r1) of every
 * weight (they must have as many rows), and epilogue(user, r0, r1) runs
 * right after them on the thread that computed them, while they are in
 * cache (e.g. the gated activation of the FFN).
 *
 * The kernels are those of the CPU level selected at first use
 * (cpu_level.h); every output is the level's vec_dot of its row and token
 * (the tile kernels' contract) or, for a repacked weight, its tile_dot_r8's,
 * so results are bit-identical for any grouping, thread count and tiling at
 * a given level.
 */
#ifndef ADIL_MATMUL_H
#define ADIL_MATMUL_H

#include "adil_common.h"
#include "compute/threadpool.h"

#include <stddef.h>
#include <stdint.h>

/* adil_weight.layout */
enum {
    ADIL_LAYOUT_ROWS = 0, /* the file's: row after row */
    ADIL_LAYOUT_R8 = 1,   /* 8 rows interleaved (compute/repack.h) */
};

typedef struct adil_weight {
    uint32_t type;    /* ADIL_WT_* with kernels (adil_wtype_has_kernels) */
    int64_t rows;     /* output features */
    int64_t cols;     /* input features; a multiple of the type's block size */
    const void *data; /* rows * adil_weight_row_bytes(this) bytes (compute/repack.h) */
    uint32_t layout;  /* ADIL_LAYOUT_ROWS (0, the file's) or ADIL_LAYOUT_R8 (repack.h) */
} adil_weight;

#define ADIL_MM_GROUP_MAX 4

/* Called once per chunk with its rows [r0, r1) of every weight. */
typedef void (*adil_mm_epilogue_fn)(void *user, int64_t r0, int64_t r1);

typedef struct adil_mm_group {
    int n; /* 1 .. ADIL_MM_GROUP_MAX */
    const adil_weight *w[ADIL_MM_GROUP_MAX];
    float *y[ADIL_MM_GROUP_MAX];  /* (n_tokens, w[i]->rows), no overlap with x */
    adil_mm_epilogue_fn epilogue; /* may be NULL */
    void *user;
} adil_mm_group;

/* Bytes of scratch adil_matmul_group needs for n_tokens: x quantized to
 * every distinct activation type of the group.  0 when none is needed
 * (F32/F16/BF16 weights read x directly) or the group is invalid. */
size_t adil_matmul_group_scratch_size(const adil_mm_group *g, int64_t n_tokens);

/* Computes the group for x (n_tokens, cols), every weight having `cols`
 * columns.  `scratch` holds at least adil_matmul_group_scratch_size bytes,
 * aligned to 16 (malloc'ed memory is); it is clobbered.  pool may be NULL
 * (single-threaded).  Returns ADIL_STATUS_INVALID_ARGUMENT (nothing
 * computed) for a weight type without kernels, cols not a positive multiple
 * of the block size or differing between weights, differing rows with an
 * epilogue, n out of range, n_tokens < 1, NULL pointers or too small a
 * scratch; ADIL_OK otherwise. */
adil_status adil_matmul_group(adil_pool *pool, const adil_mm_group *g, const float *x, int64_t n_tokens,
                              void *scratch, size_t scratch_size);

/* The group of one weight: its scratch size, and y = x · Wᵀ. */
size_t adil_matmul_scratch_size(const adil_weight *w, int64_t n_tokens);
adil_status adil_matmul(adil_pool *pool, const adil_weight *w, const float *x, int64_t n_tokens, float *y,
                        void *scratch, size_t scratch_size);

/* Embedding lookup: dst[i] = dequantized row ids[i] of W, i < n_ids;
 * dst is [n_ids x cols] floats.  Returns ADIL_STATUS_INVALID_ARGUMENT when an
 * id is outside [0, rows) (message names the id) or the type has no
 * dequantize kernel. */
adil_status adil_get_rows(const adil_weight *w, const int32_t *ids, int64_t n_ids, float *dst);

#endif /* ADIL_MATMUL_H */
