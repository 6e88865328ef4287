/*
 * float_avx512.c — AVX-512 dot products of F32, F16 and BF16 weight rows
 * with F32 activations: four accumulators of 16 lanes, and the tail done
 * with masked loads (masked-off lanes read nothing and count as 0).
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/simd_x86.h"

typedef enum { KIND_F32, KIND_F16, KIND_BF16 } float_kind;

/* Elements i .. i + 15 of the row, those outside `mask` as 0. */
ADIL_INLINE __m512 load16(float_kind kind, const void *w, int64_t i, __mmask16 mask) {
    if (kind == KIND_F32) {
        return _mm512_maskz_loadu_ps(mask, (const float *)w + i);
    }
    __m256i h = _mm256_maskz_loadu_epi16(mask, (const uint16_t *)w + i);
    if (kind == KIND_F16) {
        return _mm512_cvtph_ps(h);
    }
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

ADIL_INLINE float float_dot(float_kind kind, int64_t n, const void *w, const float *a) {
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    const __mmask16 all = 0xFFFF;
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        for (int j = 0; j < 4; j++) {
            acc[j] =
                _mm512_fmadd_ps(load16(kind, w, i + 16 * j, all), _mm512_loadu_ps(a + i + 16 * j), acc[j]);
        }
    }
    for (; i < n; i += 16) {
        __mmask16 m = n - i >= 16 ? all : (__mmask16)((1u << (n - i)) - 1);
        acc[0] = _mm512_fmadd_ps(load16(kind, w, i, m), _mm512_maskz_loadu_ps(m, a + i), acc[0]);
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    __m256 h = _mm256_add_ps(_mm512_castps512_ps256(s), _mm512_extractf32x8_ps(s, 1));
    return simd_hsum_ps(h);
}

float adil_vec_dot_f32_avx512(int64_t n, const void *w, const void *a) {
    return float_dot(KIND_F32, n, w, a);
}

float adil_vec_dot_f16_avx512(int64_t n, const void *w, const void *a) {
    return float_dot(KIND_F16, n, w, a);
}

float adil_vec_dot_bf16_avx512(int64_t n, const void *w, const void *a) {
    return float_dot(KIND_BF16, n, w, a);
}
