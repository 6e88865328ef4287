/*
 * qwen2.c — the Qwen2 architecture (general.architecture = "qwen2"): Qwen2
 * and Qwen2.5.  A llama with
 *  - biases on the q, k and v projections (attn_{q,k,v}.bias);
 *  - NeoX-style RoPE (pairs i, i + n_rot/2) over the whole head;
 *  - an output head of its own or tied to the embedding.
 * Pre-norm blocks with RMS norm, grouped-query attention, SwiGLU FFN.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "qwen2"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 32768, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-6f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 10000.0f, &hp->rope_base))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st; /* linear, yarn or none */

    hp->rope_base_local = hp->rope_base;
    hp->rope_neox = true;
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SILU;
    return ADIL_OK;
}

static adil_status qwen2_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* norm vectors: 2 of width n_embd per layer and its biases, plus output_norm */
    const size_t per_layer = 2 * (size_t)m->hp.n_embd + adil_attn_bias_floats(&m->hp);
    adil_f32_arena arena;
    st = adil_load_begin(f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd, &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) {
        st = adil_bind_layer_common(f, m, il, &arena);
        if (st == ADIL_OK) st = adil_bind_attn_biases(f, m, il, &arena);
    }
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

static adil_status qwen2_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
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
    /* pre-norm layers: attention (q/k/v biases inside), SwiGLU FFN */
    return adil_prenorm_forward(m, fw, tokens, T, pos0, &attn, adil_gated_ffn, logits, all_logits);
}

const adil_arch adil_arch_qwen2 = {ARCH, qwen2_load, qwen2_forward};
