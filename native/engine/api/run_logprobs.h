/*
 * run_logprobs.h — the log-probabilities a run keeps for its tokens when it
 * was started with n_logprobs > 0 (adil_run_token_logprobs).  run.c fills
 * them from the raw logits before the sampler touches them; a run without
 * n_logprobs never calls into here.  Not thread-safe: one run, one thread.
 */
#ifndef ADIL_API_RUN_LOGPROBS_H
#define ADIL_API_RUN_LOGPROBS_H

#include "engine_internal.h"

typedef struct run_logprobs {
    uint32_t k; /* alternatives kept per token: min(n_logprobs, n_vocab); 0 = off */
    int64_t n_vocab;
    size_t n, cap;  /* tokens recorded, room for */
    float *value;   /* (cap) each token's log-probability; NaN = not computed */
    uint8_t *n_top; /* (cap) alternatives kept for it: k, or 0 when not computed */
    int32_t *ids;   /* (cap * k) the alternatives, most likely first */
    float *top;     /* (cap * k) their log-probabilities */
    float *row;     /* (n_vocab) the raw logits of the position being sampled */
} run_logprobs;

/* Turns logprobs on for k = n_logprobs (0: stays off, nothing allocated). */
adil_status run_logprobs_init(run_logprobs *lp, uint32_t n_logprobs, int64_t n_vocab);
void run_logprobs_free(run_logprobs *lp);

/* Copies the raw logits (n_vocab floats) before sampling changes them. */
void run_logprobs_keep_row(run_logprobs *lp, const float *logits);

/* Records the next token's entry from a raw row of logits (n_vocab floats),
 * or as not computed when `logits` is NULL.  ADIL_STATUS_OUT_OF_MEMORY. */
adil_status run_logprobs_add(run_logprobs *lp, const float *logits, int32_t token);

/* adil_run_token_logprobs over the first n_valid entries (the tokens handed
 * out so far). */
adil_status run_logprobs_get(const run_logprobs *lp, size_t n_valid, size_t index, float *logprob,
                             int32_t *top_tokens, float *top_logprobs, size_t capacity, size_t *n_top);

#endif /* ADIL_API_RUN_LOGPROBS_H */
