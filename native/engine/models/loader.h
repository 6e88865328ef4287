/*
 * loader.h — the steps every architecture's loader shares (loader.c):
 * reading and checking the llama-family hyperparameters, binding the
 * embedding, the common tensors of each layer and the output head.  An
 * architecture (llama.c, gemma3.c) calls them in the order they are listed.
 */
#ifndef ADIL_MODEL_LOADER_H
#define ADIL_MODEL_LOADER_H

#include "adil_common.h"
#include "format/gguf.h"
#include "models/tensors.h"
#include "models/transformer.h"

#include <stddef.h>

/* Reads the sizes every llama-family architecture has from "<arch>.":
 * embedding_length, block_count, feed_forward_length, attention.head_count,
 * head_count_kv (default head_count), key_length (default n_embd / n_head)
 * and value_length (default key_length). */
adil_status adil_hp_read_common(const gguf_file *f, const char *arch, adil_hparams *hp);

/* RoPE scaling from "<arch>.rope.scaling.*" into hp->rope_scale and
 * hp->rope_yarn (transformer.h), as llama.cpp reads it: type "none",
 * "linear" (the default) or "yarn"; rope_scale = 1 / factor (1 for "none");
 * for "yarn" original_context_length (default hp->n_ctx_train, so read that
 * first) and llama.cpp's yarn_attn_factor; attn_factor multiplies cos / sin
 * for every type.  ADIL_STATUS_CAPABILITY naming any other type (longrope,
 * ...). */
adil_status adil_rope_scaling(const gguf_file *f, const char *arch, adil_hparams *hp);

/* Checks the hyperparameters in m->hp that the loader filled (except
 * n_vocab) against each other and against sane limits. */
adil_status adil_hparams_check(const adil_transformer *m);

/* Binds token_embd.weight (n_vocab = its rows; its width must be n_embd),
 * allocates m->layers and an arena of `vector_floats` floats for norm
 * vectors (output_norm included by the caller's count). */
adil_status adil_load_begin(const gguf_file *f, adil_transformer *m, size_t vector_floats,
                            adil_f32_arena *arena);

/* Binds layer il's attn_norm (into the arena), attn_q/k/v and attn_output. */
adil_status adil_bind_attention(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *arena);

/* Binds the attention tensors every llama-family layer il has: attn_norm,
 * attn_q/k/v, attn_output, and ffn_norm (norm vectors into the arena);
 * mixture-of-experts layers bind their FFN after it (moe.h). */
adil_status adil_bind_attn_common(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *arena);

/* Binds the tensors every llama-family layer il has: attn_norm, attn_q/k/v,
 * attn_output, ffn_norm, ffn_gate/up/down (norm vectors into the arena).
 * Architectures bind their extra tensors (Q/K norms, post-norms) after it. */
adil_status adil_bind_layer_common(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *arena);

/* Floats of the arena the optional attention biases of one layer may take. */
size_t adil_attn_bias_floats(const adil_hparams *hp);

/* Binds the optional biases blk.il.attn_{q,k,v,output}.bias (qwen2 has the
 * first three, gpt-oss all four) into the arena; absent ones stay NULL. */
adil_status adil_bind_attn_biases(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *arena);

/* Binds output_norm.weight and output.weight (tied to token_embd when the
 * file has none) and counts the file's parameters and bytes. */
adil_status adil_load_end(const gguf_file *f, adil_transformer *m, adil_f32_arena *arena);

#endif /* ADIL_MODEL_LOADER_H */
