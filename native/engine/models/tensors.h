/*
 * tensors.h — what architecture loaders share: reading "<arch>.<key>"
 * hyperparameters and binding named GGUF tensors with their expected shapes.
 * Every failure names the key or tensor, what was expected and what was found.
 */
#ifndef ADIL_MODEL_TENSORS_H
#define ADIL_MODEL_TENSORS_H

#include "adil_common.h"
#include "compute/matmul.h"
#include "format/gguf.h"

#include <stdbool.h>
#include <stdint.h>

/* Reads the integer "<arch>.<key>" into *out.  Required when dflt < 0
 * (ADIL_STATUS_MODEL_FORMAT when absent), else *out = dflt when absent.
 * Values outside [1, max] are refused. */
adil_status adil_hp_int(const gguf_file *f, const char *arch, const char *key, int64_t dflt, int64_t max,
                        int64_t *out);

/* Reads the float "<arch>.<key>" into *out, or *out = dflt when absent.
 * Non-finite or non-positive values are refused. */
adil_status adil_hp_float(const gguf_file *f, const char *arch, const char *key, float dflt, float *out);

/* Binds the 2-D tensor `name` (printf format with one int, the layer, or a
 * plain name with layer < 0) as a (rows, cols) weight matrix.  When `found`
 * is NULL the tensor is required; otherwise its absence sets *found = false.
 * ADIL_STATUS_MODEL_FORMAT for a shape mismatch, ADIL_STATUS_CAPABILITY for
 * a weight type without kernels. */
adil_status adil_bind_matrix(const gguf_file *f, const char *name, int layer, int64_t rows, int64_t cols,
                             adil_weight *out, bool *found);

/* Binds the 3-D tensor `name` (layer as above), ne = [cols, rows, n_expert]:
 * the stacked matrices of n_expert experts, as one (n_expert * rows, cols)
 * weight whose expert e is rows [e * rows, (e + 1) * rows).  Same `found`
 * convention and errors as adil_bind_matrix. */
adil_status adil_bind_experts(const gguf_file *f, const char *name, int layer, int64_t n_expert, int64_t rows,
                              int64_t cols, adil_weight *out, bool *found);

/* Rows [r0, r0 + n) of w as a weight of their own (a view of the same data):
 * how fused tensors (phi3's attn_qkv, ffn_up) are split. */
adil_weight adil_weight_rows(const adil_weight *w, int64_t r0, int64_t n);

/* A bump allocator for the f32 copies of small vectors (norm weights). */
typedef struct adil_f32_arena {
    float *base;
    size_t used, cap; /* in floats */
} adil_f32_arena;

/* Dequantizes the 1-D tensor `name` (layer as above) of n elements into the
 * arena; *out points at the copy.  Same `found` convention. */
adil_status adil_bind_vector(const gguf_file *f, const char *name, int layer, int64_t n,
                             adil_f32_arena *arena, const float **out, bool *found);

/* Dequantizes the 2-D tensor `name` (layer as above), ne = [cols, rows],
 * into the arena as (rows, cols) floats (per-expert biases); *out points at
 * the copy.  Same `found` convention. */
adil_status adil_bind_table(const gguf_file *f, const char *name, int layer, int64_t rows, int64_t cols,
                            adil_f32_arena *arena, const float **out, bool *found);

#endif /* ADIL_MODEL_TENSORS_H */
