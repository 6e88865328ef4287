/*
 * test_repack.c — the 8-row layouts of Q4_K, Q8_0 and Q5_0 (compute/repack.h):
 *   - repacking then unpacking gives back every row bit for bit;
 *   - the reference tile kernel equals the scalar vec_dot of the unpacked
 *     rows bit for bit (same arithmetic);
 *   - each SIMD level's tile_dot_r8 is within the type's error budget of
 *     the reference, on random levels with normal, tiny and zero scales;
 *   - a (row, token) result does not depend on the tile it is computed in
 *     (shape, strides), and nothing outside the tile is written;
 *   - adil_matmul with a repacked weight is bit-identical at 1 and 3
 *     threads and close to the row-major product; bad layouts are refused.
 */
#include "adil/adil.h"
#include "adil_common.h"
#include "compute/cpu_level.h"
#include "compute/kernels.h"
#include "compute/matmul.h"
#include "compute/repack.h"
#include "compute/threadpool.h"
#include "test_util.h"

#define TEST_RNG_SEED 0x2545F4914F6CDD1Du
#include "test_rng.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define ROWS             24
#define COLS             768
#define TOKS             7
#define MAX_DOT_ERROR_R8 2e-6 /* as MAX_DOT_ERROR_Q4_K / _Q8_0 in test_kernels_simd.c */

/* Random rows of `type`: random levels and scales; the fp16 d (and Q4_K's
 * dmin) normal, tiny (fp16 subnormals) or zero by block. */
static void random_rows(uint32_t type, uint8_t *rows, int64_t n_blocks) {
    const adil_wtype_facts *f = adil_wtype_facts_get(type);
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t *raw = rows + (size_t)i * f->type_size;
        for (size_t k = 0; k < f->type_size; k++) raw[k] = (uint8_t)next_u32();
        const int regime = (int)(next_u32() % 4);
        const float s = regime == 0 ? 0.0f : regime == 1 ? 0x1p-20f : 0.05f;
        const adil_fp16 d = adil_f32_to_fp16(s * next_f()), dmin = adil_f32_to_fp16(s * next_f());
        if (type == ADIL_WT_Q4_K) {
            memcpy(raw + offsetof(block_q4_K, d), &d, 2);
            memcpy(raw + offsetof(block_q4_K, dmin), &dmin, 2);
        } else {
            memcpy(raw, &d, 2); /* Q8_0 and Q5_0: d first */
        }
    }
}

/* The activation type of `type` (Q8_K, Q8_0) and the bytes of its row. */
static uint32_t act_type(uint32_t type) { return adil_wtype_kernels_at(ADIL_CPU_SCALAR, type)->vec_dot_type; }

static size_t act_row(uint32_t type) { return adil_row_size(act_type(type), COLS); }

/* Activation rows of `type`'s activation type, of three magnitudes. */
static void random_acts(uint32_t type, uint8_t *a, int64_t n_tok) {
    float x[COLS];
    for (int64_t t = 0; t < n_tok; t++) {
        const float mag = t % 3 == 0 ? 1e-3f : t % 3 == 1 ? 1.0f : 1e3f;
        for (int i = 0; i < COLS; i++) x[i] = mag * next_f();
        adil_wtype_kernels_at(ADIL_CPU_SCALAR, act_type(type))->quantize_row(x, a + t * act_row(type), COLS);
    }
}

/* sum |w_i a_i| of a row and a token: the scale errors are relative to. */
static double magnitude(uint32_t type, const uint8_t *w, const uint8_t *a) {
    float wf[COLS], af[COLS];
    adil_wtype_kernels_at(ADIL_CPU_SCALAR, type)->dequantize_row(w, wf, COLS);
    adil_wtype_kernels_at(ADIL_CPU_SCALAR, act_type(type))->dequantize_row(a, af, COLS);
    double m = 0;
    for (int i = 0; i < COLS; i++) m += fabs((double)wf[i] * af[i]);
    return m;
}

static const int NB = COLS / ADIL_QK_K; /* Q4_K super-blocks per row */
#define MAX_ROW_BYTES (2 * COLS)        /* of any layout or activation type here (Q8_K: 1.14 per element) */

/* Bytes of a row in the 8-row layout, and in the file's. */
static size_t r8_row(uint32_t type) {
    const adil_weight w = {type, ROWS, COLS, NULL, ADIL_LAYOUT_R8};
    return adil_weight_row_bytes(&w);
}

static size_t file_row(uint32_t type) { return adil_row_size(type, COLS); }

static adil_tile_dot_fn reference(uint32_t type) {
    return type == ADIL_WT_Q4_K   ? adil_tile_q4_K_r8_ref
           : type == ADIL_WT_Q8_0 ? adil_tile_q8_0_r8_ref
                                  : adil_tile_q5_0_r8_ref;
}

static adil_tile tile_of(uint32_t type, const void *w, const uint8_t *a, int64_t n_rows, int64_t n_tok,
                         float *y, size_t y_stride) {
    return (adil_tile){.n = COLS,
                       .w = w,
                       .w_stride = r8_row(type),
                       .n_rows = n_rows,
                       .act = a,
                       .act_stride = act_row(type),
                       .n_tok = n_tok,
                       .y = y,
                       .y_stride = y_stride};
}

static void test_round_trip(uint32_t type, const uint8_t *rows, const void *packed) {
    uint8_t back[MAX_ROW_BYTES];
    for (int r = 0; r < ROWS; r++) {
        adil_unpack_row(type, packed, COLS, r, back);
        CHECK(memcmp(back, rows + r * file_row(type), file_row(type)) == 0);
    }
    CHECK(adil_repack_bytes(type, ROWS, COLS) == ROWS * r8_row(type));
    CHECK(r8_row(type) == (type == ADIL_WT_Q4_K ? (size_t)NB * 148 : file_row(type)));
}

static void test_reference(uint32_t type, const uint8_t *rows, const void *packed, const uint8_t *acts) {
    float y[TOKS * ROWS];
    adil_tile t = tile_of(type, packed, acts, ROWS, TOKS, y, ROWS);
    reference(type)(&t);
    const adil_wtype_kernels *k = adil_wtype_kernels_at(ADIL_CPU_SCALAR, type);
    for (int tok = 0; tok < TOKS; tok++)
        for (int r = 0; r < ROWS; r++) {
            const float want = k->vec_dot(COLS, rows + r * file_row(type), acts + tok * act_row(type));
            CHECK(memcmp(&want, &y[tok * ROWS + r], sizeof want) == 0);
        }
}

/* The level's kernel against the reference, and against itself in every
 * tile shape (one token at a time, 8 rows at a time, padded y). */
static void test_level(uint32_t type, int level, const uint8_t *rows, const void *packed,
                       const uint8_t *acts) {
    const adil_wtype_kernels *k = adil_wtype_kernels_at(level, type);
    if (k->tile_dot_r8 == NULL) return;
    float ref[TOKS * ROWS], y[TOKS * ROWS];
    adil_tile t = tile_of(type, packed, acts, ROWS, TOKS, ref, ROWS);
    reference(type)(&t);
    t.y = y;
    k->tile_dot_r8(&t);
    for (int tok = 0; tok < TOKS; tok++)
        for (int r = 0; r < ROWS; r++) {
            const double err = fabs((double)y[tok * ROWS + r] - ref[tok * ROWS + r]);
            const double budget =
                MAX_DOT_ERROR_R8 * magnitude(type, rows + r * file_row(type), acts + tok * act_row(type)) +
                1e-30;
            if (!(err <= budget)) {
                fprintf(stderr, "%s %s: row %d token %d: %g vs %g (budget %g)\n", adil_wtype_name(type),
                        adil_cpu_level_string(level), r, tok, y[tok * ROWS + r], ref[tok * ROWS + r], budget);
                test_failures++;
            }
        }
    const size_t pad = ROWS + 5;
    float padded[TOKS * (ROWS + 5)];
    for (size_t i = 0; i < sizeof padded / sizeof padded[0]; i++) padded[i] = -7.0f;
    for (int tok = 0; tok < TOKS; tok++)
        for (int g = 0; g < ROWS; g += ADIL_R8_ROWS) {
            adil_tile one = tile_of(type, (const uint8_t *)packed + g * r8_row(type),
                                    acts + tok * act_row(type), ADIL_R8_ROWS, 1, padded + tok * pad + g, pad);
            k->tile_dot_r8(&one);
        }
    for (int tok = 0; tok < TOKS; tok++)
        for (size_t r = 0; r < pad; r++) {
            const float got = padded[tok * pad + r];
            if (r < ROWS)
                CHECK(memcmp(&got, &y[tok * ROWS + r], sizeof got) == 0);
            else
                CHECK(got == -7.0f);
        }
}

static void test_matmul(const uint8_t *rows, const void *packed) {
    enum { N_TOK = 37 };
    float *x = malloc(sizeof(float) * N_TOK * COLS);
    for (int i = 0; i < N_TOK * COLS; i++) x[i] = next_f();
    const adil_weight plain = {ADIL_WT_Q4_K, ROWS, COLS, rows, ADIL_LAYOUT_ROWS};
    const adil_weight r8 = {ADIL_WT_Q4_K, ROWS, COLS, packed, ADIL_LAYOUT_R8};
    const size_t scratch_size = adil_matmul_scratch_size(&r8, N_TOK);
    void *scratch = malloc(scratch_size);
    float y1[N_TOK * ROWS], y3[N_TOK * ROWS], yp[N_TOK * ROWS], yd[ROWS];
    adil_pool *pool = NULL;
    CHECK(adil_pool_create(3, &pool) == ADIL_OK);
    if (!adil_repack_supported(ADIL_WT_Q4_K)) { /* the scalar level: R8 weights are refused */
        CHECK(adil_matmul(NULL, &r8, x, 1, y1, scratch, scratch_size) == ADIL_STATUS_INVALID_ARGUMENT);
    } else {
        CHECK(adil_matmul(NULL, &r8, x, N_TOK, y1, scratch, scratch_size) == ADIL_OK);
        CHECK(adil_matmul(pool, &r8, x, N_TOK, y3, scratch, scratch_size) == ADIL_OK);
        CHECK(memcmp(y1, y3, sizeof y1) == 0);
        CHECK(adil_matmul(pool, &r8, x + 5 * COLS, 1, yd, scratch, scratch_size) == ADIL_OK);
        CHECK(memcmp(yd, y1 + 5 * ROWS, sizeof yd) == 0); /* decode = that token of the batch */
        CHECK(adil_matmul(pool, &plain, x, N_TOK, yp, scratch, scratch_size) == ADIL_OK);
        for (int i = 0; i < N_TOK * ROWS; i++) CHECK(fabsf(y1[i] - yp[i]) <= 1e-4f * (1.0f + fabsf(yp[i])));
        const adil_weight odd = {ADIL_WT_Q4_K, ROWS - 4, COLS, packed, ADIL_LAYOUT_R8};
        CHECK(adil_matmul(NULL, &odd, x, 1, y1, scratch, scratch_size) == ADIL_STATUS_INVALID_ARGUMENT);
        CHECK_HAS(adil_last_error(), "layout 1 of Q4_K with 20 rows");
        const adil_weight other = {ADIL_WT_Q5_K, ROWS, COLS, packed, ADIL_LAYOUT_R8};
        CHECK(adil_matmul(NULL, &other, x, 1, y1, scratch, scratch_size) == ADIL_STATUS_INVALID_ARGUMENT);
    }
    const adil_weight unknown = {ADIL_WT_Q4_K, ROWS, COLS, packed, 7};
    CHECK(adil_matmul(NULL, &unknown, x, 1, y1, scratch, scratch_size) == ADIL_STATUS_INVALID_ARGUMENT);
    const int32_t ids[3] = {ROWS - 1, 0, 9};
    float looked_up[3 * COLS], want[3 * COLS];
    if (adil_repack_supported(ADIL_WT_Q4_K)) { /* a tied output head's rows, unpacked */
        CHECK(adil_get_rows(&r8, ids, 3, looked_up) == ADIL_OK);
        CHECK(adil_get_rows(&plain, ids, 3, want) == ADIL_OK);
        CHECK(memcmp(looked_up, want, sizeof want) == 0);
    } else {
        CHECK(adil_get_rows(&r8, ids, 3, looked_up) == ADIL_STATUS_INVALID_ARGUMENT);
        CHECK_HAS(adil_last_error(), "layout 1 of Q4_K has no kernel here");
    }
    adil_pool_free(pool);
    free(scratch);
    free(x);
}

/* adil_matmul of a repacked weight of `type` (rows x cols) against the
 * row-major one, on n_tok tokens: within the type's budget of each output's
 * magnitude, which the tokens' own |x| bound (sum |w| |x| <= max|w| sum|x|). */
static void test_product(uint32_t type, int64_t rows, int64_t cols, int64_t n_tok) {
    const size_t row = adil_row_size(type, cols);
    uint8_t *w = malloc(row * (size_t)rows), *packed = malloc(adil_repack_bytes(type, rows, cols));
    float *x = malloc(sizeof(float) * (size_t)(n_tok * cols)), *wf = malloc(sizeof(float) * (size_t)cols);
    float *y = malloc(sizeof(float) * (size_t)(n_tok * rows)),
          *yp = malloc(sizeof(float) * (size_t)(n_tok * rows));
    random_rows(type, w, rows * (cols / adil_wtype_facts_get(type)->block_size));
    for (int64_t i = 0; i < n_tok * cols; i++) x[i] = next_f();
    adil_repack(type, w, packed, cols, 0, rows / ADIL_R8_ROWS);
    const adil_weight plain = {type, rows, cols, w, ADIL_LAYOUT_ROWS},
                      r8 = {type, rows, cols, packed, ADIL_LAYOUT_R8};
    const size_t scratch_size = adil_matmul_scratch_size(&plain, n_tok);
    void *scratch = malloc(scratch_size);
    CHECK(adil_matmul(NULL, &r8, x, n_tok, y, scratch, scratch_size) == ADIL_OK);
    CHECK(adil_matmul(NULL, &plain, x, n_tok, yp, scratch, scratch_size) == ADIL_OK);
    for (int64_t r = 0; r < rows; r++) {
        adil_wtype_kernels_at(ADIL_CPU_SCALAR, type)->dequantize_row(w + (size_t)r * row, wf, cols);
        double wmax = 0;
        for (int64_t i = 0; i < cols; i++) wmax = fmax(wmax, fabs(wf[i]));
        for (int64_t t = 0; t < n_tok; t++) {
            double xs = 0;
            for (int64_t i = 0; i < cols; i++) xs += fabs(x[t * cols + i]);
            const double err = fabs((double)y[t * rows + r] - yp[t * rows + r]);
            if (!(err <= 1e-5 * wmax * xs + 1e-30)) {
                fprintf(stderr, "%s %lld x %lld: row %lld token %lld: %g vs %g\n", adil_wtype_name(type),
                        (long long)rows, (long long)cols, (long long)r, (long long)t, y[t * rows + r],
                        yp[t * rows + r]);
                test_failures++;
                r = rows;
                break;
            }
        }
    }
    free(w), free(packed), free(x), free(wf), free(y), free(yp), free(scratch);
}

int main(void) {
    const uint32_t types[] = {ADIL_WT_Q4_K, ADIL_WT_Q8_0, ADIL_WT_Q5_0};
    uint8_t *rows = malloc((size_t)ROWS * MAX_ROW_BYTES);
    void *packed = malloc((size_t)ROWS * MAX_ROW_BYTES);
    uint8_t *acts = malloc((size_t)TOKS * MAX_ROW_BYTES);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++)
        for (int round = 0; round < 20; round++) {
            random_rows(types[ti], rows, ROWS * COLS / adil_wtype_facts_get(types[ti])->block_size);
            random_acts(types[ti], acts, TOKS);
            adil_repack(types[ti], rows, packed, COLS, 0, ROWS / ADIL_R8_ROWS);
            test_round_trip(types[ti], rows, packed);
            test_reference(types[ti], rows, packed, acts);
            for (int level = ADIL_CPU_SCALAR; level <= (int)adil_cpu_level_supported(); level++)
                test_level(types[ti], level, rows, packed, acts);
        }
    random_rows(ADIL_WT_Q4_K, rows, ROWS * NB);
    adil_repack(ADIL_WT_Q4_K, rows, packed, COLS, 0, ROWS / ADIL_R8_ROWS);
    test_matmul(rows, packed);
    for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
        if (!adil_repack_supported(types[ti])) continue;
        test_product(types[ti], 256, 512, 64); /* the tiny models' shapes */
        test_product(types[ti], 512, 256, 1);
        test_product(types[ti], 384, 256, 33);
    }
    free(rows);
    free(packed);
    free(acts);
    return test_report("test_repack");
}
