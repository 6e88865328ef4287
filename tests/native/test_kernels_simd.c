/*
 * test_kernels_simd.c — every SIMD kernel level this CPU supports against
 * the scalar reference kernels (ADIL_CPU does not matter here: each level's
 * table is read with adil_wtype_kernels_at):
 *   - activation quantizers (Q8_0, Q8_1, Q8_K): the same bytes as the scalar ones,
 *     on random rows, extreme magnitudes, rounding ties, NaN / inf / zeros;
 *   - vec_dot of every weight type within a named error budget of the
 *     scalar result, on random data with normal, tiny (subnormal fp16),
 *     huge and zero scales and activations of every magnitude;
 *   - tile_dot equal to vec_dot bit for bit for every tile shape, with
 *     padded strides, leaving everything outside the tile untouched;
 *   - the ADIL_CPU decision rule.
 * The budgets are relative to sum |w_i * a_i| (the scale of the result);
 * the scalar and SIMD kernels see the same quantized activations, so the
 * only difference is the order of float additions.
 */
#include "adil_common.h"
#include "compute/cpu_level.h"
#include "compute/kernels.h"
#include "test_rng.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Error budgets of vec_dot against the scalar reference, by weight type. */
#define MAX_DOT_ERROR_F32    1e-6
#define MAX_DOT_ERROR_F16    1e-6
#define MAX_DOT_ERROR_BF16   1e-6
#define MAX_DOT_ERROR_Q8_0   2e-6
#define MAX_DOT_ERROR_Q4_0   2e-6
#define MAX_DOT_ERROR_Q5_0   2e-6
#define MAX_DOT_ERROR_Q4_1   2e-6
#define MAX_DOT_ERROR_Q5_1   2e-6
#define MAX_DOT_ERROR_IQ4_NL 2e-6
#define MAX_DOT_ERROR_MXFP4  2e-6
#define MAX_DOT_ERROR_Q2_K   2e-6
#define MAX_DOT_ERROR_Q3_K   2e-6
#define MAX_DOT_ERROR_Q4_K   2e-6
#define MAX_DOT_ERROR_Q5_K   2e-6
#define MAX_DOT_ERROR_Q6_K   2e-6
#define MAX_DOT_ERROR_IQ4_XS 2e-6

typedef struct type_case {
    uint32_t type;
    double budget;
    int n_scales;       /* fp16 scale fields per block (MXFP4: its E8M0 byte, see e8m0_scale) */
    size_t scale_at[2]; /* their byte offsets */
} type_case;

static const type_case CASES[] = {
    {ADIL_WT_F32, MAX_DOT_ERROR_F32, 0, {0, 0}},     {ADIL_WT_F16, MAX_DOT_ERROR_F16, 0, {0, 0}},
    {ADIL_WT_BF16, MAX_DOT_ERROR_BF16, 0, {0, 0}},   {ADIL_WT_Q8_0, MAX_DOT_ERROR_Q8_0, 1, {0, 0}},
    {ADIL_WT_Q4_0, MAX_DOT_ERROR_Q4_0, 1, {0, 0}},   {ADIL_WT_Q5_0, MAX_DOT_ERROR_Q5_0, 1, {0, 0}},
    {ADIL_WT_Q4_K, MAX_DOT_ERROR_Q4_K, 2, {0, 2}},   {ADIL_WT_Q5_K, MAX_DOT_ERROR_Q5_K, 2, {0, 2}},
    {ADIL_WT_Q6_K, MAX_DOT_ERROR_Q6_K, 1, {208, 0}}, {ADIL_WT_Q4_1, MAX_DOT_ERROR_Q4_1, 2, {0, 2}},
    {ADIL_WT_Q5_1, MAX_DOT_ERROR_Q5_1, 2, {0, 2}},   {ADIL_WT_IQ4_NL, MAX_DOT_ERROR_IQ4_NL, 1, {0, 0}},
    {ADIL_WT_MXFP4, MAX_DOT_ERROR_MXFP4, 0, {0, 0}}, {ADIL_WT_Q2_K, MAX_DOT_ERROR_Q2_K, 2, {80, 82}},
    {ADIL_WT_Q3_K, MAX_DOT_ERROR_Q3_K, 1, {108, 0}}, {ADIL_WT_IQ4_XS, MAX_DOT_ERROR_IQ4_XS, 1, {0, 0}},
};
#define CASE_Q8_0   3 /* CASES[CASE_Q8_0] */
#define CASE_Q4_1   9
#define CASE_Q5_1   10
#define CASE_IQ4_NL 11
#define CASE_MXFP4  12
#define N_CASES     (sizeof(CASES) / sizeof(CASES[0]))

/* ---- random data ------------------------------------------------------------ */

/* Scale regimes of the weights' fp16 fields. */
typedef enum { SCALE_NORMAL, SCALE_TINY, SCALE_HUGE, SCALE_ZERO, SCALE_MIXED, SCALE_COUNT } regime;

static float scale_value(regime r) {
    switch (r) {
    case SCALE_NORMAL:
        return 0.05f * next_f();
    case SCALE_TINY:
        return 0x1p-20f * (float)(1 + next_u32() % 900); /* fp16 subnormals */
    case SCALE_HUGE:
        return 60000.0f * next_f();
    case SCALE_ZERO:
        return 0.0f;
    default:
        return scale_value((regime)(next_u32() % SCALE_MIXED));
    }
}

/* An E8M0 scale byte (2^(e - 127)) for regime r: tiny are float
 * subnormals, huge stays finite through the dot products (no zero exists:
 * ZERO gives the smallest). */
static uint8_t e8m0_scale(regime r) {
    switch (r) {
    case SCALE_NORMAL:
        return (uint8_t)(112 + next_u32() % 16);
    case SCALE_TINY:
        return (uint8_t)(next_u32() % 4);
    case SCALE_HUGE:
        return (uint8_t)(160 + next_u32() % 40);
    case SCALE_ZERO:
        return 0;
    default:
        return e8m0_scale((regime)(next_u32() % SCALE_MIXED));
    }
}

/* A row of n elements of `c->type` with random payload bytes and scale
 * fields from regime r (float types: values scaled like the regime). */
static void random_weight_row(const type_case *c, regime r, int64_t n, uint8_t *dst) {
    const adil_wtype_facts *t = adil_wtype_facts_get(c->type);
    if (t->block_size == 1) {
        float *x = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++) {
            x[i] = next_f() * (r == SCALE_HUGE ? 1e4f : r == SCALE_TINY ? 1e-4f : 1.0f);
        }
        adil_wtype_kernels_at(ADIL_CPU_SCALAR, c->type)->quantize_row(x, dst, n);
        free(x);
        return;
    }
    size_t bytes = adil_row_size(c->type, n);
    for (size_t i = 0; i < bytes; i++) {
        dst[i] = (uint8_t)next_u32();
    }
    for (size_t b = 0; b < bytes; b += t->type_size) {
        if (c->type == ADIL_WT_MXFP4) {
            dst[b] = e8m0_scale(r);
        }
        for (int s = 0; s < c->n_scales; s++) {
            adil_fp16 h = adil_f32_to_fp16(scale_value(r));
            memcpy(dst + b + c->scale_at[s], &h, 2);
        }
    }
}

/* Activations: mostly uniform, with blocks of one magnitude regime each
 * (tiny, huge, zero, one spike), so every quantizer branch is hit. */
static void random_activations(int64_t n, float *x) {
    for (int64_t i = 0; i < n; i++) {
        x[i] = next_f();
    }
    for (int64_t b = 0; b + 32 <= n; b += 32) {
        int kind = (int)(next_u32() % 6);
        for (int j = 0; j < 32; j++) {
            x[b + j] *= kind == 0 ? 1e-6f : kind == 1 ? 1e6f : kind == 2 ? 0.0f : 1.0f;
        }
        if (kind == 3) {
            x[b + next_u32() % 32] = 1000.0f;
        }
    }
}

/* ---- levels -------------------------------------------------------------------- */

static bool level_runs(int level) { return level <= (int)adil_cpu_level_supported(); }

static void test_choose(void) {
    char note[160];
    CHECK(adil_cpu_level_choose(NULL, ADIL_CPU_AVX2, note, sizeof note) == ADIL_CPU_AVX2);
    CHECK(note[0] == '\0');
    CHECK(adil_cpu_level_choose("", ADIL_CPU_AVX512, note, sizeof note) == ADIL_CPU_AVX512);
    CHECK(adil_cpu_level_choose("scalar", ADIL_CPU_AVX512, note, sizeof note) == ADIL_CPU_SCALAR);
    CHECK(note[0] == '\0');
    CHECK(adil_cpu_level_choose("avx2", ADIL_CPU_AVX512, note, sizeof note) == ADIL_CPU_AVX2);
    CHECK(adil_cpu_level_choose("avx512", ADIL_CPU_AVX2, note, sizeof note) == ADIL_CPU_AVX2);
    CHECK(strstr(note, "ADIL_CPU=avx512: this CPU supports at most avx2; using avx2") != NULL);
    CHECK(adil_cpu_level_choose("AVX2", ADIL_CPU_SCALAR, note, sizeof note) == ADIL_CPU_SCALAR);
    CHECK(strstr(note, "expected scalar, avx2 or avx512") != NULL);
    CHECK(adil_cpu_level_selected() <= adil_cpu_level_supported());
    CHECK(strcmp(adil_cpu_level_name(), adil_cpu_level_string(adil_cpu_level_selected())) == 0);
    CHECK(strcmp(adil_cpu_level_string(ADIL_CPU_LEVEL_COUNT), "?") == 0);
    CHECK(adil_wtype_kernels_get(ADIL_WT_Q8_0) ==
          adil_wtype_kernels_at(adil_cpu_level_selected(), ADIL_WT_Q8_0));
    CHECK(adil_wtype_kernels_at(-1, ADIL_WT_Q8_0) == NULL);
    CHECK(adil_wtype_kernels_at(ADIL_CPU_LEVEL_COUNT, ADIL_WT_Q8_0) == NULL);
    CHECK(adil_wtype_kernels_at(ADIL_CPU_AVX2, 4) == NULL);
    for (int level = 0; level < ADIL_CPU_LEVEL_COUNT; level++) {
        /* activation types are the scalar table's at every level */
        const adil_wtype_kernels *k = adil_wtype_kernels_at(level, ADIL_WT_Q6_K);
        CHECK(k != NULL && k->vec_dot_type == ADIL_WT_Q8_K && k->vec_dot != NULL);
    }
}

/* ---- quantizers ---------------------------------------------------------------------- */

/* Rows that hit every rounding and clamping branch. */
static void special_rows(float *x, int64_t n) {
    random_activations(n, x);
    float specials[] = {0.5f,    -0.5f, 2.5f,     -3.5f,     126.5f, -126.5f, 0.49999997f, 127.0f,
                        -127.0f, NAN,   INFINITY, -INFINITY, -0.0f,  1e-40f,  3e38f,       -3e38f};
    for (int64_t i = 0; i < n; i += 7) {
        x[i] = specials[next_u32() % (sizeof specials / sizeof specials[0])];
    }
    /* a block whose largest magnitude is 127: the scale is 1, ties stay ties */
    for (int j = 0; j < 32 && 64 + j < n; j++) {
        x[64 + j] = (float)((int)(next_u32() % 255) - 127) + (j % 2 ? 0.5f : 0.0f);
    }
    x[64] = 127.0f;
    for (int j = 0; j < 256 && 512 + j < n; j++) { /* an all-NaN Q8_K block */
        x[512 + j] = NAN;
    }
    for (int j = 0; j < 256 && 768 + j < n; j++) { /* equal magnitudes of both signs */
        x[768 + j] = j % 3 == 0 ? -2.0f : 2.0f;
    }
}

static void test_quantizers_at(int level) {
    const uint32_t types[] = {ADIL_WT_Q8_0, ADIL_WT_Q8_1, ADIL_WT_Q8_K};
    const int64_t n = 4096;
    float *x = malloc(sizeof(float) * n);
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        const adil_wtype_kernels *ref = adil_wtype_kernels_at(ADIL_CPU_SCALAR, types[i]);
        const adil_wtype_kernels *simd = adil_wtype_kernels_at(level, types[i]);
        size_t bytes = adil_row_size(types[i], n);
        uint8_t *a = malloc(bytes), *b = malloc(bytes);
        for (int round = 0; round < 40; round++) {
            special_rows(x, n);
            float scale = powf(10.0f, (float)(round % 13) * 6.0f - 36.0f);
            for (int64_t j = 0; j < n; j++) {
                x[j] *= round % 2 ? scale : 1.0f;
            }
            ref->quantize_row(x, a, n);
            simd->quantize_row(x, b, n);
            if (memcmp(a, b, bytes) != 0) {
                fprintf(stderr, "quantize %s at %s: bytes differ (round %d)\n", adil_wtype_name(types[i]),
                        adil_cpu_level_string(level), round);
                test_failures++;
                break;
            }
        }
        free(a);
        free(b);
    }
    free(x);
}

/* ---- vec_dot ---------------------------------------------------------------------------- */

/* sum |w_i a_i| of the dequantized operands: the scale errors are relative to. */
static double magnitude(const type_case *c, const uint8_t *w, const uint8_t *act, const float *x, int64_t n) {
    const adil_wtype_kernels *t = adil_wtype_kernels_at(ADIL_CPU_SCALAR, c->type);
    const adil_wtype_kernels *at = adil_wtype_kernels_at(ADIL_CPU_SCALAR, t->vec_dot_type);
    float *wf = malloc(sizeof(float) * n), *af = malloc(sizeof(float) * n);
    t->dequantize_row(w, wf, n);
    if (t->vec_dot_type == ADIL_WT_F32) {
        memcpy(af, x, sizeof(float) * n);
    } else {
        at->dequantize_row(act, af, n);
    }
    double s = 0;
    for (int64_t i = 0; i < n; i++) {
        s += fabs((double)wf[i] * af[i]);
    }
    free(wf);
    free(af);
    return s;
}

/* Activations of x for type c: quantized by the scalar quantizer, or x. */
static const void *activations(const type_case *c, const float *x, int64_t n, uint8_t *buf) {
    const adil_wtype_kernels *t = adil_wtype_kernels_at(ADIL_CPU_SCALAR, c->type);
    if (t->vec_dot_type == ADIL_WT_F32) {
        return x;
    }
    adil_wtype_kernels_at(ADIL_CPU_SCALAR, t->vec_dot_type)->quantize_row(x, buf, n);
    return buf;
}

static void test_vec_dot_case(int level, const type_case *c, int64_t n, regime r, double *worst) {
    const adil_wtype_kernels *ref = adil_wtype_kernels_at(ADIL_CPU_SCALAR, c->type);
    const adil_wtype_kernels *simd = adil_wtype_kernels_at(level, c->type);
    uint8_t *w = malloc(adil_row_size(c->type, n));
    uint8_t *buf = malloc(adil_row_size(ADIL_WT_Q8_0, n) + adil_row_size(ADIL_WT_Q8_K, n) + 64);
    float *x = malloc(sizeof(float) * n);
    random_weight_row(c, r, n, w);
    random_activations(n, x);
    const void *act = activations(c, x, n, buf);
    float want = ref->vec_dot(n, w, act), got = simd->vec_dot(n, w, act);
    if (!isfinite(want)) {
        /* Only Q8_1 gets here: its fp16 s = d * sum(q) overflows for activations
         * averaging over 2047 (as ggml's does); then both must overflow. */
        CHECK(!isfinite(got) && (c->type == ADIL_WT_Q4_1 || c->type == ADIL_WT_Q5_1));
        free(x);
        free(buf);
        free(w);
        return;
    }
    double scale = magnitude(c, w, act, x, n);
    double err = scale > 0 ? fabs((double)got - want) / scale : (got == want ? 0 : INFINITY);
    if (!(err <= c->budget)) {
        fprintf(stderr,
                "vec_dot %s at %s, n %lld, regime %d: got %.9g, scalar %.9g, relative "
                "error %g over budget %g\n",
                adil_wtype_name(c->type), adil_cpu_level_string(level), (long long)n, (int)r, got, want, err,
                c->budget);
        test_failures++;
    }
    *worst = err > *worst ? err : *worst;
    free(x);
    free(buf);
    free(w);
}

static void test_vec_dot_at(int level) {
    /* 1 and 3 blocks (odd: the last block of a two-chain loop), the model's
     * 640 and 2048, and longer than the GEMV's stack buffer. */
    const int64_t lengths[] = {256, 768, 1280, 2048, 16640};
    CHECK(CASES[CASE_Q8_0].type == ADIL_WT_Q8_0 && CASES[CASE_Q4_1].type == ADIL_WT_Q4_1);
    CHECK(CASES[CASE_Q5_1].type == ADIL_WT_Q5_1 && CASES[CASE_IQ4_NL].type == ADIL_WT_IQ4_NL &&
          CASES[CASE_MXFP4].type == ADIL_WT_MXFP4);
    for (size_t i = 0; i < N_CASES; i++) {
        double worst = 0;
        for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
            for (int r = 0; r < SCALE_COUNT; r++) {
                for (int rep = 0; rep < 3; rep++) {
                    test_vec_dot_case(level, &CASES[i], lengths[l], (regime)r, &worst);
                }
            }
        }
        /* the legacy types also at 32 and 96 elements (1 and 3 blocks) */
        if (adil_wtype_facts_get(CASES[i].type)->block_size <= 32) {
            test_vec_dot_case(level, &CASES[i], 32, SCALE_NORMAL, &worst);
            test_vec_dot_case(level, &CASES[i], 96, SCALE_MIXED, &worst);
        }
        printf("  %-6s %-6s worst relative error %.3g (budget %.3g)\n", adil_cpu_level_string(level),
               adil_wtype_name(CASES[i].type), worst, CASES[i].budget);
    }
}

/* ---- tile_dot ------------------------------------------------------------------------------ */

#define TILE_ROWS 11
#define TILE_TOKS 10

/* Every sub-tile shape against vec_dot, bit for bit, on padded strides;
 * cells outside the tile keep their sentinel. */
static void test_tile_case(int level, const type_case *c, int64_t n) {
    const adil_wtype_kernels *t = adil_wtype_kernels_at(level, c->type);
    if (t->tile_dot == NULL) {
        return;
    }
    size_t w_row = adil_row_size(c->type, n), w_stride = w_row + 64;
    size_t a_row = adil_row_size(t->vec_dot_type, n), a_stride = a_row + 64;
    uint8_t *w = calloc(TILE_ROWS, w_stride), *act = calloc(TILE_TOKS, a_stride);
    float *x = malloc(sizeof(float) * n);
    const size_t y_stride = TILE_ROWS + 3;
    float want[TILE_TOKS][TILE_ROWS], y[TILE_TOKS * (TILE_ROWS + 3)];
    for (int r = 0; r < TILE_ROWS; r++) {
        random_weight_row(c, SCALE_MIXED, n, w + r * w_stride);
    }
    for (int k = 0; k < TILE_TOKS; k++) {
        random_activations(n, x);
        const adil_wtype_kernels *at = adil_wtype_kernels_at(ADIL_CPU_SCALAR, t->vec_dot_type);
        at->quantize_row(x, act + k * a_stride, n);
        for (int r = 0; r < TILE_ROWS; r++) {
            want[k][r] = t->vec_dot(n, w + r * w_stride, act + k * a_stride);
        }
    }
    const float sentinel = -12345.0f;
    for (int nr = 1; nr <= TILE_ROWS; nr++) {
        for (int nt = 1; nt <= TILE_TOKS; nt++) {
            for (size_t i = 0; i < sizeof y / sizeof y[0]; i++) {
                y[i] = sentinel;
            }
            adil_tile tile = {n, w, w_stride, nr, act, a_stride, nt, y, y_stride};
            t->tile_dot(&tile);
            int bad = 0;
            for (int k = 0; k < TILE_TOKS; k++) {
                for (size_t r = 0; r < y_stride; r++) {
                    float v = y[k * y_stride + r];
                    bool inside = k < nt && r < (size_t)nr;
                    bad += inside ? memcmp(&v, &want[k][r], sizeof v) != 0 : v != sentinel;
                }
            }
            if (bad) {
                fprintf(stderr, "tile %s at %s, n %lld, %d x %d: %d cells wrong\n", adil_wtype_name(c->type),
                        adil_cpu_level_string(level), (long long)n, nr, nt, bad);
                test_failures++;
            }
        }
    }
    free(x);
    free(act);
    free(w);
}

static void test_tiles_at(int level) {
    for (size_t i = 0; i < N_CASES; i++) {
        test_tile_case(level, &CASES[i], 768);
        test_tile_case(level, &CASES[i], 1280);
    }
    /* The decode GEMV's fallback for rows longer than its stack buffer. */
    test_tile_case(level, &CASES[CASE_Q8_0], 16416);
    test_tile_case(level, &CASES[CASE_Q4_1], 16416);
    test_tile_case(level, &CASES[CASE_Q5_1], 16416);
    test_tile_case(level, &CASES[CASE_IQ4_NL], 16416);
    test_tile_case(level, &CASES[CASE_MXFP4], 16416);
}

int main(void) {
    test_choose();
    printf("test_kernels_simd: CPU supports %s, selected %s%s%s\n",
           adil_cpu_level_string(adil_cpu_level_supported()), adil_cpu_level_name(),
           adil_cpu_level_note()[0] ? "; " : "", adil_cpu_level_note());
    for (int level = ADIL_CPU_AVX2; level < ADIL_CPU_LEVEL_COUNT; level++) {
        if (!level_runs(level)) {
            printf("  %s: not supported by this CPU, skipped\n", adil_cpu_level_string(level));
            continue;
        }
        test_quantizers_at(level);
        test_vec_dot_at(level);
        test_tiles_at(level);
    }
    return test_report("test_kernels_simd");
}
