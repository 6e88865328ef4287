/*
 * float_types.c — F32, F16 and BF16 weights.  Their activations stay F32 and
 * the dot product is computed in float: the exact path, no quantization of
 * the activations.  Eight partial sums keep the order fixed and let the
 * compiler vectorise without -ffast-math; 16-bit rows are widened a chunk at
 * a time into a stack buffer.
 */
#include "compute/kernels_scalar.h"

#include <string.h>

#define LANES 8
#define CHUNK 64

/* acc[l] += w[i] * a[i] over i = l (mod LANES), i < n. */
static void accumulate(float acc[LANES], const float *w, const float *a, int64_t n) {
    int64_t i = 0;
    for (; i + LANES <= n; i += LANES) {
        for (int l = 0; l < LANES; l++) {
            acc[l] += w[i + l] * a[i + l];
        }
    }
    for (; i < n; i++) {
        acc[i % LANES] += w[i] * a[i];
    }
}

static float reduce(const float acc[LANES]) {
    float sum = 0.0f;
    for (int l = 0; l < LANES; l++) {
        sum += acc[l];
    }
    return sum;
}

/* Dot product of a 16-bit float row (converted CHUNK elements at a time
 * into a stack buffer) with the activations. */
static float dot_16bit(int64_t n, const uint16_t *w, const float *a,
                       void (*to_f32)(const void *src, float *dst, int64_t n)) {
    float acc[LANES] = {0};
    float buf[CHUNK];
    for (int64_t i = 0; i < n; i += CHUNK) {
        int64_t m = n - i < CHUNK ? n - i : CHUNK;
        to_f32(w + i, buf, m);
        accumulate(acc, buf, a + i, m);
    }
    return reduce(acc);
}

void adil_dequantize_row_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

void adil_quantize_row_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}

float adil_vec_dot_f32_f32(int64_t n, const void *weights, const void *act) {
    float acc[LANES] = {0};
    accumulate(acc, weights, act, n);
    return reduce(acc);
}

void adil_dequantize_row_f16(const void *src, float *dst, int64_t n) {
    const adil_fp16 *h = src;
    for (int64_t i = 0; i < n; i++) {
        dst[i] = adil_fp16_to_f32(h[i]);
    }
}

void adil_quantize_row_f16(const float *src, void *dst, int64_t n) {
    adil_fp16 *h = dst;
    for (int64_t i = 0; i < n; i++) {
        h[i] = adil_f32_to_fp16(src[i]);
    }
}

float adil_vec_dot_f16_f32(int64_t n, const void *weights, const void *act) {
    return dot_16bit(n, weights, act, adil_dequantize_row_f16);
}

void adil_dequantize_row_bf16(const void *src, float *dst, int64_t n) {
    const adil_bf16 *h = src;
    for (int64_t i = 0; i < n; i++) {
        dst[i] = adil_bf16_to_f32(h[i]);
    }
}

void adil_quantize_row_bf16(const float *src, void *dst, int64_t n) {
    adil_bf16 *h = dst;
    for (int64_t i = 0; i < n; i++) {
        h[i] = adil_f32_to_bf16(src[i]);
    }
}

float adil_vec_dot_bf16_f32(int64_t n, const void *weights, const void *act) {
    return dot_16bit(n, weights, act, adil_dequantize_row_bf16);
}
