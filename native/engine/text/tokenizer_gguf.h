/*
 * tokenizer_gguf.h — a tokenizer from a GGUF file's tokenizer.ggml.* keys.
 */
#ifndef ADIL_TEXT_TOKENIZER_GGUF_H
#define ADIL_TEXT_TOKENIZER_GGUF_H

#include "format/gguf.h"
#include "text/tokenizer.h"

/* Reads tokenizer.ggml.{model, pre, tokens, scores, token_type, merges,
 * bos/eos/eot/unknown/padding_token_id, add_bos_token, add_eos_token,
 * add_space_prefix} with llama.cpp's defaults for absent keys, and builds the
 * tokenizer.  ADIL_STATUS_MODEL_FORMAT for a missing or mistyped key (the
 * message names it), ADIL_STATUS_CAPABILITY for a tokenizer model or
 * pre-tokenizer this engine does not implement.  The tokenizer copies what
 * it needs: it may outlive `f`. */
adil_status adil_tokenizer_from_gguf(const gguf_file *f, adil_tokenizer **out);

#endif /* ADIL_TEXT_TOKENIZER_GGUF_H */
