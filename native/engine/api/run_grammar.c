/*
 * run_grammar.c — a run's side of a grammar (run_grammar.h).
 *
 * Forced text is tokenized, and its last token is kept only when the
 * document is complete after it (grammar_matcher_peek looks without moving
 * the matcher): otherwise it might merge with what follows, and the sampler
 * picks it or a longer one.
 */
#include "api/run_grammar.h"
#include "text/grammar_vocab.h"

#include <stdlib.h>
#include <string.h>

struct run_grammar {
    const adil_tokenizer *tok;
    grammar_matcher *m;
    uint32_t n_vocab;
    uint32_t *mask; /* (n_vocab + 31) / 32 words */
    int32_t *ids;   /* (n_vocab / RUN_GRAMMAR_SPARSE + 1) the allowed ids of a sparse mask */
    int32_t forced[RUN_GRAMMAR_MAX_FORCED];
    double ms;
};

adil_status run_grammar_new(const adil_grammar *grammar, const adil_model *model, run_grammar **out) {
    *out = NULL;
    const grammar_vocab *vocab = adil_model_grammar_vocab(model);
    if (!vocab || grammar_vocab_of(grammar) != vocab)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: grammar: expected one compiled for this run's model, got one "
                         "compiled for another model");
    run_grammar *g = calloc(1, sizeof *g);
    if (!g) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory for the grammar");
    g->tok = model->tok;
    g->n_vocab = grammar_vocab_size(vocab);
    g->mask = malloc(((size_t)g->n_vocab + 31) / 32 * sizeof *g->mask);
    g->ids = malloc(((size_t)g->n_vocab / RUN_GRAMMAR_SPARSE + 1) * sizeof *g->ids);
    adil_status st = g->mask && g->ids
                         ? grammar_matcher_new(grammar, &g->m)
                         : adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory for the mask");
    if (st != ADIL_OK) {
        run_grammar_free(g);
        return st;
    }
    *out = g;
    return ADIL_OK;
}

void run_grammar_free(run_grammar *g) {
    if (!g) return;
    if (g->m) grammar_matcher_free(g->m);
    free(g->mask);
    free(g->ids);
    free(g);
}

grammar_position run_grammar_position(const run_grammar *g) { return grammar_matcher_position(g->m); }

double run_grammar_ms(const run_grammar *g) { return g->ms; }

bool run_grammar_accept(run_grammar *g, int32_t token) {
    const double t0 = adil_now_ms();
    const bool ok = grammar_matcher_accept_token(g->m, token, NULL);
    g->ms += adil_now_ms() - t0;
    return ok;
}

/* ---- masks ---------------------------------------------------------------- */

/* The allowed ids, ascending, into g->ids. */
static void list_allowed(run_grammar *g) {
    const size_t n_words = ((size_t)g->n_vocab + 31) / 32;
    size_t n = 0;
    for (size_t w = 0; w < n_words; w++)
        for (uint32_t bits = g->mask[w]; bits != 0; bits &= bits - 1)
            g->ids[n++] = (int32_t)(w * 32 + (size_t)__builtin_ctz(bits));
}

size_t run_grammar_mask(run_grammar *g, const int32_t **ids, const uint32_t **mask) {
    const double t0 = adil_now_ms();
    const size_t allowed = grammar_matcher_mask(g->m, g->mask);
    *ids = NULL;
    *mask = NULL;
    if (allowed > 0 && allowed <= g->n_vocab / RUN_GRAMMAR_SPARSE) {
        list_allowed(g);
        *ids = g->ids;
    } else if (allowed > 0 && allowed < g->n_vocab) {
        *mask = g->mask;
    }
    g->ms += adil_now_ms() - t0;
    return allowed;
}

/* ---- forced tokens ---------------------------------------------------------- */

/* True when the pieces of tokens[0..n) are exactly text[0..len). */
static bool pieces_are(const adil_tokenizer *tok, const int32_t *tokens, size_t n, const uint8_t *text,
                       size_t len) {
    char piece[RUN_GRAMMAR_MAX_FORCED];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        if (adil_tokenizer_token_to_piece(tok, tokens[i], 0, piece, sizeof piece, &k) != ADIL_OK) {
            adil_clear_error();
            return false;
        }
        if (k == 0 || k > len - at || memcmp(piece, text + at, k) != 0) return false;
        at += k;
    }
    return at == len;
}

/* The tokens of the forced text into g->forced; 0 when there is none or it
 * does not tokenize back to itself. */
static size_t forced_tokens(run_grammar *g) {
    uint8_t text[RUN_GRAMMAR_MAX_FORCED];
    const size_t len = grammar_matcher_forced(g->m, text, sizeof text);
    if (len == 0) return 0;
    size_t n = 0;
    if (adil_tokenize_continuation(g->tok, text, len, g->forced, RUN_GRAMMAR_MAX_FORCED, &n) != ADIL_OK) {
        adil_clear_error();
        return 0;
    }
    if (n == 0 || n > RUN_GRAMMAR_MAX_FORCED || !pieces_are(g->tok, g->forced, n, text, len)) return 0;
    return n;
}

/* True when the document is complete after the n forced tokens. */
static bool complete_after(run_grammar *g, size_t n) {
    grammar_position pos = GRAMMAR_OPEN;
    return grammar_matcher_peek(g->m, g->forced, n, &pos) && pos == GRAMMAR_DONE;
}

size_t run_grammar_force(run_grammar *g, uint32_t budget, const int32_t **tokens) {
    *tokens = g->forced;
    if (budget == 0 || grammar_matcher_position(g->m) != GRAMMAR_OPEN) return 0;
    const double t0 = adil_now_ms();
    const size_t n = forced_tokens(g);
    size_t keep = 0;
    if (n > budget)
        keep = budget; /* the run ends inside the stretch anyway */
    else if (n > 0)
        keep = complete_after(g, n) ? n : n - 1;
    size_t done = 0;
    while (done < keep && grammar_matcher_accept_token(g->m, g->forced[done], NULL)) done++;
    g->ms += adil_now_ms() - t0;
    return done;
}
