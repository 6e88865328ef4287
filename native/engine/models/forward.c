/*
 * forward.c — the per-context state of a forward pass: KV cache and
 * activation buffers sized from the model and the context params.
 */
#include "models/transformer.h"

#include "compute/attention.h"

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
    size_t most = adil_matmul_scratch_size(&m->output, n_batch);
    for (int64_t il = 0; il < m->hp.n_layer; il++) {
        const adil_layer *L = &m->layers[il];
        const adil_weight *ws[] = {&L->wq, &L->wk, &L->wv, &L->wo, &L->ffn_gate, &L->ffn_up, &L->ffn_down};
        for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) {
            size_t s = adil_matmul_scratch_size(ws[i], n_batch);
            if (s > most) most = s;
        }
    }
    return most;
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
    free(fw->mm_scratch);
    memset(fw, 0, sizeof *fw);
}
