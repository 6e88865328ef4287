/*
 * kernels.c — the kernel table of each CPU level (see kernels.h).
 *
 * The scalar table holds the reference kernels (kernels_scalar.h).  A
 * level's table starts as a copy of it; then the SIMD kernels of every level
 * up to it are written over their entries, so the AVX-512 table keeps the
 * AVX2 kernels it has no better version of (the activation quantizers, which
 * are bit-exact anyway).  Tables are built once on first use and read-only
 * afterwards, so no call tests CPU features.
 */
#include "compute/kernels.h"

#include "compute/cpu_level.h"
#include "compute/kernels_scalar.h"
#include "compute/simd/kernels_simd.h"

#include <pthread.h>
#include <string.h>

/* Fields: activation type, dequantize, quantize, vec_dot, tile_dot (none in
 * scalar: matmul loops over vec_dot), tile_dot_r8 (none in scalar: weights
 * stay row-major).  Types left out (integers, F64) have no kernels. */
static const adil_wtype_kernels SCALAR[ADIL_WT_COUNT] = {
    [ADIL_WT_F32] = {ADIL_WT_F32, adil_dequantize_row_f32, adil_quantize_row_f32, adil_vec_dot_f32_f32, NULL,
                     NULL},
    [ADIL_WT_F16] = {ADIL_WT_F32, adil_dequantize_row_f16, adil_quantize_row_f16, adil_vec_dot_f16_f32, NULL,
                     NULL},
    [ADIL_WT_BF16] = {ADIL_WT_F32, adil_dequantize_row_bf16, adil_quantize_row_bf16, adil_vec_dot_bf16_f32,
                      NULL, NULL},
    [ADIL_WT_Q4_0] = {ADIL_WT_Q8_0, adil_dequantize_row_q4_0, adil_quantize_row_q4_0, adil_vec_dot_q4_0_q8_0,
                      NULL, NULL},
    [ADIL_WT_Q4_1] = {ADIL_WT_Q8_1, adil_dequantize_row_q4_1, adil_quantize_row_q4_1, adil_vec_dot_q4_1_q8_1,
                      NULL, NULL},
    [ADIL_WT_Q5_0] = {ADIL_WT_Q8_0, adil_dequantize_row_q5_0, adil_quantize_row_q5_0, adil_vec_dot_q5_0_q8_0,
                      NULL, NULL},
    [ADIL_WT_Q5_1] = {ADIL_WT_Q8_1, adil_dequantize_row_q5_1, adil_quantize_row_q5_1, adil_vec_dot_q5_1_q8_1,
                      NULL, NULL},
    [ADIL_WT_Q8_0] = {ADIL_WT_Q8_0, adil_dequantize_row_q8_0, adil_quantize_row_q8_0, adil_vec_dot_q8_0_q8_0,
                      NULL, NULL},
    [ADIL_WT_IQ4_NL] = {ADIL_WT_Q8_0, adil_dequantize_row_iq4_nl, NULL, adil_vec_dot_iq4_nl_q8_0, NULL, NULL},
    [ADIL_WT_MXFP4] = {ADIL_WT_Q8_0, adil_dequantize_row_mxfp4, adil_quantize_row_mxfp4,
                       adil_vec_dot_mxfp4_q8_0, NULL, NULL},
    /* Q8_1 and Q8_K are activation types: no weight dot product. */
    [ADIL_WT_Q8_1] = {ADIL_WT_Q8_1, adil_dequantize_row_q8_1, adil_quantize_row_q8_1, NULL, NULL, NULL},
    [ADIL_WT_Q2_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q2_K, NULL, adil_vec_dot_q2_K_q8_K, NULL, NULL},
    [ADIL_WT_Q3_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q3_K, NULL, adil_vec_dot_q3_K_q8_K, NULL, NULL},
    [ADIL_WT_Q4_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q4_K, NULL, adil_vec_dot_q4_K_q8_K, NULL, NULL},
    [ADIL_WT_Q5_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q5_K, NULL, adil_vec_dot_q5_K_q8_K, NULL, NULL},
    [ADIL_WT_Q6_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q6_K, NULL, adil_vec_dot_q6_K_q8_K, NULL, NULL},
    [ADIL_WT_IQ4_XS] = {ADIL_WT_Q8_K, adil_dequantize_row_iq4_xs, NULL, adil_vec_dot_iq4_xs_q8_K, NULL, NULL},
    [ADIL_WT_Q8_K] = {ADIL_WT_Q8_K, adil_dequantize_row_q8_K, adil_quantize_row_q8_K, NULL, NULL, NULL},
};

typedef struct kernel_override {
    uint32_t type;
    adil_quantize_row_fn quantize_row; /* NULL: keep */
    adil_vec_dot_fn vec_dot;           /* NULL: keep */
    adil_tile_dot_fn tile_dot;         /* NULL: keep */
    adil_tile_dot_fn tile_dot_r8;      /* NULL: keep */
} kernel_override;

#if defined(__x86_64__)
static const kernel_override AVX2_KERNELS[] = {
    {ADIL_WT_F32, NULL, adil_vec_dot_f32_avx2, NULL, NULL},
    {ADIL_WT_F16, NULL, adil_vec_dot_f16_avx2, NULL, NULL},
    {ADIL_WT_BF16, NULL, adil_vec_dot_bf16_avx2, NULL, NULL},
    {ADIL_WT_Q8_0, adil_quantize_row_q8_0_avx2, adil_vec_dot_q8_0_avx2, adil_tile_q8_0_avx2, NULL},
    {ADIL_WT_Q4_0, NULL, adil_vec_dot_q4_0_avx2, adil_tile_q4_0_avx2, NULL},
    {ADIL_WT_Q5_0, NULL, adil_vec_dot_q5_0_avx2, adil_tile_q5_0_avx2, NULL},
    {ADIL_WT_Q4_1, NULL, adil_vec_dot_q4_1_avx2, adil_tile_q4_1_avx2, NULL},
    {ADIL_WT_Q5_1, NULL, adil_vec_dot_q5_1_avx2, adil_tile_q5_1_avx2, NULL},
    {ADIL_WT_IQ4_NL, NULL, adil_vec_dot_iq4_nl_avx2, adil_tile_iq4_nl_avx2, NULL},
    {ADIL_WT_MXFP4, NULL, adil_vec_dot_mxfp4_avx2, adil_tile_mxfp4_avx2, NULL},
    {ADIL_WT_Q8_1, adil_quantize_row_q8_1_avx2, NULL, NULL, NULL},
    {ADIL_WT_Q2_K, NULL, adil_vec_dot_q2_K_avx2, adil_tile_q2_K_avx2, NULL},
    {ADIL_WT_Q3_K, NULL, adil_vec_dot_q3_K_avx2, adil_tile_q3_K_avx2, NULL},
    {ADIL_WT_Q4_K, NULL, adil_vec_dot_q4_K_avx2, adil_tile_q4_K_avx2, adil_tile_q4_K_r8_avx2},
    {ADIL_WT_Q5_K, NULL, adil_vec_dot_q5_K_avx2, adil_tile_q5_K_avx2, NULL},
    {ADIL_WT_Q6_K, NULL, adil_vec_dot_q6_K_avx2, adil_tile_q6_K_avx2, NULL},
    {ADIL_WT_IQ4_XS, NULL, adil_vec_dot_iq4_xs_avx2, adil_tile_iq4_xs_avx2, NULL},
    {ADIL_WT_Q8_K, adil_quantize_row_q8_K_avx2, NULL, NULL, NULL},
};

static const kernel_override AVX512_KERNELS[] = {
    {ADIL_WT_F32, NULL, adil_vec_dot_f32_avx512, NULL, NULL},
    {ADIL_WT_F16, NULL, adil_vec_dot_f16_avx512, NULL, NULL},
    {ADIL_WT_BF16, NULL, adil_vec_dot_bf16_avx512, NULL, NULL},
    {ADIL_WT_Q8_0, NULL, adil_vec_dot_q8_0_avx512, adil_tile_q8_0_avx512, adil_tile_q8_0_r8_avx512},
    {ADIL_WT_Q4_0, NULL, adil_vec_dot_q4_0_avx512, adil_tile_q4_0_avx512, NULL},
    {ADIL_WT_Q5_0, NULL, adil_vec_dot_q5_0_avx512, adil_tile_q5_0_avx512, adil_tile_q5_0_r8_avx512},
    {ADIL_WT_Q4_1, NULL, adil_vec_dot_q4_1_avx512, adil_tile_q4_1_avx512, NULL},
    {ADIL_WT_Q5_1, NULL, adil_vec_dot_q5_1_avx512, adil_tile_q5_1_avx512, NULL},
    {ADIL_WT_IQ4_NL, NULL, adil_vec_dot_iq4_nl_avx512, adil_tile_iq4_nl_avx512, NULL},
    {ADIL_WT_MXFP4, NULL, adil_vec_dot_mxfp4_avx512, adil_tile_mxfp4_avx512, NULL},
    {ADIL_WT_Q2_K, NULL, adil_vec_dot_q2_K_avx512, adil_tile_q2_K_avx512, NULL},
    {ADIL_WT_Q3_K, NULL, adil_vec_dot_q3_K_avx512, adil_tile_q3_K_avx512, NULL},
    {ADIL_WT_Q4_K, NULL, adil_vec_dot_q4_K_avx512, adil_tile_q4_K_avx512, adil_tile_q4_K_r8_avx512},
    {ADIL_WT_Q5_K, NULL, adil_vec_dot_q5_K_avx512, adil_tile_q5_K_avx512, NULL},
    {ADIL_WT_Q6_K, NULL, adil_vec_dot_q6_K_avx512, adil_tile_q6_K_avx512, NULL},
    {ADIL_WT_IQ4_XS, NULL, adil_vec_dot_iq4_xs_avx512, adil_tile_iq4_xs_avx512, NULL},
};
#endif

/* Filled once by build_tables(), read-only afterwards. */
static adil_wtype_kernels tables[ADIL_CPU_LEVEL_COUNT][ADIL_WT_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static void apply(adil_wtype_kernels *table, const kernel_override *o, size_t count) {
    for (size_t i = 0; i < count; i++) {
        adil_wtype_kernels *k = &table[o[i].type];
        k->quantize_row = o[i].quantize_row ? o[i].quantize_row : k->quantize_row;
        k->vec_dot = o[i].vec_dot ? o[i].vec_dot : k->vec_dot;
        k->tile_dot = o[i].tile_dot ? o[i].tile_dot : k->tile_dot;
        k->tile_dot_r8 = o[i].tile_dot_r8 ? o[i].tile_dot_r8 : k->tile_dot_r8;
    }
}
#endif

static void build_tables(void) {
    for (int level = 0; level < ADIL_CPU_LEVEL_COUNT; level++) {
        memcpy(tables[level], SCALAR, sizeof(tables[level]));
#if defined(__x86_64__)
        if (level >= ADIL_CPU_AVX2) {
            apply(tables[level], AVX2_KERNELS, sizeof(AVX2_KERNELS) / sizeof(AVX2_KERNELS[0]));
        }
        if (level >= ADIL_CPU_AVX512) {
            apply(tables[level], AVX512_KERNELS, sizeof(AVX512_KERNELS) / sizeof(AVX512_KERNELS[0]));
        }
#endif
    }
}

const adil_wtype_kernels *adil_wtype_kernels_at(int level, uint32_t type) {
    if (level < 0 || level >= ADIL_CPU_LEVEL_COUNT || adil_wtype_facts_get(type) == NULL) {
        return NULL;
    }
    pthread_once(&tables_once, build_tables);
    return &tables[level][type];
}

const adil_wtype_kernels *adil_wtype_kernels_get(uint32_t type) {
    return adil_wtype_kernels_at(adil_cpu_level_selected(), type);
}

bool adil_wtype_has_kernels(uint32_t type) {
    const adil_wtype_kernels *k = adil_wtype_kernels_get(type);
    return k != NULL && k->dequantize_row != NULL && k->vec_dot != NULL;
}
