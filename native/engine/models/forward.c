/*
 * forward.c — the per-context state of a forward pass: KV cache and
 * activation buffers sized from the model and the context params.
 */
#include "models/transformer.h"

#include "compute/attention.h"
#include "compute/matmul_group.h"
#include "models/blocks.h"

#include <stdlib.h>
#include <string.h>

/* a * b floats, refusing overflow (0 then). */
static size_t floats(int64_t a, int64_t b) {
    if (a <= 0 || b <= 0) return 0;
    if ((uint64_t)a > SIZE_MAX / sizeof(float) / (uint64_t)b) return 0;
    return (size_t)a * (size_t)b;
}

static adil_status alloc_floats(float **out, int64_t a, int64_t b, const char *what) {
    size_t n = floats(a, b);
    *out = n ? malloc(n * sizeof(float)) : NULL;
    if (!*out)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: cannot allocate %s (%lld x %lld floats)",
                         what, (long long)a, (long long)b);
    return ADIL_OK;
}

/* The most scratch any matrix product of a batch needs. */
static size_t matmul_scratch(const adil_transformer *m, int64_t n_batch) {
    const adil_mm_group head = {.n = 1, .w = {&m->output}, .y = {NULL}};
    const size_t blocks = adil_blocks_scratch_size(m, n_batch);
    const size_t out = adil_matmul_group_scratch_size(&head, n_batch);
    return blocks > out ? blocks : out;
}

adil_status adil_forward_init(adil_forward *fw, const adil_transformer *m, int64_t n_ctx,
                              int64_t n_batch, adil_pool *pool) {
    const adil_hparams *hp = &m->hp;
    memset(fw, 0, sizeof *fw);
    fw->pool = pool;
    fw->n_batch = n_batch;
    adil_status st = adil_kv_cache_init(&fw->kv, hp->n_layer, n_ctx, hp->n_head_kv * hp->head_dim,
                                        hp->n_head_kv * hp->head_dim_v);
    const int64_t nth = adil_pool_n_threads(pool);
    if (st == ADIL_OK) st = alloc_floats(&fw->x, n_batch, hp->n_embd, "x");
    if (st == ADIL_OK) st = alloc_floats(&fw->xb, n_batch, hp->n_embd, "xb");
    if (st == ADIL_OK) st = alloc_floats(&fw->xb2, n_batch, hp->n_embd, "xb2");
    if (st == ADIL_OK) st = alloc_floats(&fw->q, n_batch, hp->n_head * hp->head_dim, "q");
    if (st == ADIL_OK) st = alloc_floats(&fw->att, n_batch, hp->n_head * hp->head_dim_v, "att");
    if (st == ADIL_OK) st = alloc_floats(&fw->scores, nth * ADIL_ATT_MAX_ROWS, n_ctx, "scores");
    if (st == ADIL_OK) st = alloc_floats(&fw->hb, n_batch, hp->n_ff, "hb");
    if (st == ADIL_OK) st = alloc_floats(&fw->hb2, n_batch, hp->n_ff, "hb2");
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        if (st == ADIL_OK) st = alloc_floats(&fw->rope[i].cs, n_batch, hp->n_rot / 2 > 0 ? hp->n_rot / 2 : 1, "rope cos");
        if (st == ADIL_OK) st = alloc_floats(&fw->rope[i].sn, n_batch, hp->n_rot / 2 > 0 ? hp->n_rot / 2 : 1, "rope sin");
    }
    if (st == ADIL_OK) {
        fw->mm_scratch_size = matmul_scratch(m, n_batch);
        fw->mm_scratch = malloc(fw->mm_scratch_size ? fw->mm_scratch_size : 1);
        if (!fw->mm_scratch)
            st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: cannot allocate %zu bytes of matmul scratch",
                           fw->mm_scratch_size);
    }
    if (st != ADIL_OK) adil_forward_free(fw);
    return st;
}

void adil_forward_free(adil_forward *fw) {
    adil_kv_cache_free(&fw->kv);
    free(fw->x);
    free(fw->xb);
    free(fw->xb2);
    free(fw->q);
    free(fw->att);
    free(fw->scores);
    free(fw->hb);
    free(fw->hb2);
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        free(fw->rope[i].cs);
        free(fw->rope[i].sn);
    }
    free(fw->mm_scratch);
    memset(fw, 0, sizeof *fw);
}
