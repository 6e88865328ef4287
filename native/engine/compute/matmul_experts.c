/*
 * matmul_experts.c — every assignment through its expert, all experts in
 * one pool job (see matmul_experts.h).
 *
 * Phase 1 quantizes x to each activation type of the group, once per row of
 * x, and copies the rows into assignment order (with src NULL, x is already
 * in that order and is quantized straight into place; float activations of
 * F32/F16/BF16 weights are then read from x itself).  Phase 2 is one
 * adil_pool_for over chunks of expert rows, sized as matmul.c sizes its
 * chunks (the same constants and reasons) from the bytes of the chosen
 * experts only.  Within a chunk, an expert with one assignment (decode) is
 * one tile of all the chunk's rows; several assignments go by tiles of
 * TOKEN_TILE assignments × about TILE_BYTES of weight rows.
 */
#include "compute/matmul_experts.h"

#include "compute/kernels.h"
#include "compute/repack.h"

#include <inttypes.h>
#include <string.h>

#define ROW_GRAIN         16
#define TOKEN_TILE        32
#define TILE_BYTES        (16 * 1024)
#define CHUNKS_PER_THREAD 4
#define MIN_CHUNK_BYTES   (24 * 1024)
#define MAX_CHUNK_BYTES   (512 * 1024)
#define QUANT_ROWS        8
#define ACT_ALIGN         64
_Static_assert(ROW_GRAIN % ADIL_R8_ROWS == 0, "chunks start at a group of the 8-row layout");

/* One weight of the group. */
typedef struct xp_part {
    const adil_wtype_kernels *wk;
    adil_tile_dot_fn tile; /* the tile kernel of its layout; NULL: loop over vec_dot */
    int64_t row_align;     /* rows a tile starts at a multiple of (8 for the 8-row layout) */
    const uint8_t *w;      /* expert e's row r at w + (e * rows + r) * w_row */
    size_t w_row;
    float *y; /* (A, rows) */
    int slot; /* its activation type in the job */
} xp_part;

/* One activation type of the group and where its rows are. */
typedef struct xp_act {
    const adil_wtype_kernels *at; /* the activation type's kernels; NULL: floats */
    size_t row;                   /* bytes of one activation row */
    uint8_t *xq;                  /* (n_x, row) x quantized, or NULL when not needed */
    const uint8_t *a;             /* (A, row) in assignment order */
} xp_act;

typedef struct xp_job {
    xp_part part[ADIL_MM_GROUP_MAX];
    xp_act act[ADIL_MM_GROUP_MAX];
    int n, n_act;
    int64_t cols, rows, n_expert, n_x, A;
    const float *x;
    const int32_t *off, *src;
    int64_t chunk_rows;
    adil_mm_epilogue_fn epilogue;
    void *user;
} xp_job;

/* ---- checks --------------------------------------------------------------------- */

static adil_status check_weight(const adil_mm_experts *g, int i) {
    const adil_weight *w = g->w[i];
    if (w == NULL || w->data == NULL || g->y[i] == NULL || !adil_wtype_has_kernels(w->type))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_experts: weight %d: expected data of a type with kernels and an output", i);
    const int64_t block = adil_wtype_facts_get(w->type)->block_size;
    if (w->cols < 1 || w->cols % block != 0 || w->cols != g->w[0]->cols || w->rows != g->n_expert * g->rows)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_experts: weight %d: expected %" PRId64 " x %" PRId64
                         " (n_expert x rows, columns a multiple of %" PRId64 "), got %" PRId64 " x %" PRId64,
                         i, g->n_expert * g->rows, g->w[0]->cols, block, w->rows, w->cols);
    if (!adil_layout_runs(w, g->rows))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_experts: weight %d: layout %" PRIu32 " of %s with %" PRId64
                         " rows per expert has no kernel at this CPU level",
                         i, w->layout, adil_wtype_name(w->type), g->rows);
    return ADIL_OK;
}

/* Offsets ascending from 0, and every src row inside x. */
static adil_status check_rows(const adil_mm_experts *g, int64_t n_x) {
    if (g->off[0] != 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "matmul_experts: off[0]: expected 0, got %" PRId32,
                         g->off[0]);
    for (int64_t e = 0; e < g->n_expert; e++)
        if (g->off[e + 1] < g->off[e])
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "matmul_experts: off[%" PRId64 "]: expected >= %" PRId32 ", got %" PRId32, e + 1,
                             g->off[e], g->off[e + 1]);
    const int64_t A = g->off[g->n_expert];
    if (g->src == NULL && n_x < A)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_experts: x: expected >= %" PRId64 " rows, got %" PRId64, A, n_x);
    for (int64_t a = 0; g->src != NULL && a < A; a++)
        if (g->src[a] < 0 || g->src[a] >= n_x)
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "matmul_experts: src[%" PRId64 "]: expected 0..%" PRId64 ", got %" PRId32, a,
                             n_x - 1, g->src[a]);
    return ADIL_OK;
}

static adil_status check_group(const adil_mm_experts *g, const float *x, int64_t n_x) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || g->n_expert < 1 || g->rows < 1 ||
        g->off == NULL || x == NULL || n_x < 1)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_experts: expected 1..%d weights, experts, rows, offsets and x",
                         ADIL_MM_GROUP_MAX);
    for (int i = 0; i < g->n; i++) {
        adil_status st = check_weight(g, i);
        if (st != ADIL_OK) return st;
    }
    return check_rows(g, n_x);
}

/* ---- the plan --------------------------------------------------------------------- */

static size_t align_up(size_t n) { return (n + ACT_ALIGN - 1) & ~(size_t)(ACT_ALIGN - 1); }

/* The activation slot of weight kernels wk, added if new. */
static int act_slot(xp_job *j, const adil_wtype_kernels *wk) {
    const adil_wtype_kernels *at =
        wk->vec_dot_type == ADIL_WT_F32 ? NULL : adil_wtype_kernels_get(wk->vec_dot_type);
    for (int s = 0; s < j->n_act; s++)
        if (j->act[s].at == at) return s;
    j->act[j->n_act] = (xp_act){
        .at = at, .row = at ? adil_row_size(wk->vec_dot_type, j->cols) : (size_t)j->cols * sizeof(float)};
    return j->n_act++;
}

/* Fills the job for a checked group (or one only sized: x and scratch NULL)
 * and places its activation regions in scratch; returns the bytes used. */
static size_t plan(xp_job *j, const adil_mm_experts *g, const float *x, int64_t n_x, int64_t A,
                   uint8_t *scratch) {
    *j = (xp_job){.n = g->n,
                  .cols = g->w[0]->cols,
                  .rows = g->rows,
                  .n_expert = g->n_expert,
                  .n_x = n_x,
                  .A = A,
                  .x = x,
                  .off = g->off,
                  .src = g->src,
                  .epilogue = g->epilogue,
                  .user = g->user};
    for (int i = 0; i < g->n; i++) {
        const adil_wtype_kernels *wk = adil_wtype_kernels_get(g->w[i]->type);
        j->part[i] = (xp_part){.wk = wk,
                               .tile = adil_layout_tile(g->w[i], wk),
                               .row_align = adil_layout_row_align(g->w[i]),
                               .w = g->w[i]->data,
                               .w_row = adil_weight_row_bytes(g->w[i]),
                               .y = g->y[i],
                               .slot = act_slot(j, wk)};
    }
    size_t end = 0;
    for (int s = 0; s < j->n_act; s++) {
        xp_act *a = &j->act[s];
        if (a->at == NULL && g->src == NULL) { /* floats already in order: x itself */
            a->a = (const uint8_t *)x;
            continue;
        }
        if (a->at != NULL && g->src != NULL) { /* x quantized once, then gathered */
            const size_t start = align_up(end);
            a->xq = scratch ? scratch + start : NULL;
            end = start + (size_t)n_x * a->row;
        }
        const size_t start = align_up(end);
        a->a = scratch ? scratch + start : NULL;
        end = start + (size_t)A * a->row;
    }
    return end;
}

/* Rows of one expert per chunk, for nth threads, from the bytes of the
 * chosen experts. */
static int64_t plan_chunks(xp_job *j, int nth) {
    int64_t active = 0, row_bytes = 0;
    for (int64_t e = 0; e < j->n_expert; e++) active += j->off[e + 1] > j->off[e];
    for (int i = 0; i < j->n; i++) row_bytes += (int64_t)j->part[i].w_row * active;
    if (nth == 1) {
        j->chunk_rows = j->rows;
    } else {
        int64_t bytes = row_bytes * j->rows / ((int64_t)CHUNKS_PER_THREAD * nth);
        bytes = bytes < MIN_CHUNK_BYTES ? MIN_CHUNK_BYTES : bytes > MAX_CHUNK_BYTES ? MAX_CHUNK_BYTES : bytes;
        const int64_t r = (bytes / row_bytes + ROW_GRAIN - 1) / ROW_GRAIN * ROW_GRAIN;
        j->chunk_rows = r < ROW_GRAIN ? ROW_GRAIN : r;
    }
    return (j->rows + j->chunk_rows - 1) / j->chunk_rows;
}

/* ---- phase 1: activations ------------------------------------------------------------ */

/* Rows [c * QUANT_ROWS, ...) of x, quantized: into xq (to be gathered) or,
 * without src, straight into assignment order. */
static void quantize_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const xp_job *j = ctx;
    const int64_t n = j->src ? j->n_x : j->A;
    const int64_t r1 = (c + 1) * QUANT_ROWS < n ? (c + 1) * QUANT_ROWS : n;
    for (int64_t r = c * QUANT_ROWS; r < r1; r++)
        for (int s = 0; s < j->n_act; s++) {
            const xp_act *a = &j->act[s];
            if (a->at == NULL) continue; /* floats: read from x */
            uint8_t *dst = j->src ? a->xq : (uint8_t *)a->a;
            a->at->quantize_row(j->x + r * j->cols, dst + (size_t)r * a->row, j->cols);
        }
}

/* Assignments [c * QUANT_ROWS, ...): their rows copied into order. */
static void gather_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const xp_job *j = ctx;
    const int64_t a1 = (c + 1) * QUANT_ROWS < j->A ? (c + 1) * QUANT_ROWS : j->A;
    for (int64_t i = c * QUANT_ROWS; i < a1; i++)
        for (int s = 0; s < j->n_act; s++) {
            const xp_act *a = &j->act[s];
            const uint8_t *from = a->at ? a->xq + (size_t)j->src[i] * a->row
                                        : (const uint8_t *)(j->x + (int64_t)j->src[i] * j->cols);
            memcpy((uint8_t *)a->a + (size_t)i * a->row, from, a->row);
        }
}

static void prepare_activations(adil_pool *pool, xp_job *j) {
    const int64_t n_quant = j->src ? j->n_x : j->A;
    /* one row is too little to be worth waking the pool */
    adil_pool_for(n_quant > 1 ? pool : NULL, (n_quant + QUANT_ROWS - 1) / QUANT_ROWS, quantize_chunk, j);
    if (j->src != NULL)
        adil_pool_for(j->A > QUANT_ROWS ? pool : NULL, (j->A + QUANT_ROWS - 1) / QUANT_ROWS, gather_chunk, j);
}

/* ---- phase 2: the products -------------------------------------------------------------- */

/* The part's tile kernel, or vec_dot pair by pair where the type has none. */
static void run_tile(const xp_part *p, const adil_tile *t) {
    const adil_wtype_kernels *wk = p->wk;
    if (p->tile != NULL) {
        p->tile(t);
        return;
    }
    for (int64_t k = 0; k < t->n_tok; k++)
        for (int64_t r = 0; r < t->n_rows; r++)
            t->y[(size_t)k * t->y_stride + (size_t)r] =
                wk->vec_dot(t->n, t->w + (size_t)r * t->w_stride, t->act + (size_t)k * t->act_stride);
}

/* Rows [r0, r1) of expert e of part p for assignments [a0, a1). */
static void expert_rows(const xp_job *j, const xp_part *p, int64_t e, int64_t r0, int64_t r1, int64_t a0,
                        int64_t a1) {
    const xp_act *act = &j->act[p->slot];
    int64_t row_tile = a1 - a0 == 1 ? r1 - r0 : (int64_t)(TILE_BYTES / p->w_row);
    row_tile = row_tile / p->row_align * p->row_align; /* chunks start at multiples of ROW_GRAIN */
    row_tile = row_tile < p->row_align ? p->row_align : row_tile;
    for (int64_t t0 = a0; t0 < a1; t0 += TOKEN_TILE) {
        const int64_t t1 = t0 + TOKEN_TILE < a1 ? t0 + TOKEN_TILE : a1;
        for (int64_t rt = r0; rt < r1; rt += row_tile) {
            const int64_t re = rt + row_tile < r1 ? rt + row_tile : r1;
            const adil_tile tile = {.n = j->cols,
                                    .w = p->w + (size_t)(e * j->rows + rt) * p->w_row,
                                    .w_stride = p->w_row,
                                    .n_rows = re - rt,
                                    .act = act->a + (size_t)t0 * act->row,
                                    .act_stride = act->row,
                                    .n_tok = t1 - t0,
                                    .y = p->y + t0 * j->rows + rt,
                                    .y_stride = (size_t)j->rows};
            run_tile(p, &tile);
        }
    }
}

/* Chunk c: its rows of every chosen expert of every weight, then the epilogue. */
static void dot_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const xp_job *j = ctx;
    const int64_t r0 = c * j->chunk_rows;
    const int64_t r1 = r0 + j->chunk_rows < j->rows ? r0 + j->chunk_rows : j->rows;
    for (int64_t e = 0; e < j->n_expert; e++) {
        if (j->off[e + 1] == j->off[e]) continue; /* nobody chose it: not read */
        for (int i = 0; i < j->n; i++) expert_rows(j, &j->part[i], e, r0, r1, j->off[e], j->off[e + 1]);
    }
    if (j->epilogue != NULL) j->epilogue(j->user, r0, r1);
}

/* ---- entry points ------------------------------------------------------------------------ */

size_t adil_matmul_experts_scratch_size(const adil_mm_experts *g, int64_t n_x, int64_t A) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || n_x < 1 || A < 0) return 0;
    for (int i = 0; i < g->n; i++) /* outputs are not needed to size the scratch */
        if (g->w[i] == NULL || !adil_wtype_has_kernels(g->w[i]->type) || g->w[i]->cols != g->w[0]->cols)
            return 0;
    adil_mm_experts with_src = *g; /* the larger plan, which covers src NULL too */
    with_src.src = (const int32_t[1]){0};
    xp_job j;
    return plan(&j, &with_src, NULL, n_x, A, NULL);
}

adil_status adil_matmul_experts(adil_pool *pool, const adil_mm_experts *g, const float *x, int64_t n_x,
                                void *scratch, size_t scratch_size) {
    adil_status st = check_group(g, x, n_x);
    if (st != ADIL_OK) return st;
    const int64_t A = g->off[g->n_expert];
    xp_job j;
    const size_t need = plan(&j, g, x, n_x, A, scratch);
    if (need > 0 && (scratch == NULL || scratch_size < need))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "matmul_experts: scratch: expected %zu bytes, got %zu",
                         need, scratch_size);
    if (A == 0) return ADIL_OK;
    prepare_activations(pool, &j);
    adil_pool_for(pool, plan_chunks(&j, adil_pool_n_threads(pool)), dot_chunk, &j);
    return ADIL_OK;
}
