/*
 * test_activation.c — the gated activations and e^x of every CPU level this
 * machine supports (compute/activation.h):
 *   - e^x within MAX_EXP_ULP ulp of the exact value over [-87, 88], 0 below
 *     and +inf far above (the softmax of attention_*.c uses the same code);
 *   - GELU (tanh form) and SiLU within the stated budgets of the exact value
 *     (double precision, from the same float input) on a dense sweep, random
 *     values and extremes; the gating multiply by `up` is exact;
 *   - every level against the scalar libm reference, which itself is held to
 *     the looser bound its cancellation for negative x allows;
 *   - swiglu-oai (gpt-oss) within the SiLU budget (t = 1.702 min(g, 7)) of
 *     its exact value, gates and ups on both sides of the clamps;
 *   - lengths 0..40 (vector bodies and tails) leave nothing outside [0, n)
 *     touched;
 *   - the RMS norm of a row within an ulp of the scalar one (both sum the
 *     squares in double), in place or not, for lengths 1..700.
 * The largest errors seen are printed, so the stated budgets can be checked.
 */
#include "compute/activation.h"
#include "compute/cpu_level.h"
#include "test_util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_EXP_ULP 2.0
/* The libm form 0.5 x (1 + tanh u) loses up to an ulp of 1 in 1 + tanh u
 * (about 6e-8) times 0.5 |x|. */
#define SCALAR_GELU_ABS_PER_X 1e-7

/* Both activations are x / (1 + e^-t): t = 2u for GELU, t = x for SiLU. */
static double gelu_t(float xf) {
    const double x = xf;
    return 2.0 * 0.7978845608028654 * (x + 0.044715 * x * x * x);
}

static double silu_t(float xf) { return xf; }

/* Distance in units of the last place of the float nearest to `exact`. */
static double ulps(float got, double exact) {
    const float e = (float)exact;
    const double ulp = (double)nextafterf(fabsf(e), INFINITY) - fabs((double)e);
    return fabs((double)got - exact) / ulp;
}

static uint32_t rng_state = 12345u;
static float rnd(float lo, float hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

/* A sweep of n inputs: dense over [lo, hi], then random, then the given extras. */
static float *inputs(float lo, float hi, int64_t n_dense, int64_t n_rand, const float *extra, int64_t n_extra,
                     int64_t *n_out) {
    const int64_t n = n_dense + n_rand + n_extra;
    float *x = malloc((size_t)n * sizeof(float));
    for (int64_t i = 0; i < n_dense; i++) x[i] = lo + (hi - lo) * (float)i / (float)(n_dense - 1);
    for (int64_t i = 0; i < n_rand; i++) x[n_dense + i] = rnd(lo, hi);
    memcpy(x + n_dense + n_rand, extra, (size_t)n_extra * sizeof(float));
    *n_out = n;
    return x;
}

static void test_exp(int level, const adil_act_kernels *k) {
    int64_t n;
    const float extra[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -87.0f, 0.34657359f, -0.34657359f};
    float *x = inputs(-87.0f, 88.0f, 1 << 20, 1 << 18, extra, 8, &n);
    float *y = malloc((size_t)n * sizeof(float));
    k->exp(x, y, n);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const double u = ulps(y[i], exp((double)x[i]));
        if (u > worst) worst = u;
    }
    printf("level %s: exp max error %.2f ulp\n", adil_cpu_level_string(level), worst);
    CHECK(worst <= (level == ADIL_CPU_SCALAR ? 1.0 : MAX_EXP_ULP));
    /* outside the range: 0 far below, +inf far above */
    const float far[4] = {-200.0f, -1e30f, 200.0f, 1e30f};
    float fy[4];
    k->exp(far, fy, 4);
    CHECK(fy[0] == 0.0f && fy[1] == 0.0f && isinf(fy[2]) && isinf(fy[3]));
    free(x);
    free(y);
}

typedef double (*t_fn)(float);

/* Every output within budget of the exact x / (1 + e^-t(x)). */
static void check_glu(int level, const char *name, adil_glu_fn glu, t_fn t_of) {
    int64_t n;
    const float extra[] = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-45f, 50.0f, -50.0f,
                           1e4f, -1e4f, 1e19f,  -1e19f,  3e38f,  -3e38f};
    float *x = inputs(-30.0f, 30.0f, 1 << 20, 1 << 18, extra, 13, &n);
    float *g = malloc((size_t)n * sizeof(float));
    float *up = malloc((size_t)n * sizeof(float));
    memcpy(g, x, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) up[i] = 1.0f;
    glu(g, up, n);
    double worst_rel = 0.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const double t = t_of(x[i]), e = (double)x[i] / (1.0 + exp(-t));
        const double err = fabs((double)g[i] - e);
        const double rel = ADIL_ACT_MAX_REL_ERROR + ADIL_ACT_REL_ERROR_PER_T * fabs(t);
        if (!(err <= rel * fabs(e) + ADIL_ACT_MAX_ABS_ERROR)) {
            if (level != ADIL_CPU_SCALAR || err > SCALAR_GELU_ABS_PER_X * fabs(x[i]) + 1e-37) {
                if (bad++ < 5)
                    fprintf(stderr, "level %s %s(%.9g) = %.9g, exact %.9g\n", adil_cpu_level_string(level),
                            name, (double)x[i], (double)g[i], e);
            }
        }
        if (fabs(e) > 1e-30 && err / (rel * fabs(e)) > worst_rel) worst_rel = err / (rel * fabs(e));
    }
    printf("level %s: %s max error %.3g of the relative budget%s\n", adil_cpu_level_string(level), name,
           worst_rel, level == ADIL_CPU_SCALAR ? " (libm form: held to 1e-7 |x|)" : "");
    CHECK(bad == 0);
    free(x);
    free(g);
    free(up);
}

/* swiglu-oai against its definition in double (activation.h), for gates
 * swept over [-30, 30] (past the limit 7) and ups over [-10, 10]. */
static void check_swiglu_oai(int level, const adil_act_kernels *k) {
    int64_t n;
    const float extra[] = {0.0f, -0.0f, 7.0f, -7.0f, 6.9999995f, 7.0000005f, 1e-30f, -50.0f, 1e19f, -1e19f};
    float *x = inputs(-30.0f, 30.0f, 1 << 20, 1 << 18, extra, 10, &n);
    float *g = malloc((size_t)n * sizeof(float));
    float *up = malloc((size_t)n * sizeof(float));
    memcpy(g, x, (size_t)n * sizeof(float));
    for (int64_t i = 0; i < n; i++) up[i] = i % 7 == 0 ? (i % 2 ? 7.0f : -7.0f) : rnd(-10.0f, 10.0f);
    const float *u_in = up;
    k->swiglu_oai(g, up, n);
    double worst_rel = 0.0;
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        const double gc = x[i] < 7.0f ? x[i] : 7.0, uc = fmin(fmax(u_in[i], -7.0), 7.0);
        const double t = (double)ADIL_OAI_ALPHA * gc, e = gc / (1.0 + exp(-t)) * (uc + 1.0);
        const double err = fabs((double)g[i] - e);
        const double rel = ADIL_ACT_MAX_REL_ERROR + ADIL_ACT_REL_ERROR_PER_T * fabs(t);
        if (!(err <= rel * fabs(e) + ADIL_ACT_MAX_ABS_ERROR) && bad++ < 5)
            fprintf(stderr, "level %s swiglu_oai(%.9g, %.9g) = %.9g, exact %.9g\n",
                    adil_cpu_level_string(level), (double)x[i], (double)u_in[i], (double)g[i], e);
        if (fabs(e) > 1e-30 && err / (rel * fabs(e)) > worst_rel) worst_rel = err / (rel * fabs(e));
    }
    printf("level %s: swiglu_oai max error %.3g of the relative budget\n", adil_cpu_level_string(level),
           worst_rel);
    CHECK(bad == 0);
    free(x);
    free(g);
    free(up);
}

/* The gate is multiplied by up exactly, and nothing outside [0, n) is touched. */
static void test_lengths(const adil_act_kernels *k) {
    for (int64_t n = 0; n <= 40; n++) {
        float g[48], u[48], plain[48], e[48];
        for (int i = 0; i < 48; i++) {
            g[i] = rnd(-4.0f, 4.0f);
            u[i] = rnd(-2.0f, 2.0f);
            plain[i] = g[i];
            e[i] = g[i];
        }
        float ones[48];
        for (int i = 0; i < 48; i++) ones[i] = 1.0f;
        float gated[48];
        memcpy(gated, g, sizeof gated);
        k->gelu_tanh(gated, u, n);
        k->gelu_tanh(plain, ones, n);
        k->exp(e, e, n);
        float oai[48], oai_ref[48];
        memcpy(oai, g, sizeof oai);
        memcpy(oai_ref, g, sizeof oai_ref);
        k->swiglu_oai(oai, u, n);
        adil_act_kernels_at(ADIL_CPU_SCALAR)->swiglu_oai(oai_ref, u, n);
        for (int64_t i = 0; i < 48; i++) {
            if (i < n) {
                CHECK(gated[i] == plain[i] * u[i]);
                CHECK(fabs((double)e[i] - exp((double)g[i])) <= 1e-6 * exp((double)g[i]));
                CHECK(fabsf(oai[i] - oai_ref[i]) <= 4e-6f * fabsf(oai_ref[i]) + 1e-37f);
            } else {
                CHECK(gated[i] == g[i] && plain[i] == g[i] && e[i] == g[i] && oai[i] == g[i]);
            }
        }
    }
}

static void test_rmsnorm(int level, const adil_act_kernels *k) {
    const adil_act_kernels *ref = adil_act_kernels_at(ADIL_CPU_SCALAR);
    enum { N = 700 };
    static float x[N + 8], w[N + 8], got[N + 8], want[N + 8];
    int64_t worst_ulp = 0;
    for (int64_t n = 1; n <= N; n += (n < 40 ? 1 : 37)) {
        const float mag = n % 3 == 0 ? 1e-3f : n % 3 == 1 ? 1.0f : 300.0f;
        for (int64_t i = 0; i < N + 8; i++) {
            x[i] = rnd(-mag, mag);
            w[i] = rnd(0.5f, 2.0f);
            got[i] = want[i] = -9.0f;
        }
        ref->rmsnorm(want, x, w, n, 1e-6f);
        k->rmsnorm(got, x, w, n, 1e-6f);
        for (int64_t i = 0; i < N + 8; i++) {
            if (i >= n) {
                CHECK(got[i] == -9.0f);
                continue;
            }
            int32_t a, b;
            memcpy(&a, &got[i], 4);
            memcpy(&b, &want[i], 4);
            const int64_t d = a > b ? (int64_t)a - b : (int64_t)b - a;
            worst_ulp = d > worst_ulp ? d : worst_ulp;
        }
        memcpy(got, x, sizeof got); /* in place */
        k->rmsnorm(got, got, w, n, 1e-6f);
        for (int64_t i = 0; i < n; i++) CHECK(fabsf(got[i] - want[i]) <= 2e-7f * fabsf(want[i]));
    }
    printf("level %s: rmsnorm max difference %lld ulp\n", adil_cpu_level_string(level), (long long)worst_ulp);
    CHECK(worst_ulp <= 1);
}

int main(void) {
    const int best = adil_cpu_level_supported();
    for (int level = 0; level <= best; level++) {
        const adil_act_kernels *k = adil_act_kernels_at(level);
        CHECK(k != NULL);
        test_exp(level, k);
        check_glu(level, "gelu_tanh", k->gelu_tanh, gelu_t);
        check_glu(level, "silu", k->silu, silu_t);
        check_swiglu_oai(level, k);
        test_lengths(k);
        test_rmsnorm(level, k);
    }
    CHECK(adil_act_kernels_at(-1) == NULL && adil_act_kernels_at(ADIL_CPU_LEVEL_COUNT) == NULL);
    return test_report("test_activation");
}
