/*
 * activation.h — the element-wise kernels of a forward pass, per CPU level:
 * the gated activations of the feed-forward block,
 *     gate[i] = act(gate[i]) * up[i],  i < n,
 * with act = GELU (tanh approximation) or SiLU, gpt-oss's clamped variant
 * (below); e^x; and the RMS norm of a row.
 *
 * swiglu-oai (gpt-oss; ggml's swiglu_oai with alpha 1.702, limit 7):
 *     g = min(gate, 7),  u = clamp(up, -7, 7),
 *     gate = g / (1 + e^(-1.702 g)) * (u + 1),
 * a SiLU of the scaled gate (t = 1.702 g below) times the shifted up.
 *
 * The scalar level is the reference, written with libm:
 *     gelu(x) = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *     silu(x) = x / (1 + e^-x)
 * The AVX2 and AVX-512 levels compute GELU in the equivalent sigmoid form
 *     gelu(x) = x / (1 + e^(-2 sqrt(2/pi) (x + 0.044715 x^3)))
 * with the vector e^x of simd/vmath_x86.h.  Both are x / (1 + e^-t), t = 2u for
 * GELU and t = x for SiLU.  Budget (test_activation.c), against the exact
 * value computed in double from the same float x:
 *     |simd - exact| <= (ADIL_ACT_MAX_REL_ERROR + ADIL_ACT_REL_ERROR_PER_T |t|) |exact|
 *                       + ADIL_ACT_MAX_ABS_ERROR
 * The |t| term is the conditioning of e^-t: t rounded to float is off by
 * about an ulp of t, which e^-t turns into a relative error of |t| ulp(1).
 * It matters only where the result is tiny (GELU(-4) = -1.3e-4 has t = -9.2:
 * 3.2e-6 relative).  The libm form has the same term and, for negative x,
 * loses the digits of 1 + tanh u (about 6e-8 |x| absolute) on top of it;
 * the sigmoid form does not.
 */
#ifndef ADIL_ACTIVATION_H
#define ADIL_ACTIVATION_H

#include <stdint.h>

#define ADIL_ACT_MAX_REL_ERROR   1e-6
#define ADIL_ACT_REL_ERROR_PER_T 2.4e-7 /* 2^-22 */
#define ADIL_ACT_MAX_ABS_ERROR   1e-37

#define ADIL_OAI_ALPHA 1.702f /* swiglu-oai: sigmoid(alpha * gate) */
#define ADIL_OAI_LIMIT 7.0f   /* swiglu-oai: gate <= limit, |up| <= limit */

/* gate[i] = act(gate[i]) * up[i], i < n (gate and up do not overlap). */
typedef void (*adil_glu_fn)(float *gate, const float *up, int64_t n);

/* y[i] = e^x[i], i < n (y may equal x).  SIMD levels: the e^x of
 * simd/vmath_x86.h, the one the attention softmax uses (see there for its range
 * and error); scalar: expf. */
typedef void (*adil_exp_fn)(const float *x, float *y, int64_t n);

/* out[i] = x[i] * r * w[i], r = 1 / sqrt(mean(x²) + eps), i < n (out may
 * equal x).  The sum of squares is accumulated in double at every level (a
 * few thousand terms keep their digits), so the levels differ only in the
 * order of those additions; the products are the same float operations. */
typedef void (*adil_rmsnorm_fn)(float *out, const float *x, const float *w, int64_t n, float eps);

typedef struct adil_act_kernels {
    adil_glu_fn gelu_tanh;
    adil_glu_fn silu;
    adil_exp_fn exp;
    adil_rmsnorm_fn rmsnorm;
    adil_glu_fn swiglu_oai;
} adil_act_kernels;

/* The kernels of the selected CPU level (cpu_level.h). */
const adil_act_kernels *adil_act_kernels_get(void);

/* The kernels of `level` (an adil_cpu_level); NULL when out of range.  Only
 * call them when adil_cpu_level_supported() is at least that level. */
const adil_act_kernels *adil_act_kernels_at(int level);

#if defined(__x86_64__)
void adil_glu_gelu_tanh_avx2(float *gate, const float *up, int64_t n);
void adil_glu_silu_avx2(float *gate, const float *up, int64_t n);
void adil_exp_avx2(const float *x, float *y, int64_t n);
void adil_rmsnorm_avx2(float *out, const float *x, const float *w, int64_t n, float eps);
void adil_glu_swiglu_oai_avx2(float *gate, const float *up, int64_t n);
void adil_glu_gelu_tanh_avx512(float *gate, const float *up, int64_t n);
void adil_glu_silu_avx512(float *gate, const float *up, int64_t n);
void adil_exp_avx512(const float *x, float *y, int64_t n);
void adil_rmsnorm_avx512(float *out, const float *x, const float *w, int64_t n, float eps);
void adil_glu_swiglu_oai_avx512(float *gate, const float *up, int64_t n);
#endif

#endif /* ADIL_ACTIVATION_H */
