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
adil_status adil_hp_int(const gguf_file *f, const char *arch, const char *key, int64_t dflt,
                        int64_t max, int64_t *out);

/* Reads the float "<arch>.<key>" into *out, or *out = dflt when absent.
 * Non-finite or non-positive values are refused. */
adil_status adil_hp_float(const gguf_file *f, const char *arch, const char *key, float dflt,
                          float *out);

/* Binds the 2-D tensor `name` (printf format with one int, the layer, or a
 * plain name with layer < 0) as a (rows, cols) weight matrix.  When `found`
 * is NULL the tensor is required; otherwise its absence sets *found = false.
 * ADIL_STATUS_MODEL_FORMAT for a shape mismatch, ADIL_STATUS_CAPABILITY for
 * a weight type without kernels. */
adil_status adil_bind_matrix(const gguf_file *f, const char *name, int layer, int64_t rows,
                             int64_t cols, adil_weight *out, bool *found);

/* A bump allocator for the f32 copies of small vectors (norm weights). */
typedef struct adil_f32_arena {
    float *base;
    size_t used, cap;            /* in floats */
} adil_f32_arena;

/* Dequantizes the 1-D tensor `name` (layer as above) of n elements into the
 * arena; *out points at the copy.  Same `found` convention. */
adil_status adil_bind_vector(const gguf_file *f, const char *name, int layer, int64_t n,
                             adil_f32_arena *arena, const float **out, bool *found);

/* The RoPE position multiplier from "<arch>.rope.scaling.{type,factor}":
 * 1 / factor for linear scaling (or none given), 1 for "none";
 * ADIL_STATUS_CAPABILITY for other kinds (yarn, longrope, ...). */
adil_status adil_rope_scaling(const gguf_file *f, const char *arch, float *scale);

#endif /* ADIL_MODEL_TENSORS_H */

/* ---- what every architecture's loader does --------------------------------- */

typedef struct adil_transformer adil_transformer;

/* Checks the hyperparameters in m->hp that the loader filled (except
 * n_vocab) against each other and against sane limits. */
adil_status adil_hparams_check(const adil_transformer *m);

/* Binds token_embd.weight (n_vocab = its rows; its width must be n_embd),
 * allocates m->layers and an arena of `vector_floats` floats for norm
 * vectors (output_norm included by the caller's count). */
adil_status adil_load_begin(const gguf_file *f, adil_transformer *m, size_t vector_floats,
                            adil_f32_arena *arena);

/* Reads the sizes every llama-family architecture has from "<arch>.":
 * embedding_length, block_count, feed_forward_length, attention.head_count,
 * head_count_kv (default head_count), key_length (default n_embd / n_head)
 * and value_length (default key_length). */
typedef struct adil_hparams adil_hparams;
adil_status adil_hp_read_common(const gguf_file *f, const char *arch, adil_hparams *hp);

/* Binds the tensors every llama-family layer il has: attn_norm, attn_q/k/v,
 * attn_output, ffn_norm, ffn_gate/up/down (norm vectors into the arena).
 * Architectures bind their extra tensors (Q/K norms, post-norms) after it. */
adil_status adil_bind_layer_common(const gguf_file *f, adil_transformer *m, int il,
                                   adil_f32_arena *arena);

/* Binds output_norm.weight and output.weight (tied to token_embd when the
 * file has none) and counts the file's parameters and bytes. */
adil_status adil_load_end(const gguf_file *f, adil_transformer *m, adil_f32_arena *arena);
