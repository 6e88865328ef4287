/*
 * dispatch.c — per-level traits tables (see dispatch.h).
 *
 * A level's table starts as a copy of the scalar table; then the kernels of
 * every level up to it are written over their entries, so the AVX-512 table
 * keeps the AVX2 kernels it has no better version of (the activation
 * quantizers, which are bit-exact anyway).  Only the function pointers
 * change; names and sizes are the scalar table's.
 */
#include "compute/dispatch.h"

#include "compute/simd/kernels_simd.h"

#include <pthread.h>
#include <string.h>

typedef struct kernel_override {
    uint32_t type;
    adil_quantize_row_fn quantize_row; /* NULL: keep */
    adil_vec_dot_fn vec_dot;           /* NULL: keep */
    adil_tile_dot_fn tile_dot;         /* NULL: keep */
} kernel_override;

#if defined(__x86_64__)
static const kernel_override AVX2_KERNELS[] = {
    {ADIL_WT_F32, NULL, adil_vec_dot_f32_avx2, NULL},
    {ADIL_WT_F16, NULL, adil_vec_dot_f16_avx2, NULL},
    {ADIL_WT_BF16, NULL, adil_vec_dot_bf16_avx2, NULL},
    {ADIL_WT_Q8_0, adil_quantize_row_q8_0_avx2, adil_vec_dot_q8_0_avx2, adil_tile_q8_0_avx2},
    {ADIL_WT_Q4_0, NULL, adil_vec_dot_q4_0_avx2, adil_tile_q4_0_avx2},
    {ADIL_WT_Q5_0, NULL, adil_vec_dot_q5_0_avx2, adil_tile_q5_0_avx2},
    {ADIL_WT_Q4_K, NULL, adil_vec_dot_q4_K_avx2, adil_tile_q4_K_avx2},
    {ADIL_WT_Q5_K, NULL, adil_vec_dot_q5_K_avx2, adil_tile_q5_K_avx2},
    {ADIL_WT_Q6_K, NULL, adil_vec_dot_q6_K_avx2, adil_tile_q6_K_avx2},
    {ADIL_WT_Q8_K, adil_quantize_row_q8_K_avx2, NULL, NULL},
};

static const kernel_override AVX512_KERNELS[] = {
    {ADIL_WT_F32, NULL, adil_vec_dot_f32_avx512, NULL},
    {ADIL_WT_F16, NULL, adil_vec_dot_f16_avx512, NULL},
    {ADIL_WT_BF16, NULL, adil_vec_dot_bf16_avx512, NULL},
    {ADIL_WT_Q8_0, NULL, adil_vec_dot_q8_0_avx512, adil_tile_q8_0_avx512},
    {ADIL_WT_Q4_0, NULL, adil_vec_dot_q4_0_avx512, adil_tile_q4_0_avx512},
    {ADIL_WT_Q5_0, NULL, adil_vec_dot_q5_0_avx512, adil_tile_q5_0_avx512},
    {ADIL_WT_Q4_K, NULL, adil_vec_dot_q4_K_avx512, adil_tile_q4_K_avx512},
    {ADIL_WT_Q5_K, NULL, adil_vec_dot_q5_K_avx512, adil_tile_q5_K_avx512},
    {ADIL_WT_Q6_K, NULL, adil_vec_dot_q6_K_avx512, adil_tile_q6_K_avx512},
};
#endif

/* Filled once by build_tables(), read-only afterwards. */
static adil_wtype_traits tables[ADIL_CPU_LEVEL_COUNT][ADIL_WT_COUNT];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void apply(adil_wtype_traits *table, const kernel_override *o, size_t count) {
    for (size_t i = 0; i < count; i++) {
        adil_wtype_traits *t = &table[o[i].type];
        t->quantize_row = o[i].quantize_row ? o[i].quantize_row : t->quantize_row;
        t->vec_dot = o[i].vec_dot ? o[i].vec_dot : t->vec_dot;
        t->tile_dot = o[i].tile_dot ? o[i].tile_dot : t->tile_dot;
    }
}

static void build_tables(void) {
    for (int level = 0; level < ADIL_CPU_LEVEL_COUNT; level++) {
        memcpy(tables[level], adil_wtype_scalar_table(), sizeof(tables[level]));
#if defined(__x86_64__)
        if (level >= ADIL_CPU_AVX2) {
            apply(tables[level], AVX2_KERNELS, sizeof(AVX2_KERNELS) / sizeof(AVX2_KERNELS[0]));
        }
        if (level >= ADIL_CPU_AVX512) {
            apply(tables[level], AVX512_KERNELS,
                  sizeof(AVX512_KERNELS) / sizeof(AVX512_KERNELS[0]));
        }
#endif
    }
}

const adil_wtype_traits *adil_dispatch_table(adil_cpu_level level) {
    pthread_once(&tables_once, build_tables);
    return tables[level];
}
