/*
 * grammar_hooks.c — the adil_hooks_grammar_* functions (adil_internal.h):
 * a compiled grammar (adil_grammar_compile of this library) walked over a
 * token sequence with the grammar library's matcher, for the property tests
 * of constrained decoding.
 */
#include "adil_internal.h"

#include "adil_common.h"
#include "grammar.h"

#include <stdlib.h>

static bool allowed(const uint32_t *mask, int32_t token) {
    return (mask[(uint32_t)token / 32] >> ((uint32_t)token % 32) & 1u) != 0;
}

/* *out = a fresh matcher advanced over tokens[0..n).
 * ADIL_STATUS_OUTPUT_VALIDATION when a token is refused, OUT_OF_MEMORY. */
static adil_status replay(const adil_grammar *g, const int32_t *tokens, size_t n, grammar_matcher **out) {
    *out = NULL;
    grammar_matcher *m = NULL;
    adil_status st = grammar_matcher_new(g, &m);
    for (size_t i = 0; st == ADIL_OK && i < n; i++)
        if (!grammar_matcher_accept_token(m, tokens[i], NULL))
            st = adil_fail(ADIL_STATUS_OUTPUT_VALIDATION, "grammar hook: token %d at %zu is not allowed",
                           tokens[i], i);
    if (st == ADIL_OK)
        *out = m;
    else if (m)
        grammar_matcher_free(m);
    return st;
}

/* The mask's own consistency: its count, and no bit past n_vocab. */
static adil_status check_mask(const uint32_t *mask, uint32_t n_vocab, size_t count, size_t step) {
    size_t bits = 0;
    for (uint32_t w = 0; w < (n_vocab + 31) / 32; w++) bits += (size_t)__builtin_popcount(mask[w]);
    if (n_vocab % 32 && mask[n_vocab / 32] >> (n_vocab % 32))
        return adil_fail(ADIL_STATUS_INTERNAL, "grammar hook: step %zu: mask bits set past n_vocab %u", step,
                         n_vocab);
    if (bits != count)
        return adil_fail(ADIL_STATUS_INTERNAL, "grammar hook: step %zu: mask has %zu bits, count says %zu",
                         step, bits, count);
    return ADIL_OK;
}

/* Every token of the vocabulary tried with accept_token on a matcher at
 * tokens[0..step): accepted exactly when the mask allows it. */
static adil_status cross_check_step(const adil_grammar *g, const int32_t *tokens, size_t step,
                                    const uint32_t *mask, uint32_t n_vocab) {
    grammar_matcher *r = NULL;
    adil_status st = replay(g, tokens, step, &r);
    for (uint32_t t = 0; st == ADIL_OK && t < n_vocab; t++) {
        const bool ok = grammar_matcher_accept_token(r, (int32_t)t, NULL);
        if (ok != allowed(mask, (int32_t)t))
            st = adil_fail(ADIL_STATUS_INTERNAL, "grammar hook: step %zu: token %u is %s by the mask but %s",
                           step, t, ok ? "refused" : "allowed", ok ? "accepted" : "refused by accept_token");
        if (ok) { /* r moved on: start again from the step's position */
            grammar_matcher_free(r);
            st = replay(g, tokens, step, &r);
        }
    }
    if (r) grammar_matcher_free(r);
    /* the walk accepted tokens[0..step): a replay refusing them is a bug */
    return st == ADIL_STATUS_OUTPUT_VALIDATION ? ADIL_STATUS_INTERNAL : st;
}

/* One step of the walk: the mask, its checks, then tokens[i]. */
static adil_status walk_step(const adil_grammar *g, grammar_matcher *m, const int32_t *tokens, size_t i,
                             int cross_check, uint32_t *mask, uint32_t n_vocab) {
    const size_t count = grammar_matcher_mask(m, mask);
    adil_status st = check_mask(mask, n_vocab, count, i);
    if (st == ADIL_OK && cross_check) st = cross_check_step(g, tokens, i, mask, n_vocab);
    if (st != ADIL_OK) return st;
    const bool by_mask = allowed(mask, tokens[i]);
    const bool by_accept = grammar_matcher_accept_token(m, tokens[i], NULL);
    if (by_mask != by_accept)
        return adil_fail(ADIL_STATUS_INTERNAL,
                         "grammar hook: step %zu: token %d %s by the mask, %s by accept_token", i, tokens[i],
                         by_mask ? "allowed" : "refused", by_accept ? "accepted" : "refused");
    if (!by_mask)
        return adil_fail(ADIL_STATUS_OUTPUT_VALIDATION, "grammar hook: token %d at %zu is not allowed",
                         tokens[i], i);
    return ADIL_OK;
}

ADIL_API adil_status adil_hooks_grammar_check(const adil_grammar *g, const int32_t *tokens, size_t n,
                                              int cross_check, size_t *first_bad) {
    if (first_bad) *first_bad = n;
    if (!g || (!tokens && n) || !first_bad)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "grammar hook: grammar, tokens and first_bad are required");
    const uint32_t n_vocab = grammar_vocab_size(grammar_vocab_of(g));
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= n_vocab) {
            *first_bad = i;
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "grammar hook: token %d at %zu: expected 0..%u",
                             tokens[i], i, n_vocab - 1);
        }
    uint32_t *mask = malloc(((size_t)n_vocab + 31) / 32 * sizeof *mask);
    grammar_matcher *m = NULL;
    adil_status st = mask ? grammar_matcher_new(g, &m)
                          : adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar hook: out of memory for the mask");
    size_t i = 0;
    for (; st == ADIL_OK && i < n; i++) st = walk_step(g, m, tokens, i, cross_check, mask, n_vocab);
    if (st != ADIL_OK && i > 0) *first_bad = i - 1;
    if (m) grammar_matcher_free(m);
    free(mask);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

ADIL_API adil_status adil_hooks_grammar_position(const adil_grammar *g, const int32_t *tokens, size_t n,
                                                 int32_t *position) {
    if (!g || (!tokens && n) || !position)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "grammar hook: grammar, tokens and position are required");
    grammar_matcher *m = NULL;
    adil_status st = replay(g, tokens, n, &m);
    if (st != ADIL_OK) return st;
    *position = (int32_t)grammar_matcher_position(m);
    grammar_matcher_free(m);
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API adil_status adil_hooks_grammar_forced(const adil_grammar *g, const int32_t *tokens, size_t n,
                                               uint8_t *buf, size_t capacity, size_t *len) {
    if (!g || (!tokens && n) || (!buf && capacity) || !len)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "grammar hook: grammar, tokens, buf and len are required");
    grammar_matcher *m = NULL;
    adil_status st = replay(g, tokens, n, &m);
    if (st != ADIL_OK) return st;
    *len = grammar_matcher_forced(m, buf, capacity);
    grammar_matcher_free(m);
    adil_clear_error();
    return ADIL_OK;
}
