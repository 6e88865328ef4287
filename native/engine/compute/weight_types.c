/*
 * weight_types.c — the facts table: name, block size and bytes per block of
 * every ggml type the GGUF reader accepts (see weight_types.h).  Which of
 * them the engine can compute with is kernels.c's business.
 */
#include "compute/weight_types.h"

/* Fields: name, elements per block, bytes per block. */
static const adil_wtype_facts FACTS[ADIL_WT_COUNT] = {
    [ADIL_WT_F32] = {"F32", 1, 4},
    [ADIL_WT_F16] = {"F16", 1, 2},
    [ADIL_WT_BF16] = {"BF16", 1, 2},
    [ADIL_WT_Q4_0] = {"Q4_0", ADIL_QK, sizeof(block_q4_0)},
    [ADIL_WT_Q4_1] = {"Q4_1", ADIL_QK, sizeof(block_q4_1)},
    [ADIL_WT_Q5_0] = {"Q5_0", ADIL_QK, sizeof(block_q5_0)},
    [ADIL_WT_Q5_1] = {"Q5_1", ADIL_QK, sizeof(block_q5_1)},
    [ADIL_WT_Q8_0] = {"Q8_0", ADIL_QK, sizeof(block_q8_0)},
    [ADIL_WT_Q8_1] = {"Q8_1", ADIL_QK, sizeof(block_q8_1)},
    [ADIL_WT_Q2_K] = {"Q2_K", ADIL_QK_K, sizeof(block_q2_K)},
    [ADIL_WT_Q3_K] = {"Q3_K", ADIL_QK_K, sizeof(block_q3_K)},
    [ADIL_WT_Q4_K] = {"Q4_K", ADIL_QK_K, sizeof(block_q4_K)},
    [ADIL_WT_Q5_K] = {"Q5_K", ADIL_QK_K, sizeof(block_q5_K)},
    [ADIL_WT_Q6_K] = {"Q6_K", ADIL_QK_K, sizeof(block_q6_K)},
    [ADIL_WT_Q8_K] = {"Q8_K", ADIL_QK_K, sizeof(block_q8_K)},
    [ADIL_WT_IQ4_NL] = {"IQ4_NL", ADIL_QK, sizeof(block_iq4_nl)},
    [ADIL_WT_IQ4_XS] = {"IQ4_XS", ADIL_QK_K, sizeof(block_iq4_xs)},
    [ADIL_WT_MXFP4] = {"MXFP4", ADIL_QK, sizeof(block_mxfp4)},
    [ADIL_WT_I8] = {"I8", 1, 1},
    [ADIL_WT_I16] = {"I16", 1, 2},
    [ADIL_WT_I32] = {"I32", 1, 4},
    [ADIL_WT_I64] = {"I64", 1, 8},
    [ADIL_WT_F64] = {"F64", 1, 8},
};

/* Values from the ggml documentation of the formats (kvalues_iq4nl,
 * kvalues_mxfp4). */
const int8_t adil_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                       1,    13,   25,  38,  53,  69,  89,  113};
const int8_t adil_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

const adil_wtype_facts *adil_wtype_facts_get(uint32_t type) {
    return type < ADIL_WT_COUNT && FACTS[type].name != NULL ? &FACTS[type] : NULL;
}

const char *adil_wtype_name(uint32_t type) {
    const adil_wtype_facts *f = adil_wtype_facts_get(type);
    return f != NULL ? f->name : "?";
}

size_t adil_row_size(uint32_t type, int64_t n) {
    const adil_wtype_facts *f = adil_wtype_facts_get(type);
    if (f == NULL || n < 0 || n % f->block_size != 0) {
        return 0;
    }
    return (size_t)(n / f->block_size) * f->type_size;
}
