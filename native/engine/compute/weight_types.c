/*
 * weight_types.c — the scalar traits table: sizes of every ggml type the
 * GGUF reader accepts, and the reference kernels of those we compute with.
 * Kernels are looked up through adil_wtype_get() and nowhere else, so the
 * per-level tables of dispatch.c replace an entry's function pointers
 * without touching callers.
 */
#include "compute/dispatch.h"
#include "compute/kernels.h"

/* Fields: name, block size, bytes per block, activation type, dequantize,
 * quantize, vec_dot, tile_dot (none in scalar: matmul loops over vec_dot). */
static const adil_wtype_traits TRAITS[ADIL_WT_COUNT] = {
    [ADIL_WT_F32] = {"F32", 1, 4, ADIL_WT_F32, adil_dequantize_row_f32, adil_quantize_row_f32,
        adil_vec_dot_f32_f32, NULL},
    [ADIL_WT_F16] = {"F16", 1, 2, ADIL_WT_F32, adil_dequantize_row_f16, adil_quantize_row_f16,
        adil_vec_dot_f16_f32, NULL},
    [ADIL_WT_BF16] = {"BF16", 1, 2, ADIL_WT_F32, adil_dequantize_row_bf16,
        adil_quantize_row_bf16, adil_vec_dot_bf16_f32, NULL},
    [ADIL_WT_Q4_0] = {"Q4_0", ADIL_QK, sizeof(block_q4_0), ADIL_WT_Q8_0,
        adil_dequantize_row_q4_0, adil_quantize_row_q4_0, adil_vec_dot_q4_0_q8_0, NULL},
    [ADIL_WT_Q4_1] = {"Q4_1", ADIL_QK, sizeof(block_q4_1), ADIL_WT_Q8_1,
        adil_dequantize_row_q4_1, adil_quantize_row_q4_1, adil_vec_dot_q4_1_q8_1, NULL},
    [ADIL_WT_Q5_0] = {"Q5_0", ADIL_QK, sizeof(block_q5_0), ADIL_WT_Q8_0,
        adil_dequantize_row_q5_0, adil_quantize_row_q5_0, adil_vec_dot_q5_0_q8_0, NULL},
    [ADIL_WT_Q5_1] = {"Q5_1", ADIL_QK, sizeof(block_q5_1), ADIL_WT_Q8_1,
        adil_dequantize_row_q5_1, adil_quantize_row_q5_1, adil_vec_dot_q5_1_q8_1, NULL},
    [ADIL_WT_Q8_0] = {"Q8_0", ADIL_QK, sizeof(block_q8_0), ADIL_WT_Q8_0,
        adil_dequantize_row_q8_0, adil_quantize_row_q8_0, adil_vec_dot_q8_0_q8_0, NULL},
    /* Q8_1 and Q8_K are activation types: no weight dot product. */
    [ADIL_WT_Q8_1] = {"Q8_1", ADIL_QK, sizeof(block_q8_1), ADIL_WT_Q8_1,
        adil_dequantize_row_q8_1, adil_quantize_row_q8_1, NULL, NULL},
    [ADIL_WT_Q2_K] = {"Q2_K", ADIL_QK_K, sizeof(block_q2_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q2_K, NULL, adil_vec_dot_q2_K_q8_K, NULL},
    [ADIL_WT_Q3_K] = {"Q3_K", ADIL_QK_K, sizeof(block_q3_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q3_K, NULL, adil_vec_dot_q3_K_q8_K, NULL},
    [ADIL_WT_Q4_K] = {"Q4_K", ADIL_QK_K, sizeof(block_q4_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q4_K, NULL, adil_vec_dot_q4_K_q8_K, NULL},
    [ADIL_WT_Q5_K] = {"Q5_K", ADIL_QK_K, sizeof(block_q5_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q5_K, NULL, adil_vec_dot_q5_K_q8_K, NULL},
    [ADIL_WT_Q6_K] = {"Q6_K", ADIL_QK_K, sizeof(block_q6_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q6_K, NULL, adil_vec_dot_q6_K_q8_K, NULL},
    [ADIL_WT_Q8_K] = {"Q8_K", ADIL_QK_K, sizeof(block_q8_K), ADIL_WT_Q8_K,
        adil_dequantize_row_q8_K, adil_quantize_row_q8_K, NULL, NULL},
    /* Plain integer and double tensors: sizes only (no model computes with them). */
    [ADIL_WT_I8] = {"I8", 1, 1, ADIL_WT_I8, NULL, NULL, NULL, NULL},
    [ADIL_WT_I16] = {"I16", 1, 2, ADIL_WT_I16, NULL, NULL, NULL, NULL},
    [ADIL_WT_I32] = {"I32", 1, 4, ADIL_WT_I32, NULL, NULL, NULL, NULL},
    [ADIL_WT_I64] = {"I64", 1, 8, ADIL_WT_I64, NULL, NULL, NULL, NULL},
    [ADIL_WT_F64] = {"F64", 1, 8, ADIL_WT_F64, NULL, NULL, NULL, NULL},
};

const adil_wtype_traits *adil_wtype_scalar_table(void) {
    return TRAITS;
}

const adil_wtype_traits *adil_wtype_get_at(int level, uint32_t type) {
    if (level < 0 || level >= ADIL_CPU_LEVEL_COUNT || type >= ADIL_WT_COUNT ||
        TRAITS[type].name == NULL) {
        return NULL;
    }
    return &adil_dispatch_table((adil_cpu_level)level)[type];
}

const adil_wtype_traits *adil_wtype_get(uint32_t type) {
    return adil_wtype_get_at(adil_cpu_level_selected(), type);
}

const char *adil_wtype_name(uint32_t type) {
    return type < ADIL_WT_COUNT && TRAITS[type].name != NULL ? TRAITS[type].name : "?";
}

bool adil_wtype_has_kernels(uint32_t type) {
    const adil_wtype_traits *t = adil_wtype_get(type);
    return t != NULL && t->dequantize_row != NULL && t->vec_dot != NULL;
}

size_t adil_row_size(uint32_t type, int64_t n) {
    const adil_wtype_traits *t = adil_wtype_get(type);
    if (t == NULL || n < 0 || n % t->block_size != 0) {
        return 0;
    }
    return (size_t)(n / t->block_size) * t->type_size;
}
