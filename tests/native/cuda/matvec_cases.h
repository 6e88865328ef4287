/*
 * matvec_cases.h — the weight types the CUDA matvec supports, random rows
 * of each, and the CPU's scalar reference dot of a row: what
 * test_cuda_matvec.c (the kernels on a GPU) and test_cuda_dequant_host.cu
 * (their block decoding compiled for the host) compare against.  C and C++
 * alike (the .cu includes it inside extern "C").
 */
#ifndef ADIL_TEST_MATVEC_CASES_H
#define ADIL_TEST_MATVEC_CASES_H

#include "compute/kernels.h"
#include "compute/kernels_scalar.h"
#include "compute/weight_types.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CASE_ROWS 37 /* not a multiple of the rows a thread block takes */

typedef struct matvec_case {
    uint32_t type;
    int64_t cols;
    adil_dequantize_row_fn dequantize;
    adil_quantize_row_fn quantize; /* plain types: rows from random floats */
    size_t scale_offsets[2];       /* block types: fp16 fields made finite; SIZE_MAX: none */
} matvec_case;

/* Plain types with cols not a multiple of 8 (the chunks' tail), K-quants of 8
 * super-blocks, legacy quants of 20 blocks (gemma3-270m's 640). */
static const matvec_case matvec_cases[] = {
    {ADIL_WT_F32, 1000, adil_dequantize_row_f32, adil_quantize_row_f32, {SIZE_MAX, SIZE_MAX}},
    {ADIL_WT_F16, 1003, adil_dequantize_row_f16, adil_quantize_row_f16, {SIZE_MAX, SIZE_MAX}},
    {ADIL_WT_BF16, 1001, adil_dequantize_row_bf16, adil_quantize_row_bf16, {SIZE_MAX, SIZE_MAX}},
    {ADIL_WT_Q4_0, 640, adil_dequantize_row_q4_0, NULL, {offsetof(block_q4_0, d), SIZE_MAX}},
    {ADIL_WT_Q4_1, 640, adil_dequantize_row_q4_1, NULL, {offsetof(block_q4_1, d), offsetof(block_q4_1, m)}},
    {ADIL_WT_Q5_0, 640, adil_dequantize_row_q5_0, NULL, {offsetof(block_q5_0, d), SIZE_MAX}},
    {ADIL_WT_Q8_0, 640, adil_dequantize_row_q8_0, NULL, {offsetof(block_q8_0, d), SIZE_MAX}},
    {ADIL_WT_Q4_K,
     2048,
     adil_dequantize_row_q4_K,
     NULL,
     {offsetof(block_q4_K, d), offsetof(block_q4_K, dmin)}},
    {ADIL_WT_Q6_K, 2048, adil_dequantize_row_q6_K, NULL, {offsetof(block_q6_K, d), SIZE_MAX}},
};
#define MATVEC_CASE_COUNT (sizeof matvec_cases / sizeof matvec_cases[0])

static uint64_t matvec_rng = 0x9E3779B97F4A7C15u;
static uint32_t matvec_next_u32(void) {
    matvec_rng ^= matvec_rng << 13;
    matvec_rng ^= matvec_rng >> 7;
    matvec_rng ^= matvec_rng << 17;
    return (uint32_t)(matvec_rng >> 32);
}
static float matvec_next_unit(void) { return (float)matvec_next_u32() / 4294967296.0f * 2.0f - 1.0f; }

static size_t matvec_bytes(const matvec_case *c) { return adil_row_size(c->type, c->cols) * CASE_ROWS; }

/* CASE_ROWS random rows into w[0 .. matvec_bytes(c)): plain types from
 * random floats in [-1, 1), block types from random bytes (every bit pattern
 * of the levels and packed scales) with finite fp16 scales below 0.01. */
static void matvec_fill_weights(const matvec_case *c, uint8_t *w) {
    const size_t row_bytes = adil_row_size(c->type, c->cols), bytes = matvec_bytes(c);
    if (c->quantize) {
        float *row = (float *)malloc(sizeof *row * (size_t)c->cols);
        for (int r = 0; r < CASE_ROWS; r++) {
            for (int64_t i = 0; i < c->cols; i++) row[i] = matvec_next_unit();
            c->quantize(row, w + (size_t)r * row_bytes, c->cols);
        }
        free(row);
        return;
    }
    const size_t block_bytes = adil_wtype_facts_get(c->type)->type_size;
    for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)matvec_next_u32();
    for (size_t b = 0; b < bytes / block_bytes; b++) {
        for (int k = 0; k < 2; k++) {
            if (c->scale_offsets[k] == SIZE_MAX) continue;
            adil_fp16 h = adil_f32_to_fp16(matvec_next_unit() * 0.01f);
            memcpy(w + b * block_bytes + c->scale_offsets[k], &h, sizeof h);
        }
    }
}

static void matvec_fill_vector(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = matvec_next_unit();
}

/* The reference dot of row `row` (dequantized by the scalar kernel, summed
 * in double) and, in *magnitude, the sum of |w x| that scales the budget. */
static double matvec_reference(const matvec_case *c, const uint8_t *row, const float *x, float *scratch,
                               double *magnitude) {
    c->dequantize(row, scratch, c->cols);
    double dot = 0.0, mag = 0.0;
    for (int64_t i = 0; i < c->cols; i++) {
        dot += (double)scratch[i] * x[i];
        mag += fabs((double)scratch[i] * x[i]);
    }
    *magnitude = mag;
    return dot;
}

/* A float sum of cols products agrees with the double one within a few
 * float roundings of the magnitude. */
static int matvec_close(double got, double want, double magnitude) {
    return fabs(got - want) <= 1e-5 * magnitude + 1e-6;
}

#endif /* ADIL_TEST_MATVEC_CASES_H */
