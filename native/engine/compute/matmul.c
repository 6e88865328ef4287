/*
 * matmul.c — y = x · Wᵀ over the thread pool, and embedding lookup.
 *
 * Two phases: the activations are quantized once to the weight type's
 * activation type (so every weight row is dotted with ready-made blocks),
 * then the weight rows are split over the workers in runs of ROW_GRAIN rows
 * (whole cache lines of y per worker, no false sharing).  Within its rows a
 * worker walks tiles: up to TOKEN_TILE tokens × as many weight rows as fit in
 * about TILE_BYTES, so during prefill a weight row is loaded from memory once
 * per TOKEN_TILE tokens instead of once per token.  Each tile goes to the
 * type's tile kernel (weight_types.h), which keeps small groups of rows and
 * tokens in registers; in decode a worker's rows are one tile, streamed in
 * order.  Types without a tile kernel (the scalar level) loop over vec_dot.
 * Either way every y equals the level's vec_dot of its row and token, so the
 * result does not depend on the number of threads or tokens.
 */
#include "compute/matmul.h"

#include "compute/weight_types.h"

#include <inttypes.h>

#define ROW_GRAIN 16
#define TOKEN_TILE 32
#define TILE_BYTES (16 * 1024)

typedef struct matmul_job {
    const adil_wtype_traits *wt; /* weight type */
    const adil_wtype_traits *at; /* activation type */
    const uint8_t *w;            /* [rows][w_row bytes] */
    size_t w_row;
    int64_t rows, cols;
    const float *x;              /* [n_tokens][cols] */
    const uint8_t *act;          /* [n_tokens][act_row bytes], quantized x */
    size_t act_row;
    int64_t n_tokens;
    float *y;                    /* [n_tokens][rows] */
} matmul_job;

/* The activation type's traits for weight traits `wt`. */
static const adil_wtype_traits *activation_traits(const adil_wtype_traits *wt) {
    return adil_wtype_get(wt->vec_dot_type);
}

static bool activations_are_floats(const adil_wtype_traits *wt) {
    return wt->vec_dot_type == ADIL_WT_F32;
}

static adil_status check_weight(const adil_weight *w) {
    if (w == NULL || w->data == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "matmul: weight: expected non-NULL");
    }
    const adil_wtype_traits *wt = adil_wtype_get(w->type);
    if (wt == NULL || wt->vec_dot == NULL || wt->dequantize_row == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: weight type: expected one with kernels, got %s (%" PRIu32 ")",
                         adil_wtype_name(w->type), w->type);
    }
    if (w->rows < 1 || w->cols < 1 || w->cols % wt->block_size != 0) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: shape: expected rows >= 1 and cols a positive multiple of %"
                         PRId64 ", got %" PRId64 " x %" PRId64,
                         wt->block_size, w->rows, w->cols);
    }
    return ADIL_OK;
}

size_t adil_matmul_scratch_size(const adil_weight *w, int64_t n_tokens) {
    const adil_wtype_traits *wt = w != NULL ? adil_wtype_get(w->type) : NULL;
    if (wt == NULL || n_tokens < 1 || activations_are_floats(wt)) {
        return 0;
    }
    return (size_t)n_tokens * adil_row_size(wt->vec_dot_type, w->cols);
}

static void quantize_job(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    int64_t t0, t1;
    adil_pool_split(j->n_tokens, 1, ith, nth, &t0, &t1);
    for (int64_t t = t0; t < t1; t++) {
        j->at->quantize_row(j->x + t * j->cols, (void *)(j->act + (size_t)t * j->act_row),
                            j->cols);
    }
}

/* y for weight rows [r0, r1) x tokens [t0, t1): the level's tile kernel,
 * or vec_dot pair by pair where the type has none (scalar level). */
static void dot_tile(const matmul_job *j, int64_t r0, int64_t r1, int64_t t0, int64_t t1) {
    adil_tile tile = {
        .n = j->cols, .w = j->w + (size_t)r0 * j->w_row, .w_stride = j->w_row,
        .n_rows = r1 - r0, .act = j->act + (size_t)t0 * j->act_row, .act_stride = j->act_row,
        .n_tok = t1 - t0, .y = j->y + t0 * j->rows + r0, .y_stride = (size_t)j->rows,
    };
    if (j->wt->tile_dot != NULL) {
        j->wt->tile_dot(&tile);
        return;
    }
    for (int64_t t = 0; t < tile.n_tok; t++) {
        const uint8_t *act = tile.act + (size_t)t * tile.act_stride;
        for (int64_t r = 0; r < tile.n_rows; r++) {
            tile.y[(size_t)t * tile.y_stride + (size_t)r] =
                j->wt->vec_dot(j->cols, tile.w + (size_t)r * tile.w_stride, act);
        }
    }
}

static void dot_job(void *ctx, int ith, int nth) {
    const matmul_job *j = ctx;
    int64_t r0, r1;
    adil_pool_split(j->rows, ROW_GRAIN, ith, nth, &r0, &r1);
    /* One token (decode): one tile of all the rows, so the kernel prepares
     * the activation blocks once and streams the rows in order. */
    int64_t row_tile = j->n_tokens == 1 ? r1 - r0 : (int64_t)(TILE_BYTES / j->w_row);
    row_tile = row_tile < 1 ? 1 : row_tile;
    for (int64_t t0 = 0; t0 < j->n_tokens; t0 += TOKEN_TILE) {
        int64_t t1 = t0 + TOKEN_TILE < j->n_tokens ? t0 + TOKEN_TILE : j->n_tokens;
        for (int64_t rt = r0; rt < r1; rt += row_tile) {
            dot_tile(j, rt, rt + row_tile < r1 ? rt + row_tile : r1, t0, t1);
        }
    }
}

adil_status adil_matmul(adil_pool *pool, const adil_weight *w, const float *x, int64_t n_tokens,
                        float *y, void *scratch, size_t scratch_size) {
    adil_status st = check_weight(w);
    if (st != ADIL_OK) {
        return st;
    }
    if (x == NULL || y == NULL || n_tokens < 1) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: expected x, y non-NULL and n_tokens >= 1, got n_tokens %" PRId64,
                         n_tokens);
    }
    size_t need = adil_matmul_scratch_size(w, n_tokens);
    if (need > 0 && (scratch == NULL || scratch_size < need)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "matmul: scratch: expected %zu bytes, got %zu", need, scratch_size);
    }
    const adil_wtype_traits *wt = adil_wtype_get(w->type);
    matmul_job job = {
        .wt = wt, .at = activation_traits(wt), .w = w->data,
        .w_row = adil_row_size(w->type, w->cols), .rows = w->rows, .cols = w->cols, .x = x,
        .n_tokens = n_tokens, .y = y,
    };
    if (activations_are_floats(wt)) {
        job.act = (const uint8_t *)x; /* F32/F16/BF16 weights dot with x itself */
        job.act_row = (size_t)w->cols * sizeof(float);
    } else {
        job.act = scratch;
        job.act_row = adil_row_size(wt->vec_dot_type, w->cols);
        /* One token's quantization is too small to be worth waking the pool. */
        adil_pool_run(n_tokens > 1 ? pool : NULL, quantize_job, &job);
    }
    adil_pool_run(pool, dot_job, &job);
    return ADIL_OK;
}

adil_status adil_get_rows(const adil_weight *w, const int32_t *ids, int64_t n_ids, float *dst) {
    if (w == NULL || w->data == NULL || (n_ids > 0 && (ids == NULL || dst == NULL))) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "get_rows: expected non-NULL arguments");
    }
    const adil_wtype_traits *wt = adil_wtype_get(w->type);
    if (wt == NULL || wt->dequantize_row == NULL || w->cols < 1 || w->cols % wt->block_size) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "get_rows: expected a type with a dequantizer and whole blocks, got %s "
                         "with %" PRId64 " columns",
                         adil_wtype_name(w->type), w->cols);
    }
    size_t row = adil_row_size(w->type, w->cols);
    for (int64_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= w->rows) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "get_rows: id %" PRId64 ": expected 0..%" PRId64 ", got %" PRId32, i,
                             w->rows - 1, ids[i]);
        }
        wt->dequantize_row((const uint8_t *)w->data + (size_t)ids[i] * row, dst + i * w->cols,
                           w->cols);
    }
    return ADIL_OK;
}
