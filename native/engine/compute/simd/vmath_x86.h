/*
 * vmath_x86.h — e^x on vectors of floats, for the activation and attention
 * kernels (activation_*.c, attention_*.c).
 *
 * Include only from files compiled with AVX2/FMA (names ending in _avx2.c or
 * _avx512.c, see native/engine/CMakeLists.txt); the 16-lane version needs
 * AVX-512F as well.
 *
 * Method (Cody and Waite): x = n ln2 + r with n = round(x / ln2), |r| <= ln2/2,
 * ln2 split into a 9-bit head (so n * head is exact) and a tail; e^r from its
 * Taylor polynomial of degree 7 (truncation below 6e-9 relative) in Horner
 * form; then scaled by 2^n.  Measured error (tests/native/test_activation.c):
 * at most 2 ulp of the exact value over [-87, 88].
 * Range: 8 lanes: x above 88 gives +inf, x below -87 gives 0 (n must stay a
 * normal exponent); 16 lanes: scaling by 2^n with scalef overflows to +inf
 * above about 88.72 and underflows gradually to 0 below -87.3, like expf.
 * Callers divide by 1 + e^x, so +inf (giving 0) is what they want.
 */
#ifndef ADIL_VMATH_X86_H
#define ADIL_VMATH_X86_H

#if !defined(__AVX2__) || !defined(__FMA__)
#    error "vmath_x86.h needs a file compiled with -mavx2 -mfma"
#endif

#include "compute/simd/always_inline.h"

#include <immintrin.h>

#define VMATH_EXP_HI 88.0f
#define VMATH_EXP_LO (-87.0f)
#define VMATH_LOG2E  1.44269504088896341f
#define VMATH_LN2_HI 0.693359375f      /* 355/512: n * LN2_HI is exact for |n| < 2^15 */
#define VMATH_LN2_LO (-2.12194440e-4f) /* ln2 - LN2_HI */

/* 1/k! for k = 7 .. 2, the Taylor coefficients of e^r above r (1 + r). */
#define VMATH_C7 (1.0f / 5040.0f)
#define VMATH_C6 (1.0f / 720.0f)
#define VMATH_C5 (1.0f / 120.0f)
#define VMATH_C4 (1.0f / 24.0f)
#define VMATH_C3 (1.0f / 6.0f)
#define VMATH_C2 0.5f

ADIL_INLINE __m256 vmath_exp8(__m256 x) {
    const __m256 too_small = _mm256_cmp_ps(x, _mm256_set1_ps(VMATH_EXP_LO), _CMP_LT_OQ);
    const __m256 too_big = _mm256_cmp_ps(x, _mm256_set1_ps(VMATH_EXP_HI), _CMP_GT_OQ);
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(VMATH_EXP_LO)), _mm256_set1_ps(VMATH_EXP_HI));
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(VMATH_LOG2E)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(VMATH_LN2_HI), x);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(VMATH_LN2_LO), r);
    __m256 p = _mm256_set1_ps(VMATH_C7);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VMATH_C6));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VMATH_C5));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VMATH_C4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VMATH_C3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(VMATH_C2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    /* 2^n built in the exponent field: n is in [-126, 127], a normal float */
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
    const __m256 y = _mm256_andnot_ps(too_small, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
    return _mm256_blendv_ps(y, _mm256_set1_ps(__builtin_inff()), too_big);
}

#if defined(__AVX512F__)
ADIL_INLINE __m512 vmath_exp16(__m512 x) {
    /* beyond these, 2^n alone under- or overflows; the clamp keeps n an int */
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-104.0f)), _mm512_set1_ps(89.0f));
    const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(VMATH_LOG2E)),
                                          _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(VMATH_LN2_HI), x);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(VMATH_LN2_LO), r);
    __m512 p = _mm512_set1_ps(VMATH_C7);
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VMATH_C6));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VMATH_C5));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VMATH_C4));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VMATH_C3));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(VMATH_C2));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    /* p * 2^n, rounded once, with IEEE overflow and gradual underflow */
    return _mm512_scalef_ps(p, n);
}
#endif

#endif /* ADIL_VMATH_X86_H */
