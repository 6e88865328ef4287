/*
 * adil_internal.h — test hooks exported by libadil_engine_hooks, a test-only
 * build of the engine (see CMakeLists.txt here), so the Python tests can
 * drive internals (GGUF reader, kernels, the CPU level, grammars) through cffi
 * (tests/gguf_hooks.py reads its declarations from this file).  NOT part of
 * the ABI and not in the shipped libadil_engine: no stability promise, no
 * struct_size, may change with any commit.  The hooks that return an
 * adil_status set adil_last_error() on failure.
 */
#ifndef ADIL_INTERNAL_H
#define ADIL_INTERNAL_H

#include "adil/adil.h"

#include <stddef.h>
#include <stdint.h>

/* Opens `size` bytes at `data` as a GGUF image and closes it again: ADIL_OK
 * for a valid file, ADIL_STATUS_MODEL_FORMAT (message in adil_last_error())
 * for a malformed one. */
ADIL_API adil_status adil_internal_gguf_check(const void *data, size_t size);

/* Same through the file path (mmap).  ADIL_STATUS_IO when unreadable. */
ADIL_API adil_status adil_internal_gguf_check_file(const char *path);

/* Bytes of a row of n elements of `type` (0 when unknown / not whole blocks). */
ADIL_API size_t adil_internal_row_size(uint32_t type, int64_t n);

/* Dequantizes n elements of a row of `type` at src into dst. */
ADIL_API adil_status adil_internal_dequantize(uint32_t type, const void *src, int64_t n, float *dst);

/* Quantizes n floats into a row of `type` (types with a quantizer: F32, F16,
 * BF16, Q8_0, Q8_K and those with a reference quantizer). */
ADIL_API adil_status adil_internal_quantize(uint32_t type, const float *src, int64_t n, void *dst);

/* *out = vec_dot of a weight row of `type` with the float row x (n elements),
 * after quantizing x to the type's activation type, as adil_matmul does. */
ADIL_API adil_status adil_internal_vec_dot(uint32_t type, int64_t n, const void *weight_row, const float *x,
                                           float *out);

/* y[n_tokens x rows] = x[n_tokens x cols] · Wᵀ on a fresh pool of n_threads. */
ADIL_API adil_status adil_internal_matmul(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                          int64_t n_tokens, const float *x, float *y, int n_threads);

/* dst[n_ids x cols] = rows ids of W (embedding lookup). */
ADIL_API adil_status adil_internal_get_rows(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                            const int32_t *ids, int64_t n_ids, float *dst);

/* The kernel level the library dispatches to ("scalar", "avx2", "avx512"),
 * so a test can check that ADIL_CPU took effect. */
ADIL_API const char *adil_internal_cpu_level(void);

/* "" when ADIL_CPU was unset or honoured; else the note on the request the
 * library could not honour. */
ADIL_API const char *adil_internal_cpu_level_note(void);

/* ---- grammars (native/grammar/grammar.h), compiled with adil_grammar_compile
 * of this library.  Each walks a fresh matcher over tokens[0..n). */

/* At each step: computes the mask (checks its count and that no bit past
 * n_vocab is set), checks that the mask and accept_token agree on the token
 * and, when cross_check is non-zero, on every token of the vocabulary (each
 * tried on a matcher replayed to the step: slow, for small vocabularies),
 * then accepts the token.  ADIL_OK when every token is allowed (*first_bad
 * = n); ADIL_STATUS_OUTPUT_VALIDATION when tokens[*first_bad] is not;
 * ADIL_STATUS_INTERNAL when the mask and accept_token disagree at step
 * *first_bad (the message names the token); ADIL_STATUS_INVALID_ARGUMENT
 * for a token id out of range (its index in *first_bad). */
ADIL_API adil_status adil_hooks_grammar_check(const adil_grammar *g, const int32_t *tokens, size_t n,
                                              int cross_check, size_t *first_bad);

/* *position = the position after tokens[0..n): 0 inside the document (more
 * must come), 1 the output may end here, 2 the document is complete.
 * ADIL_STATUS_OUTPUT_VALIDATION when a token is refused. */
ADIL_API adil_status adil_hooks_grammar_position(const adil_grammar *g, const int32_t *tokens, size_t n,
                                                 int32_t *position);

/* The bytes forced after tokens[0..n) (at most `capacity` of them) into buf,
 * their count into *len.  ADIL_STATUS_OUTPUT_VALIDATION when a token is
 * refused. */
ADIL_API adil_status adil_hooks_grammar_forced(const adil_grammar *g, const int32_t *tokens, size_t n,
                                               uint8_t *buf, size_t capacity, size_t *len);

#endif /* ADIL_INTERNAL_H */
