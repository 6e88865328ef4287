/*
 * run_grammar.h — a run's side of a grammar (run.c uses it): the matcher,
 * the allowed tokens the sampler chooses among, and forced tokens.  Not
 * thread-safe: one run, one thread at a time.
 */
#ifndef ADIL_API_RUN_GRAMMAR_H
#define ADIL_API_RUN_GRAMMAR_H

#include "engine_internal.h"

/* The most bytes (and tokens) of one forced stretch; longer forced text
 * comes in several stretches. */
#define RUN_GRAMMAR_MAX_FORCED 128

typedef struct run_grammar run_grammar;

/* A matcher for `grammar` over `model`'s vocabulary.
 * ADIL_STATUS_INVALID_ARGUMENT when the grammar was compiled for another
 * model, ADIL_STATUS_OUT_OF_MEMORY. */
adil_status run_grammar_new(const adil_grammar *grammar, const adil_model *model, run_grammar **out);
void run_grammar_free(run_grammar *g);

grammar_position run_grammar_position(const run_grammar *g);

/* The tokens of the text the grammar forces next, at most `budget` of them,
 * already accepted: *tokens points at them (valid until the next call).
 * The forced bytes are tokenized as a continuation and used only when the
 * tokens' pieces give exactly those bytes; the last token is left to the
 * sampler (it might merge with what follows) unless the document is complete
 * after it.  0 when nothing is forced. */
size_t run_grammar_force(run_grammar *g, uint32_t budget, const int32_t **tokens);

/* A mask allowing at most n_vocab / RUN_GRAMMAR_SPARSE tokens is sparse. */
#define RUN_GRAMMAR_SPARSE 16

/* Computes which tokens the grammar allows here and returns how many (0: a
 * dead end).  The caller samples among them: a sparse mask comes back as the
 * allowed ids, ascending, in *ids (adil_sampler_sample_among), a dense one
 * as *mask (adil_sampler_sample_masked), neither when every token is
 * allowed.  Both stay valid until the next call.  Nothing is written to the
 * logits: the sampler reads a token's bit only when that token would win. */
size_t run_grammar_mask(run_grammar *g, const int32_t **ids, const uint32_t **mask);

/* Advances over a chosen token; false when the grammar refuses it. */
bool run_grammar_accept(run_grammar *g, int32_t token);

/* Milliseconds spent in the grammar so far (masks, advancing, forcing). */
double run_grammar_ms(const run_grammar *g);

#endif /* ADIL_API_RUN_GRAMMAR_H */
