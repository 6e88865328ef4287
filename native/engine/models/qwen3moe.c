/*
 * qwen3moe.c — the Qwen3-MoE architecture (general.architecture =
 * "qwen3moe"): Qwen3-30B-A3B, Qwen3-235B-A22B and their kind.
 *
 * Llama's pre-norm layer with:
 *  - per-head RMS norms of queries and keys (before RoPE), as qwen3;
 *  - NeoX-style RoPE (pairs i, i + n_rot/2);
 *  - a mixture-of-experts FFN on every layer (moe.h): softmax over the
 *    router logits, the top expert_used_count experts, their weights
 *    renormalised to sum to 1 (norm_top_k_prob; llama.cpp always does for
 *    this architecture, a file may say otherwise with expert_weights_norm),
 *    SwiGLU experts, no shared expert;
 *  - an output head of its own or tied to the embedding.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/moe.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "qwen3moe"

/* expert_gating_func values (llama.cpp's llama_expert_gating_func_type) */
#define GATING_FUNC_SOFTMAX 1

/* The gating keys: softmax only, renormalised unless the file says not. */
static adil_status read_gating(const gguf_file *f, adil_hparams *hp) {
    uint32_t func = GATING_FUNC_SOFTMAX;
    adil_status st = gguf_get_u32(f, ARCH ".expert_gating_func", &func, &(bool){false});
    if (st != ADIL_OK) return st;
    if (func != GATING_FUNC_SOFTMAX)
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: key '" ARCH
                         ".expert_gating_func': this engine supports 1 (softmax) for " ARCH ", got %u",
                         func);
    bool norm = true;
    if ((st = gguf_get_bool(f, ARCH ".expert_weights_norm", &norm, &(bool){false}))) return st;
    hp->expert_gating = ADIL_GATING_SOFTMAX_TOPK;
    hp->expert_weights_norm = norm;
    return ADIL_OK;
}

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 32768, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 1000000.0f, &hp->rope_base))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st;
    if ((st = adil_moe_read_hparams(f, ARCH, hp))) return st;
    if ((st = read_gating(f, hp))) return st;

    hp->rope_base_local = hp->rope_base;
    hp->rope_neox = true;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SILU;
    return ADIL_OK;
}

/* Attention tensors, Q/K norms, then the experts. */
static adil_status bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const int64_t hd = m->hp.head_dim;
    adil_layer *L = &m->layers[il];
    adil_status st = adil_bind_attn_common(f, m, il, a);
    if (st) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_q_norm.weight", il, hd, a, &L->q_norm, NULL))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_k_norm.weight", il, hd, a, &L->k_norm, NULL))) return st;
    return adil_moe_bind_layer(f, m, il, a);
}

static adil_status qwen3moe_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* vectors: 2 norms of n_embd and 2 of head_dim per layer, the experts'
     * biases, output_norm */
    const size_t per_layer =
        2 * (size_t)m->hp.n_embd + 2 * (size_t)m->hp.head_dim + adil_moe_layer_floats(&m->hp);
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd, &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) st = bind_layer(f, m, il, &arena);
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

static adil_status qwen3moe_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                    int64_t T, int64_t pos0, float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    const adil_attn_cfg attn = {
        .rope = {.n_rot = hp->n_rot,
                 .base = hp->rope_base,
                 .scale = hp->rope_scale,
                 .neox = true,
                 .yarn = &hp->rope_yarn},
        .window = 0,
        .scale = hp->attn_scale,
    };
    /* pre-norm layers: attention (q/k normed per head), the token's experts */
    return adil_prenorm_forward(m, fw, tokens, T, pos0, &attn, adil_moe_ffn, logits, all_logits);
}

const adil_arch adil_arch_qwen3moe = {ARCH, qwen3moe_load, qwen3moe_forward};
