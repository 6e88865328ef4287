/*
 * kernels.h — the kernels of each weight type (weight_types.h), in one
 * table per CPU level, through which every kernel is dispatched.  Only
 * compute/ and models/ use it; the GGUF reader needs the facts alone.
 *
 * Quantized weight rows are multiplied with *activation* rows that were
 * first quantized to the weight type's activation type (vec_dot_type):
 * Q8_0 blocks for the 32-element types, legacy, IQ4_NL and MXFP4 (Q8_1,
 * which also carries d * sum(q), for Q4_1 and Q5_1 with their offset m),
 * Q8_K blocks for the 256-element K-quants and IQ4_XS, plain F32 for
 * F32/F16/BF16 (an exact float path).
 * This is what ggml does, so our results track llama.cpp.
 *
 * The scalar kernels (kernels_scalar.h) are the reference, written for
 * clarity.  SIMD kernels (simd/, one file per level and family of types)
 * replace the function pointers of an entry according to the CPU level
 * chosen once at first use (cpu_level.h); adil_wtype_kernels_get() returns
 * that level's entry, adil_wtype_kernels_at() any level's (tests compare
 * levels).
 */
#ifndef ADIL_KERNELS_H
#define ADIL_KERNELS_H

#include "compute/weight_types.h"

#include <stdbool.h>

/* Writes n floats of the row `src` (n a multiple of block_size). */
typedef void (*adil_dequantize_row_fn)(const void *src, float *dst, int64_t n);
/* Quantizes n floats into a row of this type (activation types, and the
 * reference quantizers used by tests). */
typedef void (*adil_quantize_row_fn)(const float *src, void *dst, int64_t n);
/* Dot product of a weight row of this type with an activation row already
 * quantized to this type's vec_dot_type; n elements. */
typedef float (*adil_vec_dot_fn)(int64_t n, const void *weight_row, const void *act_row);

/* A tile of dot products: n_rows consecutive weight rows times n_tok
 * activation rows (already quantized to the vec_dot_type):
 *     y[t * y_stride + r] = vec_dot(n, w + r * w_stride, act + t * act_stride)
 * for r < n_rows, t < n_tok, each bit for bit what the same level's vec_dot
 * gives.  Loading a weight block once for several tokens (prefill) and an
 * activation block once for several rows (decode) is the point. */
typedef struct adil_tile {
    int64_t n;        /* elements per row */
    const uint8_t *w; /* first weight row */
    size_t w_stride;  /* bytes from one weight row to the next */
    int64_t n_rows;
    const uint8_t *act; /* first activation row */
    size_t act_stride;  /* bytes from one activation row to the next */
    int64_t n_tok;
    float *y;
    size_t y_stride; /* floats from one token's outputs to the next */
} adil_tile;

typedef void (*adil_tile_dot_fn)(const adil_tile *tile);

typedef struct adil_wtype_kernels {
    uint32_t vec_dot_type;                 /* activation type for vec_dot (ADIL_WT_*) */
    adil_dequantize_row_fn dequantize_row; /* NULL: no kernel */
    adil_quantize_row_fn quantize_row;     /* NULL when not implemented */
    adil_vec_dot_fn vec_dot;               /* NULL: cannot be a matmul weight */
    adil_tile_dot_fn tile_dot;             /* NULL: callers loop over vec_dot */
    /* The tile kernel of the 8-row layout (compute/repack.h): n_rows a
     * multiple of 8, w at a group's first row.  NULL: weights of this type
     * stay row-major at this level. */
    adil_tile_dot_fn tile_dot_r8;
} adil_wtype_kernels;

/* The kernels of `type` at the selected CPU level, or NULL when the id is
 * unknown (adil_wtype_facts_get is NULL).  Any of an entry's functions may
 * be NULL: integer and F64 types have none. */
const adil_wtype_kernels *adil_wtype_kernels_get(uint32_t type);

/* The same at a given level (an adil_cpu_level, cpu_level.h), for tests and
 * benchmarks that compare kernel sets; NULL also when the level is out of
 * range.  Only call a level's kernels when adil_cpu_level_supported() is at
 * least that level. */
const adil_wtype_kernels *adil_wtype_kernels_at(int level, uint32_t type);

/* True when the type has dequantize_row and vec_dot (usable as a weight). */
bool adil_wtype_has_kernels(uint32_t type);

#endif /* ADIL_KERNELS_H */
