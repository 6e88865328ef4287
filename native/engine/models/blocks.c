/*
 * blocks.c — self attention and the gated FFN (see blocks.h).
 *
 * Matrix products go through adil_matmul_group: q, k and v are one pool job
 * with x quantized once, gate and up another, with the gated activation run
 * on each chunk of rows as soon as both are computed.
 */
#include "models/blocks.h"

#include "compute/activation.h"
#include "compute/matmul.h"

/* The q/k/v projections of layer il (outputs bound by the caller). */
static adil_mm_group qkv_group(const adil_layer *L, float *q, float *k, float *v) {
    adil_mm_group g = {.n = 3, .w = {&L->wq, &L->wk, &L->wv}, .y = {q, k, v}};
    return g;
}

/* What the FFN epilogue needs: act(gate) * up on rows [r0, r1) of each token. */
typedef struct glu_rows {
    adil_glu_fn glu;
    float *gate;     /* (T, n_ff) */
    const float *up; /* (T, n_ff) */
    int64_t T, n_ff;
} glu_rows;

static void glu_epilogue(void *user, int64_t r0, int64_t r1) {
    const glu_rows *g = user;
    for (int64_t t = 0; t < g->T; t++) g->glu(g->gate + t * g->n_ff + r0, g->up + t * g->n_ff + r0, r1 - r0);
}

static adil_mm_group ffn_group(const adil_layer *L, float *hb, float *hb2, glu_rows *glu) {
    adil_mm_group g = {
        .n = 2, .w = {&L->ffn_gate, &L->ffn_up}, .y = {hb, hb2}, .epilogue = glu_epilogue, .user = glu};
    return g;
}

static adil_mm_group single(const adil_weight *w, float *y) {
    adil_mm_group g = {.n = 1, .w = {w}, .y = {y}};
    return g;
}

adil_glu_fn adil_ffn_glu(adil_ffn_act act) {
    const adil_act_kernels *k = adil_act_kernels_get();
    switch (act) {
    case ADIL_FFN_GELU_TANH:
        return k->gelu_tanh;
    case ADIL_FFN_SWIGLU_OAI:
        return k->swiglu_oai;
    case ADIL_FFN_SILU:
    default:
        return k->silu;
    }
}

size_t adil_blocks_scratch_size(const adil_transformer *m, int64_t n_batch) {
    size_t most = 0;
    for (int64_t il = 0; il < m->hp.n_layer; il++) {
        const adil_layer *L = &m->layers[il];
        glu_rows glu = {0};
        const adil_mm_group gs[] = {qkv_group(L, NULL, NULL, NULL), single(&L->wo, NULL),
                                    ffn_group(L, NULL, NULL, &glu), single(&L->ffn_down, NULL)};
        for (size_t i = 0; i < sizeof gs / sizeof gs[0]; i++) {
            const size_t s = adil_matmul_group_scratch_size(&gs[i], n_batch);
            most = s > most ? s : most;
        }
    }
    return most;
}

adil_status adil_self_attention(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                                int64_t T, int64_t pos0, const adil_attn_cfg *cfg, float *out) {
    const adil_hparams *hp = &m->hp;
    const adil_layer *L = &m->layers[il];
    float *k = fw->k; /* (T, n_head_kv * head_dim), stored into the cache once roped */
    float *v = fw->v; /* (T, n_head_kv * head_dim_v) */
    adil_status st;

    /* projections: q (T, n_head * head_dim), k, v */
    const adil_mm_group qkv = qkv_group(L, fw->q, k, v);
    if ((st = adil_matmul_group(fw->pool, &qkv, xb, T, fw->mm_scratch, fw->mm_scratch_size))) return st;

    /* projection biases (qwen2, gpt-oss) */
    if (L->bq) adil_add_bias(fw->q, L->bq, T, L->wq.rows);
    if (L->bk) adil_add_bias(k, L->bk, T, L->wk.rows);
    if (L->bv) adil_add_bias(v, L->bv, T, L->wv.rows);

    /* per-head RMS norms of queries and keys (gemma3, qwen3): rows of head_dim */
    if (L->q_norm)
        adil_rmsnorm_rows(fw->pool, fw->q, fw->q, L->q_norm, T * hp->n_head, hp->head_dim, hp->rms_eps);
    if (L->k_norm) adil_rmsnorm_rows(fw->pool, k, k, L->k_norm, T * hp->n_head_kv, hp->head_dim, hp->rms_eps);

    /* rotary position embedding of queries and keys */
    adil_rope_rows(fw, fw->q, T, hp->n_head * hp->head_dim, hp->n_head, hp->head_dim, pos0, &cfg->rope);
    adil_rope_rows(fw, k, T, hp->n_head_kv * hp->head_dim, hp->n_head_kv, hp->head_dim, pos0, &cfg->rope);

    /* keys and values of positions pos0 .. pos0 + T - 1 into the cache (as
     * its element type) */
    adil_kv_store(&fw->kv, il, pos0, T, k, v);

    /* softmax(q·Kᵀ * scale) · V over the visible cache (with the layer's
     * sinks, if any): att (T, n_head * head_dim_v) */
    adil_attention(fw, hp, il, fw->q, fw->att, T, pos0, cfg->window, cfg->scale, L->attn_sinks);

    /* output projection: out (T, n_embd) */
    const adil_mm_group wo = single(&L->wo, out);
    if ((st = adil_matmul_group(fw->pool, &wo, fw->att, T, fw->mm_scratch, fw->mm_scratch_size))) return st;
    if (L->bo) adil_add_bias(out, L->bo, T, L->wo.rows);
    return ADIL_OK;
}

adil_status adil_gated_ffn(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                           int64_t T, float *out) {
    const adil_layer *L = &m->layers[il];
    adil_status st;
    /* hb = act(Wgate · xb) * (Wup · xb), (T, n_ff), chunk by chunk */
    glu_rows glu = {
        .glu = adil_ffn_glu(m->hp.ffn_act), .gate = fw->hb, .up = fw->hb2, .T = T, .n_ff = m->hp.n_ff};
    const adil_mm_group gate_up = ffn_group(L, fw->hb, fw->hb2, &glu);
    if ((st = adil_matmul_group(fw->pool, &gate_up, xb, T, fw->mm_scratch, fw->mm_scratch_size))) return st;
    /* down projection: out (T, n_embd) */
    const adil_mm_group down = single(&L->ffn_down, out);
    return adil_matmul_group(fw->pool, &down, fw->hb, T, fw->mm_scratch, fw->mm_scratch_size);
}

adil_status adil_prenorm_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                 int64_t T, int64_t pos0, const adil_attn_cfg *attn, adil_ffn_fn ffn,
                                 float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    const int64_t D = hp->n_embd;
    float *x = fw->x;     /* (T, D) the residual stream */
    float *xb = fw->xb;   /* (T, D) normed input of a block */
    float *xb2 = fw->xb2; /* (T, D) output of a block */
    adil_status st;

    /* token embeddings */
    if ((st = adil_get_rows(&m->tok_embd, tokens, T, x))) return st;

    for (int64_t il = 0; il < hp->n_layer; il++) {
        const adil_layer *L = &m->layers[il];

        /* a cancel or a deadline stops between layers */
        if (fw->stop && (st = fw->stop(fw->stop_user))) return st;

        /* attention: pre-norm, attend, residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->attn_norm, T, D, hp->rms_eps);
        if ((st = adil_self_attention(m, fw, il, xb, T, pos0, attn, xb2))) return st;
        adil_add(x, xb2, T * D);

        /* feed-forward: pre-norm, FFN block, residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->ffn_norm, T, D, hp->rms_eps);
        if ((st = ffn(m, fw, il, xb, T, xb2))) return st;
        adil_add(x, xb2, T * D);
    }

    /* final norm and output head */
    return adil_output_logits(m, fw, x, T, logits, all_logits);
}
