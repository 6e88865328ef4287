/*
 * grammar_vocab.h — a tokenizer seen the way the grammar library
 * (native/grammar/grammar.h) sees a vocabulary, and the tokenization of
 * forced text.
 *
 * Token bytes are adil_tokenizer_token_to_piece with special = 0, the same
 * bytes the SDK joins to make a generation's text (detokenize), so the
 * document the grammar checks is the text the host reads: a byte-fallback
 * token gives its byte, a SentencePiece "▁" a space (no space is stripped
 * from a first token), a control token nothing.
 */
#ifndef ADIL_TEXT_GRAMMAR_VOCAB_H
#define ADIL_TEXT_GRAMMAR_VOCAB_H

#include "grammar.h"
#include "text/tokenizer.h"

/* Builds the grammar vocabulary of a model with `n_vocab` logit rows (at
 * least the tokenizer's n_vocab; rows past it are padding: CONTROL, no
 * bytes).  Kinds: END for end-of-generation tokens (adil_tokenizer_is_eog),
 * CONTROL for control, unknown, unused and undefined tokens and for tokens
 * with no bytes, TEXT otherwise.  ADIL_STATUS_OUT_OF_MEMORY, or the
 * grammar library's status. */
adil_status adil_grammar_vocab_build(const adil_tokenizer *tok, uint32_t n_vocab, grammar_vocab **out);

/* The tokens of `text` as they continue an output: no BOS, control texts not
 * parsed, and no SentencePiece space prefix (a generation's text is
 * continued, not started).  Writes at most `capacity` ids and the number
 * needed to *n (call again with more room when it exceeds capacity).
 * ADIL_STATUS_OUT_OF_MEMORY. */
adil_status adil_tokenize_continuation(const adil_tokenizer *tok, const uint8_t *text, size_t len,
                                       int32_t *ids, size_t capacity, size_t *n);

#endif /* ADIL_TEXT_GRAMMAR_VOCAB_H */
