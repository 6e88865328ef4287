/*
 * test_rope.c — adil_rope_rows (models/ops.h) against RoPE written out in
 * double from its definition, interleaved and NeoX pairs, with and without
 * per-frequency factors:
 *   - plain (linear) scaling: angle pos * scale * base^(-2i/n_rot) / f_i;
 *   - YaRN (adil_yarn in transformer.h, ggml's rope_yarn): per-frequency mix
 *     of the scaled and unscaled angle along the ramp between the
 *     correction dims, cos / sin times attn_factor (1 + 0.1 ln(1 / scale));
 *     the ramp's ends are checked by hand for gpt-oss's numbers (n_rot 64,
 *     base 150000, original context 4096: dims 8 and 18);
 *   - a YaRN struct that is off (ext_factor 0, attn_factor 1) gives the bits
 *     of no YaRN at all;
 *   - the dims past n_rot and the heads' other floats are left alone;
 *   - a second call at the same positions reuses the table (same bits).
 */
#include "models/ops.h"
#include "test_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define T_MAX   12
#define PI      3.14159265358979323846
#define ROT_MAX 128

static uint32_t rng_state = 4242u;
static float rnd(float lo, float hi) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(rng_state >> 8) / 16777216.0f;
}

/* A forward state with only the RoPE tables (all adil_rope_rows uses). */
static void fw_init(adil_forward *fw) {
    memset(fw, 0, sizeof *fw);
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        fw->rope[i].cs = malloc(sizeof(float) * T_MAX * ROT_MAX / 2);
        fw->rope[i].sn = malloc(sizeof(float) * T_MAX * ROT_MAX / 2);
    }
}

static void fw_free(adil_forward *fw) {
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        free(fw->rope[i].cs);
        free(fw->rope[i].sn);
    }
}

/* The YaRN ramp's ends, in double (the test's own reading of ggml). */
static void corr_dims(const adil_rope *r, double dims[2]) {
    const adil_yarn *y = r->yarn;
    const double betas[2] = {y->beta_fast, y->beta_slow};
    for (int j = 0; j < 2; j++)
        dims[j] =
            (double)r->n_rot * log((double)y->n_ctx_orig / (betas[j] * 2.0 * PI)) / (2.0 * log(r->base));
    dims[0] = fmax(0.0, floor(dims[0]));
    dims[1] = fmin((double)r->n_rot - 1.0, ceil(dims[1]));
}

/* Angle of frequency i at position pos, and the magnitude of cos / sin. */
static double angle(const adil_rope *r, int64_t i, int64_t pos, double *mag) {
    const double f = r->factors ? r->factors[i] : 1.0;
    const double extrap = (double)pos * pow(r->base, -2.0 * (double)i / (double)r->n_rot) / f;
    *mag = 1.0;
    if (!r->yarn) return r->scale * extrap;
    double dims[2];
    corr_dims(r, dims);
    const double y = ((double)i - dims[0]) / fmax(0.001, dims[1] - dims[0]);
    const double mix = (1.0 - fmin(1.0, fmax(0.0, y))) * r->yarn->ext_factor;
    *mag = r->yarn->attn_factor * (r->yarn->ext_factor != 0.0f ? 1.0 + 0.1 * log(1.0 / r->scale) : 1.0);
    return r->scale * extrap * (1.0 - mix) + extrap * mix;
}

/* x (T, n_heads * head_dim) rotated by `r` at positions pos0.., in double. */
static void reference(const adil_rope *r, const float *x, double *out, int64_t T, int64_t n_heads,
                      int64_t head_dim, int64_t pos0) {
    const int64_t half = r->n_rot / 2, step = r->neox ? 1 : 2, off = r->neox ? half : 1;
    for (int64_t i = 0; i < T * n_heads * head_dim; i++) out[i] = x[i];
    for (int64_t t = 0; t < T; t++)
        for (int64_t h = 0; h < n_heads; h++) {
            const float *v = x + (t * n_heads + h) * head_dim;
            double *o = out + (t * n_heads + h) * head_dim;
            for (int64_t i = 0; i < half; i++) {
                double mag;
                const double th = angle(r, i, pos0 + t, &mag);
                const double x0 = v[i * step], x1 = v[i * step + off];
                o[i * step] = mag * (x0 * cos(th) - x1 * sin(th));
                o[i * step + off] = mag * (x0 * sin(th) + x1 * cos(th));
            }
        }
}

/* One configuration: every element within 2e-6 of the reference (relative
 * to the row's largest), untouched dims exactly kept, a rerun identical. */
static void check(adil_forward *fw, const adil_rope *r, int64_t head_dim, int64_t pos0) {
    enum { H = 3 };
    const int64_t T = T_MAX, n = T * H * head_dim;
    float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
    double *want = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) x[i] = rnd(-2.0f, 2.0f);
    reference(r, x, want, T, H, head_dim, pos0);
    memcpy(y, x, sizeof(float) * (size_t)n);
    adil_rope_rows(fw, y, T, H * head_dim, H, head_dim, pos0, r);
    double worst = 0.0;
    for (int64_t i = 0; i < n; i++) {
        const int64_t d = i % head_dim;
        if (d >= r->n_rot) CHECK(y[i] == x[i]);
        worst = fmax(worst, fabs(y[i] - want[i]) / 4.0);
    }
    if (!(worst <= 2e-6))
        fprintf(stderr, "n_rot %lld neox %d pos %lld yarn %d scale %g: %g\n", (long long)r->n_rot, r->neox,
                (long long)pos0, r->yarn != NULL, (double)r->scale, worst);
    CHECK(worst <= 2e-6);
    memcpy(y, x, sizeof(float) * (size_t)n);
    float *again = malloc(sizeof(float) * (size_t)n);
    memcpy(again, x, sizeof(float) * (size_t)n);
    adil_rope_rows(fw, y, T, H * head_dim, H, head_dim, pos0, r);
    adil_rope_rows(fw, again, T, H * head_dim, H, head_dim, pos0, r);
    CHECK(memcmp(y, again, sizeof(float) * (size_t)n) == 0);
    free(again);
    free(x);
    free(y);
    free(want);
}

/* gpt-oss's YaRN: ramp from dim 8 (and below: unscaled) to 18 (and above:
 * scaled by 1/32) for n_rot 64, base 150000, original context 4096. */
static void check_gpt_oss_dims(void) {
    const adil_yarn y = {
        .ext_factor = 1.0f, .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 4096};
    const adil_rope r = {.n_rot = 64, .base = 150000.0f, .scale = 1.0f / 32.0f, .neox = true, .yarn = &y};
    double dims[2];
    corr_dims(&r, dims);
    CHECK(dims[0] == 8.0 && dims[1] == 18.0);
}

/* YaRN switched off gives exactly the plain rotation. */
static void check_off_is_plain(adil_forward *fw) {
    const adil_yarn off = {
        .ext_factor = 0.0f, .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 4096};
    const adil_rope plain = {.n_rot = 64, .base = 10000.0f, .scale = 0.25f, .neox = false};
    adil_rope with = plain;
    with.yarn = &off;
    float a[T_MAX * 64], b[T_MAX * 64];
    for (int i = 0; i < T_MAX * 64; i++) a[i] = b[i] = rnd(-1.0f, 1.0f);
    adil_rope_rows(fw, a, T_MAX, 64, 1, 64, 1000, &plain);
    adil_rope_rows(fw, b, T_MAX, 64, 1, 64, 1000, &with);
    CHECK(memcmp(a, b, sizeof a) == 0);
}

int main(void) {
    adil_forward fw;
    fw_init(&fw);
    float factors[ROT_MAX / 2];
    for (int i = 0; i < ROT_MAX / 2; i++) factors[i] = rnd(1.0f, 8.0f);
    const adil_yarn gpt_oss = {
        .ext_factor = 1.0f, .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 4096};
    const adil_yarn scaled = {
        .ext_factor = 1.0f, .attn_factor = 0.9f, .beta_fast = 32.0f, .beta_slow = 1.0f, .n_ctx_orig = 256};
    const int64_t rots[] = {2, 16, 64, 128}, dims[] = {64, 64, 64, 128};
    const int64_t positions[] = {0, 7, 3000, 100000};
    for (size_t a = 0; a < sizeof rots / sizeof rots[0]; a++)
        for (int neox = 0; neox < 2; neox++)
            for (size_t p = 0; p < sizeof positions / sizeof positions[0]; p++) {
                adil_rope r = {.n_rot = rots[a], .base = 10000.0f, .scale = 1.0f, .neox = neox};
                check(&fw, &r, dims[a], positions[p]);
                r.scale = 0.25f;
                r.factors = factors;
                check(&fw, &r, dims[a], positions[p]);
                r = (adil_rope){.n_rot = rots[a], .base = 150000.0f, .scale = 1.0f / 32.0f, .neox = neox};
                r.yarn = &gpt_oss;
                check(&fw, &r, dims[a], positions[p]);
                r.base = 10000.0f;
                r.scale = 0.5f;
                r.yarn = &scaled;
                check(&fw, &r, dims[a], positions[p]);
            }
    check_gpt_oss_dims();
    check_off_is_plain(&fw);
    fw_free(&fw);
    return test_report("test_rope");
}
