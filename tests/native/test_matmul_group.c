/*
 * test_matmul_group.c — the matmul driver (compute/matmul.h) against the
 * level's vec_dot of every row and token, which each output must equal bit
 * for bit:
 *   - groups of 1..4 weights of mixed types (legacy, Q4_1, K-quant and float, so
 *     one or several activation types share the scratch), with 1, 3 and 70
 *     tokens, row counts that are and are not multiples of the chunk grain,
 *     on no pool and pools of 1..3 threads;
 *   - with an epilogue: every row range covered exactly once, after its
 *     outputs are final (the epilogue checks them);
 *   - each weight alone through adil_matmul, the group of one;
 *   - refusals: differing cols, differing rows with an epilogue, no
 *     weights, too small a scratch.
 * The selected CPU level is used (ADIL_CPU picks it).
 */
#include "compute/matmul.h"
#include "compute/threadpool.h"
#include "compute/kernels.h"
#include "test_util.h"

#define TEST_RNG_SEED 0x2545F4914F6CDD1Du
#include "test_rng.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Byte offsets of the fp16 scale fields in a block, per type (MXFP4's E8M0
 * byte is set in make_weight). */
typedef struct type_info {
    uint32_t type;
    int n_scales;
    size_t scale_at[2];
} type_info;

static const type_info TYPES[] = {
    {ADIL_WT_Q8_0, 1, {0, 0}},   {ADIL_WT_Q5_0, 1, {0, 0}},   {ADIL_WT_Q4_0, 1, {0, 0}},
    {ADIL_WT_Q4_K, 2, {0, 2}},   {ADIL_WT_Q6_K, 1, {208, 0}}, {ADIL_WT_F16, 0, {0, 0}},
    {ADIL_WT_F32, 0, {0, 0}},    {ADIL_WT_Q4_1, 2, {0, 2}},   {ADIL_WT_Q5_1, 2, {0, 2}},
    {ADIL_WT_IQ4_NL, 1, {0, 0}}, {ADIL_WT_MXFP4, 0, {0, 0}},  {ADIL_WT_Q2_K, 2, {80, 82}},
    {ADIL_WT_Q3_K, 1, {108, 0}}, {ADIL_WT_IQ4_XS, 1, {0, 0}},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

#define COLS 512

static adil_weight make_weight(const type_info *ti, int64_t rows) {
    const adil_wtype_facts *t = adil_wtype_facts_get(ti->type);
    const size_t row = adil_row_size(ti->type, COLS), bytes = row * (size_t)rows;
    uint8_t *data = aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (t->block_size == 1) {
        float x[COLS];
        for (int64_t r = 0; r < rows; r++) {
            for (int i = 0; i < COLS; i++) x[i] = next_f();
            adil_wtype_kernels_get(ti->type)->quantize_row(x, data + (size_t)r * row, COLS);
        }
    } else {
        for (size_t i = 0; i < bytes; i++) data[i] = (uint8_t)next_u32();
        for (size_t b = 0; b < bytes; b += t->type_size) {
            if (ti->type == ADIL_WT_MXFP4) data[b] = (uint8_t)(118 + next_u32() % 8); /* 2^-10 .. 2^-3 */
            for (int s = 0; s < ti->n_scales; s++) {
                const adil_fp16 h = adil_f32_to_fp16(0.01f * next_f());
                memcpy(data + b + ti->scale_at[s], &h, 2);
            }
        }
    }
    adil_weight w = {ti->type, rows, COLS, data, ADIL_LAYOUT_ROWS};
    return w;
}

/* want[t * rows + r] = vec_dot(row r, token t), x quantized as matmul does
 * into `act` (adil_matmul_scratch_size bytes). */
static void want_by_vec_dot(const adil_weight *w, const float *x, int64_t n_tokens, float *want, void *act) {
    const adil_wtype_kernels *wt = adil_wtype_kernels_get(w->type);
    const size_t w_row = adil_row_size(w->type, COLS);
    size_t act_row = COLS * sizeof(float);
    const uint8_t *a = (const uint8_t *)x;
    if (wt->vec_dot_type != ADIL_WT_F32) {
        act_row = adil_row_size(wt->vec_dot_type, COLS);
        for (int64_t t = 0; t < n_tokens; t++)
            adil_wtype_kernels_get(wt->vec_dot_type)
                ->quantize_row(x + t * COLS, (uint8_t *)act + (size_t)t * act_row, COLS);
        a = act;
    }
    for (int64_t t = 0; t < n_tokens; t++)
        for (int64_t r = 0; r < w->rows; r++)
            want[t * w->rows + r] =
                wt->vec_dot(COLS, (const uint8_t *)w->data + (size_t)r * w_row, a + (size_t)t * act_row);
}

/* Epilogue: rows [r0, r1) seen once, and their outputs already final. */
typedef struct epi_check {
    const adil_mm_group *g;
    float *const *want;
    int64_t n_tokens;
    atomic_int seen[4096];
    atomic_int bad;
} epi_check;

static void epilogue(void *user, int64_t r0, int64_t r1) {
    epi_check *e = user;
    for (int64_t r = r0; r < r1; r++) {
        atomic_fetch_add(&e->seen[r], 1);
        for (int i = 0; i < e->g->n; i++)
            for (int64_t t = 0; t < e->n_tokens; t++) {
                const int64_t at = t * e->g->w[i]->rows + r;
                if (memcmp(&e->g->y[i][at], &e->want[i][at], sizeof(float)) != 0)
                    atomic_fetch_add(&e->bad, 1);
            }
    }
}

static void run_case(adil_pool *pool, int n, const int *types, const int64_t *rows, int64_t n_tokens,
                     bool with_epilogue) {
    adil_weight w[ADIL_MM_GROUP_MAX];
    float *want[ADIL_MM_GROUP_MAX], *got[ADIL_MM_GROUP_MAX];
    float *x = malloc(sizeof(float) * (size_t)(n_tokens * COLS));
    for (int64_t i = 0; i < n_tokens * COLS; i++) x[i] = next_f();
    adil_mm_group g = {.n = n};
    size_t one_most = 0;
    for (int i = 0; i < n; i++) {
        w[i] = make_weight(&TYPES[types[i]], rows[i]);
        want[i] = malloc(sizeof(float) * (size_t)(n_tokens * rows[i]));
        got[i] = malloc(sizeof(float) * (size_t)(n_tokens * rows[i]));
        for (int64_t k = 0; k < n_tokens * rows[i]; k++) got[i][k] = -1.0f;
        g.w[i] = &w[i];
        g.y[i] = got[i];
        const size_t s = adil_matmul_scratch_size(&w[i], n_tokens);
        one_most = s > one_most ? s : one_most;
    }
    void *one_scratch = malloc(one_most + 64);
    for (int i = 0; i < n; i++) want_by_vec_dot(&w[i], x, n_tokens, want[i], one_scratch);
    epi_check *e = calloc(1, sizeof *e);
    e->g = &g;
    e->want = want;
    e->n_tokens = n_tokens;
    if (with_epilogue) {
        g.epilogue = epilogue;
        g.user = e;
    }
    const size_t need = adil_matmul_group_scratch_size(&g, n_tokens);
    void *scratch = malloc(need + 64);
    CHECK(adil_matmul_group(pool, &g, x, n_tokens, scratch, need) == ADIL_OK);
    for (int i = 0; i < n; i++)
        CHECK(memcmp(got[i], want[i], sizeof(float) * (size_t)(n_tokens * rows[i])) == 0);
    if (with_epilogue) {
        for (int64_t r = 0; r < rows[0]; r++) CHECK(atomic_load(&e->seen[r]) == 1);
        CHECK(atomic_load(&e->bad) == 0);
    }
    if (need > 0) /* one byte short: refused */
        CHECK(adil_matmul_group(pool, &g, x, n_tokens, scratch, need - 1) == ADIL_STATUS_INVALID_ARGUMENT);
    for (int i = 0; i < n; i++) { /* each weight alone: the group of one */
        CHECK(adil_matmul(pool, &w[i], x, n_tokens, got[i], one_scratch, one_most) == ADIL_OK);
        CHECK(memcmp(got[i], want[i], sizeof(float) * (size_t)(n_tokens * rows[i])) == 0);
    }
    for (int i = 0; i < n; i++) {
        free((void *)w[i].data);
        free(want[i]);
        free(got[i]);
    }
    free(e);
    free(x);
    free(scratch);
    free(one_scratch);
}

static void test_refusals(void) {
    adil_weight a = make_weight(&TYPES[0], 32), b = make_weight(&TYPES[1], 48);
    adil_weight c = a;
    c.cols = COLS / 2;
    float y[4096], x[COLS];
    for (int i = 0; i < COLS; i++) x[i] = 1.0f;
    char scratch[8192];
    adil_mm_group g = {.n = 2, .w = {&a, &c}, .y = {y, y + 2048}};
    CHECK(adil_matmul_group(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_mm_group h = {.n = 2, .w = {&a, &b}, .y = {y, y + 2048}, .epilogue = epilogue, .user = NULL};
    CHECK(adil_matmul_group(NULL, &h, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_mm_group none = {.n = 0};
    CHECK(adil_matmul_group(NULL, &none, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_matmul_group_scratch_size(&none, 1) == 0);
    free((void *)a.data);
    free((void *)b.data);
}

int main(void) {
    adil_pool *pools[4] = {NULL, NULL, NULL, NULL};
    for (int p = 1; p < 4; p++) CHECK(adil_pool_create(p, &pools[p]) == ADIL_OK);
    const int64_t token_counts[] = {1, 3, 70};
    for (int p = 0; p < 4; p++) {
        for (size_t tc = 0; tc < 3; tc++) {
            const int64_t T = token_counts[tc];
            /* q/k/v-like: three weights of different rows and types */
            run_case(pools[p], 3, (const int[]){1, 1, 0}, (const int64_t[]){1024, 256, 256}, T, false);
            run_case(pools[p], 3, (const int[]){3, 0, 5}, (const int64_t[]){200, 40, 17}, T, false);
            run_case(pools[p], 4, (const int[]){4, 6, 2, 3}, (const int64_t[]){33, 64, 1, 300}, T, false);
            /* Q4_1 (Q8_1 activations) beside Q8_0 (Q8_0 activations) */
            run_case(pools[p], 3, (const int[]){7, 0, 7}, (const int64_t[]){96, 64, 33}, T, false);
            /* Q5_1 (Q8_1), IQ4_NL and MXFP4 (Q8_0) together; MXFP4 rows are
             * 272 bytes (17-byte blocks), no multiple of 32 */
            run_case(pools[p], 3, (const int[]){8, 9, 10}, (const int64_t[]){70, 64, 129}, T, false);
            run_case(pools[p], 2, (const int[]){10, 10}, (const int64_t[]){640, 640}, T, true);
            /* the 16-element sub-block K-quants and IQ4_XS beside Q4_K (one Q8_K scratch) */
            run_case(pools[p], 4, (const int[]){11, 12, 13, 3}, (const int64_t[]){70, 40, 33, 17}, T, false);
            /* gate/up-like with an epilogue */
            run_case(pools[p], 2, (const int[]){1, 1}, (const int64_t[]){2048, 2048}, T, true);
            run_case(pools[p], 2, (const int[]){3, 4}, (const int64_t[]){100, 100}, T, true);
            run_case(pools[p], 2, (const int[]){7, 7}, (const int64_t[]){1536, 1536}, T, true);
            /* one weight, many rows (an output head) */
            run_case(pools[p], 1, (const int[]){0}, (const int64_t[]){4000}, T, false);
        }
    }
    test_refusals();
    for (int p = 1; p < 4; p++) adil_pool_free(pools[p]);
    return test_report("test_matmul_group");
}
