/*
 * grammar.h — constrained decoding: a JSON-schema subset compiled into a
 * token-level constraint, shared by every engine of this tree (the CPU engine
 * and the stub).  Not part of the ABI; adil.h's adil_grammar handle is the
 * `adil_grammar` compiled here.
 *
 * Three objects:
 *   grammar_vocab    a model's vocabulary seen as bytes (token -> bytes and
 *                    kind), indexed once per model (a byte trie and the sets
 *                    the fast paths need).  Read-only once built: any number
 *                    of grammars and matchers may share it from any thread.
 *   adil_grammar     a compiled constraint over one vocab; read-only once
 *                    compiled (a run only reads it; it must outlive them).
 *   grammar_matcher  one run's position in a grammar (not thread-safe).
 *
 * What a grammar accepts (the compile input is JSON text):
 *   - A schema of the SDK's subset (DESIGN §5): type (a name or a list),
 *     properties, required, additionalProperties (boolean), items, enum,
 *     const, minimum/maximum, minLength/maxLength (code points),
 *     minItems/maxItems, description, title.  A schema without type, enum or
 *     const (e.g. {}) stands for any JSON value.  Anything else is refused
 *     with ADIL_STATUS_CAPABILITY and a message naming its JSON Pointer.
 *   - Every document in the compact canonical form (json.dumps(...,
 *     separators=(",", ":"), ensure_ascii=False)) is accepted.  Object keys
 *     come in any order, each at most once; required keys must all come;
 *     an object whose additionalProperties is not false also takes other keys
 *     (written without backslash escapes, never a declared name, never twice)
 *     with any value.  A document nests at most GRAMMAR_MAX_DEPTH containers:
 *     a schema each of whose documents nests deeper is refused
 *     (ADIL_STATUS_CAPABILITY); elsewhere a container, or a declared key, is
 *     offered only where the least its value must nest still fits, so no
 *     accepted prefix is a dead end.
 *     Whitespace: one space (GRAMMAR_MAX_WS) wherever JSON allows whitespace
 *     (so the usual ", " and ": " spacing is valid), none before a document;
 *     in lazy mode up to GRAMMAR_MAX_LAZY_WS whitespace bytes after the
 *     trigger and before the end string.  Never needed: forced text
 *     (grammar_matcher_forced) is written compact.
 *   - Numbers obey the exact-number rule: integers -?(0|[1-9][0-9]*) within
 *     ±(2^53-1) (no "-0"); for "number" also decimals without exponent with at
 *     most 15 significant digits (from the first non-zero digit to the last
 *     digit written: 125000000000000.0 has 16); within minimum/maximum
 *     (inclusive).  A prefix is taken only when such a text extends it, and
 *     a range no such text reaches (1e-30 .. 2e-30) is refused.
 *   - Strings: UTF-8 checked byte by byte (no overlongs, no surrogates), JSON
 *     escapes, \u surrogate pairs (never a lone surrogate), lengths counted in
 *     code points as Python's len() does.
 *   - Extensions, only at the top level of the input object:
 *       "x-adil-tools": [{"name": N, "parameters": S}, ...]
 *           the document is a tool call {"name":N,"arguments":<S>} (name
 *           first), S chosen by N; the input holds no other schema keyword.
 *       "x-adil-trigger": "<tool_call>", "x-adil-end": "</tool_call>"
 *           lazy: free text (every token allowed) until the trigger string is
 *           written, then one document, then the end string, then free text
 *           again.  Both or neither; each 1..64 bytes.
 *
 * Token kinds: TEXT tokens are their bytes; CONTROL tokens (and tokens with no
 * bytes) are never allowed inside a document; END tokens (end of generation)
 * are allowed exactly where the output may end.  In free text (lazy mode,
 * before the trigger) every token is allowed.
 */
#ifndef ADIL_GRAMMAR_H
#define ADIL_GRAMMAR_H

#include "adil_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Spaces allowed between two lexemes of a document, and whitespace bytes
 * allowed after a lazy trigger and before the end string. */
#define GRAMMAR_MAX_WS      1
#define GRAMMAR_MAX_LAZY_WS 2

/* Containers a document may nest (the SDK's validators allow 64). */
#define GRAMMAR_MAX_DEPTH 64

typedef enum grammar_token_kind {
    GRAMMAR_TOKEN_TEXT = 0,
    GRAMMAR_TOKEN_CONTROL = 1,
    GRAMMAR_TOKEN_END = 2
} grammar_token_kind;

/* One token as the vocab builder is given it.  `bytes` is copied. */
typedef struct grammar_token {
    const uint8_t *bytes;
    uint32_t len;
    grammar_token_kind kind;
} grammar_token;

typedef struct grammar_vocab grammar_vocab;

/* Longer TEXT tokens are never allowed (no vocabulary of this tree has one). */
#define GRAMMAR_MAX_TOKEN_BYTES 255

/* Builds the index of `n_tokens` tokens (ids 0 .. n_tokens-1).
 * ADIL_STATUS_INVALID_ARGUMENT for n_tokens 0 or above 2^24, OUT_OF_MEMORY. */
adil_status grammar_vocab_new(const grammar_token *tokens, uint32_t n_tokens, grammar_vocab **out);
void grammar_vocab_free(grammar_vocab *vocab);
uint32_t grammar_vocab_size(const grammar_vocab *vocab);

/* Compiles `json` (see above) for `vocab`, which must outlive the grammar.
 * ADIL_STATUS_INVALID_ARGUMENT for text that is not JSON or a keyword with a
 * value of the wrong type (message: the JSON Pointer), ADIL_STATUS_CAPABILITY
 * for a keyword outside the subset or a schema no document satisfies
 * (message: the JSON Pointer), OUT_OF_MEMORY. */
adil_status grammar_compile(const grammar_vocab *vocab, const char *json, size_t len, adil_grammar **out);
void grammar_free(adil_grammar *grammar);
const grammar_vocab *grammar_vocab_of(const adil_grammar *grammar);

/* ---- matching ---------------------------------------------------------- */

typedef struct grammar_matcher grammar_matcher;

/* Where a matcher stands. */
typedef enum grammar_position {
    GRAMMAR_OPEN = 0,    /* inside a document: more must come */
    GRAMMAR_CAN_END = 1, /* the output may end here or go on (a complete top-level
                            number; free text in lazy mode) */
    GRAMMAR_DONE = 2     /* the document is complete and nothing may follow */
} grammar_position;

adil_status grammar_matcher_new(const adil_grammar *grammar, grammar_matcher **out);
void grammar_matcher_free(grammar_matcher *m);

/* The allowed tokens at this point: bit (id % 32) of mask[id / 32] is set
 * when token `id` keeps the output a prefix of a valid one (END tokens when
 * the output may end).  `mask` holds (n_tokens + 31) / 32 words; bits past
 * n_tokens are 0.  Returns the number of allowed tokens (n_tokens when every
 * token is allowed: the caller may skip masking). */
size_t grammar_matcher_mask(grammar_matcher *m, uint32_t *mask);

/* Advances over one token.  Returns false, leaving the matcher unchanged,
 * when the token is not allowed; *bad_byte (may be NULL) is then the offset
 * in the token of the first byte refused (its length for an END or CONTROL
 * token refused whole). */
bool grammar_matcher_accept_token(grammar_matcher *m, int32_t token, size_t *bad_byte);

/* Advances over raw bytes (the stub's check of scripted text).  Returns false
 * at the first byte refused, *bad_byte its offset; the bytes before it stay
 * accepted. */
bool grammar_matcher_accept_bytes(grammar_matcher *m, const uint8_t *bytes, size_t n, size_t *bad_byte);

grammar_position grammar_matcher_position(const grammar_matcher *m);

/* Where the matcher would stand after tokens[0 .. n), without moving it;
 * false when one of them would be refused. */
bool grammar_matcher_peek(grammar_matcher *m, const int32_t *tokens, size_t n, grammar_position *out);

/* The bytes that must come next whatever is chosen (a fixed key, a
 * closing bracket): writes up to `capacity` of them and returns how many.
 * 0 when more than one byte may come next or the output may end here. */
size_t grammar_matcher_forced(const grammar_matcher *m, uint8_t *buf, size_t capacity);

#endif /* ADIL_GRAMMAR_H */
