/*
 * phi3.c — the Phi-3 architecture (general.architecture = "phi3"): Phi-3,
 * Phi-3.5 and Phi-4(-mini) dense models.  A llama with
 *  - q, k and v fused into one matrix attn_qkv (rows [q; k; v]), split here
 *    into three views of its rows (separate attn_q/k/v are read too);
 *  - gate and up fused into ffn_up (rows [gate; up], 2 * n_ff), split the
 *    same way: SwiGLU is silu(first half) * second half;
 *  - NeoX-style RoPE over the first rope.dimension_count dims of a head
 *    (partial rotary: Phi-4-mini rotates 96 of 128);
 *  - an output head of its own or tied to the embedding.
 * attention.sliding_window is ignored, as llama.cpp does (its converter's
 * value does not describe the model's layers correctly).
 *
 * LongRoPE (Phi-3-128k, Phi-3.5, Phi-4-mini): per-frequency divisors
 * rope_factors_short.weight for contexts up to
 * rope.scaling.original_context_length, rope_factors_long.weight past it
 * (chosen per context, as llama.cpp does), and cos / sin multiplied by
 * rope.scaling.attn_factor (read by adil_rope_scaling into rope_yarn).
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "phi3"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 4096, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 10000.0f, &hp->rope_base))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st; /* linear, yarn or none */

    hp->rope_base_local = hp->rope_base;
    hp->rope_neox = true;
    hp->sliding_window = 0; /* see the top of this file */
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SILU;
    return ADIL_OK;
}

/* q, k, v: views of the fused attn_qkv (and its bias) when the file has it,
 * else the separate tensors and their optional biases. */
static adil_status bind_qkv(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const adil_hparams *hp = &m->hp;
    adil_layer *L = &m->layers[il];
    const int64_t nq = hp->n_head * hp->head_dim, nk = hp->n_head_kv * hp->head_dim;
    const int64_t nv = hp->n_head_kv * hp->head_dim_v;
    adil_weight qkv;
    bool fused = false;
    adil_status st =
        adil_bind_matrix(f, "blk.%d.attn_qkv.weight", il, nq + nk + nv, hp->n_embd, &qkv, &fused);
    if (st) return st;
    if (!fused) {
        if ((st = adil_bind_matrix(f, "blk.%d.attn_q.weight", il, nq, hp->n_embd, &L->wq, NULL))) return st;
        if ((st = adil_bind_matrix(f, "blk.%d.attn_k.weight", il, nk, hp->n_embd, &L->wk, NULL))) return st;
        if ((st = adil_bind_matrix(f, "blk.%d.attn_v.weight", il, nv, hp->n_embd, &L->wv, NULL))) return st;
        return ADIL_OK;
    }
    L->wq = adil_weight_rows(&qkv, 0, nq);
    L->wk = adil_weight_rows(&qkv, nq, nk);
    L->wv = adil_weight_rows(&qkv, nq + nk, nv);
    const float *b = NULL;
    bool biased = false;
    if ((st = adil_bind_vector(f, "blk.%d.attn_qkv.bias", il, nq + nk + nv, a, &b, &biased))) return st;
    if (biased) {
        L->bq = b;
        L->bk = b + nq;
        L->bv = b + nq + nk;
    }
    return ADIL_OK;
}

static adil_status bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const adil_hparams *hp = &m->hp;
    const int64_t D = hp->n_embd, ff = hp->n_ff;
    adil_layer *L = &m->layers[il];
    adil_weight up;
    adil_status st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_norm.weight", il, D, a, &L->attn_norm, NULL))) return st;
    if ((st = bind_qkv(f, m, il, a))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.attn_output.weight", il, D, hp->n_head * hp->head_dim_v, &L->wo,
                               NULL)))
        return st;
    if ((st = adil_bind_vector(f, "blk.%d.ffn_norm.weight", il, D, a, &L->ffn_norm, NULL))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.ffn_up.weight", il, 2 * ff, D, &up, NULL))) return st;
    L->ffn_gate = adil_weight_rows(&up, 0, ff);
    L->ffn_up = adil_weight_rows(&up, ff, ff);
    return adil_bind_matrix(f, "blk.%d.ffn_down.weight", il, D, ff, &L->ffn_down, NULL);
}

/* LongRoPE's two sets of divisors: both or neither. */
static adil_status bind_rope_factors(const gguf_file *f, adil_transformer *m, adil_f32_arena *a) {
    const int64_t n = m->hp.n_rot / 2;
    bool has_short = false, has_long = false;
    adil_status st = adil_bind_vector(f, "rope_factors_short.weight", -1, n, a, &m->rope_factors, &has_short);
    if (st == ADIL_OK)
        st = adil_bind_vector(f, "rope_factors_long.weight", -1, n, a, &m->rope_factors_long, &has_long);
    if (st == ADIL_OK && has_short != has_long)
        return adil_fail(
            ADIL_STATUS_MODEL_FORMAT,
            "model: tensor 'rope_factors_%s.weight': expected present with rope_factors_%s.weight, "
            "got missing",
            has_short ? "long" : "short", has_short ? "short" : "long");
    return st;
}

static adil_status phi3_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* norm vectors: 2 of width n_embd per layer, the fused q/k/v bias, output_norm, 2 sets of rope factors */
    const size_t per_layer = 2 * (size_t)m->hp.n_embd + adil_attn_bias_floats(&m->hp);
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd + (size_t)m->hp.n_rot,
                         &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) st = bind_layer(f, m, il, &arena);
    if (st == ADIL_OK) st = bind_rope_factors(f, m, &arena);
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

static adil_status phi3_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens, int64_t T,
                                int64_t pos0, float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    /* LongRoPE: the long divisors when this context reaches past the original one */
    const bool long_ctx = m->rope_factors_long && fw->kv.n_ctx > hp->rope_yarn.n_ctx_orig;
    const adil_attn_cfg attn = {
        .rope = {.n_rot = hp->n_rot,
                 .base = hp->rope_base,
                 .scale = hp->rope_scale,
                 .neox = true,
                 .factors = long_ctx ? m->rope_factors_long : m->rope_factors,
                 .yarn = &hp->rope_yarn},
        .window = 0,
        .scale = hp->attn_scale,
    };
    /* pre-norm layers: attention (q/k/v: views of the fused matrix), SwiGLU FFN
     * (gate and up: halves of the fused ffn_up) */
    return adil_prenorm_forward(m, fw, tokens, T, pos0, &attn, adil_gated_ffn, logits, all_logits);
}

const adil_arch adil_arch_phi3 = {ARCH, phi3_load, phi3_forward};
