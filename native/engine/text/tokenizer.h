/*
 * tokenizer.h — text <-> token ids, as llama.cpp does it for the same GGUF.
 *
 * Two tokenizer models (GGUF key tokenizer.ggml.model):
 *  - "llama": SentencePiece-style BPE over scores (gemma, llama 1/2).  Spaces
 *    become U+2581 "▁", adjacent pieces merge best score first, pieces that
 *    are not in the vocabulary fall back to <0xXX> byte tokens.
 *  - "gpt2": byte-level BPE over ranked merges (llama 3, qwen 2, SmolLM).  The
 *    text is split by a pre-tokenizer (tokenizer.ggml.pre: "llama-bpe"/"llama3"
 *    and "qwen2" families, "smollm"), each piece's bytes are mapped to GPT-2's printable
 *    code points, then merged lowest rank first.
 * Both first cut the text at special tokens: control and unknown tokens when
 * parse_special is set, user-defined tokens always (gemma's runs of spaces,
 * tabs and newlines are user-defined), longer special tokens first.
 *
 * A tokenizer is built from plain arrays (adil_tokenizer_desc) that it
 * copies, so it is testable without a file; tokenizer_gguf.c builds the
 * desc from a GGUF's metadata.  After construction it is read-only: any
 * number of threads may tokenize with one tokenizer at the same time.
 */
#ifndef ADIL_TEXT_TOKENIZER_H
#define ADIL_TEXT_TOKENIZER_H

#include "adil_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct adil_tokenizer adil_tokenizer;

/* Token types, as GGUF stores them in tokenizer.ggml.token_type. */
typedef enum adil_token_type {
    ADIL_TOKEN_TYPE_UNDEFINED = 0,
    ADIL_TOKEN_TYPE_NORMAL = 1,
    ADIL_TOKEN_TYPE_UNKNOWN = 2,
    ADIL_TOKEN_TYPE_CONTROL = 3,
    ADIL_TOKEN_TYPE_USER_DEFINED = 4,
    ADIL_TOKEN_TYPE_UNUSED = 5,
    ADIL_TOKEN_TYPE_BYTE = 6
} adil_token_type;

/* What a tokenizer is made of.  Everything is copied by adil_tokenizer_new;
 * the caller may free the desc afterwards. */
typedef struct adil_tokenizer_desc {
    const char *model; /* "llama" (SentencePiece) or "gpt2" (byte-level BPE) */
    const char *pre;   /* gpt2 pre-tokenizer: "llama-bpe", "llama3", "qwen2", "smollm", ...;
                                      NULL or "default" is refused for gpt2; ignored for llama */
    uint32_t n_vocab;
    const char *const *tokens;  /* n_vocab strings (not NUL-terminated) */
    const uint32_t *token_lens; /* n_vocab byte lengths */
    const float *scores;        /* n_vocab scores; NULL = all 0 */
    const int32_t *token_types; /* n_vocab adil_token_type values; NULL = all normal */
    uint32_t n_merges;          /* gpt2 only: merges in rank order, "left right" */
    const char *const *merges;
    const uint32_t *merge_lens;
    /* Special ids; -1 = none.  Ids outside [0, n_vocab) are treated as none. */
    int32_t bos_id;
    int32_t eos_id;
    int32_t eot_id; /* -1: found by text ("<end_of_turn>", "<|eot_id|>", ...) */
    int32_t unk_id;
    int32_t pad_id;
    /* -1 = the default of the model type (llama: add BOS, add a space prefix;
     * gpt2: add BOS only for the llama3 pre-tokenizer), else 0 or 1. */
    int32_t add_bos;
    int32_t add_eos;
    int32_t add_space_prefix;
} adil_tokenizer_desc;

/* Fills a desc with "none" ids and -1 defaults (all pointers NULL). */
void adil_tokenizer_desc_init(adil_tokenizer_desc *desc);

/* Builds a tokenizer.  Returns ADIL_STATUS_INVALID_ARGUMENT for NULL
 * arguments or missing arrays, ADIL_STATUS_CAPABILITY for an unknown model
 * or pre-tokenizer (the message names it), ADIL_STATUS_MODEL_FORMAT for a
 * vocabulary it cannot use (e.g. a token over 4 GiB), ADIL_STATUS_OUT_OF_MEMORY.
 * *out is NULL on failure; free a tokenizer with adil_tokenizer_free. */
adil_status adil_tokenizer_new(const adil_tokenizer_desc *desc, adil_tokenizer **out);

void adil_tokenizer_free(adil_tokenizer *tok);

/* Tokenizes text[0 .. text_len) (any bytes; invalid UTF-8 falls back to byte
 * tokens).  add_bos: -1 = as the model asks (BOS if it adds BOS, EOS if it
 * adds EOS: llama.cpp's add_special), 0 = neither, 1 = BOS always and EOS as
 * the model asks.  parse_special: non-zero = control tokens written in the
 * text ("<start_of_turn>") become their ids.  Writes at most `capacity` ids
 * to `ids` and the number the text needs to *n_needed (call again with more
 * room when it exceeds capacity).  Same contract as adil_tokenize:
 * ADIL_STATUS_INVALID_ARGUMENT for NULL text with text_len > 0, NULL ids with
 * capacity > 0, NULL n_needed, add_bos = 1 without a BOS token;
 * ADIL_STATUS_OUT_OF_MEMORY. */
adil_status adil_tokenizer_tokenize(const adil_tokenizer *tok, const char *text, size_t text_len,
                                    int32_t add_bos, int32_t parse_special, int32_t *ids, size_t capacity,
                                    size_t *n_needed);

/* The bytes of one token, as llama_token_to_piece (lstrip 0) gives them:
 * "▁" becomes a space (llama) or byte-level code points become their bytes
 * (gpt2); a byte token gives its byte; control and unknown tokens give their
 * text only when `special` is non-zero (else nothing); unused and undefined
 * tokens give nothing.  Writes at most `capacity` bytes and the needed length
 * to *n_bytes.  ADIL_STATUS_INVALID_ARGUMENT for an id outside [0, n_vocab),
 * NULL buf with capacity > 0, or NULL n_bytes. */
adil_status adil_tokenizer_token_to_piece(const adil_tokenizer *tok, int32_t id, int32_t special, char *buf,
                                          size_t capacity, size_t *n_bytes);

/* Plain facts about a tokenizer. */
typedef struct adil_tokenizer_info {
    uint32_t n_vocab;
    int32_t bos_id; /* -1 when none */
    int32_t eos_id;
    int32_t eot_id;
    int32_t unk_id;
    int32_t pad_id;
    bool add_bos; /* adil_tokenize with add_bos = -1 adds BOS */
    bool add_eos;
    bool add_space_prefix;
    bool is_spm; /* true: "llama" model; false: "gpt2" */
} adil_tokenizer_info;

void adil_tokenizer_get_info(const adil_tokenizer *tok, adil_tokenizer_info *out);

/* The id whose vocabulary string is text[0 .. len), or -1 (exact match; when
 * the vocabulary has duplicates, the highest id wins, as in llama.cpp). */
int32_t adil_tokenizer_find(const adil_tokenizer *tok, const char *text, size_t len);

/* The token type of `id` (after llama.cpp's fix-ups: end-of-generation
 * texts are made control tokens); ADIL_TOKEN_TYPE_UNDEFINED when out of range. */
adil_token_type adil_tokenizer_token_type(const adil_tokenizer *tok, int32_t id);

/* True when generation stops at `id`: EOS, EOT, and the tokens llama.cpp
 * treats as end-of-generation by their text ("<end_of_turn>", "<|eot_id|>",
 * "<|im_end|>", "<|endoftext|>", ...). */
bool adil_tokenizer_is_eog(const adil_tokenizer *tok, int32_t id);

#endif /* ADIL_TEXT_TOKENIZER_H */
