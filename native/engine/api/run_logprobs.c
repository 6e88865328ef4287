/*
 * run_logprobs.c — a run's log-probabilities (run_logprobs.h).
 *
 * Entries grow by doubling as tokens come (a run's max_tokens may be the
 * whole window; most runs stop far sooner).
 */
#include "api/run_logprobs.h"
#include "text/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

adil_status run_logprobs_init(run_logprobs *lp, uint32_t n_logprobs, int64_t n_vocab) {
    memset(lp, 0, sizeof *lp);
    if (n_logprobs == 0) return ADIL_OK;
    lp->k = (int64_t)n_logprobs < n_vocab ? n_logprobs : (uint32_t)n_vocab;
    lp->n_vocab = n_vocab;
    lp->row = malloc((size_t)n_vocab * sizeof *lp->row);
    if (!lp->row) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory for logprobs");
    return ADIL_OK;
}

void run_logprobs_free(run_logprobs *lp) {
    free(lp->value);
    free(lp->n_top);
    free(lp->ids);
    free(lp->top);
    free(lp->row);
    memset(lp, 0, sizeof *lp);
}

void run_logprobs_keep_row(run_logprobs *lp, const float *logits) {
    memcpy(lp->row, logits, (size_t)lp->n_vocab * sizeof *lp->row);
}

/* Room for one more entry.  Each array is reallocated on its own: a failed
 * one leaves the others valid (and larger), so cap grows only once all did. */
static adil_status grow(run_logprobs *lp) {
    if (lp->n < lp->cap) return ADIL_OK;
    const size_t cap = lp->cap ? lp->cap * 2 : 64;
    float *value = realloc(lp->value, cap * sizeof *value);
    if (value) lp->value = value;
    uint8_t *n_top = realloc(lp->n_top, cap * sizeof *n_top);
    if (n_top) lp->n_top = n_top;
    int32_t *ids = realloc(lp->ids, cap * lp->k * sizeof *ids);
    if (ids) lp->ids = ids;
    float *top = realloc(lp->top, cap * lp->k * sizeof *top);
    if (top) lp->top = top;
    if (!value || !n_top || !ids || !top)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY,
                         "adil_run_step: out of memory for the logprobs of %zu tokens", cap);
    lp->cap = cap;
    return ADIL_OK;
}

adil_status run_logprobs_add(run_logprobs *lp, const float *logits, int32_t token) {
    adil_status st = grow(lp);
    if (st != ADIL_OK) return st;
    const size_t at = lp->n++;
    if (!logits) {
        lp->value[at] = NAN;
        lp->n_top[at] = 0;
        return ADIL_OK;
    }
    adil_logprobs_of_row(logits, lp->n_vocab, token, lp->k, &lp->value[at], lp->ids + at * lp->k,
                         lp->top + at * lp->k);
    lp->n_top[at] = (uint8_t)lp->k;
    return ADIL_OK;
}

adil_status run_logprobs_get(const run_logprobs *lp, size_t n_valid, size_t index, float *logprob,
                             int32_t *top_tokens, float *top_logprobs, size_t capacity, size_t *n_top) {
    if (lp->k == 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_token_logprobs: the run was started with n_logprobs 0; expected 1..%d",
                         ADIL_MAX_LOGPROBS);
    const size_t n = n_valid < lp->n ? n_valid : lp->n;
    if (index >= n)
        return adil_fail(
            ADIL_STATUS_INVALID_ARGUMENT,
            "adil_run_token_logprobs: index %zu: expected one of the %zu tokens generated so far", index, n);
    *logprob = lp->value[index];
    *n_top = lp->n_top[index];
    const size_t m = capacity < *n_top ? capacity : *n_top;
    if (m == 0) return ADIL_OK;
    memcpy(top_tokens, lp->ids + index * lp->k, m * sizeof *top_tokens);
    memcpy(top_logprobs, lp->top + index * lp->k, m * sizeof *top_logprobs);
    return ADIL_OK;
}
