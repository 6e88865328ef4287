/*
 * weight_types.h — the ggml weight types: ids, block layouts, and a traits
 * table through which every kernel is dispatched.
 *
 * A row of n elements of a block type is n / block_size consecutive blocks
 * (n must be a multiple of block_size).  Quantized weight rows are multiplied
 * with *activation* rows that were first quantized to the weight type's
 * activation type (vec_dot_type): Q8_0 blocks for the legacy 32-element types,
 * Q8_K blocks for the 256-element K-quants, plain F32 for F32/F16/BF16 (an
 * exact float path).  This is what ggml does, so our results track llama.cpp.
 *
 * The scalar kernels (kernels.h) are the reference, written for clarity.
 * SIMD kernels (simd/, one file per level and family of types) replace the
 * function pointers of a traits entry according to the CPU level chosen once
 * at first use (cpu_level.h); adil_wtype_get() returns that level's table,
 * adil_wtype_get_at() any level's (tests compare levels).
 *
 * Alignment: kernels read blocks through the structs below, so a row must be
 * aligned to the struct's alignment (2 bytes for most, 4 for Q8_K, F32).  Rows
 * of a GGUF tensor are, because the data section is 32-byte aligned and rows
 * are whole blocks.
 */
#ifndef ADIL_WEIGHT_TYPES_H
#define ADIL_WEIGHT_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ggml type ids, exactly as stored in GGUF tensor infos. */
enum {
    ADIL_WT_F32 = 0,
    ADIL_WT_F16 = 1,
    ADIL_WT_Q4_0 = 2,
    ADIL_WT_Q4_1 = 3,
    /* 4 and 5 were Q4_2 / Q4_3, removed from ggml */
    ADIL_WT_Q5_0 = 6,
    ADIL_WT_Q5_1 = 7,
    ADIL_WT_Q8_0 = 8,
    ADIL_WT_Q8_1 = 9,
    ADIL_WT_Q2_K = 10,
    ADIL_WT_Q3_K = 11,
    ADIL_WT_Q4_K = 12,
    ADIL_WT_Q5_K = 13,
    ADIL_WT_Q6_K = 14,
    ADIL_WT_Q8_K = 15,
    ADIL_WT_I8 = 24,
    ADIL_WT_I16 = 25,
    ADIL_WT_I32 = 26,
    ADIL_WT_I64 = 27,
    ADIL_WT_F64 = 28,
    ADIL_WT_BF16 = 30,
    ADIL_WT_COUNT = 40 /* ids are < ADIL_WT_COUNT */
};

#define ADIL_QK 32    /* elements per block of the legacy quants */
#define ADIL_QK_K 256 /* elements per super-block of the K-quants */
#define ADIL_K_SCALE_SIZE 12

typedef uint16_t adil_fp16; /* IEEE half, raw bits */
typedef uint16_t adil_bf16; /* bfloat16, raw bits */

/* ---- block layouts (facts from the GGUF/ggml documentation) ---------- */

/* Q4_0: x = d * (q - 8), q in 0..15; element j in low nibble of qs[j],
 * element j+16 in the high nibble. */
typedef struct {
    adil_fp16 d;
    uint8_t qs[ADIL_QK / 2];
} block_q4_0;
_Static_assert(sizeof(block_q4_0) == 2 + 16, "block_q4_0 size");

/* Q4_1: x = d * q + m. */
typedef struct {
    adil_fp16 d, m;
    uint8_t qs[ADIL_QK / 2];
} block_q4_1;
_Static_assert(sizeof(block_q4_1) == 4 + 16, "block_q4_1 size");

/* Q5_0: x = d * (q - 16); the 5th bit of element j is bit j of qh (j < 16
 * low nibbles, j >= 16 high nibbles). */
typedef struct {
    adil_fp16 d;
    uint8_t qh[4];
    uint8_t qs[ADIL_QK / 2];
} block_q5_0;
_Static_assert(sizeof(block_q5_0) == 2 + 4 + 16, "block_q5_0 size");

/* Q5_1: x = d * q + m. */
typedef struct {
    adil_fp16 d, m;
    uint8_t qh[4];
    uint8_t qs[ADIL_QK / 2];
} block_q5_1;
_Static_assert(sizeof(block_q5_1) == 4 + 4 + 16, "block_q5_1 size");

/* Q8_0: x = d * q, q in -127..127.  Also the activation type of the legacy
 * quants. */
typedef struct {
    adil_fp16 d;
    int8_t qs[ADIL_QK];
} block_q8_0;
_Static_assert(sizeof(block_q8_0) == 2 + 32, "block_q8_0 size");

/* Q8_1: Q8_0 plus s = d * sum(qs) (activation type of Q4_1/Q5_1). */
typedef struct {
    adil_fp16 d, s;
    int8_t qs[ADIL_QK];
} block_q8_1;
_Static_assert(sizeof(block_q8_1) == 4 + 32, "block_q8_1 size");

/* Q2_K: 16 sub-blocks of 16; 4-bit scale and min per sub-block. */
typedef struct {
    uint8_t scales[ADIL_QK_K / 16];
    uint8_t qs[ADIL_QK_K / 4];
    adil_fp16 d, dmin;
} block_q2_K;
_Static_assert(sizeof(block_q2_K) == 16 + 64 + 4, "block_q2_K size");

/* Q3_K: 16 sub-blocks of 16; 6-bit scales; high bit in hmask. */
typedef struct {
    uint8_t hmask[ADIL_QK_K / 8];
    uint8_t qs[ADIL_QK_K / 4];
    uint8_t scales[12];
    adil_fp16 d;
} block_q3_K;
_Static_assert(sizeof(block_q3_K) == 32 + 64 + 12 + 2, "block_q3_K size");

/* Q4_K: 8 sub-blocks of 32; x = d * sc * q - dmin * m, with 6-bit sc and m
 * packed in `scales` (see get_scale_min_k4 in kernels). */
typedef struct {
    adil_fp16 d, dmin;
    uint8_t scales[ADIL_K_SCALE_SIZE];
    uint8_t qs[ADIL_QK_K / 2];
} block_q4_K;
_Static_assert(sizeof(block_q4_K) == 4 + 12 + 128, "block_q4_K size");

/* Q5_K: Q4_K plus a 5th bit per element in qh. */
typedef struct {
    adil_fp16 d, dmin;
    uint8_t scales[ADIL_K_SCALE_SIZE];
    uint8_t qh[ADIL_QK_K / 8];
    uint8_t qs[ADIL_QK_K / 2];
} block_q5_K;
_Static_assert(sizeof(block_q5_K) == 4 + 12 + 32 + 128, "block_q5_K size");

/* Q6_K: 16 sub-blocks of 16; x = d * scale * (q - 32), q 6-bit = 4 low bits in
 * ql + 2 high bits in qh; int8 scales. */
typedef struct {
    uint8_t ql[ADIL_QK_K / 2];
    uint8_t qh[ADIL_QK_K / 4];
    int8_t scales[ADIL_QK_K / 16];
    adil_fp16 d;
} block_q6_K;
_Static_assert(sizeof(block_q6_K) == 128 + 64 + 16 + 2, "block_q6_K size");

/* Q8_K: activation type of the K-quants.  float scale; bsums[i] is the sum
 * of qs[16 i .. 16 i + 15] (lets kernels apply the per-sub-block minimum). */
typedef struct {
    float d;
    int8_t qs[ADIL_QK_K];
    int16_t bsums[ADIL_QK_K / 16];
} block_q8_K;
_Static_assert(sizeof(block_q8_K) == 4 + 256 + 32, "block_q8_K size");

/* ---- traits ------------------------------------------------------------ */

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
    int64_t n;              /* elements per row */
    const uint8_t *w;       /* first weight row */
    size_t w_stride;        /* bytes from one weight row to the next */
    int64_t n_rows;
    const uint8_t *act;     /* first activation row */
    size_t act_stride;      /* bytes from one activation row to the next */
    int64_t n_tok;
    float *y;
    size_t y_stride;        /* floats from one token's outputs to the next */
} adil_tile;

typedef void (*adil_tile_dot_fn)(const adil_tile *tile);

typedef struct adil_wtype_traits {
    const char *name;        /* "Q4_K", ... (ggml's spelling) */
    int64_t block_size;      /* elements per block (1 for plain types) */
    size_t type_size;        /* bytes per block */
    uint32_t vec_dot_type;   /* activation type for vec_dot (ADIL_WT_*) */
    adil_dequantize_row_fn dequantize_row; /* NULL: no kernel (size facts only) */
    adil_quantize_row_fn quantize_row;     /* NULL when not implemented */
    adil_vec_dot_fn vec_dot;               /* NULL: cannot be a matmul weight */
    adil_tile_dot_fn tile_dot;             /* NULL: callers loop over vec_dot */
} adil_wtype_traits;

/* The traits of `type` at the selected CPU level, or NULL when the id is
 * unknown.  A known type may lack kernels (dequantize_row or vec_dot NULL):
 * the GGUF reader accepts it, a model that needs it for compute must refuse
 * it (ADIL_STATUS_CAPABILITY). */
const adil_wtype_traits *adil_wtype_get(uint32_t type);

/* The same at a given level (an adil_cpu_level, cpu_level.h), for tests and
 * benchmarks that compare kernel sets; NULL also when the level is out of
 * range.  Only call a level's kernels when adil_cpu_level_supported() is at
 * least that level. */
const adil_wtype_traits *adil_wtype_get_at(int level, uint32_t type);

/* Name of a type ("?" when unknown). */
const char *adil_wtype_name(uint32_t type);

/* True when the type has dequantize_row and vec_dot (usable as a weight). */
bool adil_wtype_has_kernels(uint32_t type);

/* Bytes of a row of n elements; 0 when the type is unknown or n is not a
 * multiple of the block size (callers validate first; the GGUF reader does). */
size_t adil_row_size(uint32_t type, int64_t n);

/* ---- scalar conversions -------------------------------------------------- */

float adil_fp16_to_f32(adil_fp16 h);
adil_fp16 adil_f32_to_fp16(float f); /* round to nearest even */
float adil_bf16_to_f32(adil_bf16 h);
adil_bf16 adil_f32_to_bf16(float f); /* round to nearest even, NaN kept */

#endif /* ADIL_WEIGHT_TYPES_H */
