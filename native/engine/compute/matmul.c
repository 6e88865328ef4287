/*
 * matmul.c — y[i] = x · W[i]ᵀ for a group of weights in one pool job (a
 * single product is the group of one), and embedding lookup (see matmul.h).
 *
 * Phase 1 quantizes x to each activation type the group needs, on the pool
 * when there are several tokens, in runs of QUANT_TOKENS tokens (claiming
 * token by token cost 5-7% of this phase at 2 threads, with 640 and 2048
 * columns: a claim is a shared cache line).  Phase 2 is one adil_pool_for
 * over chunks.  A chunk is a run of rows of one weight (or, with an
 * epilogue, the same rows of every weight), a multiple of ROW_GRAIN rows so
 * that no two threads write the same cache line of y, sized so that the
 * group makes about CHUNKS_PER_THREAD chunks per thread but none below
 * MIN_CHUNK_BYTES of weights (a claim costs a shared cache line) nor above
 * MAX_CHUNK_BYTES.  Within a chunk, one token (decode) is one tile of all
 * the chunk's rows, so the kernel prepares the activation blocks once and
 * streams the rows in order; several tokens go by tiles of TOKEN_TILE
 * tokens × about TILE_BYTES of weight rows, so a weight row is read from
 * memory once per TOKEN_TILE tokens.  Each tile goes to the type's tile
 * kernel (kernels.h), which keeps small groups of rows and tokens in
 * registers; types without one (the scalar level) loop over vec_dot.
 */
#include "compute/matmul.h"

#include "compute/kernels.h"
#include "compute/repack.h"

#include <inttypes.h>
#include <stdlib.h>

#define ROW_GRAIN         16
#define TOKEN_TILE        32
#define TILE_BYTES        (16 * 1024)
#define CHUNKS_PER_THREAD 4
#define MIN_CHUNK_BYTES   (24 * 1024)
#define MAX_CHUNK_BYTES   (512 * 1024)
#define QUANT_TOKENS      8
#define ACT_ALIGN         64 /* each activation type's rows start on their own cache line */
_Static_assert(ROW_GRAIN % ADIL_R8_ROWS == 0, "chunks start at a group of the 8-row layout");

/* One weight of the group, ready to compute. */
typedef struct mm_part {
    const adil_wtype_kernels *wk;
    adil_tile_dot_fn tile; /* the tile kernel of its layout; NULL: loop over vec_dot */
    int64_t row_align;     /* rows a tile starts at a multiple of (8 for the 8-row layout) */
    const uint8_t *w;      /* [rows][w_row bytes] */
    size_t w_row;
    int64_t rows;
    float *y;           /* [n_tokens][rows] */
    const uint8_t *act; /* [n_tokens][act_row bytes]: x in the weight's activation type */
    size_t act_row;
    int64_t chunk_rows;  /* rows per chunk */
    int64_t first_chunk; /* chunks of earlier parts (without epilogue) */
    int64_t n_chunks;
} mm_part;

typedef struct mm_job {
    mm_part part[ADIL_MM_GROUP_MAX];
    int n;
    int64_t cols, n_tokens;
    const float *x; /* [n_tokens][cols] */
    adil_mm_epilogue_fn epilogue;
    void *user;
    /* quantization: one entry per distinct activation type */
    int n_act;
    const adil_wtype_kernels *at[ADIL_MM_GROUP_MAX];
    uint8_t *act[ADIL_MM_GROUP_MAX];
    size_t act_row[ADIL_MM_GROUP_MAX];
} mm_job;

/* ---- checks ------------------------------------------------------------------ */

static bool activations_are_floats(const adil_wtype_kernels *wk) { return wk->vec_dot_type == ADIL_WT_F32; }

/* Weight i of g: a type with kernels, whole blocks, g's columns and an output. */
static adil_status check_weight(const adil_mm_group *g, int i) {
    const adil_weight *w = g->w[i];
    if (w == NULL || w->data == NULL || g->y[i] == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight %d: expected a weight with data and an output", i);
    }
    if (!adil_wtype_has_kernels(w->type)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight %d: expected a type with kernels, got %s (%" PRIu32 ")", i,
                         adil_wtype_name(w->type), w->type);
    }
    const int64_t block = adil_wtype_facts_get(w->type)->block_size;
    if (w->rows < 1 || w->cols < 1 || w->cols % block != 0 || w->cols != g->w[0]->cols) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight %d: expected %" PRId64 " columns (a positive multiple of %" PRId64
                         ") and rows >= 1, got %" PRId64 " x %" PRId64,
                         i, g->w[0]->cols, block, w->rows, w->cols);
    }
    if (!adil_layout_runs(w, w->rows)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight %d: layout %" PRIu32 " of %s with %" PRId64
                         " rows has no kernel at this CPU level",
                         i, w->layout, adil_wtype_name(w->type), w->rows);
    }
    if (g->epilogue != NULL && w->rows != g->w[0]->rows) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight %d: an epilogue needs %" PRId64 " rows, got %" PRId64, i,
                         g->w[0]->rows, w->rows);
    }
    return ADIL_OK;
}

static adil_status check_group(const adil_mm_group *g, const float *x, int64_t n_tokens) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || g->w[0] == NULL || x == NULL || n_tokens < 1) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: expected 1..%d weights, x non-NULL and n_tokens >= 1, got "
                         "n_tokens %" PRId64,
                         ADIL_MM_GROUP_MAX, n_tokens);
    }
    for (int i = 0; i < g->n; i++) {
        adil_status st = check_weight(g, i);
        if (st != ADIL_OK) {
            return st;
        }
    }
    return ADIL_OK;
}

/* ---- the plan: parts, activation regions, chunks --------------------------------- */

/* Index of activation type `at` in the job's list, added if new. */
static int act_slot(mm_job *j, const adil_wtype_kernels *at) {
    for (int a = 0; a < j->n_act; a++) {
        if (j->at[a] == at) {
            return a;
        }
    }
    j->at[j->n_act] = at;
    return j->n_act++;
}

static size_t align_up(size_t n) { return (n + ACT_ALIGN - 1) & ~(size_t)(ACT_ALIGN - 1); }

/* Fills the parts of a checked group and gives each distinct activation
 * type its region of scratch (NULL: only count); returns the scratch bytes
 * the group needs. */
static size_t plan_parts(mm_job *j, const adil_mm_group *g, const float *x, int64_t n_tokens,
                         uint8_t *scratch) {
    *j = (mm_job){.n = g->n,
                  .cols = g->w[0]->cols,
                  .n_tokens = n_tokens,
                  .x = x,
                  .epilogue = g->epilogue,
                  .user = g->user};
    size_t end = 0;
    for (int i = 0; i < g->n; i++) {
        mm_part *p = &j->part[i];
        *p = (mm_part){.wk = adil_wtype_kernels_get(g->w[i]->type),
                       .row_align = adil_layout_row_align(g->w[i]),
                       .w = g->w[i]->data,
                       .w_row = adil_weight_row_bytes(g->w[i]),
                       .rows = g->w[i]->rows,
                       .y = g->y[i]};
        p->tile = adil_layout_tile(g->w[i], p->wk);
        if (activations_are_floats(p->wk)) { /* F32/F16/BF16 weights dot with x itself */
            p->act = (const uint8_t *)x;
            p->act_row = (size_t)j->cols * sizeof(float);
            continue;
        }
        const int before = j->n_act, a = act_slot(j, adil_wtype_kernels_get(p->wk->vec_dot_type));
        if (a == before) { /* a new activation type: its own region */
            const size_t start = align_up(end);
            j->act_row[a] = adil_row_size(p->wk->vec_dot_type, j->cols);
            j->act[a] = scratch != NULL ? scratch + start : NULL;
            end = start + (size_t)n_tokens * j->act_row[a];
        }
        p->act = j->act[a];
        p->act_row = j->act_row[a];
    }
    return end;
}

/* Rows per chunk for `bytes_per_row` (of every weight the chunk covers). */
static int64_t chunk_rows(int64_t total_bytes, int64_t bytes_per_row, int64_t rows, int nth) {
    if (nth == 1) {
        return rows; /* one chunk: nothing to balance */
    }
    int64_t bytes = total_bytes / ((int64_t)CHUNKS_PER_THREAD * nth);
    bytes = bytes < MIN_CHUNK_BYTES ? MIN_CHUNK_BYTES : bytes > MAX_CHUNK_BYTES ? MAX_CHUNK_BYTES : bytes;
    const int64_t r = (bytes / bytes_per_row + ROW_GRAIN - 1) / ROW_GRAIN * ROW_GRAIN;
    return r < ROW_GRAIN ? ROW_GRAIN : r;
}

/* Cuts the parts into chunks for nth threads; returns the number of chunks. */
static int64_t plan_chunks(mm_job *j, int nth) {
    int64_t total_bytes = 0, row_bytes_all = 0;
    for (int i = 0; i < j->n; i++) {
        total_bytes += j->part[i].rows * (int64_t)j->part[i].w_row;
        row_bytes_all += (int64_t)j->part[i].w_row;
    }
    if (j->epilogue != NULL) { /* chunks of part 0's rows, taken in every part */
        mm_part *p = &j->part[0];
        p->chunk_rows = chunk_rows(total_bytes, row_bytes_all, p->rows, nth);
        return (p->rows + p->chunk_rows - 1) / p->chunk_rows;
    }
    int64_t n_chunks = 0;
    for (int i = 0; i < j->n; i++) {
        mm_part *p = &j->part[i];
        p->chunk_rows = chunk_rows(total_bytes, (int64_t)p->w_row, p->rows, nth);
        p->first_chunk = n_chunks;
        p->n_chunks = (p->rows + p->chunk_rows - 1) / p->chunk_rows;
        n_chunks += p->n_chunks;
    }
    return n_chunks;
}

/* ---- the work ------------------------------------------------------------------- */

/* Tokens [c * QUANT_TOKENS, (c + 1) * QUANT_TOKENS) of x, to every activation type. */
static void quantize_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const mm_job *j = ctx;
    const int64_t t1 = (c + 1) * QUANT_TOKENS < j->n_tokens ? (c + 1) * QUANT_TOKENS : j->n_tokens;
    for (int64_t t = c * QUANT_TOKENS; t < t1; t++) {
        for (int a = 0; a < j->n_act; a++) {
            j->at[a]->quantize_row(j->x + t * j->cols, j->act[a] + (size_t)t * j->act_row[a], j->cols);
        }
    }
}

/* y of part p for weight rows [r0, r1) x tokens [t0, t1): the level's tile
 * kernel, or vec_dot pair by pair where the type has none (scalar level). */
static void dot_tile(const mm_job *j, const mm_part *p, int64_t r0, int64_t r1, int64_t t0, int64_t t1) {
    const adil_tile tile = {
        .n = j->cols,
        .w = p->w + (size_t)r0 * p->w_row,
        .w_stride = p->w_row,
        .n_rows = r1 - r0,
        .act = p->act + (size_t)t0 * p->act_row,
        .act_stride = p->act_row,
        .n_tok = t1 - t0,
        .y = p->y + t0 * p->rows + r0,
        .y_stride = (size_t)p->rows,
    };
    if (p->tile != NULL) {
        p->tile(&tile);
        return;
    }
    for (int64_t t = 0; t < tile.n_tok; t++) {
        const uint8_t *act = tile.act + (size_t)t * tile.act_stride;
        for (int64_t r = 0; r < tile.n_rows; r++) {
            tile.y[(size_t)t * tile.y_stride + (size_t)r] =
                p->wk->vec_dot(j->cols, tile.w + (size_t)r * tile.w_stride, act);
        }
    }
}

/* Rows [r0, r1) of part p for every token, tile by tile. */
static void part_rows(const mm_job *j, const mm_part *p, int64_t r0, int64_t r1) {
    int64_t row_tile = j->n_tokens == 1 ? r1 - r0 : (int64_t)(TILE_BYTES / p->w_row);
    row_tile = row_tile / p->row_align * p->row_align; /* chunks start at multiples of ROW_GRAIN */
    row_tile = row_tile < p->row_align ? p->row_align : row_tile;
    for (int64_t t0 = 0; t0 < j->n_tokens; t0 += TOKEN_TILE) {
        const int64_t t1 = t0 + TOKEN_TILE < j->n_tokens ? t0 + TOKEN_TILE : j->n_tokens;
        for (int64_t rt = r0; rt < r1; rt += row_tile) {
            dot_tile(j, p, rt, rt + row_tile < r1 ? rt + row_tile : r1, t0, t1);
        }
    }
}

static void dot_chunk(void *ctx, int64_t c, int ith) {
    (void)ith;
    const mm_job *j = ctx;
    if (j->epilogue != NULL) { /* the same rows of every part, then the epilogue */
        const mm_part *p0 = &j->part[0];
        const int64_t r0 = c * p0->chunk_rows;
        const int64_t r1 = r0 + p0->chunk_rows < p0->rows ? r0 + p0->chunk_rows : p0->rows;
        for (int i = 0; i < j->n; i++) {
            part_rows(j, &j->part[i], r0, r1);
        }
        j->epilogue(j->user, r0, r1);
        return;
    }
    int i = 0;
    while (c >= j->part[i].first_chunk + j->part[i].n_chunks) {
        i++;
    }
    const mm_part *p = &j->part[i];
    const int64_t r0 = (c - p->first_chunk) * p->chunk_rows;
    part_rows(j, p, r0, r0 + p->chunk_rows < p->rows ? r0 + p->chunk_rows : p->rows);
}

/* ---- entry points ----------------------------------------------------------------- */

size_t adil_matmul_group_scratch_size(const adil_mm_group *g, int64_t n_tokens) {
    if (g == NULL || g->n < 1 || g->n > ADIL_MM_GROUP_MAX || n_tokens < 1) {
        return 0;
    }
    for (int i = 0; i < g->n; i++) { /* outputs are not needed to size the scratch */
        const adil_weight *w = g->w[i];
        if (w == NULL || !adil_wtype_has_kernels(w->type) || w->cols != g->w[0]->cols) {
            return 0;
        }
    }
    mm_job j;
    return plan_parts(&j, g, NULL, n_tokens, NULL);
}

adil_status adil_matmul_group(adil_pool *pool, const adil_mm_group *g, const float *x, int64_t n_tokens,
                              void *scratch, size_t scratch_size) {
    adil_status st = check_group(g, x, n_tokens);
    if (st != ADIL_OK) {
        return st;
    }
    mm_job j;
    const size_t need = plan_parts(&j, g, x, n_tokens, scratch);
    if (need > 0 && (scratch == NULL || scratch_size < need)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "matmul: scratch: expected %zu bytes, got %zu", need,
                         scratch_size);
    }
    const int64_t n_chunks = plan_chunks(&j, adil_pool_n_threads(pool));
    if (j.n_act > 0) { /* one token: too little to be worth waking the pool */
        const int64_t n_runs = (n_tokens + QUANT_TOKENS - 1) / QUANT_TOKENS;
        adil_pool_for(n_tokens > 1 ? pool : NULL, n_runs, quantize_chunk, &j);
    }
    adil_pool_for(pool, n_chunks, dot_chunk, &j);
    return ADIL_OK;
}

size_t adil_matmul_scratch_size(const adil_weight *w, int64_t n_tokens) {
    const adil_mm_group g = {.n = 1, .w = {w}};
    return adil_matmul_group_scratch_size(&g, n_tokens);
}

adil_status adil_matmul(adil_pool *pool, const adil_weight *w, const float *x, int64_t n_tokens, float *y,
                        void *scratch, size_t scratch_size) {
    const adil_mm_group g = {.n = 1, .w = {w}, .y = {y}};
    return adil_matmul_group(pool, &g, x, n_tokens, scratch, scratch_size);
}

adil_status adil_get_rows(const adil_weight *w, const int32_t *ids, int64_t n_ids, float *dst) {
    if (w == NULL || w->data == NULL || (n_ids > 0 && (ids == NULL || dst == NULL))) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "get_rows: expected non-NULL arguments");
    }
    if (!adil_layout_runs(w, w->rows)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "get_rows: layout %" PRIu32 " of %s has no kernel here", w->layout,
                         adil_wtype_name(w->type));
    }
    const adil_wtype_facts *f = adil_wtype_facts_get(w->type);
    const adil_wtype_kernels *wk = adil_wtype_kernels_get(w->type);
    if (f == NULL || wk->dequantize_row == NULL || w->cols < 1 || w->cols % f->block_size) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "get_rows: expected a type with a dequantizer and whole blocks, got %s "
                         "with %" PRId64 " columns",
                         adil_wtype_name(w->type), w->cols);
    }
    size_t row = adil_row_size(w->type, w->cols);
    const bool r8 = w->layout == ADIL_LAYOUT_R8; /* a tied output head: rows back in the file's layout */
    uint8_t *unpacked = r8 ? malloc(row) : NULL;
    if (r8 && unpacked == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "get_rows: cannot allocate a row of %zu bytes", row);
    }
    for (int64_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= w->rows) {
            free(unpacked);
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "get_rows: id %" PRId64 ": expected 0..%" PRId64 ", got %" PRId32, i,
                             w->rows - 1, ids[i]);
        }
        if (r8) adil_unpack_row(w->type, w->data, w->cols, ids[i], unpacked);
        wk->dequantize_row(r8 ? unpacked : (const uint8_t *)w->data + (size_t)ids[i] * row, dst + i * w->cols,
                           w->cols);
    }
    free(unpacked);
    return ADIL_OK;
}
