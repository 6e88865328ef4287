/*
 * blocks.h — the two blocks every layer of these architectures has: self
 * attention over the KV cache, and a gated feed-forward network.  The
 * architecture files compose them with their own norms and residuals.
 */
#ifndef ADIL_MODEL_BLOCKS_H
#define ADIL_MODEL_BLOCKS_H

#include "compute/activation.h"
#include "models/ops.h"

/* How one layer's attention looks at positions. */
typedef struct adil_attn_cfg {
    adil_rope rope;
    int64_t window; /* 0 = every earlier position, else the last `window` */
    float scale;    /* multiplies q·k */
} adil_attn_cfg;

/* out (T, n_embd) = Wo · attention(q, k, v) for the normed input xb
 * (T, n_embd) of layer il at positions pos0..: projects q into fw->q and k,
 * v straight into the cache rows pos0..pos0+T-1, adds the layer's biases and
 * applies its q/k RMS norms when it has them, rotates q and k, attends
 * (fw->att) and projects (plus the output bias when there is one). */
adil_status adil_self_attention(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                                int64_t T, int64_t pos0, const adil_attn_cfg *cfg, float *out);

/* Bytes of fw->mm_scratch the two blocks need for batches of n_batch tokens. */
size_t adil_blocks_scratch_size(const adil_transformer *m, int64_t n_batch);

/* The gated activation of `act` at the selected CPU level:
 * gate = act(gate) * up (compute/activation.h). */
adil_glu_fn adil_ffn_glu(adil_ffn_act act);

/* out (T, n_embd) = Wdown · (act(Wgate · xb) * (Wup · xb)) for layer il;
 * uses fw->hb and fw->hb2 (T, n_ff). */
adil_status adil_gated_ffn(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                           int64_t T, float *out);

/* A layer's feed-forward block: adil_gated_ffn, or adil_moe_ffn (moe.h). */
typedef adil_status (*adil_ffn_fn)(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb,
                                   int64_t T, float *out);

/* The llama-family forward pass (an adil_forward_fn with the layer's
 * attention view and FFN block as parameters): token embeddings; per layer
 * x += attention(rmsnorm(x)), then x += ffn(rmsnorm(x)), stopping between
 * layers on fw->stop; final norm and output head.  llama, qwen2, qwen3,
 * phi3 and qwen3moe are exactly this; what sets them apart happens inside
 * adil_self_attention (biases, q/k norms, fused views) and `ffn`. */
adil_status adil_prenorm_forward(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                 int64_t T, int64_t pos0, const adil_attn_cfg *attn, adil_ffn_fn ffn,
                                 float *logits, bool all_logits);

#endif /* ADIL_MODEL_BLOCKS_H */
