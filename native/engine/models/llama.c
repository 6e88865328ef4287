/*
 * llama.c — the llama architecture (general.architecture = "llama"): llama
 * 1/2/3 and most of their family.  Pre-norm blocks with RMS norm, RoPE on
 * interleaved pairs (2i, 2i+1) as llama.cpp's converter lays the weights out,
 * grouped-query attention, SwiGLU FFN, an output head of its own or tied to
 * the embedding, and llama 3's optional per-frequency RoPE factors
 * (rope_freqs.weight).  Variations the metadata asks for:
 *  - attention.sliding_window (Mistral 7B v0.1): every layer sees only the
 *    last sliding_window positions (llama.cpp ignores this key);
 *  - rope.scaling.type linear (or none);
 *  - optional q/k/v/output biases, as llama.cpp reads them.
 */
#include "models/blocks.h"
#include "models/loader.h"
#include "models/tensors.h"

#include <math.h>

#define ARCH "llama"

static adil_status read_hparams(const gguf_file *f, adil_hparams *hp) {
    adil_status st;
    int64_t ctx = 0;
    if ((st = adil_hp_read_common(f, ARCH, hp))) return st;
    if ((st = adil_hp_int(f, ARCH, "rope.dimension_count", hp->head_dim, 1024, &hp->n_rot))) return st;
    if ((st = adil_hp_int(f, ARCH, "context_length", 4096, 1 << 24, &ctx))) return st;
    if ((st = adil_hp_int(f, ARCH, "attention.sliding_window", 0, 1 << 24, &hp->sliding_window))) return st;
    if ((st = adil_hp_float(f, ARCH, "attention.layer_norm_rms_epsilon", 1e-5f, &hp->rms_eps))) return st;
    if ((st = adil_hp_float(f, ARCH, "rope.freq_base", 10000.0f, &hp->rope_base))) return st;
    hp->n_ctx_train = (uint32_t)ctx;
    if ((st = adil_rope_scaling(f, ARCH, hp))) return st;

    hp->rope_base_local = hp->rope_base;
    hp->rope_neox = false;
    hp->swa_period = 0; /* a window, when there is one, on every layer */
    hp->attn_scale = 1.0f / sqrtf((float)hp->head_dim);
    hp->embd_scale = 1.0f;
    hp->ffn_act = ADIL_FFN_SILU;
    return ADIL_OK;
}

static adil_status llama_load(const gguf_file *f, adil_transformer *m) {
    adil_status st = read_hparams(f, &m->hp);
    if (st == ADIL_OK) st = adil_hparams_check(m);
    if (st != ADIL_OK) return st;
    /* norm vectors: 2 of width n_embd per layer and its biases, output_norm, rope factors */
    const size_t per_layer = 2 * (size_t)m->hp.n_embd + adil_attn_bias_floats(&m->hp);
    adil_f32_arena arena;
    st = adil_load_begin(
        f, m, per_layer * (size_t)m->hp.n_layer + (size_t)m->hp.n_embd + (size_t)m->hp.n_rot / 2, &arena);
    for (int il = 0; st == ADIL_OK && il < m->hp.n_layer; il++) {
        st = adil_bind_layer_common(f, m, il, &arena);
        if (st == ADIL_OK) st = adil_bind_attn_biases(f, m, il, &arena);
    }
    if (st == ADIL_OK)
        st = adil_bind_vector(f, "rope_freqs.weight", -1, m->hp.n_rot / 2, &arena, &m->rope_factors,
                              &(bool){false});
    if (st == ADIL_OK) st = adil_load_end(f, m, &arena);
    return st;
}

static adil_status llama_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                 int64_t T, int64_t pos0, float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    const adil_attn_cfg attn = {
        .rope = {.n_rot = hp->n_rot,
                 .base = hp->rope_base,
                 .scale = hp->rope_scale,
                 .neox = false,
                 .factors = m->rope_factors,
                 .yarn = &hp->rope_yarn},
        .window = hp->sliding_window, /* 0: none */
        .scale = hp->attn_scale,
    };
    /* pre-norm layers: attention, SwiGLU FFN */
    return adil_prenorm_forward(m, fw, tokens, T, pos0, &attn, adil_gated_ffn, logits, all_logits);
}

const adil_arch adil_arch_llama = {ARCH, llama_load, llama_forward};
