/*
 * activation_avx512.c — gated GELU / SiLU / swiglu-oai on 16 lanes (see
 * activation.h).
 */
#if defined(__x86_64__)
#    include "compute/activation.h"
#    include "compute/simd/vmath_x86.h"

#    include <math.h>

/* 2 sqrt(2/pi) and 2 sqrt(2/pi) 0.044715: e^(-x (K1 + K2 x^2)) is e^(-2u). */
#    define GELU_K1 1.5957691216057308f
#    define GELU_K2 0.07135481627260025f

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

/* Lanes [0, left) of a vector (left > 0). */
static inline __mmask16 lanes16(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
}

/* One loop for whole vectors and the masked tail: the tail is the same code. */
#    define GLU_LOOP(ACT)                                                                            \
        for (int64_t i = 0; i < n; i += 16) {                                                        \
            const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u); \
            const __m512 g = ACT(_mm512_maskz_loadu_ps(m, gate + i));                                \
            _mm512_mask_storeu_ps(gate + i, m, _mm512_mul_ps(g, _mm512_maskz_loadu_ps(m, up + i)));  \
        }

void adil_glu_gelu_tanh_avx512(float *gate, const float *up, int64_t n) { GLU_LOOP(gelu16) }

void adil_glu_silu_avx512(float *gate, const float *up, int64_t n) { GLU_LOOP(silu16) }

/* swiglu-oai of 16 lanes (see swiglu_oai8 in activation_avx2.c). */
static inline __m512 swiglu_oai16(__m512 g, __m512 u) {
    const __m512 lim = _mm512_set1_ps(ADIL_OAI_LIMIT), neg = _mm512_set1_ps(-ADIL_OAI_LIMIT);
    g = _mm512_min_ps(lim, g);
    u = _mm512_min_ps(lim, _mm512_max_ps(neg, u));
    const __m512 e =
        vmath_exp16(_mm512_mul_ps(_mm512_set1_ps(ADIL_OAI_ALPHA), _mm512_sub_ps(_mm512_setzero_ps(), g)));
    const __m512 act = _mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e));
    return _mm512_mul_ps(act, _mm512_add_ps(u, _mm512_set1_ps(1.0f)));
}

void adil_glu_swiglu_oai_avx512(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16(n - i);
        const __m512 g = swiglu_oai16(_mm512_maskz_loadu_ps(m, gate + i), _mm512_maskz_loadu_ps(m, up + i));
        _mm512_mask_storeu_ps(gate + i, m, g);
    }
}

void adil_exp_avx512(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = n - i >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << (n - i)) - 1u);
        _mm512_mask_storeu_ps(y + i, m, vmath_exp16(_mm512_maskz_loadu_ps(m, x + i)));
    }
}

void adil_rmsnorm_avx512(float *out, const float *x, const float *w, int64_t n, float eps) {
    __m512d acc[2] = {_mm512_setzero_pd(), _mm512_setzero_pd()};
    for (int64_t i = 0; i < n; i += 16) {
        const __m512 v = _mm512_maskz_loadu_ps(lanes16(n - i), x + i);
        const __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
        const __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
        acc[0] = _mm512_fmadd_pd(lo, lo, acc[0]);
        acc[1] = _mm512_fmadd_pd(hi, hi, acc[1]);
    }
    const double ss = _mm512_reduce_add_pd(_mm512_add_pd(acc[0], acc[1]));
    const float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    const __m512 rv = _mm512_set1_ps(r);
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes16(n - i);
        const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), rv);
        _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i)));
    }
}
#endif
