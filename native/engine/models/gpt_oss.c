/*
 * gpt_oss.c — OpenAI's gpt-oss (general.architecture = "gpt-oss"):
 * gpt-oss-20b and gpt-oss-120b.
 *
 * Llama's pre-norm layer with:
 *  - biases on the q, k, v and output projections;
 *  - attention sinks: a learned logit per head joins each softmax, with no
 *    value (compute/attention.h);
 *  - sliding-window attention on every other layer (layer l is local when
 *    l % 2 == 0; the window is attention.sliding_window, 128 in the released
 *    files), one RoPE for both kinds (rope.freq_base_swa if the file has it);
 *  - NeoX-style RoPE with YaRN scaling (factor 32 over 4096 positions in the
 *    released files; adil_yarn in transformer.h);
 *  - scores scaled by 1 / sqrt(head_dim), with n_head * head_dim != n_embd;
 *  - a mixture-of-experts FFN on every layer (moe.h): the router's top
 *    expert_used_count logits (router bias added), softmax over those;
 *    experts with biases on gate, up and down, and the clamped swiglu-oai
 *    activation (compute/activation.h); the norm before it is called
 *    post_attention_norm in the file;
 *  - an output head of its own.
 * The released files store the experts in MXFP4.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/moe.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "gpt-oss"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 131072, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_int(f, ARCH, "attention.sliding_window", -1, 1 << 24, &hp->sliding_window))) return st;
    if ((st = adil_hp_int(f, ARCH, "attention.sliding_window_pattern", 2, 1024, &hp->swa_period))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 10000.0f, &hp->rope_base))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base_swa", hp->rope_base, &hp->rope_base_local))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st;
    if ((st = adil_moe_read_hparams(f, ARCH, hp))) return st;
    /* queries are split into heads of n_rot (llama.cpp): every dim rotates */
    if (hp->n_rot != hp->head_dim)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: key '" ARCH ".rope.dimension_count': expected the head width %lld, got %lld",
                         (long long)hp->head_dim, (long long)hp->n_rot);

    hp->rope_neox = true;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SWIGLU_OAI;
    hp->expert_gating = ADIL_GATING_TOPK_SOFTMAX;
    hp->expert_weights_norm = false;
    return ADIL_OK;
}

/* Attention tensors and biases, the sinks, the norm before the experts,
 * then the experts. */
static adil_status bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    adil_layer *L = &m->layers[il];
    adil_status st = adil_bind_attention(f, m, il, a);
    if (st) return st;
    if ((st = adil_bind_attn_biases(f, m, il, a))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_sinks.weight", il, m->hp.n_head, a, &L->attn_sinks, NULL)))
        return st;
    if ((st = adil_bind_vector(f, "blk.%d.post_attention_norm.weight", il, m->hp.n_embd, a, &L->ffn_norm,
                               NULL)))
        return st;
    return adil_moe_bind_layer(f, m, il, a);
}

static adil_status gpt_oss_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* vectors per layer: 2 norms, the attention biases, the sinks, the
     * experts' biases; then output_norm */
    const adil_hparams *hp = &m->hp;
    const size_t per_layer =
        2 * (size_t)hp->n_embd + adil_attn_bias_floats(hp) + (size_t)hp->n_head + adil_moe_layer_floats(hp);
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)hp->n_layer + (size_t)hp->n_embd, &arena);
    for (int il = 0; st == ADIL_OK && il < hp->n_layer; il++) st = bind_layer(f, m, il, &arena);
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

/* Layer il's view of positions: local layers see the last sliding_window
 * positions; both kinds rotate with YaRN. */
static adil_attn_cfg layer_attn(const adil_hparams *hp, int64_t il) {
    const bool local = adil_layer_is_local(hp, il);
    adil_attn_cfg c = {
        .rope = {.n_rot = hp->n_rot,
                 .base = local ? hp->rope_base_local : hp->rope_base,
                 .scale = hp->rope_scale,
                 .neox = true,
                 .yarn = &hp->rope_yarn},
        .window = local ? hp->sliding_window : 0,
        .scale = hp->attn_scale,
    };
    return c;
}

static adil_status gpt_oss_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                   int64_t T, int64_t pos0, float *logits, bool all_logits) {
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
        const adil_attn_cfg attn = layer_attn(hp, il);

        /* a cancel or a deadline stops between layers */
        if (fw->stop && (st = fw->stop(fw->stop_user))) return st;

        /* attention: pre-norm, attend (biases, YaRN, sinks), residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->attn_norm, T, D, hp->rms_eps);
        if ((st = adil_self_attention(m, fw, il, xb, T, pos0, &attn, xb2))) return st;
        adil_add(x, xb2, T * D);

        /* feed-forward: pre-norm, the token's experts, residual */
        adil_rmsnorm_rows(fw->pool, xb, x, L->ffn_norm, T, D, hp->rms_eps);
        if ((st = adil_moe_ffn(m, fw, il, xb, T, xb2))) return st;
        adil_add(x, xb2, T * D);
    }

    /* final norm and output head */
    return adil_output_logits(m, fw, x, T, logits, all_logits);
}

const adil_arch adil_arch_gpt_oss = {ARCH, gpt_oss_load, gpt_oss_forward};
