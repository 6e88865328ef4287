/*
 * activation_avx512.c — gated GELU / SiLU on 16 lanes (see activation.h).
 */
#if defined(__x86_64__)
#include "compute/activation.h"
#include "compute/vmath_x86.h"

/* 2 sqrt(2/pi) and 2 sqrt(2/pi) 0.044715: e^(-x (K1 + K2 x^2)) is e^(-2u). */
#define GELU_K1 1.5957691216057308f
#define GELU_K2 0.07135481627260025f

static inline __m512 gelu16(__m512 x) {
    const __m512 x2 = _mm512_mul_ps(x, x);
    const __m512 t = _mm512_mul_ps(x, _mm512_fmadd_ps(x2, _mm512_set1_ps(GELU_K2), _mm512_set1_ps(GELU_K1)));
    const __m512 e = vmath_exp16(_mm512_sub_ps(_mm512_setzero_ps(), t));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

static inline __m512 silu16(__m512 x) {
    const __m512 e = vmath_exp16(_mm512_sub_ps(_mm512_setzero_ps(), x));
    return _mm512_div_ps(x, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
}

/* One loop for whole vectors and the masked tail: the tail is the same code. */
#define GLU_LOOP(ACT)                                                                  \
    for (int64_t i = 0; i < n; i += 16) {                                              \
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF                            \
                                        : (__mmask16)((1u << (n - i)) - 1u);           \
        const __m512 g = ACT(_mm512_maskz_loadu_ps(m, gate + i));                      \
        _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i))); \
    }

void adil_glu_gelu_tanh_avx512(float *gate, const float *up, int64_t n) {
    GLU_LOOP(gelu16)
}

void adil_glu_silu_avx512(float *gate, const float *up, int64_t n) {
    GLU_LOOP(silu16)
}

void adil_exp_avx512(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, vmath_exp16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}
#endif
