/*
 * ops.h — the non-matmul steps of a transformer forward pass: RMS norm, RoPE,
 * residual adds, attention over the KV cache, and the final logit soft-cap.
 * Matrix products are compute/matmul.h; the gated activation runs
 * inside the FFN's (blocks.c).
 *
 * Row-major buffers; (T, n) means T rows of n floats.
 */
#ifndef ADIL_MODEL_OPS_H
#define ADIL_MODEL_OPS_H

#include "models/transformer.h"

#include <stdbool.h>
#include <stdint.h>

/* out[t] = x[t] / sqrt(mean(x[t]²) + eps) * w for each of T rows of n
 * (out may equal x), on the pool when there are many rows. */
void adil_rmsnorm_rows(adil_pool *pool, float *out, const float *x, const float *w, int64_t T, int64_t n,
                       float eps);

/* x[i] += y[i], i < n. */
void adil_add(float *x, const float *y, int64_t n);

/* x[t, i] += b[i] for each of T rows of n: a bias on a projection's output. */
void adil_add_bias(float *x, const float *b, int64_t T, int64_t n);

/* x[i] *= s, i < n. */
void adil_scale(float *x, float s, int64_t n);

/* Rotates the first n_rot dims of each of n_heads heads (head_dim apart) of
 * T rows of width row_width, row t at position pos0 + t.  Frequency i
 * (< n_rot/2) turns by pos * scale * base^(-2i/n_rot) / factors[i]
 * (factors may be NULL), or by YaRN's mix of that and the unscaled angle
 * (rope->yarn, see adil_yarn in transformer.h), cos and sin then multiplied
 * by its magnitude.  neox pairs dims (i, i + n_rot/2), otherwise
 * (2i, 2i + 1).  The angles' cos / sin are computed once per batch and
 * configuration and kept in fw->rope for the other layers (adil_rope is in
 * transformer.h). */
void adil_rope_rows(adil_forward *fw, float *x, int64_t T, int64_t row_width, int64_t n_heads,
                    int64_t head_dim, int64_t pos0, const adil_rope *rope);

/* Causal attention of T query rows (positions pos0..pos0+T-1) over the
 * cached keys/values of layer il, positions [0, pos0 + T), limited to the
 * last `window` positions when window > 0.  q is (T, n_head * head_dim),
 * out is (T, n_head * head_dim_v); query head h reads KV head
 * h / (n_head / n_head_kv).  Scores are q·k * scale; sinks (n_head, may
 * be NULL) are per-head logits that join each softmax with no value
 * (gpt-oss, see compute/attention.h).  Runs on the pool, with fw->scores and
 * fw->att_part_rows as per-thread scratch; a decode's range longer than
 * ADIL_ATT_PART is cut into parts that run in parallel (fw->att_parts). */
void adil_attention(adil_forward *fw, const adil_hparams *hp, int64_t il, const float *q, float *out,
                    int64_t T, int64_t pos0, int64_t window, float scale, const float *sinks);

/* logits[i] = cap * tanh(logits[i] / cap). */
void adil_softcap(float *logits, int64_t n, float cap);

/* The shared tail of every architecture: final RMS norm and the output
 * matrix, for every row of x (all_logits) or only the last; x (T, n_embd)
 * is clobbered.  logits NULL: nothing to do. */
adil_status adil_output_logits(const adil_transformer *m, adil_forward *fw, float *x, int64_t T,
                               float *logits, bool all_logits);

#endif /* ADIL_MODEL_OPS_H */
