/*
 * loader.c — the steps every architecture's loader shares: hyperparameter
 * checks, the embedding, the output head, and the parameter count.
 */
#include "models/loader.h"

#include "compute/weight_types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define ADIL_MAX_VOCAB (1LL << 24)

adil_status adil_hparams_check(const adil_transformer *m) {
    const adil_hparams *hp = &m->hp;
    if (hp->head_dim < 1 || hp->head_dim > 1024)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT, "model: key_length: expected 1..1024, got %lld",
                         (long long)hp->head_dim);
    if (hp->n_head % hp->n_head_kv != 0)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: head_count %lld: expected a multiple of head_count_kv %lld",
                         (long long)hp->n_head, (long long)hp->n_head_kv);
    if (hp->n_rot < 2 || hp->n_rot % 2 != 0 || hp->n_rot > hp->head_dim || hp->n_rot > 1024)
        return adil_fail(
            ADIL_STATUS_MODEL_FORMAT,
            "model: rope dimension count: expected even and <= head width %lld (and 1024), got %lld",
            (long long)hp->head_dim, (long long)hp->n_rot);
    return ADIL_OK;
}

adil_status adil_load_begin(const gguf_file *f, adil_transformer *m, size_t vector_floats,
                            adil_f32_arena *arena) {
    const gguf_tensor *t = gguf_find_tensor(f, "token_embd.weight");
    if (!t)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: tensor 'token_embd.weight': expected present, got missing");
    if (t->ne[1] < 1 || t->ne[1] > (uint64_t)ADIL_MAX_VOCAB)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: tensor 'token_embd.weight' at offset %llu: expected 1..%lld rows, got %llu",
                         (unsigned long long)t->offset, ADIL_MAX_VOCAB, (unsigned long long)t->ne[1]);
    m->hp.n_vocab = (int64_t)t->ne[1];
    adil_status st =
        adil_bind_matrix(f, "token_embd.weight", -1, m->hp.n_vocab, m->hp.n_embd, &m->tok_embd, NULL);
    if (st != ADIL_OK) return st;

    m->layers = calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    m->owned = malloc((vector_floats ? vector_floats : 1) * sizeof(float));
    if (!m->layers || !m->owned)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "model: cannot allocate %lld layers",
                         (long long)m->hp.n_layer);
    arena->base = m->owned;
    arena->used = 0;
    arena->cap = vector_floats;
    return ADIL_OK;
}

adil_status adil_hp_read_common(const gguf_file *f, const char *arch, adil_hparams *hp) {
    adil_status st;
    if ((st = adil_hp_int(f, arch, "embedding_length", -1, 1 << 16, &hp->n_embd))) return st;
    if ((st = adil_hp_int(f, arch, "block_count", -1, 1024, &hp->n_layer))) return st;
    if ((st = adil_hp_int(f, arch, "feed_forward_length", -1, 1 << 20, &hp->n_ff))) return st;
    if ((st = adil_hp_int(f, arch, "attention.head_count", -1, 1024, &hp->n_head))) return st;
    if ((st = adil_hp_int(f, arch, "attention.head_count_kv", hp->n_head, 1024, &hp->n_head_kv))) return st;
    if ((st = adil_hp_int(f, arch, "attention.key_length", hp->n_embd / hp->n_head, 1024, &hp->head_dim)))
        return st;
    return adil_hp_int(f, arch, "attention.value_length", hp->head_dim, 1024, &hp->head_dim_v);
}

adil_status adil_bind_attention(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const adil_hparams *hp = &m->hp;
    adil_layer *L = &m->layers[il];
    const int64_t D = hp->n_embd, hd = hp->head_dim;
    const int64_t q_rows = hp->n_head * hd, kv_rows = hp->n_head_kv * hd;
    adil_status st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_norm.weight", il, D, a, &L->attn_norm, NULL))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.attn_q.weight", il, q_rows, D, &L->wq, NULL))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.attn_k.weight", il, kv_rows, D, &L->wk, NULL))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.attn_v.weight", il, hp->n_head_kv * hp->head_dim_v, D, &L->wv,
                               NULL)))
        return st;
    return adil_bind_matrix(f, "blk.%d.attn_output.weight", il, D, hp->n_head * hp->head_dim_v, &L->wo, NULL);
}

adil_status adil_bind_attn_common(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    adil_status st = adil_bind_attention(f, m, il, a);
    if (st) return st;
    return adil_bind_vector(f, "blk.%d.ffn_norm.weight", il, m->hp.n_embd, a, &m->layers[il].ffn_norm, NULL);
}

adil_status adil_bind_layer_common(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const int64_t D = m->hp.n_embd, ff = m->hp.n_ff;
    adil_layer *L = &m->layers[il];
    adil_status st = adil_bind_attn_common(f, m, il, a);
    if (st) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.ffn_gate.weight", il, ff, D, &L->ffn_gate, NULL))) return st;
    if ((st = adil_bind_matrix(f, "blk.%d.ffn_up.weight", il, ff, D, &L->ffn_up, NULL))) return st;
    return adil_bind_matrix(f, "blk.%d.ffn_down.weight", il, D, ff, &L->ffn_down, NULL);
}

size_t adil_attn_bias_floats(const adil_hparams *hp) {
    return (size_t)(hp->n_head * hp->head_dim + hp->n_head_kv * (hp->head_dim + hp->head_dim_v) + hp->n_embd);
}

adil_status adil_bind_attn_biases(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    adil_layer *L = &m->layers[il];
    bool found = false; /* each bias is optional */
    adil_status st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_q.bias", il, L->wq.rows, a, &L->bq, &found))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_k.bias", il, L->wk.rows, a, &L->bk, &found))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.attn_v.bias", il, L->wv.rows, a, &L->bv, &found))) return st;
    return adil_bind_vector(f, "blk.%d.attn_output.bias", il, L->wo.rows, a, &L->bo, &found);
}

/* Bytes (or, with elements set, elements) of a weight; 0 when absent. */
static uint64_t weight_size(const adil_weight *w, bool elements) {
    if (!w->data) return 0;
    return elements ? (uint64_t)w->rows * (uint64_t)w->cols
                    : (uint64_t)w->rows * adil_row_size(w->type, w->cols);
}

/* What one decoded token reads of `total` (the bytes, or with elements set
 * the elements, of every tensor): all of it, except that of each expert
 * tensor only the n_expert_used / n_expert share a token is routed through
 * (on average over tokens) counts, and of a token embedding that is not also
 * the output head one row. */
static uint64_t per_token(const adil_transformer *m, bool separate_output, uint64_t total, bool elements) {
    uint64_t n = total;
    for (int64_t il = 0; m->hp.n_expert > 0 && il < m->hp.n_layer; il++) {
        const adil_layer *L = &m->layers[il];
        const uint64_t experts = weight_size(&L->ffn_gate_exps, elements) +
                                 weight_size(&L->ffn_up_exps, elements) +
                                 weight_size(&L->ffn_down_exps, elements);
        const uint64_t unused =
            experts / (uint64_t)m->hp.n_expert * (uint64_t)(m->hp.n_expert - m->hp.n_expert_used);
        n -= unused < n ? unused : n;
    }
    if (separate_output) {
        const uint64_t embd = weight_size(&m->tok_embd, elements);
        const uint64_t row =
            elements ? (uint64_t)m->tok_embd.cols : adil_row_size(m->tok_embd.type, m->tok_embd.cols);
        if (embd > row && embd - row < n) n -= embd - row;
    }
    return n;
}

adil_status adil_load_end(const gguf_file *f, adil_transformer *m, adil_f32_arena *arena) {
    adil_status st =
        adil_bind_vector(f, "output_norm.weight", -1, m->hp.n_embd, arena, &m->output_norm, NULL);
    if (st != ADIL_OK) return st;
    bool separate = false;
    st = adil_bind_matrix(f, "output.weight", -1, m->hp.n_vocab, m->hp.n_embd, &m->output, &separate);
    if (st != ADIL_OK) return st;
    if (!separate) m->output = m->tok_embd; /* tied: the embedding is the output head */

    m->n_params = 0;
    m->n_bytes = 0;
    for (uint64_t i = 0; i < gguf_n_tensors(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        m->n_params += t->ne[0] * t->ne[1] * t->ne[2] * t->ne[3];
        m->n_bytes += t->n_bytes;
    }
    m->decode_bytes = per_token(m, separate, m->n_bytes, false);
    m->decode_params = per_token(m, separate, m->n_params, true);
    return ADIL_OK;
}

/* llama.cpp's yarn_attn_factor for scaling factor `factor` (llama-context.cpp):
 * YaRN's magnitude 1 + 0.1 ln(factor), divided by the same term that the
 * rope multiplies in again, times rope.scaling.attn_factor.  Computed in
 * float, in llama.cpp's order. */
static float yarn_attn_factor(float factor, float attn_factor) {
    const float mscale = factor <= 1.0f ? 1.0f : 0.1f * logf(factor) + 1.0f;
    return mscale * (1.0f / (1.0f + 0.1f * logf(factor))) * attn_factor;
}

adil_status adil_rope_scaling(const gguf_file *f, const char *arch, adil_hparams *hp) {
    char key[128];
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    gguf_str type = {"", 0};
    adil_status st = gguf_get_cstr(f, key, &type, &(bool){false});
    if (st != ADIL_OK) return st;
    const bool yarn = gguf_str_eq(type, "yarn");
    if (type.len && !gguf_str_eq(type, "linear") && !gguf_str_eq(type, "none") && !yarn)
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: key '%s': this engine supports 'linear', 'yarn' and 'none', got '%.*s'", key,
                         (int)(type.len > 32 ? 32 : type.len), type.ptr);
    float factor = 1.0f, attn_factor = 1.0f;
    int64_t n_ctx_orig = 0;
    if ((st = adil_hp_float(f, arch, "rope.scaling.factor", 1.0f, &factor))) return st;
    if ((st = adil_hp_float(f, arch, "rope.scaling.attn_factor", 1.0f, &attn_factor))) return st;
    if ((st = adil_hp_int(f, arch, "rope.scaling.original_context_length", hp->n_ctx_train, 1 << 24,
                          &n_ctx_orig)))
        return st;
    hp->rope_scale = gguf_str_eq(type, "none") ? 1.0f : 1.0f / factor;
    hp->rope_yarn = (adil_yarn){
        .ext_factor = yarn ? 1.0f : 0.0f,
        .attn_factor = yarn ? yarn_attn_factor(1.0f / hp->rope_scale, attn_factor) : attn_factor,
        .beta_fast = 32.0f,
        .beta_slow = 1.0f,
        .n_ctx_orig = n_ctx_orig > 0 ? n_ctx_orig : 1,
    };
    return ADIL_OK;
}
