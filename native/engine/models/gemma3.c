/*
 * gemma3.c — the Gemma 3 architecture (general.architecture = "gemma3").
 *
 * What sets it apart from llama:
 *  - embeddings scaled by sqrt(n_embd);
 *  - RMS norms before AND after attention and the FFN (the post-norms are
 *    applied to the block output before the residual add);
 *  - per-head RMS norms of queries and keys;
 *  - sliding-window attention on 5 of every 6 layers (layer l is global when
 *    l % 6 == 5), local layers with their own RoPE base (10000) and no
 *    scaling, global ones with rope.freq_base;
 *  - NeoX-style RoPE (pairs i, i + head_dim/2);
 *  - GELU (tanh approximation) gated FFN;
 *  - output tied to the embedding; optional final logit soft-cap.
 * Norm weights are used as stored: llama.cpp's converter already folded
 * Gemma's (1 + w) into the GGUF values.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "gemma3"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 8192, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_int(f, ARCH, "attention.sliding_window", 0, 1 << 24, &hp->sliding_window))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 1000000.0f, &hp->rope_base))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base_swa", 10000.0f, &hp->rope_base_local))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st;
    float softcap = 0.0f;
    if ((st = gguf_get_f32(f, ARCH ".final_logit_softcapping", &softcap, &(bool){false}))) return st;

    hp->n_rot = hp->head_dim;
    hp->rope_neox = true;
    hp->swa_period = 6;
    /* query_pre_attn_scalar: head_dim, except the 27B model (62 layers) */
    hp->attn_scale = hp->n_layer == 62 ? 1.0f / sqrtf((float)(hp->n_embd / hp->n_head))
                                       : 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = sqrtf((float)hp->n_embd);
    hp->final_softcap = softcap > 0.0f && isfinite(softcap) ? softcap : 0.0f;
    hp->ffn_act = ADIL_FFN_GELU_TANH;
    return ADIL_OK;
}

/* The common llama-family tensors, then gemma3's Q/K norms and post-norms. */
static adil_status bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const int64_t D = m->hp.n_embd, hd = m->hp.head_dim;
    adil_layer *L = &m->layers[il];
    adil_status st = adil_bind_layer_common(f, m, il, a);
    if (st) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_q_norm.weight", il, hd, a, &L->q_norm, NULL))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_k_norm.weight", il, hd, a, &L->k_norm, NULL))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.post_attention_norm.weight", il, D, a, &L->post_attn_norm, NULL)))
        return st;
    return adil_bind_vector(f, "blk.%d.post_ffw_norm.weight", il, D, a, &L->post_ffn_norm, NULL);
}

static adil_status gemma3_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* norm vectors: 4 of width n_embd and 2 of head_dim per layer, plus output_norm */
    const size_t per_layer = 4 * (size_t)m->hp.n_embd + 2 * (size_t)m->hp.head_dim;
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd, &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) st = bind_layer(f, m, il, &arena);
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

/* Layer il's view of positions: local layers see the last sliding_window
 * positions and rotate with the local base, unscaled. */
static adil_attn_cfg layer_attn(const adil_hparams *hp, int64_t il) {
    const bool local = adil_layer_is_local(hp, il);
    adil_attn_cfg c = {
        .rope = {.n_rot = hp->n_rot,
                 .base = local ? hp->rope_base_local : hp->rope_base,
                 .scale = local ? 1.0f : hp->rope_scale,
                 .neox = true,
                 .factors = NULL,
                 .yarn = &hp->rope_yarn},
        .window = local ? hp->sliding_window : 0,
        .scale = hp->attn_scale,
    };
    return c;
}

static adil_status gemma3_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                  int64_t T, int64_t pos0, float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    const int64_t D = hp->n_embd;
    float *x = fw->x;     /* (T, D) the residual stream */
    float *xb = fw->xb;   /* (T, D) normed input of a block */
    float *xb2 = fw->xb2; /* (T, D) output of a block */
    adil_status st;

    /* token embeddings, scaled by sqrt(D) */
    if ((st = adil_get_rows(&m->tok_embd, tokens, T, x))) return st;
    adil_scale(x, hp->embd_scale, T * D);

    for (int64_t il = 0; il < hp->n_layer; il++) {
        const adil_layer *L = &m->layers[il];
        const adil_attn_cfg attn = layer_attn(hp, il);

        /* a cancel or a deadline stops between layers */
        if (fw->stop && (st = fw->stop(fw->stop_user))) return st;

        /* attention: pre-norm, attend, post-norm, residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->attn_norm, T, D, hp->rms_eps);
        if ((st = adil_self_attention(m, fw, il, xb, T, pos0, &attn, xb2))) return st;
        adil_rmsnorm_rows(fw->pool, xb2, xb2, L->post_attn_norm, T, D, hp->rms_eps);
        adil_add(x, xb2, T * D);

        /* feed-forward: pre-norm, GELU-gated FFN, post-norm, residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->ffn_norm, T, D, hp->rms_eps);
        if ((st = adil_gated_ffn(m, fw, il, xb, T, xb2))) return st;
        adil_rmsnorm_rows(fw->pool, xb2, xb2, L->post_ffn_norm, T, D, hp->rms_eps);
        adil_add(x, xb2, T * D);
    }

    /* final norm and the tied output head (optionally soft-capped) */
    return adil_output_logits(m, fw, x, T, logits, all_logits);
}

const adil_arch adil_arch_gemma3 = {ARCH, gemma3_load, gemma3_forward};
