/*
 * test_repack.c — the 8-row layout of Q4_K (compute/repack.h):
 *   - repacking then unpacking gives back every row bit for bit;
 *   - the reference tile kernel equals the scalar vec_dot of the unpacked
 *     rows bit for bit (same arithmetic);
 *   - each SIMD level's tile_dot_r8 is within the Q4_K error budget of the
 *     reference, on random levels with normal, tiny and zero scales;
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

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ROWS 24
#define COLS 768
#define TOKS 7
#define MAX_DOT_ERROR_Q4_K_R8 2e-6 /* as MAX_DOT_ERROR_Q4_K in test_kernels_simd.c */

static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static uint32_t next_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

static float next_f(void) { return (float)(next_u32() % 2000001) / 1000000.0f - 1.0f; }

/* Random Q4_K rows: random levels and scales; d and dmin normal, tiny
 * (fp16 subnormals) or zero by block. */
static void random_q4_K(block_q4_K *b, int64_t n_blocks) {
    for (int64_t i = 0; i < n_blocks; i++) {
        uint8_t *raw = (uint8_t *)&b[i];
        for (size_t k = 0; k < sizeof b[i]; k++) raw[k] = (uint8_t)next_u32();
        const int regime = (int)(next_u32() % 4);
        const float s = regime == 0 ? 0.0f : regime == 1 ? 0x1p-20f : 0.05f;
        b[i].d = adil_f32_to_fp16(s * next_f());
        b[i].dmin = adil_f32_to_fp16(s * next_f());
    }
}

static void random_acts(block_q8_K *a, int64_t n_tok) {
    float x[COLS];
    for (int64_t t = 0; t < n_tok; t++) {
        const float mag = t % 3 == 0 ? 1e-3f : t % 3 == 1 ? 1.0f : 1e3f;
        for (int i = 0; i < COLS; i++) x[i] = mag * next_f();
        adil_wtype_kernels_at(ADIL_CPU_SCALAR, ADIL_WT_Q8_K)->quantize_row(x, a + t * (COLS / ADIL_QK_K), COLS);
    }
}

/* sum |w_i a_i| of row r and token t: the scale errors are relative to. */
static double magnitude(const block_q4_K *w, const block_q8_K *a) {
    float wf[COLS], af[COLS];
    adil_wtype_kernels_at(ADIL_CPU_SCALAR, ADIL_WT_Q4_K)->dequantize_row(w, wf, COLS);
    adil_wtype_kernels_at(ADIL_CPU_SCALAR, ADIL_WT_Q8_K)->dequantize_row(a, af, COLS);
    double m = 0;
    for (int i = 0; i < COLS; i++) m += fabs((double)wf[i] * af[i]);
    return m;
}

static const int NB = COLS / ADIL_QK_K;
static const size_t R8_ROW = (size_t)(COLS / ADIL_QK_K) * ADIL_Q4_K_R8_ROW_BYTES;

static adil_tile tile_of(const void *w, const block_q8_K *a, int64_t n_rows, int64_t n_tok, float *y,
                         size_t y_stride) {
    return (adil_tile){.n = COLS,
                       .w = w,
                       .w_stride = R8_ROW,
                       .n_rows = n_rows,
                       .act = (const uint8_t *)a,
                       .act_stride = sizeof(block_q8_K) * (size_t)NB,
                       .n_tok = n_tok,
                       .y = y,
                       .y_stride = y_stride};
}

static void test_round_trip(const block_q4_K *rows, const void *packed) {
    block_q4_K back[COLS / ADIL_QK_K];
    for (int r = 0; r < ROWS; r++) {
        adil_unpack_row_q4_K(packed, COLS, r, back);
        CHECK(memcmp(back, rows + r * NB, sizeof back) == 0);
    }
    CHECK(adil_repack_bytes(ADIL_WT_Q4_K, ROWS, COLS) == ROWS * R8_ROW);
    const adil_weight w = {ADIL_WT_Q4_K, ROWS, COLS, packed, ADIL_LAYOUT_R8};
    const adil_weight plain = {ADIL_WT_Q4_K, ROWS, COLS, rows, ADIL_LAYOUT_ROWS};
    CHECK(adil_weight_row_bytes(&w) == R8_ROW);
    CHECK(adil_weight_row_bytes(&plain) == adil_row_size(ADIL_WT_Q4_K, COLS));
}

static void test_reference(const block_q4_K *rows, const void *packed, const block_q8_K *acts) {
    float y[TOKS * ROWS];
    adil_tile t = tile_of(packed, acts, ROWS, TOKS, y, ROWS);
    adil_tile_q4_K_r8_ref(&t);
    const adil_wtype_kernels *k = adil_wtype_kernels_at(ADIL_CPU_SCALAR, ADIL_WT_Q4_K);
    for (int tok = 0; tok < TOKS; tok++)
        for (int r = 0; r < ROWS; r++) {
            const float want = k->vec_dot(COLS, rows + r * NB, acts + tok * NB);
            CHECK(memcmp(&want, &y[tok * ROWS + r], sizeof want) == 0);
        }
}

/* The level's kernel against the reference, and against itself in every
 * tile shape (one token at a time, 8 rows at a time, padded y). */
static void test_level(int level, const block_q4_K *rows, const void *packed, const block_q8_K *acts) {
    const adil_wtype_kernels *k = adil_wtype_kernels_at(level, ADIL_WT_Q4_K);
    if (k->tile_dot_r8 == NULL) return;
    float ref[TOKS * ROWS], y[TOKS * ROWS];
    adil_tile t = tile_of(packed, acts, ROWS, TOKS, ref, ROWS);
    adil_tile_q4_K_r8_ref(&t);
    t.y = y;
    k->tile_dot_r8(&t);
    for (int tok = 0; tok < TOKS; tok++)
        for (int r = 0; r < ROWS; r++) {
            const double err = fabs((double)y[tok * ROWS + r] - ref[tok * ROWS + r]);
            const double budget = MAX_DOT_ERROR_Q4_K_R8 * magnitude(rows + r * NB, acts + tok * NB) + 1e-30;
            if (!(err <= budget)) {
                fprintf(stderr, "%s: row %d token %d: %g vs %g (budget %g)\n", adil_cpu_level_string(level), r,
                        tok, y[tok * ROWS + r], ref[tok * ROWS + r], budget);
                test_failures++;
            }
        }
    const size_t pad = ROWS + 5;
    float padded[TOKS * (ROWS + 5)];
    for (size_t i = 0; i < sizeof padded / sizeof padded[0]; i++) padded[i] = -7.0f;
    for (int tok = 0; tok < TOKS; tok++)
        for (int g = 0; g < ROWS; g += ADIL_R8_ROWS) {
            adil_tile one = tile_of((const uint8_t *)packed + g * R8_ROW, acts + tok * NB, ADIL_R8_ROWS, 1,
                                    padded + tok * pad + g, pad);
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

static void test_matmul(const block_q4_K *rows, const void *packed) {
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
    }
    const adil_weight unknown = {ADIL_WT_Q4_K, ROWS, COLS, packed, 7};
    CHECK(adil_matmul(NULL, &unknown, x, 1, y1, scratch, scratch_size) == ADIL_STATUS_INVALID_ARGUMENT);
    const int32_t id = 0;
    CHECK(adil_get_rows(&r8, &id, 1, x) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "row-major");
    adil_pool_free(pool);
    free(scratch);
    free(x);
}

int main(void) {
    block_q4_K *rows = malloc(sizeof(block_q4_K) * ROWS * NB);
    void *packed = malloc(ROWS * R8_ROW);
    block_q8_K *acts = malloc(sizeof(block_q8_K) * TOKS * NB);
    for (int round = 0; round < 20; round++) {
        random_q4_K(rows, ROWS * NB);
        random_acts(acts, TOKS);
        adil_repack_q4_K(rows, packed, COLS, 0, ROWS / ADIL_R8_ROWS);
        test_round_trip(rows, packed);
        test_reference(rows, packed, acts);
        for (int level = ADIL_CPU_SCALAR; level <= (int)adil_cpu_level_supported(); level++)
            test_level(level, rows, packed, acts);
    }
    test_matmul(rows, packed);
    free(rows);
    free(packed);
    free(acts);
    return test_report("test_repack");
}
