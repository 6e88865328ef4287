/*
 * quant_codebook.c — the types whose 4-bit codes index a fixed table of 16
 * values instead of being levels: IQ4_NL (a non-linear int8 table, fp16
 * scale) and MXFP4 (E2M1 values, E8M0 power-of-two scale) in 32-element
 * blocks with Q8_0 activations, and IQ4_XS (IQ4_NL's table in 256-element
 * super-blocks with a 6-bit scale per 32 elements) with Q8_K activations, as
 * in ggml.  The table values are small integers (MXFP4's doubled, see
 * weight_types.h), so a block's dot product is an exact integer sum times the
 * scales, like Q4_0's (IQ4_XS: like the K-quants', integer sub-block scales
 * inside, float scales once per super-block).
 *
 * Nibbles as the legacy types: element j (j < 16) in the low nibble of
 * qs[j], element j + 16 in its high nibble (IQ4_XS: per 32 elements).
 */
#include "compute/kernels_scalar.h"

#include <math.h>

#define QK ADIL_QK

/* The 32 table values of a block's codes. */
static void lookup(const uint8_t qs[QK / 2], const int8_t table[16], int v[QK]) {
    for (int j = 0; j < QK / 2; j++) {
        v[j] = table[qs[j] & 0x0F];
        v[j + QK / 2] = table[qs[j] >> 4];
    }
}

static int dot_block(const int8_t *a, const int *v) {
    int s = 0;
    for (int j = 0; j < QK; j++) {
        s += a[j] * v[j];
    }
    return s;
}

/* ---- IQ4_NL: x = d * kvalues_iq4nl[q] --------------------------------------- */

void adil_dequantize_row_iq4_nl(const void *src, float *dst, int64_t n) {
    const block_iq4_nl *b = src;
    int v[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = adil_fp16_to_f32(b[i].d);
        lookup(b[i].qs, adil_kvalues_iq4nl, v);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = d * (float)v[j];
        }
    }
}

float adil_vec_dot_iq4_nl_q8_0(int64_t n, const void *w, const void *a) {
    const block_iq4_nl *x = w;
    const block_q8_0 *y = a;
    float sum = 0.0f;
    int v[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        lookup(x[i].qs, adil_kvalues_iq4nl, v);
        sum += (float)dot_block(y[i].qs, v) * (adil_fp16_to_f32(x[i].d) * adil_fp16_to_f32(y[i].d));
    }
    return sum;
}

/* ---- MXFP4: x = 2^(e - 128) * kvalues_mxfp4[q] -------------------------------- */

void adil_dequantize_row_mxfp4(const void *src, float *dst, int64_t n) {
    const block_mxfp4 *b = src;
    int v[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = adil_e8m0_half_to_f32(b[i].e);
        lookup(b[i].qs, adil_kvalues_mxfp4, v);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = d * (float)v[j];
        }
    }
}

/* The code whose value times d is nearest x (the first on ties, so +0
 * before -0). */
static uint8_t nearest_mxfp4(float x, float d) {
    uint8_t best = 0;
    float best_err = fabsf((float)adil_kvalues_mxfp4[0] * d - x);
    for (uint8_t i = 1; i < 16; i++) {
        float err = fabsf((float)adil_kvalues_mxfp4[i] * d - x);
        if (err < best_err) {
            best = i;
            best_err = err;
        }
    }
    return best;
}

/* The shared exponent: the largest magnitude amax in [2^k, 2^(k+1)) gets
 * e = k + 125, i.e. a scale 2^(k-2) that puts amax between 4 and 8 times it,
 * within E2M1's top values (4, 6).  The reference rounding of the format's
 * documentation (what the gguf Python package does); clamped to a byte
 * where it would not fit (amax beyond 2^130 or below 2^-125), which it
 * leaves undefined. */
static uint8_t shared_exponent(const float *x) {
    float amax = 0.0f;
    for (int j = 0; j < QK; j++) {
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    }
    if (!(amax > 0.0f)) {
        return 0;
    }
    float e = floorf(log2f(amax)) - 2.0f + 127.0f;
    return e <= 0.0f ? 0 : e >= 255.0f ? 255 : (uint8_t)e;
}

void adil_quantize_row_mxfp4(const float *src, void *dst, int64_t n) {
    block_mxfp4 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        b[i].e = shared_exponent(x);
        float d = adil_e8m0_half_to_f32(b[i].e);
        for (int j = 0; j < QK / 2; j++) {
            b[i].qs[j] = (uint8_t)(nearest_mxfp4(x[j], d) | nearest_mxfp4(x[j + QK / 2], d) << 4);
        }
    }
}

float adil_vec_dot_mxfp4_q8_0(int64_t n, const void *w, const void *a) {
    const block_mxfp4 *x = w;
    const block_q8_0 *y = a;
    float sum = 0.0f;
    int v[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        lookup(x[i].qs, adil_kvalues_mxfp4, v);
        sum += (float)dot_block(y[i].qs, v) * (adil_e8m0_half_to_f32(x[i].e) * adil_fp16_to_f32(y[i].d));
    }
    return sum;
}

/* ---- IQ4_XS: x = d * (ls - 32) * kvalues_iq4nl[q], 8 sub-blocks of 32 ---------- */

/* The scale ls - 32 of sub-block j (see block_iq4_xs). */
static int scale_iq4_xs(const block_iq4_xs *b, int j) {
    int low = (b->scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
    int high = (b->scales_h >> (2 * j)) & 3;
    return (low | high << 4) - 32;
}

void adil_dequantize_row_iq4_xs(const void *src, float *dst, int64_t n) {
    const block_iq4_xs *b = src;
    int v[QK];
    for (int64_t i = 0; i < n / ADIL_QK_K; i++) {
        float d = adil_fp16_to_f32(b[i].d);
        for (int j = 0; j < ADIL_QK_K / QK; j++, dst += QK) {
            float dl = d * (float)scale_iq4_xs(&b[i], j);
            lookup(b[i].qs + QK / 2 * j, adil_kvalues_iq4nl, v);
            for (int l = 0; l < QK; l++) {
                dst[l] = dl * (float)v[l];
            }
        }
    }
}

float adil_vec_dot_iq4_xs_q8_K(int64_t n, const void *w, const void *a) {
    const block_iq4_xs *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int v[QK];
    for (int64_t i = 0; i < n / ADIL_QK_K; i++) {
        int dots = 0;
        for (int j = 0; j < ADIL_QK_K / QK; j++) {
            lookup(x[i].qs + QK / 2 * j, adil_kvalues_iq4nl, v);
            dots += scale_iq4_xs(&x[i], j) * dot_block(y[i].qs + QK * j, v);
        }
        sum += y[i].d * adil_fp16_to_f32(x[i].d) * (float)dots;
    }
    return sum;
}
