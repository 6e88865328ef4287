/*
 * quantize_avx2.c — AVX2 quantization of activations to Q8_0, Q8_1 and Q8_K.
 *
 * The bytes must equal the scalar reference's exactly (the tests compare
 * them with the gguf package's), so every float operation is the scalar
 * one, lane by lane: the same divisions and products, and the same rounding
 * (Q8_0 half away from zero, Q8_K to nearest even), clamping and NaN
 * handling.  Only the order of the max reductions differs, which cannot
 * change a maximum.
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/simd_x86.h"

#include <string.h>

#define QK   ADIL_QK
#define QK_K ADIL_QK_K

/* max(|x| lane, acc lane): a NaN in x leaves acc (the scalar `>` test
 * skips NaN too), because maxps returns its second operand then. */
ADIL_INLINE __m256 abs_max(__m256 x, __m256 acc) {
    return _mm256_max_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), x), acc);
}

ADIL_INLINE float hmax_ps(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    return _mm_cvtss_f32(m);
}

/* NaN lanes to 0, then clamped into [lo, hi]; v holds integral values. */
ADIL_INLINE __m256i clamp_to_i32(__m256 v, float lo, float hi) {
    v = _mm256_and_ps(v, _mm256_cmp_ps(v, v, _CMP_ORD_Q));
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_set1_ps(lo)), _mm256_set1_ps(hi));
    return _mm256_cvttps_epi32(v);
}

/* 32 int32 lanes (4 vectors, in element order) to 32 int8 bytes. */
ADIL_INLINE void store_i8(const __m256i q[4], int8_t *dst) {
    __m256i lo = _mm256_packs_epi32(q[0], q[1]), hi = _mm256_packs_epi32(q[2], q[3]);
    __m256i b = _mm256_packs_epi16(lo, hi);
    /* the packs work per 128-bit half: put the 4-byte groups back in order */
    b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
    _mm256_storeu_si256((__m256i *)dst, b);
}

/* Rounds half away from zero (C's roundf): trunc, plus one away from zero
 * when the dropped fraction is at least one half (exact in float). */
ADIL_INLINE __m256 round_away(__m256 v) {
    __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
    __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
    __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
    __m256 up = _mm256_and_ps(_mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ), one);
    return _mm256_add_ps(t, up);
}

/* One block of 32 to int8 levels (the scalar quantize_block_8bit); returns
 * the scale d and the exact sum of the levels. */
ADIL_INLINE float quantize_block_8bit(const float *x, int8_t qs[QK], int *sum) {
    __m256 v[4], amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; j++) {
        v[j] = _mm256_loadu_ps(x + 8 * j);
        amax = abs_max(v[j], amax);
    }
    float d = hmax_ps(amax) / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    __m256i q[4];
    for (int j = 0; j < 4; j++) {
        __m256 r = round_away(_mm256_mul_ps(v[j], _mm256_set1_ps(id)));
        q[j] = clamp_to_i32(r, -127.0f, 127.0f);
    }
    store_i8(q, qs);
    __m256i s = _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_hadd_epi32(h, h);
    h = _mm_hadd_epi32(h, h);
    *sum = _mm_cvtsi128_si32(h);
    return d;
}

void adil_quantize_row_q8_0_avx2(const float *src, void *dst, int64_t n) {
    block_q8_0 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        int sum;
        b[i].d = adil_f32_to_fp16(quantize_block_8bit(src + i * QK, b[i].qs, &sum));
    }
}

void adil_quantize_row_q8_1_avx2(const float *src, void *dst, int64_t n) {
    block_q8_1 *b = dst;
    for (int64_t i = 0; i < n / QK; i++) {
        int sum;
        float d = quantize_block_8bit(src + i * QK, b[i].qs, &sum);
        b[i].d = adil_f32_to_fp16(d);
        b[i].s = adil_f32_to_fp16((float)sum * d);
    }
}

/* The element of largest magnitude, the first one on ties (as the scalar
 * loop's strict `>` keeps), signed; 0 when all are 0 or NaN. */
static float signed_absmax_256(const float *x) {
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < QK_K; j += 8) {
        amax = abs_max(_mm256_loadu_ps(x + j), amax);
    }
    float m = hmax_ps(amax);
    if (m == 0.0f) {
        return 0.0f;
    }
    __m256 target = _mm256_set1_ps(m), sign_off = _mm256_set1_ps(-0.0f);
    for (int j = 0; j < QK_K; j += 8) {
        __m256 a = _mm256_andnot_ps(sign_off, _mm256_loadu_ps(x + j));
        int hits = _mm256_movemask_ps(_mm256_cmp_ps(a, target, _CMP_EQ_OQ));
        if (hits != 0) {
            return x[j + __builtin_ctz((unsigned)hits)];
        }
    }
    return m; /* not reached: m is one of the |x| */
}

void adil_quantize_row_q8_K_avx2(const float *src, void *dst, int64_t n) {
    block_q8_K *b = dst;
    for (int64_t i = 0; i < n / QK_K; i++) {
        const float *x = src + i * QK_K;
        float max = signed_absmax_256(x);
        memset(&b[i], 0, sizeof(b[i]));
        if (max == 0.0f) {
            continue;
        }
        float iscale = -127.0f / max;
        __m256 is = _mm256_set1_ps(iscale);
        for (int j = 0; j < QK_K; j += 32) {
            __m256i q[4];
            for (int k = 0; k < 4; k++) {
                __m256 v = _mm256_mul_ps(is, _mm256_loadu_ps(x + j + 8 * k));
                v = _mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                q[k] = clamp_to_i32(v, -128.0f, 127.0f);
            }
            store_i8(q, b[i].qs + j);
        }
        for (int s = 0; s < QK_K / 16; s++) {
            __m256i w = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(b[i].qs + 16 * s)));
            __m256i p = simd_pairs_i32(w);
            __m128i h = _mm_add_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
            h = _mm_hadd_epi32(h, h);
            h = _mm_hadd_epi32(h, h);
            b[i].bsums[s] = (int16_t)_mm_cvtsi128_si32(h);
        }
        b[i].d = 1.0f / iscale;
    }
}
