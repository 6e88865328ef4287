/*
 * weight_types.h — the facts of the ggml weight types: ids, block layouts,
 * names and sizes.  No kernels: what the GGUF reader (format/) needs to
 * size and check a tensor, and nothing that would link it to the compute
 * code.  The kernels of each type, chosen by CPU level, are in kernels.h
 * (ggml keeps type_traits and type_traits_cpu apart the same way).
 *
 * A row of n elements of a block type is n / block_size consecutive blocks
 * (n must be a multiple of block_size).
 *
 * Alignment: kernels read blocks through the structs below, so a row must be
 * aligned to the struct's alignment (2 bytes for most, 4 for Q8_K, F32).  Rows
 * of a GGUF tensor are, because the data section is 32-byte aligned and rows
 * are whole blocks.
 */
#ifndef ADIL_WEIGHT_TYPES_H
#define ADIL_WEIGHT_TYPES_H

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
    ADIL_WT_IQ4_NL = 20,
    ADIL_WT_IQ4_XS = 23,
    ADIL_WT_I8 = 24,
    ADIL_WT_I16 = 25,
    ADIL_WT_I32 = 26,
    ADIL_WT_I64 = 27,
    ADIL_WT_F64 = 28,
    ADIL_WT_BF16 = 30,
    ADIL_WT_MXFP4 = 39,
    ADIL_WT_COUNT = 40 /* ids are < ADIL_WT_COUNT */
};

#define ADIL_QK           32  /* elements per block of the legacy quants */
#define ADIL_QK_K         256 /* elements per super-block of the K-quants */
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

/* IQ4_NL: x = d * kvalues_iq4nl[q], q a 4-bit code into a fixed non-linear
 * table of 16 int8 values (adil_kvalues_iq4nl); nibbles as Q4_0 (element j
 * low nibble of qs[j], j + 16 the high nibble).  Activations Q8_0. */
typedef struct {
    adil_fp16 d;
    uint8_t qs[ADIL_QK / 2];
} block_iq4_nl;
_Static_assert(sizeof(block_iq4_nl) == 2 + 16, "block_iq4_nl size");

/* MXFP4 (OCP microscaling FP4): x = 2^(e - 127) * e2m1(q), q a 4-bit E2M1
 * code (sign, 2 exponent bits, 1 mantissa bit), e an E8M0 byte; nibbles as
 * Q4_0.  As in ggml the E2M1 values are kept doubled as int8
 * (adil_kvalues_mxfp4) and the scale halved (adil_e8m0_half_to_f32), so
 * x = e8m0_half(e) * kvalues_mxfp4[q].  Activations Q8_0.  17 bytes: no
 * alignment needed. */
typedef struct {
    uint8_t e;
    uint8_t qs[ADIL_QK / 2];
} block_mxfp4;
_Static_assert(sizeof(block_mxfp4) == 1 + 16, "block_mxfp4 size");

/* The 16 values of the IQ4_NL / IQ4_XS codes, and the doubled E2M1 values
 * of MXFP4 (0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives, times 2). */
extern const int8_t adil_kvalues_iq4nl[16];
extern const int8_t adil_kvalues_mxfp4[16];

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

/* IQ4_XS: the IQ4_NL table in 256-element super-blocks of 8 sub-blocks of
 * 32 with a 6-bit scale each: x = d * (ls - 32) * kvalues_iq4nl[q].  ls of
 * sub-block j: low 4 bits in nibble j % 2 of scales_l[j / 2] (low nibble for
 * even j), high 2 bits at bit 2j of scales_h.  The codes of sub-block j are
 * qs[16 j .. 16 j + 15], nibbles as IQ4_NL.  Activations Q8_K. */
typedef struct {
    adil_fp16 d;
    uint16_t scales_h;
    uint8_t scales_l[ADIL_QK_K / 64];
    uint8_t qs[ADIL_QK_K / 2];
} block_iq4_xs;
_Static_assert(sizeof(block_iq4_xs) == 2 + 2 + 4 + 128, "block_iq4_xs size");

/* ---- facts ------------------------------------------------------------- */

typedef struct adil_wtype_facts {
    const char *name;   /* "Q4_K", ... (ggml's spelling) */
    int64_t block_size; /* elements per block (1 for plain types) */
    size_t type_size;   /* bytes per block */
} adil_wtype_facts;

/* The facts of `type`, or NULL when the id is unknown.  A known type may
 * have no kernels (kernels.h): the GGUF reader accepts it, a model that
 * needs it for compute must refuse it (ADIL_STATUS_CAPABILITY). */
const adil_wtype_facts *adil_wtype_facts_get(uint32_t type);

/* Name of a type ("?" when unknown). */
const char *adil_wtype_name(uint32_t type);

/* Bytes of a row of n elements; 0 when the type is unknown or n is not a
 * multiple of the block size (callers validate first; the GGUF reader does). */
size_t adil_row_size(uint32_t type, int64_t n);

/* ---- scalar conversions -------------------------------------------------- */

float adil_fp16_to_f32(adil_fp16 h);
adil_fp16 adil_f32_to_fp16(float f); /* round to nearest even */
float adil_bf16_to_f32(adil_bf16 h);
adil_bf16 adil_f32_to_bf16(float f); /* round to nearest even, NaN kept */

/* Half the E8M0 scale e, 2^(e - 128), exactly (ggml's e8m0_to_fp32_half):
 * e = 0 and 1 are float subnormals; e = 255 (NaN in the OCP spec) reads as
 * 2^127, as in ggml.  Inline: the SIMD kernels call it per block. */
static inline float adil_e8m0_half_to_f32(uint8_t e) {
    union {
        uint32_t u;
        float f;
    } v = {e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23};
    return v.f;
}

#endif /* ADIL_WEIGHT_TYPES_H */
