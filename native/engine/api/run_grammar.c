/*
 * run_grammar.c — a run's side of a grammar (run_grammar.h).
 *
 * Forced text is tokenized, and its last token is kept only when the
 * document is complete after it.  Knowing that takes a look one token ahead,
 * which the matcher cannot undo, so a second matcher (the probe) does the
 * looking: it follows the accepted tokens lazily (`hist`), accepts the whole
 * forced stretch, and is told its position.  It is then one token ahead of
 * the run; when the sampler picks that very token (the usual case) the two
 * agree again, otherwise the probe is replayed from the start the next time
 * it is needed (rare, and at most the length of the output).
 */
#include "api/run_grammar.h"
#include "adil_containers.h"
#include "text/grammar_vocab.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct run_grammar {
    const adil_grammar *grammar;
    const adil_tokenizer *tok;
    grammar_matcher *m;
    uint32_t n_vocab;
    uint32_t *mask; /* (n_vocab + 31) / 32 words */
    int32_t *hist;  /* every token `m` accepted, in order */
    size_t n_hist, cap_hist;
    grammar_matcher *probe; /* NULL until needed or after a failed replay */
    size_t probe_n;         /* hist tokens the probe has accepted */
    int32_t probe_extra;    /* one token it accepted past them, or -1 */
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
    g->grammar = grammar;
    g->tok = model->tok;
    g->n_vocab = grammar_vocab_size(vocab);
    g->probe_extra = -1;
    g->mask = malloc(((size_t)g->n_vocab + 31) / 32 * sizeof *g->mask);
    adil_status st = g->mask
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
    if (g->probe) grammar_matcher_free(g->probe);
    free(g->mask);
    free(g->hist);
    free(g);
}

grammar_position run_grammar_position(const run_grammar *g) { return grammar_matcher_position(g->m); }

double run_grammar_ms(const run_grammar *g) { return g->ms; }

/* Accepts `token` in the run's matcher and records it. */
static bool accept(run_grammar *g, int32_t token) {
    if (adil_grow((void **)&g->hist, &g->cap_hist, g->n_hist + 1, sizeof *g->hist, "grammar: tokens") !=
        ADIL_OK) {
        adil_clear_error();
        return false; /* out of memory: refused like a bad token, the run ends */
    }
    if (!grammar_matcher_accept_token(g->m, token, NULL)) return false;
    g->hist[g->n_hist++] = token;
    return true;
}

bool run_grammar_accept(run_grammar *g, int32_t token) {
    const double t0 = adil_now_ms();
    const bool ok = accept(g, token);
    g->ms += adil_now_ms() - t0;
    return ok;
}

/* ---- masks ---------------------------------------------------------------- */

size_t run_grammar_mask(run_grammar *g, float *logits) {
    const double t0 = adil_now_ms();
    const size_t allowed = grammar_matcher_mask(g->m, g->mask);
    if (allowed > 0 && allowed < g->n_vocab) {
        const size_t n_words = ((size_t)g->n_vocab + 31) / 32;
        for (size_t w = 0; w < n_words; w++) {
            const uint32_t bits = g->mask[w];
            if (bits == UINT32_MAX) continue;
            float *row = logits + w * 32;
            if (bits == 0 && (w + 1) * 32 <= g->n_vocab) {
                for (int b = 0; b < 32; b++) row[b] = -INFINITY;
                continue;
            }
            for (uint32_t off = ~bits; off != 0; off &= off - 1) {
                const size_t id = w * 32 + (size_t)__builtin_ctz(off);
                if (id >= g->n_vocab) break; /* the last word's bits past n_vocab */
                logits[id] = -INFINITY;
            }
        }
    }
    g->ms += adil_now_ms() - t0;
    return allowed;
}

/* ---- the probe -------------------------------------------------------------- */

/* Brings the probe to the run's matcher's state: false when it cannot be
 * (out of memory, or a replayed token refused). */
static bool probe_sync(run_grammar *g) {
    if (g->probe && g->probe_extra >= 0) {
        const bool agrees = g->probe_n < g->n_hist && g->hist[g->probe_n] == g->probe_extra;
        if (agrees) g->probe_n++;
        g->probe_extra = -1;
        if (!agrees) {
            grammar_matcher_free(g->probe);
            g->probe = NULL;
        }
    }
    if (!g->probe) {
        g->probe_n = 0;
        if (grammar_matcher_new(g->grammar, &g->probe) != ADIL_OK) {
            adil_clear_error();
            g->probe = NULL;
            return false;
        }
    }
    for (; g->probe_n < g->n_hist; g->probe_n++)
        if (!grammar_matcher_accept_token(g->probe, g->hist[g->probe_n], NULL)) {
            grammar_matcher_free(g->probe);
            g->probe = NULL;
            return false;
        }
    return true;
}

/* True when the document is complete after tokens[0..n) (n >= 1).  Leaves
 * the probe past all n tokens; the caller accepts n or n - 1 of them. */
static bool complete_after(run_grammar *g, const int32_t *tokens, size_t n) {
    if (!probe_sync(g)) return false;
    for (size_t i = 0; i < n; i++)
        if (!grammar_matcher_accept_token(g->probe, tokens[i], NULL)) {
            grammar_matcher_free(g->probe);
            g->probe = NULL;
            return false;
        }
    g->probe_n += n - 1; /* the run's hist will hold all but maybe the last */
    g->probe_extra = tokens[n - 1];
    return grammar_matcher_position(g->probe) == GRAMMAR_DONE;
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

size_t run_grammar_force(run_grammar *g, uint32_t budget, const int32_t **tokens) {
    *tokens = g->forced;
    if (budget == 0 || grammar_matcher_position(g->m) != GRAMMAR_OPEN) return 0;
    const double t0 = adil_now_ms();
    const size_t n = forced_tokens(g);
    size_t keep = 0;
    if (n > budget)
        keep = budget; /* the run ends inside the stretch anyway */
    else if (n > 0)
        keep = complete_after(g, g->forced, n) ? n : n - 1;
    size_t done = 0;
    while (done < keep && accept(g, g->forced[done])) done++;
    g->ms += adil_now_ms() - t0;
    return done;
}
