/*
 * quant_legacy.c — the 32-element block quants: Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0 (also the activation type of Q4_0/Q5_0/Q8_0) and Q8_1 (activations of
 * Q4_1/Q5_1, carrying d * sum(q) so the weights' offset m costs one multiply).
 *
 * Within a block of 32, 4-bit types store element j (j < 16) in the low
 * nibble of qs[j] and element j + 16 in its high nibble; 5-bit types keep the
 * fifth bit of element j in bit j of the 32-bit little-endian qh.
 *
 * The quantizers follow the reference rounding of the format's documentation
 * (what the gguf Python package does too), so their bytes are comparable.
 */
#include "compute/kernels_scalar.h"

#include <math.h>
#include <string.h>

#define QK ADIL_QK

static float fp16(adil_fp16 h) { return adil_fp16_to_f32(h); }

static uint32_t load_qh(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | (uint32_t)qh[1] << 8 | (uint32_t)qh[2] << 16 | (uint32_t)qh[3] << 24;
}

static void store_qh(uint8_t qh[4], uint32_t v) {
    for (int i = 0; i < 4; i++) {
        qh[i] = (uint8_t)(v >> (8 * i));
    }
}

/* The element with the largest magnitude (the first one on ties), signed. */
static float signed_absmax(const float *x, int n) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (fabsf(x[j]) > amax) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *min, float *max) {
    *min = x[0];
    *max = x[0];
    for (int j = 1; j < n; j++) {
        *min = x[j] < *min ? x[j] : *min;
        *max = x[j] > *max ? x[j] : *max;
    }
}

/* Truncates x * id + bias toward zero and clamps to [0, top] (NaN -> 0;
 * the clamp comes first so the float-to-int conversion is always defined). */
static uint8_t level(float x, float id, float bias, int top) {
    float v = x * id + bias;
    if (!(v > 0.0f)) {
        return 0;
    }
    return v >= (float)top ? (uint8_t)top : (uint8_t)(int)v;
}

/* Rounds half away from zero into -127..127 (NaN -> 0). */
static int8_t round_i8(float v) {
    float r = roundf(v);
    if (!(r > -127.0f)) {
        return r != r ? 0 : -127;
    }
    return r >= 127.0f ? 127 : (int8_t)(int)r;
}

/* Sums of a row of quantized values, for the dot products. */
static int dot_i8(const int8_t *a, const int *b, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) {
        s += a[j] * b[j];
    }
    return s;
}

/* ---- Q4_0: x = d * (q - 8) ---------------------------------------------- */

static void unpack_q4_0(const block_q4_0 *b, int q[QK]) {
    for (int j = 0; j < QK / 2; j++) {
        q[j] = (b->qs[j] & 0x0F) - 8;
        q[j + QK / 2] = (b->qs[j] >> 4) - 8;
    }
}

void adil_dequantize_row_q4_0(const void *src, float *dst, int64_t n) {
    const block_q4_0 *b = src;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d);
        unpack_q4_0(&b[i], q);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)q[j] * d;
        }
    }
}

void adil_quantize_row_q4_0(const float *src, void *dst, int64_t n) {
    block_q4_0 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        float d = signed_absmax(x, QK) / -8.0f; /* the extreme value maps to level 0 */
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = adil_f32_to_fp16(d);
        for (int j = 0; j < QK / 2; j++) {
            uint8_t lo = level(x[j], id, 8.5f, 15), hi = level(x[j + QK / 2], id, 8.5f, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

float adil_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q4_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0.0f;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        unpack_q4_0(&x[i], q);
        sum += (float)dot_i8(y[i].qs, q, QK) * (fp16(x[i].d) * fp16(y[i].d));
    }
    return sum;
}

/* ---- Q4_1: x = d * q + m -------------------------------------------------- */

static void unpack_q4_1(const block_q4_1 *b, int q[QK]) {
    for (int j = 0; j < QK / 2; j++) {
        q[j] = b->qs[j] & 0x0F;
        q[j + QK / 2] = b->qs[j] >> 4;
    }
}

void adil_dequantize_row_q4_1(const void *src, float *dst, int64_t n) {
    const block_q4_1 *b = src;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d), m = fp16(b[i].m);
        unpack_q4_1(&b[i], q);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)q[j] * d + m;
        }
    }
}

void adil_quantize_row_q4_1(const float *src, void *dst, int64_t n) {
    block_q4_1 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        float min, max;
        min_max(x, QK, &min, &max);
        float d = (max - min) / 15.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = adil_f32_to_fp16(d);
        b[i].m = adil_f32_to_fp16(min);
        for (int j = 0; j < QK / 2; j++) {
            uint8_t lo = level(x[j] - min, id, 0.5f, 15);
            uint8_t hi = level(x[j + QK / 2] - min, id, 0.5f, 15);
            b[i].qs[j] = (uint8_t)(lo | hi << 4);
        }
    }
}

float adil_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *a) {
    const block_q4_1 *x = w;
    const block_q8_1 *y = a;
    float sum = 0.0f;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        unpack_q4_1(&x[i], q);
        /* sum_j (d q_j + m) * dy qy_j = d dy sum(q qy) + m * (dy sum(qy)) */
        sum += (float)dot_i8(y[i].qs, q, QK) * (fp16(x[i].d) * fp16(y[i].d)) + fp16(x[i].m) * fp16(y[i].s);
    }
    return sum;
}

/* ---- Q5_0: x = d * (q - 16) ------------------------------------------------ */

static void unpack_q5(const uint8_t qs[QK / 2], const uint8_t qh4[4], int offset, int q[QK]) {
    uint32_t qh = load_qh(qh4);
    for (int j = 0; j < QK / 2; j++) {
        int hi0 = (int)((qh >> j) & 1u) << 4;
        int hi1 = (int)((qh >> (j + QK / 2)) & 1u) << 4;
        q[j] = ((qs[j] & 0x0F) | hi0) - offset;
        q[j + QK / 2] = ((qs[j] >> 4) | hi1) - offset;
    }
}

void adil_dequantize_row_q5_0(const void *src, float *dst, int64_t n) {
    const block_q5_0 *b = src;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d);
        unpack_q5(b[i].qs, b[i].qh, 16, q);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)q[j] * d;
        }
    }
}

/* Packs 5-bit levels into qs nibbles and the qh bit field. */
static void pack_q5(const uint8_t lv[QK], uint8_t qs[QK / 2], uint8_t qh[4]) {
    uint32_t h = 0;
    for (int j = 0; j < QK / 2; j++) {
        qs[j] = (uint8_t)((lv[j] & 0x0F) | (lv[j + QK / 2] & 0x0F) << 4);
        h |= (uint32_t)(lv[j] >> 4) << j;
        h |= (uint32_t)(lv[j + QK / 2] >> 4) << (j + QK / 2);
    }
    store_qh(qh, h);
}

void adil_quantize_row_q5_0(const float *src, void *dst, int64_t n) {
    block_q5_0 *b = dst;
    uint8_t lv[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        float d = signed_absmax(x, QK) / -16.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = adil_f32_to_fp16(d);
        for (int j = 0; j < QK; j++) {
            lv[j] = level(x[j], id, 16.5f, 31);
        }
        pack_q5(lv, b[i].qs, b[i].qh);
    }
}

float adil_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q5_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0.0f;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        unpack_q5(x[i].qs, x[i].qh, 16, q);
        sum += (float)dot_i8(y[i].qs, q, QK) * (fp16(x[i].d) * fp16(y[i].d));
    }
    return sum;
}

/* ---- Q5_1: x = d * q + m ----------------------------------------------------- */

void adil_dequantize_row_q5_1(const void *src, float *dst, int64_t n) {
    const block_q5_1 *b = src;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d), m = fp16(b[i].m);
        unpack_q5(b[i].qs, b[i].qh, 0, q);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)q[j] * d + m;
        }
    }
}

void adil_quantize_row_q5_1(const float *src, void *dst, int64_t n) {
    block_q5_1 *b = dst;
    uint8_t lv[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        const float *x = src + i * QK;
        float min, max;
        min_max(x, QK, &min, &max);
        float d = (max - min) / 31.0f;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        b[i].d = adil_f32_to_fp16(d);
        b[i].m = adil_f32_to_fp16(min);
        for (int j = 0; j < QK; j++) {
            lv[j] = level(x[j] - min, id, 0.5f, 31);
        }
        pack_q5(lv, b[i].qs, b[i].qh);
    }
}

float adil_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *a) {
    const block_q5_1 *x = w;
    const block_q8_1 *y = a;
    float sum = 0.0f;
    int q[QK];
    for (int64_t i = 0; i < n / QK; i++) {
        unpack_q5(x[i].qs, x[i].qh, 0, q);
        sum += (float)dot_i8(y[i].qs, q, QK) * (fp16(x[i].d) * fp16(y[i].d)) + fp16(x[i].m) * fp16(y[i].s);
    }
    return sum;
}

/* ---- Q8_0: x = d * q ------------------------------------------------------------ */

void adil_dequantize_row_q8_0(const void *src, float *dst, int64_t n) {
    const block_q8_0 *b = src;
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)b[i].qs[j] * d;
        }
    }
}

/* Scale so the largest magnitude maps to 127; q rounded half away from zero. */
static float quantize_block_8bit(const float *x, int8_t qs[QK]) {
    float amax = 0.0f;
    for (int j = 0; j < QK; j++) {
        amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int j = 0; j < QK; j++) {
        qs[j] = round_i8(x[j] * id);
    }
    return d;
}

void adil_quantize_row_q8_0(const float *src, void *dst, int64_t n) {
    block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        b[i].d = adil_f32_to_fp16(quantize_block_8bit(src + i * QK, b[i].qs));
    }
}

float adil_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *a) {
    const block_q8_0 *x = w;
    const block_q8_0 *y = a;
    float sum = 0.0f;
    for (int64_t i = 0; i < n / QK; i++) {
        int s = 0;
        for (int j = 0; j < QK; j++) {
            s += x[i].qs[j] * y[i].qs[j];
        }
        sum += (float)s * (fp16(x[i].d) * fp16(y[i].d));
    }
    return sum;
}

/* ---- Q8_1: Q8_0 plus s = d * sum(q) ----------------------------------------------- */

void adil_dequantize_row_q8_1(const void *src, float *dst, int64_t n) {
    const block_q8_1 *b = src;
    for (int64_t i = 0; i < n / QK; i++) {
        float d = fp16(b[i].d);
        for (int j = 0; j < QK; j++) {
            dst[i * QK + j] = (float)b[i].qs[j] * d;
        }
    }
}

void adil_quantize_row_q8_1(const float *src, void *dst, int64_t n) {
    block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        float d = quantize_block_8bit(src + i * QK, b[i].qs);
        int s = 0;
        for (int j = 0; j < QK; j++) {
            s += b[i].qs[j];
        }
        b[i].d = adil_f32_to_fp16(d);
        b[i].s = adil_f32_to_fp16((float)s * d);
    }
}
