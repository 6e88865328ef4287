/*
 * run_lookup.c — drafts from the prompt and the output so far (run_lookup.h).
 *
 * The search scans the history backwards for each n-gram length: O(n_hist *
 * RUN_LOOKUP_NGRAM_MAX) compares per pass, microseconds at a 16k context,
 * against milliseconds for the forward pass it may save.
 */
#include "api/run_lookup.h"

#include <stdlib.h>
#include <string.h>

/* The budget of a run's first draft. */
#define RUN_LOOKUP_FIRST_BUDGET 8

adil_status run_lookup_init(run_lookup *lk, bool on, const int32_t *prompt, size_t n_prompt, size_t cap_hist,
                            int64_t n_vocab) {
    memset(lk, 0, sizeof *lk);
    if (!on) return ADIL_OK;
    if (cap_hist < n_prompt) cap_hist = n_prompt;
    lk->hist = malloc(cap_hist * sizeof *lk->hist);
    lk->rows = malloc((size_t)(RUN_LOOKUP_MAX_DRAFT + 1) * (size_t)n_vocab * sizeof *lk->rows);
    if (!lk->hist || !lk->rows) {
        run_lookup_free(lk);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory for lookup decoding");
    }
    memcpy(lk->hist, prompt, n_prompt * sizeof *prompt);
    lk->n_hist = n_prompt;
    lk->cap_hist = cap_hist;
    lk->n_vocab = n_vocab;
    lk->budget = RUN_LOOKUP_FIRST_BUDGET;
    lk->on = true;
    return ADIL_OK;
}

void run_lookup_free(run_lookup *lk) {
    free(lk->hist);
    free(lk->rows);
    memset(lk, 0, sizeof *lk);
}

void run_lookup_push(run_lookup *lk, int32_t token) {
    if (lk->n_hist < lk->cap_hist) lk->hist[lk->n_hist++] = token;
}

/* The length of a match whose n-gram (g tokens) starts at hist[a] and at
 * hist[b], a < b: g and the tokens before both that agree, at most `most`. */
static size_t match_length(const int32_t *hist, size_t a, size_t b, size_t g, size_t most) {
    size_t n = g;
    while (n < most && n < a + g && hist[a + g - n - 1] == hist[b + g - n - 1]) n++;
    return n;
}

size_t run_lookup_draft(const int32_t *hist, size_t n_hist, size_t max, int32_t *draft, size_t *matched) {
    if (matched) *matched = 0;
    if (max == 0) return 0;
    for (size_t g = RUN_LOOKUP_NGRAM_MAX; g >= RUN_LOOKUP_NGRAM_MIN; g--) {
        if (n_hist < g + 1) continue;
        const int32_t *key = hist + n_hist - g;
        /* j + g < n_hist: the occurrence ends before the key and is followed by one token at least */
        for (size_t j = n_hist - g; j-- > 0;) {
            if (hist[j] != key[0] || memcmp(hist + j, key, g * sizeof *key) != 0) continue;
            const size_t have = n_hist - (j + g);
            const size_t n = have < max ? have : max;
            memcpy(draft, hist + j + g, n * sizeof *draft);
            if (matched) *matched = match_length(hist, j, n_hist - g, g, RUN_LOOKUP_MATCH_MAX);
            return n;
        }
    }
    return 0;
}

size_t run_lookup_next(run_lookup *lk, size_t room) {
    const size_t max = lk->budget < room ? lk->budget : room;
    size_t matched = 0;
    const size_t n = run_lookup_draft(lk->hist, lk->n_hist, max, lk->batch + 1, &matched);
    /* matched >= RUN_LOOKUP_NGRAM_MIN > RUN_LOOKUP_MATCH_SLACK whenever n > 0 */
    const size_t cap = matched > RUN_LOOKUP_MATCH_SLACK ? matched - RUN_LOOKUP_MATCH_SLACK : 0;
    return n < cap ? n : cap;
}

void run_lookup_adapt(run_lookup *lk, size_t drafted, size_t accepted) {
    if (drafted == 0) return;
    if (accepted == drafted && drafted >= lk->budget)
        lk->budget = lk->budget * 2 > RUN_LOOKUP_MAX_DRAFT ? RUN_LOOKUP_MAX_DRAFT : lk->budget * 2;
    else if (accepted == 0)
        lk->budget = lk->budget / 2 < 1 ? 1 : lk->budget / 2;
}
