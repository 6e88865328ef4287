/*
 * quant_k.c — the K-quants (256-element super-blocks split into sub-blocks
 * of 16 or 32 with their own small scales): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, and
 * Q8_K, their activation type.
 *
 * Each type has one unpack function that turns a super-block into plain
 * integer levels (q[256]) plus per-sub-block integer scales; dequantize and
 * the dot product are both written on top of it, so the bit layout lives in
 * one place.  The dot products stay in integers within a super-block and
 * apply the float scales once per super-block, like ggml, so that the only
 * rounding is in the activations' quantization.
 *
 * Element e (0..255) of a super-block, by type (from the format's docs):
 *   Q2_K  level (qs[32*(e/128) + e%32] >> 2*((e%128)/32)) & 3,
 *         scale byte scales[e/16]: low nibble scale, high nibble min.
 *   Q3_K  the same 2 low bits, third bit hmask[e%32] >> (e/32) (set: +0,
 *         clear: -4); 6-bit scales packed in 12 bytes, minus 32.
 *   Q4_K  qs[32*(e/64) + e%32], low nibble if (e%64) < 32 else high;
 *         6-bit scale and min of sub-block e/32 packed in 12 bytes.
 *   Q5_K  Q4_K plus fifth bit qh[e%32] >> (e/32).
 *   Q6_K  4 low bits from ql[64*(e/128) + e%64] (low nibble if (e%128) < 64),
 *         2 high bits (qh[32*(e/128) + e%32] >> 2*((e%128)/32)) & 3, minus
 *         32; int8 scale of sub-block e/16.
 */
#include "compute/kernels_scalar.h"

#include <math.h>
#include <string.h>

#define QK_K ADIL_QK_K

static float fp16(adil_fp16 h) { return adil_fp16_to_f32(h); }

/* sum_j q[j] * a[j] over n elements. */
static int dot_levels(const int8_t *q, const int8_t *a, int n) {
    int s = 0;
    for (int j = 0; j < n; j++) {
        s += q[j] * a[j];
    }
    return s;
}

/* ---- Q2_K ---------------------------------------------------------------- */

static void unpack_q2_K(const block_q2_K *b, int8_t q[QK_K]) {
    for (int e = 0; e < QK_K; e++) {
        int shift = 2 * ((e % 128) / 32);
        q[e] = (int8_t)((b->qs[32 * (e / 128) + e % 32] >> shift) & 3);
    }
}

void adil_dequantize_row_q2_K(const void *src, float *dst, int64_t n) {
    const block_q2_K *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16(b[i].d), dmin = fp16(b[i].dmin);
        unpack_q2_K(&b[i], q);
        for (int e = 0; e < QK_K; e++) {
            uint8_t sc = b[i].scales[e / 16];
            dst[e] = d * (float)(sc & 0x0F) * (float)q[e] - dmin * (float)(sc >> 4);
        }
    }
}

float adil_vec_dot_q2_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q2_K *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_q2_K(&x[i], q);
        int dots = 0, mins = 0;
        for (int s = 0; s < QK_K / 16; s++) {
            uint8_t sc = x[i].scales[s];
            dots += (sc & 0x0F) * dot_levels(q + 16 * s, y[i].qs + 16 * s, 16);
            mins += (sc >> 4) * y[i].bsums[s];
        }
        sum += y[i].d * (fp16(x[i].d) * (float)dots - fp16(x[i].dmin) * (float)mins);
    }
    return sum;
}

/* ---- Q3_K ---------------------------------------------------------------- */

/* Scale i (0..15): 4 low bits from scales[i % 8] (low nibble for i < 8, high
 * for i >= 8), 2 high bits from scales[8 + i % 4] at bit 2 * (i / 4); the
 * stored value is offset by 32. */
static int scale_q3_K(const uint8_t s[12], int i) {
    int low = i < 8 ? s[i] & 0x0F : s[i - 8] >> 4;
    int high = (s[8 + i % 4] >> (2 * (i / 4))) & 3;
    return (low | high << 4) - 32;
}

static void unpack_q3_K(const block_q3_K *b, int8_t q[QK_K]) {
    for (int e = 0; e < QK_K; e++) {
        int shift = 2 * ((e % 128) / 32);
        int low = (b->qs[32 * (e / 128) + e % 32] >> shift) & 3;
        int high = (b->hmask[e % 32] >> (e / 32)) & 1;
        q[e] = (int8_t)(low - (high ? 0 : 4));
    }
}

void adil_dequantize_row_q3_K(const void *src, float *dst, int64_t n) {
    const block_q3_K *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16(b[i].d);
        unpack_q3_K(&b[i], q);
        for (int e = 0; e < QK_K; e++) {
            dst[e] = d * (float)scale_q3_K(b[i].scales, e / 16) * (float)q[e];
        }
    }
}

float adil_vec_dot_q3_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q3_K *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_q3_K(&x[i], q);
        int dots = 0;
        for (int s = 0; s < QK_K / 16; s++) {
            dots += scale_q3_K(x[i].scales, s) * dot_levels(q + 16 * s, y[i].qs + 16 * s, 16);
        }
        sum += y[i].d * fp16(x[i].d) * (float)dots;
    }
    return sum;
}

/* ---- Q4_K and Q5_K ----------------------------------------------------------- */

/* The 6-bit scale and min of sub-block j (0..7) from the 12 packed bytes:
 * j < 4: low 6 bits of s[j] and s[j + 4]; j >= 4: a nibble of s[j + 4] plus
 * the top 2 bits of s[j - 4] (scale) or s[j] (min). */
static void scale_min_k4(const uint8_t s[12], int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Levels 0..15 of Q4_K (and the low 4 bits of Q5_K). */
static void unpack_nibbles_k(const uint8_t qs[QK_K / 2], int8_t q[QK_K]) {
    for (int e = 0; e < QK_K; e++) {
        uint8_t byte = qs[32 * (e / 64) + e % 32];
        q[e] = (int8_t)((e % 64) < 32 ? byte & 0x0F : byte >> 4);
    }
}

static void add_fifth_bit(const uint8_t qh[QK_K / 8], int8_t q[QK_K]) {
    for (int e = 0; e < QK_K; e++) {
        q[e] = (int8_t)(q[e] | ((qh[e % 32] >> (e / 32)) & 1) << 4);
    }
}

/* x = d * sc * q - dmin * m, per sub-block of 32. */
static void dequantize_k4(const uint8_t scales[12], float d, float dmin, const int8_t *q, float *dst) {
    for (int j = 0; j < QK_K / 32; j++) {
        int sc, m;
        scale_min_k4(scales, j, &sc, &m);
        for (int l = 0; l < 32; l++) {
            dst[32 * j + l] = d * (float)sc * (float)q[32 * j + l] - dmin * (float)m;
        }
    }
}

/* The dot of one unpacked Q4_K/Q5_K super-block with a Q8_K block. */
static float dot_k4(const uint8_t scales[12], float d, float dmin, const int8_t *q, const block_q8_K *y) {
    int dots = 0, mins = 0;
    for (int j = 0; j < QK_K / 32; j++) {
        int sc, m;
        scale_min_k4(scales, j, &sc, &m);
        dots += sc * dot_levels(q + 32 * j, y->qs + 32 * j, 32);
        mins += m * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
    return y->d * (d * (float)dots - dmin * (float)mins);
}

void adil_dequantize_row_q4_K(const void *src, float *dst, int64_t n) {
    const block_q4_K *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_nibbles_k(b[i].qs, q);
        dequantize_k4(b[i].scales, fp16(b[i].d), fp16(b[i].dmin), q, dst + i * QK_K);
    }
}

float adil_vec_dot_q4_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q4_K *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_nibbles_k(x[i].qs, q);
        sum += dot_k4(x[i].scales, fp16(x[i].d), fp16(x[i].dmin), q, &y[i]);
    }
    return sum;
}

void adil_dequantize_row_q5_K(const void *src, float *dst, int64_t n) {
    const block_q5_K *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_nibbles_k(b[i].qs, q);
        add_fifth_bit(b[i].qh, q);
        dequantize_k4(b[i].scales, fp16(b[i].d), fp16(b[i].dmin), q, dst + i * QK_K);
    }
}

float adil_vec_dot_q5_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q5_K *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_nibbles_k(x[i].qs, q);
        add_fifth_bit(x[i].qh, q);
        sum += dot_k4(x[i].scales, fp16(x[i].d), fp16(x[i].dmin), q, &y[i]);
    }
    return sum;
}

/* ---- Q6_K ------------------------------------------------------------------------ */

static void unpack_q6_K(const block_q6_K *b, int8_t q[QK_K]) {
    for (int e = 0; e < QK_K; e++) {
        int r = e % 128;
        uint8_t lo_byte = b->ql[64 * (e / 128) + r % 64];
        int low = r < 64 ? lo_byte & 0x0F : lo_byte >> 4;
        int high = (b->qh[32 * (e / 128) + r % 32] >> (2 * (r / 32))) & 3;
        q[e] = (int8_t)((low | high << 4) - 32);
    }
}

void adil_dequantize_row_q6_K(const void *src, float *dst, int64_t n) {
    const block_q6_K *b = src;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++, dst += QK_K) {
        float d = fp16(b[i].d);
        unpack_q6_K(&b[i], q);
        for (int e = 0; e < QK_K; e++) {
            dst[e] = d * (float)b[i].scales[e / 16] * (float)q[e];
        }
    }
}

float adil_vec_dot_q6_K_q8_K(int64_t n, const void *w, const void *a) {
    const block_q6_K *x = w;
    const block_q8_K *y = a;
    float sum = 0.0f;
    int8_t q[QK_K];
    for (int64_t i = 0; i < n / QK_K; i++) {
        unpack_q6_K(&x[i], q);
        int dots = 0;
        for (int s = 0; s < QK_K / 16; s++) {
            dots += x[i].scales[s] * dot_levels(q + 16 * s, y[i].qs + 16 * s, 16);
        }
        sum += y[i].d * fp16(x[i].d) * (float)dots;
    }
    return sum;
}

/* ---- Q8_K (activations) -------------------------------------------------------------- */

void adil_dequantize_row_q8_K(const void *src, float *dst, int64_t n) {
    const block_q8_K *b = src;
    for (int64_t i = 0; i < n / QK_K; i++) {
        for (int e = 0; e < QK_K; e++) {
            dst[i * QK_K + e] = b[i].d * (float)b[i].qs[e];
        }
    }
}

/* Rounds to nearest (ties to even, like ggml's nearest_int) and clamps into
 * -128..127. */
static int8_t clamp_level(float v) {
    float r = rintf(v);
    if (!(r > -128.0f)) {
        return r != r ? 0 : -128;
    }
    return r >= 127.0f ? 127 : (int8_t)(int)r;
}

/* The signed value of largest magnitude maps to -127 (as in ggml). */
void adil_quantize_row_q8_K(const float *src, void *dst, int64_t n) {
    block_q8_K *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *x = src + i * QK_K;
        float amax = 0.0f, max = 0.0f;
        for (int e = 0; e < QK_K; e++) {
            if (fabsf(x[e]) > amax) {
                amax = fabsf(x[e]);
                max = x[e];
            }
        }
        memset(&b[i], 0, sizeof(b[i]));
        if (amax == 0.0f) {
            continue;
        }
        float iscale = -127.0f / max;
        for (int e = 0; e < QK_K; e++) {
            b[i].qs[e] = clamp_level(iscale * x[e]);
            b[i].bsums[e / 16] = (int16_t)(b[i].bsums[e / 16] + b[i].qs[e]);
        }
        b[i].d = 1.0f / iscale;
    }
}
