/*
 * moe.h — the mixture-of-experts feed-forward block (qwen3moe, gpt-oss):
 * a router picks n_expert_used of the layer's n_expert gated FFNs for each
 * token, and the block's output is their weighted sum.
 *
 * Per token t of the normed input xb (T, n_embd):
 *     logits = Wr · xb[t] (+ br)                  router, float32 maths
 *     (e_j, w_j), j < k = gating(logits)          per hp->expert_gating:
 *         SOFTMAX_TOPK: p = softmax(logits), e = the k largest p, w_j = p[e_j]
 *         TOPK_SOFTMAX: e = the k largest logits, w = softmax(logits[e])
 *         then, with hp->expert_weights_norm, w_j /= max(sum w, 2^-14)
 *     out[t] = sum_j w_j * (Wdown_e · act(Wgate_e · x + bg_e, Wup_e · x + bu_e) + bd_e)
 * with the sum in slot order j (largest weight first), as llama.cpp adds
 * them.  Ties between equal scores go to the lower expert id.
 *
 * Speed: the (token, slot) pairs are grouped by expert, so every active
 * expert's rows are read once per batch, for all of its tokens, and experts
 * no token chose are not read at all.
 */
#ifndef ADIL_MODEL_MOE_H
#define ADIL_MODEL_MOE_H

#include "models/tensors.h"
#include "models/transformer.h"

/* Reads "<arch>.expert_count", expert_used_count (1..expert_count) and
 * expert_feed_forward_length into hp (all required). */
adil_status adil_moe_read_hparams(const gguf_file *f, const char *arch, adil_hparams *hp);

/* Floats of the loader's arena that adil_moe_bind_layer may take per layer
 * (router bias and per-expert biases). */
size_t adil_moe_layer_floats(const adil_hparams *hp);

/* Binds layer il's ffn_gate_inp (router; F32, F16 or BF16, else
 * ADIL_STATUS_CAPABILITY), its optional bias, the three expert tensors
 * ffn_{gate,up,down}_exps and their optional biases. */
adil_status adil_moe_bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *arena);

/* Bytes of fw->mm_scratch the block needs for batches of n_batch tokens
 * (0 without experts). */
size_t adil_moe_scratch_size(const adil_transformer *m, int64_t n_batch);

/* out (T, n_embd) = the mixture-of-experts FFN of layer il for the normed
 * input xb (T, n_embd), T <= fw->n_batch; uses fw->moe_* and
 * fw->mm_scratch.  out must not overlap xb. */
adil_status adil_moe_ffn(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb, int64_t T,
                         float *out);

#endif /* ADIL_MODEL_MOE_H */
