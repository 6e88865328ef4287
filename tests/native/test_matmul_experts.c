/*
 * test_matmul_experts.c — the mixture-of-experts driver
 * (compute/matmul_experts.h) against the level's vec_dot of every
 * assignment's activation row with every row of its expert, which each
 * output must equal bit for bit:
 *   - stacked weights of 8 experts (quantized, K-quant and float types),
 *     1, 3 and 70 tokens routed to 2 of them (some experts chosen by nobody,
 *     some by several tokens), through src (gate/up: rows of x are tokens)
 *     and without (down: rows of x already in expert order);
 *   - rows per expert that are and are not multiples of the chunk grain,
 *     on no pool and pools of 1..3 threads;
 *   - with an epilogue: every row range covered exactly once, after its
 *     outputs are final;
 *   - refusals: offsets out of order, a src row outside x, weights of the
 *     wrong height, too small a scratch.
 * The selected CPU level is used (ADIL_CPU picks it).
 */
#include "compute/kernels.h"
#include "compute/matmul_experts.h"
#include "compute/threadpool.h"
#include "test_rng.h"
#include "test_util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COLS      512
#define N_EXPERT  8
#define K_USED    2
#define MAX_ROWS  4096
#define MAX_TOKEN 70

/* A type and the byte offsets of its fp16 scale fields (block types). */
typedef struct type_info {
    uint32_t type;
    int n_scales;
    size_t scale_at[2];
} type_info;

static const type_info Q8_0 = {ADIL_WT_Q8_0, 1, {0, 0}}, Q4_K = {ADIL_WT_Q4_K, 2, {0, 2}},
                       Q6_K = {ADIL_WT_Q6_K, 1, {208, 0}}, F32 = {ADIL_WT_F32, 0, {0, 0}},
                       F16 = {ADIL_WT_F16, 0, {0, 0}};

/* A (rows, COLS) weight of random values (random blocks with small scales). */
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
        for (size_t b = 0; b < bytes; b += t->type_size)
            for (int s = 0; s < ti->n_scales; s++) {
                const adil_fp16 h = adil_f32_to_fp16(0.01f * next_f());
                memcpy(data + b + ti->scale_at[s], &h, 2);
            }
    }
    return (adil_weight){ti->type, rows, COLS, data, ADIL_LAYOUT_ROWS};
}

/* The dot of weight row `r` of w with float row x, as the driver must give it. */
static float want_dot(const adil_weight *w, int64_t r, const float *x) {
    const adil_wtype_kernels *wk = adil_wtype_kernels_get(w->type);
    const uint8_t *row = (const uint8_t *)w->data + (size_t)r * adil_row_size(w->type, COLS);
    if (wk->vec_dot_type == ADIL_WT_F32) return wk->vec_dot(COLS, row, x);
    static uint8_t act[COLS * 2];
    adil_wtype_kernels_get(wk->vec_dot_type)->quantize_row(x, act, COLS);
    return wk->vec_dot(COLS, row, act);
}

/* T tokens routed to K_USED distinct experts each; off/src as the driver
 * reads them (expert order, tokens ascending). */
static int64_t route(int64_t T, int32_t *off, int32_t *src) {
    int32_t chosen[MAX_TOKEN][K_USED];
    for (int64_t t = 0; t < T; t++) {
        /* experts 0..5 only, so 6 and 7 are never read */
        chosen[t][0] = (int32_t)(next_u32() % 6);
        chosen[t][1] = (chosen[t][0] + 1 + (int32_t)(next_u32() % 5)) % 6;
    }
    int64_t a = 0;
    for (int32_t e = 0; e < N_EXPERT; e++) {
        off[e] = (int32_t)a;
        for (int64_t t = 0; t < T; t++)
            if (chosen[t][0] == e || chosen[t][1] == e) src[a++] = (int32_t)t;
    }
    off[N_EXPERT] = (int32_t)a;
    return a;
}

/* Epilogue: rows [r0, r1) seen once, their outputs already final. */
typedef struct epi_check {
    const adil_mm_experts *g;
    float *const *want;
    int64_t A;
    atomic_int seen[MAX_ROWS];
    atomic_int bad;
} epi_check;

static void epilogue(void *user, int64_t r0, int64_t r1) {
    epi_check *e = user;
    for (int64_t r = r0; r < r1; r++) {
        atomic_fetch_add(&e->seen[r], 1);
        for (int i = 0; i < e->g->n; i++)
            for (int64_t a = 0; a < e->A; a++)
                if (memcmp(&e->g->y[i][a * e->g->rows + r], &e->want[i][a * e->g->rows + r], sizeof(float)))
                    atomic_fetch_add(&e->bad, 1);
    }
}

/* n stacked weights of `types`, `rows` rows per expert, T tokens; with_src:
 * x holds the tokens, else the A rows already in expert order. */
static void run_case(adil_pool *pool, int n, const type_info *const *types, int64_t rows, int64_t T,
                     bool with_src) {
    int32_t off[N_EXPERT + 1], src[MAX_TOKEN * K_USED];
    const int64_t A = route(T, off, src);
    const int64_t n_x = with_src ? T : A;
    float *x = malloc(sizeof(float) * (size_t)(n_x * COLS));
    for (int64_t i = 0; i < n_x * COLS; i++) x[i] = next_f();
    adil_weight w[ADIL_MM_GROUP_MAX];
    float *want[ADIL_MM_GROUP_MAX], *got[ADIL_MM_GROUP_MAX];
    epi_check *chk = calloc(1, sizeof *chk);
    adil_mm_experts g = {
        .n = n, .n_expert = N_EXPERT, .rows = rows, .off = off, .src = with_src ? src : NULL};
    for (int i = 0; i < n; i++) {
        w[i] = make_weight(types[i], N_EXPERT * rows);
        want[i] = malloc(sizeof(float) * (size_t)(A * rows));
        got[i] = malloc(sizeof(float) * (size_t)(A * rows));
        for (int64_t e = 0; e < N_EXPERT; e++)
            for (int64_t a = off[e]; a < off[e + 1]; a++)
                for (int64_t r = 0; r < rows; r++)
                    want[i][a * rows + r] = want_dot(&w[i], e * rows + r, x + (with_src ? src[a] : a) * COLS);
        for (int64_t k = 0; k < A * rows; k++) got[i][k] = -1.0f;
        g.w[i] = &w[i];
        g.y[i] = got[i];
    }
    *chk = (epi_check){.g = &g, .want = want, .A = A};
    g.epilogue = epilogue;
    g.user = chk;
    const size_t need = adil_matmul_experts_scratch_size(&g, n_x, A);
    void *scratch = malloc(need + 64);
    CHECK(adil_matmul_experts(pool, &g, x, n_x, scratch, need) == ADIL_OK);
    for (int i = 0; i < n; i++) CHECK(memcmp(got[i], want[i], sizeof(float) * (size_t)(A * rows)) == 0);
    for (int64_t r = 0; r < rows; r++) CHECK(atomic_load(&chk->seen[r]) == 1);
    CHECK(atomic_load(&chk->bad) == 0);
    for (int i = 0; i < n; i++) {
        free((void *)w[i].data);
        free(want[i]);
        free(got[i]);
    }
    free(chk);
    free(scratch);
    free(x);
}

static void test_refusals(void) {
    adil_weight w = make_weight(&Q8_0, N_EXPERT * 16);
    int32_t off[N_EXPERT + 1] = {0, 1, 2, 2, 2, 2, 2, 2, 2}, src[2] = {0, 0};
    float x[2 * COLS], y[2 * 16];
    for (int i = 0; i < 2 * COLS; i++) x[i] = 1.0f;
    static char scratch[1 << 16];
    adil_mm_experts g = {
        .n = 1, .w = {&w}, .y = {y}, .n_expert = N_EXPERT, .rows = 16, .off = off, .src = src};
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_OK);
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, 8) == ADIL_STATUS_INVALID_ARGUMENT);
    src[1] = 1; /* x has one row */
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    src[1] = 0;
    off[3] = 1; /* 2, then 1: out of order */
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    off[3] = 2;
    g.rows = 15; /* 8 x 15 != the weight's 128 rows */
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    g.rows = 16;
    g.src = NULL; /* two assignments, one row of x */
    CHECK(adil_matmul_experts(NULL, &g, x, 1, scratch, sizeof scratch) == ADIL_STATUS_INVALID_ARGUMENT);
    free((void *)w.data);
}

int main(void) {
    adil_pool *pools[4] = {NULL, NULL, NULL, NULL};
    for (int p = 1; p < 4; p++) CHECK(adil_pool_create(p, &pools[p]) == ADIL_OK);
    const int64_t token_counts[] = {1, 3, MAX_TOKEN};
    for (int p = 0; p < 4; p++)
        for (size_t tc = 0; tc < 3; tc++) {
            const int64_t T = token_counts[tc];
            /* gate/up: two weights of one type, x = the tokens */
            run_case(pools[p], 2, (const type_info *const[]){&Q4_K, &Q4_K}, 200, T, true);
            run_case(pools[p], 2, (const type_info *const[]){&Q8_0, &Q8_0}, 48, T, true);
            /* float experts (activations gathered as floats), and mixed activation types */
            run_case(pools[p], 2, (const type_info *const[]){&F32, &F16}, 64, T, true);
            run_case(pools[p], 3, (const type_info *const[]){&Q6_K, &F32, &Q8_0}, 33, T, true);
            /* down: x already in expert order */
            run_case(pools[p], 1, (const type_info *const[]){&Q6_K}, 512, T, false);
            run_case(pools[p], 1, (const type_info *const[]){&F16}, 40, T, false);
        }
    test_refusals();
    for (int p = 1; p < 4; p++) adil_pool_free(pools[p]);
    return test_report("test_matmul_experts");
}
