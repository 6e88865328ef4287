/*
 * activation.c — scalar reference gated activations and the per-level
 * table (see activation.h).
 */
#include "compute/activation.h"

#include "compute/cpu_level.h"

#include <math.h>

static float gelu_tanh(float x) {
    const float c = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(c * (x + 0.044715f * x * x * x)));
}

static float silu(float x) { return x / (1.0f + expf(-x)); }

static void glu_gelu_tanh_scalar(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) gate[i] = gelu_tanh(gate[i]) * up[i];
}

static void glu_silu_scalar(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) gate[i] = silu(gate[i]) * up[i];
}

/* min / clamp written as ggml writes them (std::min, std::clamp), so a NaN
 * gate stays NaN. */
static void glu_swiglu_oai_scalar(float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        const float g = ADIL_OAI_LIMIT < gate[i] ? ADIL_OAI_LIMIT : gate[i];
        const float u = up[i] < -ADIL_OAI_LIMIT  ? -ADIL_OAI_LIMIT
                        : ADIL_OAI_LIMIT < up[i] ? ADIL_OAI_LIMIT
                                                 : up[i];
        gate[i] = g / (1.0f + expf(ADIL_OAI_ALPHA * -g)) * (u + 1.0f);
    }
}

static void exp_scalar(const float *x, float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = expf(x[i]);
}

static void rmsnorm_scalar(float *out, const float *x, const float *w, int64_t n, float eps) {
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
    const float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
    for (int64_t i = 0; i < n; i++) out[i] = x[i] * r * w[i];
}

static const adil_act_kernels LEVELS[ADIL_CPU_LEVEL_COUNT] = {
    [ADIL_CPU_SCALAR] = {glu_gelu_tanh_scalar, glu_silu_scalar, exp_scalar, rmsnorm_scalar,
                         glu_swiglu_oai_scalar},
#if defined(__x86_64__)
    [ADIL_CPU_AVX2] = {adil_glu_gelu_tanh_avx2, adil_glu_silu_avx2, adil_exp_avx2, adil_rmsnorm_avx2,
                       adil_glu_swiglu_oai_avx2},
    [ADIL_CPU_AVX512] = {adil_glu_gelu_tanh_avx512, adil_glu_silu_avx512, adil_exp_avx512,
                         adil_rmsnorm_avx512, adil_glu_swiglu_oai_avx512},
#else
    [ADIL_CPU_AVX2] = {glu_gelu_tanh_scalar, glu_silu_scalar, exp_scalar, rmsnorm_scalar,
                       glu_swiglu_oai_scalar},
    [ADIL_CPU_AVX512] = {glu_gelu_tanh_scalar, glu_silu_scalar, exp_scalar, rmsnorm_scalar,
                         glu_swiglu_oai_scalar},
#endif
};

const adil_act_kernels *adil_act_kernels_at(int level) {
    return level >= 0 && level < ADIL_CPU_LEVEL_COUNT ? &LEVELS[level] : NULL;
}

const adil_act_kernels *adil_act_kernels_get(void) { return &LEVELS[adil_cpu_level_selected()]; }
