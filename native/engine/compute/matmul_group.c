/*
 * matmul_group.c — y[i] = x · W[i]ᵀ for a group of weights in one pool job
 * (see matmul_group.h).
 *
 * Phase 1 quantizes x to each activation type the group needs (per token, on
 * the pool when there are several tokens).  Phase 2 is one adil_pool_for
 * over chunks.  A chunk is a run of rows of one weight (or, with an
 * epilogue, the same rows of every weight), a multiple of ROW_GRAIN rows so
 * that no two threads write the same cache line of y, sized so that the
 * group makes about CHUNKS_PER_THREAD chunks per thread but none below
 * MIN_CHUNK_BYTES of weights (a claim costs a shared cache line) nor above
 * MAX_CHUNK_BYTES.  Within a chunk the walk is matmul.c's: one token (decode)
 * is one tile of all the chunk's rows; several tokens go by tiles of
 * TOKEN_TILE tokens × about TILE_BYTES of weight rows, so a weight row is
 * read from memory once per TOKEN_TILE tokens.
 */
#include "compute/matmul_group.h"

#include "compute/weight_types.h"

#include <inttypes.h>
#include <string.h>

#define ROW_GRAIN 16
#define TOKEN_TILE 32
#define TILE_BYTES (16 * 1024)
#define CHUNKS_PER_THREAD 4
#define MIN_CHUNK_BYTES (24 * 1024)
#define MAX_CHUNK_BYTES (512 * 1024)

/* One weight of the group, ready to compute. */
typedef struct mm_part {
    const adil_wtype_traits *wt;
    const uint8_t *w;
    size_t w_row;          /* bytes per weight row */
    int64_t rows;
    float *y;
    const uint8_t *act;    /* x quantized to wt's activation type */
    size_t act_row;
    int64_t chunk_rows;    /* rows per chunk */
    int64_t first_chunk;   /* chunks of earlier parts (without epilogue) */
    int64_t n_chunks;
} mm_part;

typedef struct mm_job {
    mm_part part[ADIL_MM_GROUP_MAX];
    int n;
    int64_t cols, n_tokens;
    const float *x;
    adil_mm_epilogue_fn epilogue;
    void *user;
    /* quantization: one entry per distinct activation type */
    int n_act;
    const adil_wtype_traits *at[ADIL_MM_GROUP_MAX];
    uint8_t *act[ADIL_MM_GROUP_MAX];
    size_t act_row[ADIL_MM_GROUP_MAX];
} mm_job;

static bool floats_in(const adil_wtype_traits *wt) {
    return wt->vec_dot_type == ADIL_WT_F32;
}

static adil_status check_group(const adil_mm_group *g, const float *x, int64_t n_tokens) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || x == NULL || n_tokens < 1) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul_group: expected 1..%d weights, x non-NULL, n_tokens >= 1",
                         ADIL_MM_GROUP_MAX);
    }
    for (int i = 0; i < g->n; i++) {
        const adil_weight *w = g->w[i];
        const adil_wtype_traits *wt = w != NULL && w->data != NULL ? adil_wtype_get(w->type) : NULL;
        if (wt == NULL || wt->vec_dot == NULL || wt->dequantize_row == NULL || g->y[i] == NULL) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "matmul_group: weight %d: expected one with kernels and an output", i);
        }
        if (w->rows < 1 || w->cols < 1 || w->cols % wt->block_size != 0 || w->cols != g->w[0]->cols) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "matmul_group: weight %d: expected %" PRId64 " columns (a multiple of %"
                             PRId64 "), got %" PRId64 " x %" PRId64,
                             i, g->w[0]->cols, wt->block_size, w->rows, w->cols);
        }
        if (g->epilogue != NULL && w->rows != g->w[0]->rows) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "matmul_group: weight %d: an epilogue needs %" PRId64 " rows, got %" PRId64,
                             i, g->w[0]->rows, w->rows);
        }
    }
    return ADIL_OK;
}

/* Index of activation type `type` in the job's list, added if new. */
static int act_slot(mm_job *j, const adil_wtype_traits *at) {
    for (int a = 0; a < j->n_act; a++)
        if (j->at[a] == at) return a;
    j->at[j->n_act] = at;
    return j->n_act++;
}

size_t adil_matmul_group_scratch_size(const adil_mm_group *g, int64_t n_tokens) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || n_tokens < 1) return 0;
    uint32_t seen[ADIL_MM_GROUP_MAX];
    int n_seen = 0;
    size_t total = 0;
    for (int i = 0; i < g->n; i++) {
        const adil_wtype_traits *wt = g->w[i] != NULL ? adil_wtype_get(g->w[i]->type) : NULL;
        if (wt == NULL || floats_in(wt)) continue;
        bool dup = false;
        for (int s = 0; s < n_seen; s++) dup |= seen[s] == wt->vec_dot_type;
        if (dup) continue;
        seen[n_seen++] = wt->vec_dot_type;
        /* each region rounded to 64 bytes so the next one stays aligned */
        total += ((size_t)n_tokens * adil_row_size(wt->vec_dot_type, g->w[i]->cols) + 63) & ~(size_t)63;
    }
    return total;
}

/* Rows per chunk for `bytes_per_row` (of every weight the chunk covers). */
static int64_t chunk_rows(int64_t total_bytes, int64_t bytes_per_row, int64_t rows, int nth) {
    if (nth == 1) return rows; /* one chunk: nothing to balance */
    int64_t bytes = total_bytes / ((int64_t)CHUNKS_PER_THREAD * nth);
    bytes = bytes < MIN_CHUNK_BYTES ? MIN_CHUNK_BYTES : bytes > MAX_CHUNK_BYTES ? MAX_CHUNK_BYTES : bytes;
    int64_t r = (bytes / bytes_per_row + ROW_GRAIN - 1) / ROW_GRAIN * ROW_GRAIN;
    return r < ROW_GRAIN ? ROW_GRAIN : r;
}

static void quantize_chunk(void *ctx, int64_t t, int ith) {
    (void)ith;
    const mm_job *j = ctx;
    for (int a = 0; a < j->n_act; a++)
        j->at[a]->quantize_row(j->x + t * j->cols, j->act[a] + (size_t)t * j->act_row[a], j->cols);
}

/* Rows [r0, r1) of part p for every token. */
static void part_rows(const mm_job *j, const mm_part *p, int64_t r0, int64_t r1) {
    const int64_t row_tile = j->n_tokens == 1 ? r1 - r0
                           : ((int64_t)(TILE_BYTES / p->w_row) > 0 ? (int64_t)(TILE_BYTES / p->w_row) : 1);
    for (int64_t t0 = 0; t0 < j->n_tokens; t0 += TOKEN_TILE) {
        const int64_t t1 = t0 + TOKEN_TILE < j->n_tokens ? t0 + TOKEN_TILE : j->n_tokens;
        for (int64_t rt = r0; rt < r1; rt += row_tile) {
            const int64_t re = rt + row_tile < r1 ? rt + row_tile : r1;
            adil_tile tile = {
                .n = j->cols, .w = p->w + (size_t)rt * p->w_row, .w_stride = p->w_row,
                .n_rows = re - rt, .act = p->act + (size_t)t0 * p->act_row, .act_stride = p->act_row,
                .n_tok = t1 - t0, .y = p->y + t0 * p->rows + rt, .y_stride = (size_t)p->rows,
            };
            if (p->wt->tile_dot != NULL) {
                p->wt->tile_dot(&tile);
                continue;
            }
            for (int64_t t = 0; t < tile.n_tok; t++)
                for (int64_t r = 0; r < tile.n_rows; r++)
                    tile.y[(size_t)t * tile.y_stride + (size_t)r] = p->wt->vec_dot(
                        j->cols, tile.w + (size_t)r * tile.w_stride, tile.act + (size_t)t * tile.act_stride);
        }
    }
}

static void dot_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const mm_job *j = ctx;
    if (j->epilogue != NULL) { /* the same rows of every part, then the epilogue */
        const int64_t r0 = c * j->part[0].chunk_rows;
        const int64_t r1 = r0 + j->part[0].chunk_rows < j->part[0].rows ? r0 + j->part[0].chunk_rows
                                                                          : j->part[0].rows;
        for (int i = 0; i < j->n; i++) part_rows(j, &j->part[i], r0, r1);
        j->epilogue(j->user, r0, r1);
        return;
    }
    int i = 0;
    while (c >= j->part[i].first_chunk + j->part[i].n_chunks) i++;
    const mm_part *p = &j->part[i];
    const int64_t r0 = (c - p->first_chunk) * p->chunk_rows;
    part_rows(j, p, r0, r0 + p->chunk_rows < p->rows ? r0 + p->chunk_rows : p->rows);
}

adil_status adil_matmul_group(adil_pool *pool, const adil_mm_group *g, const float *x,
                              int64_t n_tokens, void *scratch, size_t scratch_size) {
    adil_status st = check_group(g, x, n_tokens);
    if (st != ADIL_OK) return st;
    const size_t need = adil_matmul_group_scratch_size(g, n_tokens);
    if (need > 0 && (scratch == NULL || scratch_size < need)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "matmul_group: scratch: expected %zu bytes, got %zu",
                         need, scratch_size);
    }
    mm_job j;
    memset(&j, 0, sizeof j);
    j.n = g->n;
    j.cols = g->w[0]->cols;
    j.n_tokens = n_tokens;
    j.x = x;
    j.epilogue = g->epilogue;
    j.user = g->user;
    int64_t total_bytes = 0, row_bytes_all = 0;
    size_t offset = 0;
    for (int i = 0; i < g->n; i++) {
        mm_part *p = &j.part[i];
        p->wt = adil_wtype_get(g->w[i]->type);
        p->w = g->w[i]->data;
        p->w_row = adil_row_size(g->w[i]->type, j.cols);
        p->rows = g->w[i]->rows;
        p->y = g->y[i];
        total_bytes += p->rows * (int64_t)p->w_row;
        row_bytes_all += (int64_t)p->w_row;
        if (floats_in(p->wt)) { /* F32/F16/BF16 weights dot with x itself */
            p->act = (const uint8_t *)x;
            p->act_row = (size_t)j.cols * sizeof(float);
            continue;
        }
        const int before = j.n_act, a = act_slot(&j, adil_wtype_get(p->wt->vec_dot_type));
        if (a == before) { /* a new activation type: its own scratch region */
            j.act_row[a] = adil_row_size(p->wt->vec_dot_type, j.cols);
            j.act[a] = (uint8_t *)scratch + offset;
            offset += ((size_t)n_tokens * j.act_row[a] + 63) & ~(size_t)63;
        }
        p->act = j.act[a];
        p->act_row = j.act_row[a];
    }
    const int nth = adil_pool_n_threads(pool);
    int64_t n_chunks = 0;
    if (g->epilogue != NULL) {
        j.part[0].chunk_rows = chunk_rows(total_bytes, row_bytes_all, j.part[0].rows, nth);
        n_chunks = (j.part[0].rows + j.part[0].chunk_rows - 1) / j.part[0].chunk_rows;
    } else {
        for (int i = 0; i < g->n; i++) {
            mm_part *p = &j.part[i];
            p->chunk_rows = chunk_rows(total_bytes, (int64_t)p->w_row, p->rows, nth);
            p->first_chunk = n_chunks;
            p->n_chunks = (p->rows + p->chunk_rows - 1) / p->chunk_rows;
            n_chunks += p->n_chunks;
        }
    }
    if (j.n_act > 0) /* one token: too little to be worth waking the pool */
        adil_pool_for(n_tokens > 1 ? pool : NULL, n_tokens, quantize_chunk, &j);
    adil_pool_for(pool, n_chunks, dot_chunk, &j);
    return ADIL_OK;
}
