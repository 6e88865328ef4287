/*
 * run_lookup.h — lookup (prompt n-gram) decoding for a run started with
 * speculative = ADIL_SPECULATIVE_LOOKUP (run.c uses it).
 *
 * A draft is the continuation of the latest earlier occurrence of the last
 * few tokens of prompt + output.  run.c evaluates the pending token and the
 * draft in one forward pass with every row of logits kept, then samples each
 * row in turn exactly as a plain run samples its single row; while the token
 * drawn equals the next drafted one, that token is already in the cache and
 * the next row is the next position's.  The first token that differs (or the
 * one drawn from the last row) becomes the pending token, and the cache is
 * cut back to what was verified.  Drawing every token from the target's own
 * row, in order, with the same sampler state, is what keeps the output's
 * distribution (and, with the same seed, the draws) those of a plain run.
 * Not thread-safe: one run, one thread.
 */
#ifndef ADIL_API_RUN_LOOKUP_H
#define ADIL_API_RUN_LOOKUP_H

#include "engine_internal.h"

/* The most drafted tokens evaluated at once (the batch is one more). */
#define RUN_LOOKUP_MAX_DRAFT 16
/* The n-gram lengths matched, longest first.  Shorter ones recur all over
 * free text and their drafts mostly fail: on gemma3-270m, sampled free text,
 * 2..4-grams drafted 269 tokens and kept 101, 3..4-grams drafted 203 and kept
 * 84; extraction kept the same either way (345 of 432). */
#define RUN_LOOKUP_NGRAM_MAX 4
#define RUN_LOOKUP_NGRAM_MIN 3
/* A draft is at most this many tokens shorter than the match before it (the
 * n-gram and the tokens before it that agree too): a copy matches far back,
 * while the 3- and 4-grams that free text repeats by chance part from their
 * earlier continuation after a token or two, and every drafted token that is
 * refused costs one more row of the pass (the 262k-token output head on
 * gemma3).  On gemma3-270m, offline over the bench's rounds (bench/lookup),
 * free text at seeds 1003 and 1006 drafted 90 and 60 tokens and kept 36 and
 * 23; with this cap 50 and 39, kept 24 and 17 (see bench/lookup/README.md). */
#define RUN_LOOKUP_MATCH_SLACK 2
/* Matches are counted up to this length: a longer one would draft no more. */
#define RUN_LOOKUP_MATCH_MAX (RUN_LOOKUP_MAX_DRAFT + RUN_LOOKUP_MATCH_SLACK)

typedef struct run_lookup {
    bool on;
    int64_t n_vocab;
    int32_t *hist; /* (cap_hist) prompt + output so far, the pending token last */
    size_t n_hist, cap_hist;
    int32_t batch[RUN_LOOKUP_MAX_DRAFT + 1]; /* the pending token, then the draft */
    size_t n_batch;                          /* tokens of the last verifying pass */
    size_t at;                               /* the next row to sample; at == n_batch: none left */
    uint32_t pos0;                           /* the cache position of batch[0] */
    uint32_t budget;                         /* drafted tokens to ask for next: 1..RUN_LOOKUP_MAX_DRAFT */
    float *rows; /* (RUN_LOOKUP_MAX_DRAFT + 1, n_vocab) logits after each batch token */
} run_lookup;

/* Turns lookup on (on = false: stays off, nothing allocated) for a run whose
 * prompt + output holds at most cap_hist tokens; the prompt is the history. */
adil_status run_lookup_init(run_lookup *lk, bool on, const int32_t *prompt, size_t n_prompt, size_t cap_hist,
                            int64_t n_vocab);
void run_lookup_free(run_lookup *lk);

/* Appends an output token to the history. */
void run_lookup_push(run_lookup *lk, int32_t token);

/* The continuation of the latest earlier occurrence of the last n tokens of
 * hist[0..n_hist) (n from RUN_LOOKUP_NGRAM_MAX down to RUN_LOOKUP_NGRAM_MIN,
 * the longest that occurs wins), at most `max` tokens, into draft; returns
 * how many (0: no occurrence).  *matched (may be NULL): how many tokens end
 * both the occurrence and the history, the n-gram and as many before it as
 * agree, counted up to RUN_LOOKUP_MATCH_MAX (0: no occurrence). */
size_t run_lookup_draft(const int32_t *hist, size_t n_hist, size_t max, int32_t *draft, size_t *matched);

/* The next pass's draft into lk->batch + 1: the continuation of the history,
 * at most `room` tokens, the budget and the match less RUN_LOOKUP_MATCH_SLACK;
 * returns how many (0: evaluate the pending token alone). */
size_t run_lookup_next(run_lookup *lk, size_t room);

/* Adapts the draft budget to how a pass went: all drafted tokens accepted
 * doubles it, none halves it (a failed draft costs a wider pass for one
 * token), anything between keeps it. */
void run_lookup_adapt(run_lookup *lk, size_t drafted, size_t accepted);

#endif /* ADIL_API_RUN_LOOKUP_H */
