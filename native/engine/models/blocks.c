/*
 * blocks.c — self attention and the gated FFN (see blocks.h).
 */
#include "models/blocks.h"

adil_status adil_self_attention(const adil_transformer *m, adil_forward *fw, int64_t il,
                                const float *xb, int64_t T, int64_t pos0, const adil_attn_cfg *cfg,
                                float *out) {
    const adil_hparams *hp = &m->hp;
    const adil_layer *L = &m->layers[il];
    float *k = adil_kv_k(&fw->kv, il, pos0); /* (T, n_head_kv * head_dim), rows of the cache */
    float *v = adil_kv_v(&fw->kv, il, pos0); /* (T, n_head_kv * head_dim_v) */
    adil_status st;

    /* projections: q (T, n_head * head_dim); k and v into the cache */
    if ((st = adil_matmul(fw->pool, &L->wq, xb, T, fw->q, fw->mm_scratch, fw->mm_scratch_size))) return st;
    if ((st = adil_matmul(fw->pool, &L->wk, xb, T, k, fw->mm_scratch, fw->mm_scratch_size))) return st;
    if ((st = adil_matmul(fw->pool, &L->wv, xb, T, v, fw->mm_scratch, fw->mm_scratch_size))) return st;

    /* per-head RMS norms of queries and keys (gemma3): rows of head_dim */
    if (L->q_norm) adil_rmsnorm_rows(fw->q, fw->q, L->q_norm, T * hp->n_head, hp->head_dim, hp->rms_eps);
    if (L->k_norm) adil_rmsnorm_rows(k, k, L->k_norm, T * hp->n_head_kv, hp->head_dim, hp->rms_eps);

    /* rotary position embedding of queries and keys */
    adil_rope_rows(fw->q, T, hp->n_head * hp->head_dim, hp->n_head, hp->head_dim, pos0, &cfg->rope);
    adil_rope_rows(k, T, hp->n_head_kv * hp->head_dim, hp->n_head_kv, hp->head_dim, pos0, &cfg->rope);

    /* softmax(q·Kᵀ * scale) · V over the visible cache: att (T, n_head * head_dim_v) */
    adil_attention(fw, hp, il, fw->q, fw->att, T, pos0, cfg->window, cfg->scale);

    /* output projection: out (T, n_embd) */
    return adil_matmul(fw->pool, &L->wo, fw->att, T, out, fw->mm_scratch, fw->mm_scratch_size);
}

adil_status adil_gated_ffn(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                           int64_t T, float *out) {
    const adil_layer *L = &m->layers[il];
    adil_status st;
    /* gate and up projections: hb, hb2 (T, n_ff) */
    if ((st = adil_matmul(fw->pool, &L->ffn_gate, xb, T, fw->hb, fw->mm_scratch, fw->mm_scratch_size))) return st;
    if ((st = adil_matmul(fw->pool, &L->ffn_up, xb, T, fw->hb2, fw->mm_scratch, fw->mm_scratch_size))) return st;
    /* hb = act(hb) * hb2 */
    adil_gated_act(fw->pool, m->hp.ffn_act, fw->hb, fw->hb2, T * m->hp.n_ff);
    /* down projection: out (T, n_embd) */
    return adil_matmul(fw->pool, &L->ffn_down, fw->hb, T, out, fw->mm_scratch, fw->mm_scratch_size);
}
