/*
 * activation_avx2.c — gated GELU / SiLU / swiglu-oai on 8 lanes (see
 * activation.h).
 */
#if defined(__x86_64__)
#    include "compute/activation.h"
#    include "compute/simd/vmath_x86.h"

#    include <math.h>

/* 2 sqrt(2/pi) and 2 sqrt(2/pi) 0.044715: e^(-x (K1 + K2 x^2)) is e^(-2u). */
#    define GELU_K1 1.5957691216057308f
#    define GELU_K2 0.07135481627260025f

/* Lanes [0, left) of a tail, as a maskload / maskstore mask. */
static inline __m256i tail_mask(int64_t left) {
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)left), lane);
}

static inline __m256 gelu8(__m256 x) {
    const __m256 x2 = _mm256_mul_ps(x, x);
    const __m256 t = _mm256_mul_ps(x, _mm256_fmadd_ps(x2, _mm256_set1_ps(GELU_K2), _mm256_set1_ps(GELU_K1)));
    const __m256 e = vmath_exp8(_mm256_sub_ps(_mm256_setzero_ps(), t));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

static inline __m256 silu8(__m256 x) {
    const __m256 e = vmath_exp8(_mm256_sub_ps(_mm256_setzero_ps(), x));
    return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

#    define GLU_LOOP(ACT)                                                                             \
        int64_t i = 0;                                                                                \
        for (; i + 8 <= n; i += 8)                                                                    \
            _mm256_storeu_ps(gate + i,                                                                \
                             _mm256_mul_ps(ACT(_mm256_loadu_ps(gate + i)), _mm256_loadu_ps(up + i))); \
        if (i < n) {                                                                                  \
            const __m256i m = tail_mask(n - i);                                                       \
            const __m256 g = ACT(_mm256_maskload_ps(gate + i, m));                                    \
            _mm256_maskstore_ps(gate + i, m, _mm256_mul_ps(g, _mm256_maskload_ps(up + i, m)));        \
        }

void adil_glu_gelu_tanh_avx2(float *gate, const float *up, int64_t n) { GLU_LOOP(gelu8) }

void adil_glu_silu_avx2(float *gate, const float *up, int64_t n) { GLU_LOOP(silu8) }

/* swiglu-oai of 8 lanes: min(g, 7) / (1 + e^(-1.702 min(g, 7))) * (clamp(u) + 1).
 * min_ps(limit, g) returns g when g is NaN, as the scalar form does. */
static inline __m256 swiglu_oai8(__m256 g, __m256 u) {
    const __m256 lim = _mm256_set1_ps(ADIL_OAI_LIMIT), neg = _mm256_set1_ps(-ADIL_OAI_LIMIT);
    g = _mm256_min_ps(lim, g);
    u = _mm256_min_ps(lim, _mm256_max_ps(neg, u));
    const __m256 e =
        vmath_exp8(_mm256_mul_ps(_mm256_set1_ps(ADIL_OAI_ALPHA), _mm256_sub_ps(_mm256_setzero_ps(), g)));
    const __m256 act = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return _mm256_mul_ps(act, _mm256_add_ps(u, _mm256_set1_ps(1.0f)));
}

void adil_glu_swiglu_oai_avx2(float *gate, const float *up, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(gate + i, swiglu_oai8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(gate + i, m,
                            swiglu_oai8(_mm256_maskload_ps(gate + i, m), _mm256_maskload_ps(up + i, m)));
    }
}

void adil_exp_avx2(const float *x, float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, vmath_exp8(_mm256_loadu_ps(x + i)));
    if (i < n) {
        const __m256i m = tail_mask(n - i);
        _mm256_maskstore_ps(y + i, m, vmath_exp8(_mm256_maskload_ps(x + i, m)));
    }
}

void adil_rmsnorm_avx2(float *out, const float *x, const float *w, int64_t n, float eps) {
    __m256d acc[2] = {_mm256_setzero_pd(), _mm256_setzero_pd()};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
        const __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
        acc[0] = _mm256_fmadd_pd(lo, lo, acc[0]);
        acc[1] = _mm256_fmadd_pd(hi, hi, acc[1]);
    }
    double lanes[4];
    _mm256_storeu_pd(lanes, _mm256_add_pd(acc[0], acc[1]));
    double ss = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
    for (; i < n; i++) ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    const __m256 rv = _mm256_set1_ps(r);
    for (i = 0; i + 8 <= n; i += 8)
        _mm256_storeu_ps(out + i,
                         _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), rv), _mm256_loadu_ps(w + i)));
    for (; i < n; i++) out[i] = x[i] * r * w[i];
}
#endif
