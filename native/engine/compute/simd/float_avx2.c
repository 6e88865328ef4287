/*
 * float_avx2.c — AVX2/FMA dot products of F32, F16 and BF16 weight rows with
 * F32 activations (the exact path: no quantization).  Four accumulators of
 * 8 lanes hide the FMA latency; 16-bit weights are widened in registers
 * (F16C for halves, a 16-bit shift for bfloat16).  Rows need not be a
 * multiple of 8: the tail is done one element at a time.
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/simd_x86.h"

typedef enum { KIND_F32, KIND_F16, KIND_BF16 } float_kind;

ADIL_INLINE __m256 load8(float_kind kind, const void *w, int64_t i) {
    if (kind == KIND_F32) {
        return _mm256_loadu_ps((const float *)w + i);
    }
    __m128i h = _mm_loadu_si128((const __m128i *)((const uint16_t *)w + i));
    if (kind == KIND_F16) {
        return _mm256_cvtph_ps(h);
    }
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

ADIL_INLINE float load1(float_kind kind, const void *w, int64_t i) {
    if (kind == KIND_F32) {
        return ((const float *)w)[i];
    }
    uint16_t h = ((const uint16_t *)w)[i];
    return kind == KIND_F16 ? simd_fp16(h) : adil_bf16_to_f32(h);
}

ADIL_INLINE float float_dot(float_kind kind, int64_t n, const void *w, const float *a) {
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        for (int j = 0; j < 4; j++) {
            acc[j] = _mm256_fmadd_ps(load8(kind, w, i + 8 * j), _mm256_loadu_ps(a + i + 8 * j), acc[j]);
        }
    }
    for (; i + 8 <= n; i += 8) {
        acc[0] = _mm256_fmadd_ps(load8(kind, w, i), _mm256_loadu_ps(a + i), acc[0]);
    }
    float sum = simd_hsum_ps(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
    for (; i < n; i++) {
        sum += load1(kind, w, i) * a[i];
    }
    return sum;
}

float adil_vec_dot_f32_avx2(int64_t n, const void *w, const void *a) { return float_dot(KIND_F32, n, w, a); }

float adil_vec_dot_f16_avx2(int64_t n, const void *w, const void *a) { return float_dot(KIND_F16, n, w, a); }

float adil_vec_dot_bf16_avx2(int64_t n, const void *w, const void *a) {
    return float_dot(KIND_BF16, n, w, a);
}
