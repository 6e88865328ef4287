/*
 * repack_weights.c — the load step that puts a model's matrices into the
 * 8-row layout (compute/repack.h; see adil_transformer_repack).
 *
 * The copy replaces the file's bytes for those weights: the kernels never
 * read the row-major rows again.  When they are a read-only private mapping,
 * the pages wholly inside them are dropped from the process (MADV_DONTNEED:
 * they stay in the page cache, and would be read from the file again if
 * touched), so the model's resident memory is not counted twice.
 */
#define _DEFAULT_SOURCE /* madvise */

#include "compute/repack.h"
#include "models/transformer.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MAX_WEIGHTS_PER_LAYER 10
#define GROUPS_PER_UNIT       512 /* 8-row groups one pool claim converts (and drops) */
#define REPACK_ALIGN          64

typedef struct repack_item {
    adil_weight *w;
    bool expert; /* a stacked expert tensor: a token reads n_expert_used / n_expert of it */
    uint8_t *dst;
    int64_t first_unit;
} repack_item;

typedef struct repack_job {
    repack_item *items;
    int64_t n_items, n_units;
    bool drop_source;
} repack_job;

static bool eligible(const adil_weight *w) {
    return w->data != NULL && w->layout == ADIL_LAYOUT_ROWS && w->rows % ADIL_R8_ROWS == 0 &&
           adil_repack_supported(w->type);
}

/* The matrix weights of layer il (some may be absent: data NULL); the last
 * ones from index FIRST_EXPERT on are the stacked expert tensors. */
#define FIRST_EXPERT 7
static int layer_weights(adil_layer *L, adil_weight *out[MAX_WEIGHTS_PER_LAYER]) {
    adil_weight *all[MAX_WEIGHTS_PER_LAYER] = {
        &L->wq,          &L->wk,           &L->wv,       &L->wo,
        &L->ffn_gate,    &L->ffn_up,       &L->ffn_down, &L->ffn_gate_exps,
        &L->ffn_up_exps, &L->ffn_down_exps};
    memcpy(out, all, sizeof all);
    return MAX_WEIGHTS_PER_LAYER;
}

/* Bytes of w's copy, rounded up to whole cache lines (each copy starts on one). */
static size_t copy_bytes(const adil_weight *w) {
    return (adil_repack_bytes(w->type, w->rows, w->cols) + REPACK_ALIGN - 1) & ~(size_t)(REPACK_ALIGN - 1);
}

static int64_t units_of(const adil_weight *w) {
    const int64_t groups = w->rows / ADIL_R8_ROWS;
    return (groups + GROUPS_PER_UNIT - 1) / GROUPS_PER_UNIT;
}

/* Collects the eligible weights (items NULL: only counts); returns the count
 * and adds their bytes to *bytes. */
static int64_t collect(adil_transformer *m, repack_item *items, size_t *bytes) {
    int64_t n = 0;
    for (int64_t il = 0; il <= m->hp.n_layer; il++) {
        adil_weight *ws[MAX_WEIGHTS_PER_LAYER];
        int k = 1;
        ws[0] = &m->output;
        if (il < m->hp.n_layer) k = layer_weights(&m->layers[il], ws);
        for (int i = 0; i < k; i++) {
            if (!eligible(ws[i])) continue;
            if (items != NULL) items[n] = (repack_item){.w = ws[i], .expert = k > 1 && i >= FIRST_EXPERT};
            *bytes += copy_bytes(ws[i]);
            n++;
        }
    }
    return n;
}

/* What one decoded token reads grows by the layout's extra bytes (the
 * unpacked scales) of w, or for expert tensors by their routed share (as
 * adil_model_info.decode_bytes counts them, models/loader.c). */
static void count_decode_bytes(adil_transformer *m, const repack_item *it) {
    const adil_weight *w = it->w;
    uint64_t extra =
        adil_repack_bytes(w->type, w->rows, w->cols) - (uint64_t)w->rows * adil_row_size(w->type, w->cols);
    if (it->expert) extra = extra / (uint64_t)m->hp.n_expert * (uint64_t)m->hp.n_expert_used;
    m->decode_bytes += extra;
}

/* Drops the mapped pages wholly inside [p, p + n). */
static void drop_pages(const void *p, size_t n) {
    const long page_size = sysconf(_SC_PAGESIZE);
    if (page_size <= 0) return;
    const uintptr_t page = (uintptr_t)page_size;
    const uintptr_t start = ((uintptr_t)p + page - 1) / page * page, end = ((uintptr_t)p + n) / page * page;
    if (end > start)
        madvise((void *)start, end - start, MADV_DONTNEED); /* advice: a failure changes nothing */
}

static void convert_unit(void *ctx, int64_t u, int ith) {
    (void)ith;
    const repack_job *j = ctx;
    int64_t i = 0;
    while (i + 1 < j->n_items && j->items[i + 1].first_unit <= u) i++;
    const repack_item *it = &j->items[i];
    const int64_t g0 = (u - it->first_unit) * GROUPS_PER_UNIT;
    const int64_t groups = it->w->rows / ADIL_R8_ROWS;
    const int64_t g1 = g0 + GROUPS_PER_UNIT < groups ? g0 + GROUPS_PER_UNIT : groups;
    adil_repack(it->w->type, it->w->data, it->dst, it->w->cols, g0, g1);
    if (j->drop_source) { /* unit by unit, so the peak stays near one copy */
        const size_t group = ADIL_R8_ROWS * adil_row_size(it->w->type, it->w->cols);
        drop_pages((const uint8_t *)it->w->data + (size_t)g0 * group, (size_t)(g1 - g0) * group);
    }
}

adil_status adil_transformer_repack(adil_transformer *m, adil_pool *pool, bool source_mapped) {
    const char *env = getenv("ADIL_REPACK");
    if (env != NULL && strcmp(env, "0") == 0) return ADIL_OK;
    size_t bytes = 0;
    const int64_t n = collect(m, NULL, &bytes);
    if (n == 0) return ADIL_OK;
    repack_item *items = calloc((size_t)n, sizeof *items);
    void *buf = items != NULL ? aligned_alloc(REPACK_ALIGN, bytes) : NULL; /* bytes: whole lines */
    if (buf == NULL) {
        free(items);
        return ADIL_OK; /* row-major still works */
    }
    bytes = 0;
    collect(m, items, &bytes);
    repack_job job = {.items = items, .n_items = n, .drop_source = source_mapped};
    size_t at = 0;
    for (int64_t i = 0; i < n; i++) {
        adil_weight *w = items[i].w;
        items[i].dst = (uint8_t *)buf + at;
        items[i].first_unit = job.n_units;
        job.n_units += units_of(w);
        at += copy_bytes(w);
    }
    adil_pool_for(pool, job.n_units, convert_unit, &job);
    const bool tied = m->output.data == m->tok_embd.data;
    for (int64_t i = 0; i < n; i++) {
        count_decode_bytes(m, &items[i]);
        items[i].w->data = items[i].dst;
        items[i].w->layout = ADIL_LAYOUT_R8;
    }
    if (tied) m->tok_embd = m->output; /* its rows are looked up from the same copy (adil_get_rows) */
    free(items);
    m->repacked = buf;
    return ADIL_OK;
}
