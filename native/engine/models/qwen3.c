/*
 * qwen3.c — the Qwen3 architecture (general.architecture = "qwen3"): dense
 * Qwen3 models.  A llama with
 *  - per-head RMS norms of queries and keys (attn_{q,k}_norm, width
 *    head_dim), applied before RoPE;
 *  - NeoX-style RoPE (pairs i, i + n_rot/2);
 *  - no q/k/v biases (bound when a file has them, as llama.cpp does);
 *  - head_dim set by attention.key_length, not n_embd / n_head (0.6B:
 *    1024 wide, 16 heads of 128).
 * Pre-norm blocks with RMS norm, grouped-query attention, SwiGLU FFN, an
 * output head of its own or tied to the embedding.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "qwen3"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 40960, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 1000000.0f, &hp->rope_base))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st; /* linear, yarn or none */

    hp->rope_base_local = hp->rope_base;
    hp->rope_neox = true;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SILU;
    return ADIL_OK;
}

/* The common llama-family tensors, optional biases, then the Q/K norms. */
static adil_status bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const int64_t hd = m->hp.head_dim;
    adil_layer *L = &m->layers[il];
    adil_status st = adil_bind_layer_common(f, m, il, a);
    if (st == ADIL_OK) st = adil_bind_attn_biases(f, m, il, a);
    if (st) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_q_norm.weight", il, hd, a, &L->q_norm, NULL))) return st;
    return adil_bind_vector(f, "blk.%d.attn_k_norm.weight", il, hd, a, &L->k_norm, NULL);
}

static adil_status qwen3_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* norm vectors: 2 of width n_embd and 2 of head_dim per layer, biases, output_norm */
    const size_t per_layer =
        2 * (size_t)m->hp.n_embd + 2 * (size_t)m->hp.head_dim + adil_attn_bias_floats(&m->hp);
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd, &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) st = bind_layer(f, m, il, &arena);
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

static adil_status qwen3_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
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
    /* pre-norm layers: attention (per-head q/k norms before RoPE inside), SwiGLU FFN */
    return adil_prenorm_forward(m, fw, tokens, T, pos0, &attn, adil_gated_ffn, logits, all_logits);
}

const adil_arch adil_arch_qwen3 = {ARCH, qwen3_load, qwen3_forward};
