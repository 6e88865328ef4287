/*
 * sampler.h — picks the next token from a row of logits.
 *
 * The chain, in llama.cpp's default order:
 *   1. repetition penalty over the last repeat_last_n accepted tokens (each
 *      distinct token once: logit / penalty when positive, * penalty when not);
 *   2. temperature <= 0: greedy (the highest logit; the lowest id on ties);
 *   3. top-k (k <= 0: off), 4. top-p (1: off), 5. min-p (0: off), all on the
 *      untempered distribution; at least one candidate always survives;
 *   6. temperature, softmax, and one draw from the sampler's own generator
 *      (xoshiro256**, seeded through splitmix64): the same seed, history and
 *      logits give the same token on every machine.
 *
 * A sampler belongs to one context; it is not thread-safe.
 */
#ifndef ADIL_SAMPLER_H
#define ADIL_SAMPLER_H

#include "adil_common.h"

#include <stdint.h>

typedef struct adil_sampler adil_sampler;

/* Creates a sampler for a vocabulary of n_vocab tokens.  `params` NULL =
 * adil_sampling_default_params.  ADIL_STATUS_INVALID_ARGUMENT (naming the
 * field and its value) for a negative or non-finite temperature, top_p
 * outside (0, 1], min_p outside [0, 1], repeat_penalty <= 0 or non-finite,
 * repeat_last_n < 0, or a struct_size smaller than the 2.0 struct. */
adil_status adil_sampler_new(const adil_sampling_params *params, int64_t n_vocab, adil_sampler **out);

void adil_sampler_free(adil_sampler *s);

/* Forgets the token history (the generator keeps its state). */
void adil_sampler_reset(adil_sampler *s);

/* Records a token (prompt or generated) for the repetition penalty. */
void adil_sampler_accept(adil_sampler *s, int32_t token);

/* Returns the chosen token id in [0, n_vocab).  `logits` (n_vocab floats)
 * is modified (penalties applied).  Never fails: a row of NaNs gives id 0. */
int32_t adil_sampler_sample(adil_sampler *s, float *logits);

/* The same chain over the tokens ids[0 .. n_ids) only (ascending, n_ids >=
 * 1): the token adil_sampler_sample would choose had every other logit been
 * -INFINITY, at the cost of n_ids rather than the vocabulary (a grammar's
 * mask often allows a handful of tokens). */
int32_t adil_sampler_sample_among(adil_sampler *s, float *logits, const int32_t *ids, size_t n_ids);

/* The same over the tokens whose bit is set in `mask` (bit id % 32 of word
 * id / 32; n_allowed >= 1 of them): nothing is written to the logits, and a
 * token's bit is read only when it would be chosen or enter the top k. */
int32_t adil_sampler_sample_masked(adil_sampler *s, float *logits, const uint32_t *mask, size_t n_allowed);

/* The log-softmax of a raw row of logits (n_vocab floats; NaN counts as
 * -INFINITY): the value at `token` into *logprob, and the k most likely
 * tokens (k <= ADIL_MAX_LOGPROBS and <= n_vocab; most likely first, the lower
 * id first on ties) into top_ids and top_logprobs.  Reads the row only;
 * called only for runs that asked for log-probabilities. */
void adil_logprobs_of_row(const float *logits, int64_t n_vocab, int32_t token, uint32_t k, float *logprob,
                          int32_t *top_ids, float *top_logprobs);

#endif /* ADIL_SAMPLER_H */
