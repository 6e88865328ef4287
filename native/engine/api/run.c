/*
 * run.c — one generation on a context, stepped in batches.
 *
 * adil_run_start checks everything it can at once (busy, context length,
 * token ids, sampling params) and keeps the longest prefix of the prompt
 * that the context's cache already holds.  The first adil_run_step
 * evaluates the rest of the prompt (batched) and samples the first token;
 * each later token costs one single-token forward pass.  The stop conditions
 * are polled before every token and, through the forward pass's stop hook,
 * between layers: a cancelled flag (the run's own or its cancel_flag), the
 * total deadline, and the read deadline (the time spent on one token).
 * End-of-generation tokens (EOS, EOT, the tokenizer's end-of-generation set
 * and params->stop_tokens) end the run and are not part of the output.
 * A mapped model file that changed since load (gguf_check_unchanged) is
 * refused at start and ends the run before the next step: reading weights
 * from a truncated mapping would kill the process with SIGBUS.
 *
 * A run with a grammar (api/run_grammar.h) takes another path per token, so
 * that a run without one does no extra work:
 *  - the document complete (GRAMMAR_DONE): the run ends (END_OF_TEXT);
 *  - max_tokens reached inside the document: the run ends (MAX_TOKENS) and
 *    the step returns ADIL_STATUS_OUTPUT_VALIDATION ("truncated");
 *  - text the grammar forces: its tokens are appended without sampling
 *    (counted as generated and in n_forced_tokens, and in the repetition
 *    penalty's history) and evaluated in one forward pass together with the
 *    pending token, as prefill does; when the document is complete after
 *    them (or max_tokens is reached) they are not evaluated at all;
 *  - otherwise the logits of the tokens the grammar does not allow are set
 *    to -INFINITY before the sampler (every sampler setting), and the token
 *    drawn advances the grammar.  No allowed token at all (a dead end) ends
 *    the run with ADIL_STATUS_OUTPUT_VALIDATION; a stop token drawn inside
 *    the document likewise ("ended inside the document").  An
 *    end-of-generation token is allowed only where the document may end;
 *    with ignore_eos it is output and the grammar decides what may follow.
 *
 * A run started with n_logprobs > 0 (api/run_logprobs.h) copies each row of
 * logits before the sampler changes it (penalties) and records the chosen
 * token's log-softmax and the top alternatives; a run without it only tests
 * lp.k per token.  With logprobs, forced text is evaluated one token at a
 * time (the head of the batch first), so that every forced token's row is
 * computed too; forced tokens after which nothing is sampled are then
 * evaluated as well, all but the last.
 *
 * A run started with speculative = ADIL_SPECULATIVE_LOOKUP and no grammar
 * (api/run_lookup.h) evaluates the pending token together with a draft from
 * the prompt and output so far, and samples the rows of that pass one by one
 * through the same path as a plain run (sample_row): stop tokens, max_tokens,
 * logprobs, cancellation and deadlines are checked per token, and the cache
 * is cut back to the tokens verified (ctx->n_past) before each token is
 * drawn, so a run that stops mid-draft leaves only its real tokens cached.
 * A grammar run does not draft: the text its grammar forces is already
 * evaluated as one batch, and the tokens it samples need a mask per position.
 */
#include "engine_internal.h"
#include "api/run_grammar.h"
#include "api/run_logprobs.h"
#include "api/run_lookup.h"

#include <stdlib.h>
#include <string.h>

struct adil_run {
    adil_context *ctx;
    adil_cancel_flag own_flag;     /* adil_run_cancel sets it */
    adil_cancel_flag *cancel_flag; /* the caller's, or NULL */
    adil_sampler *sampler;
    int32_t *prompt; /* (n_prompt) a copy */
    uint32_t n_prompt;
    uint32_t n_keep;      /* prompt tokens reused from the cache */
    int32_t *stop_tokens; /* (n_stop) a copy */
    size_t n_stop;
    uint32_t max_tokens;      /* after defaults: >= 1 */
    double t_start;           /* adil_now_ms() at start */
    double total_ms, read_ms; /* 0 = none */
    double step_budget_ms;
    double token_t0; /* when work on the current token began */
    bool prefilled;
    bool ignore_eos;                 /* only stop_tokens end the run (benchmarks) */
    int32_t pending;                 /* last emitted token, not yet evaluated; -1 none */
    adil_stop_reason pending_reason; /* set by the stop hook */
    adil_run_stats stats;
    /* Grammar runs only (grammar != NULL). */
    run_grammar *grammar;
    int32_t *batch;       /* (n_prompt + 1 + RUN_GRAMMAR_MAX_FORCED) one forward pass's tokens */
    const int32_t *queue; /* forced tokens already counted, not yet handed out */
    size_t n_queue;
    bool logits_ready; /* ctx->logits are the next position's: sample, do not evaluate */
    run_logprobs lp;   /* lp.k == 0: the run keeps no logprobs */
    run_lookup lk;     /* lk.on: lookup decoding (never with a grammar) */
};

/* ---- stop conditions -------------------------------------------------------- */

ADIL_API int adil_run_cancelled(void *token) {
    adil_run *run = token;
    if (!run) return 0;
    return atomic_load(&run->own_flag.set) || (run->cancel_flag && atomic_load(&run->cancel_flag->set));
}

/* ADIL_OK to go on; otherwise the status to stop with, reason in pending_reason. */
static adil_status check_stop(adil_run *run) {
    const double now = adil_now_ms();
    if (adil_run_cancelled(run)) {
        run->pending_reason = ADIL_STOP_CANCELLED;
        return ADIL_STATUS_CANCELLED;
    }
    if (run->total_ms > 0 && now - run->t_start >= run->total_ms) {
        run->pending_reason = ADIL_STOP_DEADLINE_TOTAL;
        return ADIL_STATUS_DEADLINE;
    }
    if (run->read_ms > 0 && now - run->token_t0 >= run->read_ms) {
        run->pending_reason = ADIL_STOP_DEADLINE_READ;
        return ADIL_STATUS_DEADLINE;
    }
    return ADIL_OK;
}

static adil_status stop_hook(void *user) { return check_stop(user); }

/* Ends the run: records why; the handle (and the model's run slot) stays
 * until adil_run_free. */
static adil_status finish(adil_run *run, adil_stop_reason reason, adil_status status) {
    run->stats.stop_reason = reason;
    if (reason == ADIL_STOP_CANCELLED) run->stats.cancel_acknowledged = 1;
    return status;
}

static bool is_stop_token(const adil_run *run, int32_t tok) {
    const adil_model *m = run->ctx->model;
    if (tok < 0) return false;
    adil_tokenizer_info ti;
    adil_tokenizer_get_info(m->tok, &ti);
    if (!run->ignore_eos && (uint32_t)tok < ti.n_vocab && adil_tokenizer_is_eog(m->tok, tok)) return true;
    for (size_t i = 0; i < run->n_stop; i++)
        if (run->stop_tokens[i] == tok) return true;
    return false;
}

/* ---- start -------------------------------------------------------------------- */

static adil_status check_start(adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                               const adil_run_params *p, uint32_t *max_tokens) {
    if (n_prompt == 0) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_start: the prompt is empty");
    size_t bad = 0;
    if (adil_tokens_invalid(ctx->model, prompt, n_prompt, &bad))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: prompt token %d at index %zu: expected 0..%lld", prompt[bad], bad,
                         (long long)ctx->model->tf.hp.n_vocab - 1);
    if (p->n_logprobs > ADIL_MAX_LOGPROBS)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_start: n_logprobs: expected 0..%d, got %u",
                         ADIL_MAX_LOGPROBS, p->n_logprobs);
    if (p->speculative > ADIL_SPECULATIVE_LOOKUP)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: speculative: expected ADIL_SPECULATIVE_NONE (0) or "
                         "ADIL_SPECULATIVE_LOOKUP (1), got %u",
                         p->speculative);
    if (p->n_stop_tokens && !p->stop_tokens)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: stop_tokens is NULL but n_stop_tokens is %zu", p->n_stop_tokens);
    const uint64_t want = (uint64_t)n_prompt + (p->max_tokens ? p->max_tokens : 1);
    if (want > ctx->n_ctx) {
        if (p->max_tokens)
            return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                             "adil_run_start: prompt of %zu tokens + max_tokens %u = %llu tokens exceed "
                             "the context window of %u tokens",
                             n_prompt, p->max_tokens, (unsigned long long)want, ctx->n_ctx);
        return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                         "adil_run_start: prompt of %zu tokens leaves no room in the context window "
                         "of %u tokens",
                         n_prompt, ctx->n_ctx);
    }
    *max_tokens = p->max_tokens ? p->max_tokens : ctx->n_ctx - (uint32_t)n_prompt;
    return ADIL_OK;
}

/* The longest prefix of the prompt the cache holds, leaving at least the
 * last prompt token to evaluate (its logits give the first token). */
static uint32_t reusable_prefix(const adil_context *ctx, const int32_t *prompt, uint32_t n_prompt) {
    uint32_t n = 0;
    while (n < ctx->n_past && n < n_prompt - 1 && ctx->tokens[n] == prompt[n]) n++;
    return n;
}

static adil_status build_run(adil_run *run, adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                             const adil_run_params *p) {
    adil_status st = adil_sampler_new(p->sampling, ctx->model->tf.hp.n_vocab, &run->sampler);
    if (st != ADIL_OK) return st;
    run->prompt = malloc(n_prompt * sizeof *prompt);
    run->stop_tokens = malloc((p->n_stop_tokens ? p->n_stop_tokens : 1) * sizeof *prompt);
    if (!run->prompt || !run->stop_tokens)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory");
    memcpy(run->prompt, prompt, n_prompt * sizeof *prompt);
    if (p->n_stop_tokens) memcpy(run->stop_tokens, p->stop_tokens, p->n_stop_tokens * sizeof *prompt);
    run->n_stop = p->n_stop_tokens;
    run->n_prompt = (uint32_t)n_prompt;
    for (uint32_t i = 0; i < run->n_prompt; i++) adil_sampler_accept(run->sampler, prompt[i]);
    st = run_logprobs_init(&run->lp, p->n_logprobs, ctx->model->tf.hp.n_vocab);
    if (st == ADIL_OK)
        st = run_lookup_init(&run->lk, p->speculative == ADIL_SPECULATIVE_LOOKUP && !p->grammar, prompt,
                             n_prompt, ctx->n_ctx, ctx->model->tf.hp.n_vocab);
    if (st != ADIL_OK || !p->grammar) return st;
    st = run_grammar_new(p->grammar, ctx->model, &run->grammar);
    if (st != ADIL_OK) return st;
    run->batch = malloc((n_prompt + 1 + RUN_GRAMMAR_MAX_FORCED) * sizeof *run->batch);
    if (!run->batch) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory");
    return ADIL_OK;
}

ADIL_API adil_status adil_run_start(adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                                    const adil_run_params *params, adil_run **out) {
    if (out) *out = NULL;
    if (!ctx || !out || (n_prompt && !prompt))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_start: ctx, prompt and out are required");
    adil_run_params p;
    adil_run_default_params(&p);
    adil_status st = adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_RUN_PARAMS, "adil_run_params");
    uint32_t max_tokens = 0;
    if (st == ADIL_OK) st = check_start(ctx, prompt, n_prompt, &p, &max_tokens);
    if (st == ADIL_OK) st = gguf_check_unchanged(ctx->model->file); /* a truncated mapping: SIGBUS */
    if (st != ADIL_OK) return st;

    adil_model *m = ctx->model;
    adil_run *run = calloc(1, sizeof *run);
    if (!run) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: out of memory");
    adil_run *expected = NULL;
    if (!atomic_compare_exchange_strong(&m->live_run, &expected, run)) {
        free(run);
        return adil_fail(ADIL_STATUS_BUSY, "adil_run_start: the model already serves a run");
    }
    run->ctx = ctx;
    ctx->run = run;
    atomic_init(&run->own_flag.set, 0);
    run->cancel_flag = p.cancel_flag;
    run->pending = -1;
    st = build_run(run, ctx, prompt, n_prompt, &p);
    if (st != ADIL_OK) {
        adil_run_free(run);
        return st;
    }
    run->max_tokens = max_tokens;
    run->t_start = adil_now_ms();
    run->total_ms = p.total_timeout_ms;
    run->read_ms = p.read_timeout_ms;
    run->step_budget_ms = p.step_budget_ms ? p.step_budget_ms : ADIL_DEFAULT_STEP_BUDGET_MS;
    run->ignore_eos = p.ignore_eos != 0;
    run->n_keep = adil_context_keepable(ctx, reusable_prefix(ctx, prompt, run->n_prompt));
    ctx->n_past = run->n_keep; /* drop what follows the shared prefix */
    run->stats.struct_size = sizeof run->stats;
    run->stats.n_prompt_tokens = run->n_prompt;
    run->stats.n_cached_tokens = run->n_keep;
    *out = run;
    adil_clear_error();
    return ADIL_OK;
}

/* ---- step ------------------------------------------------------------------------ */

/* The logits of the next position: the rest of the prompt at first, then
 * the last emitted token. */
static adil_status advance(adil_run *run) {
    adil_context *ctx = run->ctx;
    const double t0 = adil_now_ms();
    adil_status st;
    if (!run->prefilled) {
        st = adil_context_eval(ctx, run->prompt + run->n_keep, run->n_prompt - run->n_keep, NULL, stop_hook,
                               run);
        run->stats.prefill_ms += adil_now_ms() - t0;
        if (st == ADIL_OK) run->prefilled = true;
    } else {
        st = adil_context_eval(ctx, &run->pending, 1, NULL, stop_hook, run);
        run->stats.decode_ms += adil_now_ms() - t0;
    }
    return st;
}

/* ---- grammar runs ------------------------------------------------------------ */

/* Ends a grammar run whose document is complete or whose max_tokens is
 * reached; false (and *st untouched) when it goes on. */
static bool grammar_ended(adil_run *run, adil_status *st) {
    const grammar_position pos = run_grammar_position(run->grammar);
    if (pos == GRAMMAR_DONE) {
        *st = finish(run, ADIL_STOP_END_OF_TEXT, ADIL_OK);
        return true;
    }
    if (run->stats.n_generated < run->max_tokens) return false;
    *st = finish(run, ADIL_STOP_MAX_TOKENS,
                 pos == GRAMMAR_OPEN
                     ? adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                                 "adil_run_step: the output was truncated inside the document after %u "
                                 "tokens (max_tokens)",
                                 run->stats.n_generated)
                     : ADIL_OK);
    return true;
}

/* Evaluates the rest of the prompt (first) or the pending token, followed
 * by forced[0..n_forced), in one forward pass. */
static adil_status advance_grammar(adil_run *run, const int32_t *forced, size_t n_forced) {
    size_t n = 0;
    if (!run->prefilled) {
        n = run->n_prompt - run->n_keep;
        memcpy(run->batch, run->prompt + run->n_keep, n * sizeof *run->batch);
    } else if (run->pending >= 0) {
        run->batch[n++] = run->pending;
    }
    memcpy(run->batch + n, forced, n_forced * sizeof *run->batch);
    n += n_forced;
    if (n == 0) return adil_fail(ADIL_STATUS_INTERNAL, "adil_run_step: nothing to evaluate");
    const double t0 = adil_now_ms();
    adil_status st = adil_context_eval(run->ctx, run->batch, n, NULL, stop_hook, run);
    *(run->prefilled ? &run->stats.decode_ms : &run->stats.prefill_ms) += adil_now_ms() - t0;
    if (st == ADIL_OK) {
        run->prefilled = true;
        run->pending = -1;
        run->logits_ready = true;
    }
    return st;
}

/* advance_grammar for a run with logprobs: the head of the batch, then each
 * forced token on its own, each row recorded for the token after it; the
 * last forced token is evaluated only when something is sampled after it. */
static adil_status advance_forced_logprobs(adil_run *run, const int32_t *forced, size_t n_forced, bool last) {
    adil_status st = advance_grammar(run, forced, 0);
    for (size_t i = 0; st == ADIL_OK && i < n_forced; i++) {
        st = run_logprobs_add(&run->lp, run->ctx->logits, forced[i]);
        if (st == ADIL_OK && !(last && i + 1 == n_forced)) st = advance_grammar(run, forced + i, 1);
    }
    return st;
}

/* Counts forced[0..n) as output and hands out the first into *tok. */
static void emit_forced(adil_run *run, const int32_t *forced, size_t n, int32_t *tok) {
    for (size_t i = 0; i < n; i++) adil_sampler_accept(run->sampler, forced[i]);
    run->stats.n_generated += (uint32_t)n;
    run->stats.n_forced_tokens += (uint32_t)n;
    *tok = forced[0];
    run->queue = forced + 1;
    run->n_queue = n - 1;
}

/* A stop token drawn: the end of the output, inside the document or not. */
static adil_status grammar_stop_token(adil_run *run) {
    if (run_grammar_position(run->grammar) != GRAMMAR_OPEN)
        return finish(run, ADIL_STOP_END_OF_TEXT, ADIL_OK);
    return finish(
        run, ADIL_STOP_END_OF_TEXT,
        adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                  "adil_run_step: a stop token ended the output inside the document after %u tokens",
                  run->stats.n_generated));
}

/* Masks, samples and advances the grammar over the token drawn. */
static adil_status sample_grammar(adil_run *run, int32_t *tok) {
    const double t0 = adil_now_ms();
    adil_status st;
    run->logits_ready = false;
    const int32_t *ids = NULL;
    const uint32_t *mask = NULL;
    const size_t allowed = run_grammar_mask(run->grammar, &ids, &mask);
    if (allowed == 0)
        return finish(run, ADIL_STOP_ERROR,
                      adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                                "adil_run_step: the grammar allows no token after %u tokens (a dead end: the "
                                "vocabulary cannot continue the document)",
                                run->stats.n_generated));
    float *logits = run->ctx->logits;
    if (run->lp.k) run_logprobs_keep_row(&run->lp, logits);
    const int32_t t = ids    ? adil_sampler_sample_among(run->sampler, logits, ids, allowed)
                      : mask ? adil_sampler_sample_masked(run->sampler, logits, mask, allowed)
                             : adil_sampler_sample(run->sampler, logits);
    *(run->stats.n_generated == 0 ? &run->stats.prefill_ms : &run->stats.decode_ms) += adil_now_ms() - t0;
    if (is_stop_token(run, t)) return grammar_stop_token(run);
    if (!run_grammar_accept(run->grammar, t))
        return finish(run, ADIL_STOP_ERROR,
                      adil_fail(ADIL_STATUS_INTERNAL,
                                "adil_run_step: the sampler chose token %d, which the grammar does not allow "
                                "(non-finite logits?)",
                                t));
    if (run->lp.k && (st = run_logprobs_add(&run->lp, run->lp.row, t)) != ADIL_OK)
        return finish(run, ADIL_STOP_ERROR, st);
    adil_sampler_accept(run->sampler, t);
    run->pending = t;
    run->stats.n_generated++;
    *tok = t;
    return ADIL_OK;
}

/* next_token for a grammar run: queued forced tokens first; then forced
 * text, else one sampled token. */
static adil_status next_token_grammar(adil_run *run, int32_t *tok) {
    if (run->n_queue > 0) {
        *tok = *run->queue++;
        run->n_queue--;
        return ADIL_OK;
    }
    adil_status st = check_stop(run);
    if (st != ADIL_OK) return finish(run, run->pending_reason, st);
    if (grammar_ended(run, &st)) return st;
    if (!run->logits_ready) {
        const int32_t *forced = NULL;
        const size_t k = run_grammar_force(run->grammar, run->max_tokens - run->stats.n_generated, &forced);
        /* Forced tokens after which nothing is sampled need no evaluation. */
        const bool last = k > 0 && (run_grammar_position(run->grammar) == GRAMMAR_DONE ||
                                    run->stats.n_generated + k >= run->max_tokens);
        if (run->lp.k && k > 0)
            st = advance_forced_logprobs(run, forced, k, last);
        else if (!last)
            st = advance_grammar(run, forced, k);
        if (st == ADIL_STATUS_CANCELLED || st == ADIL_STATUS_DEADLINE)
            return finish(run, run->pending_reason, st);
        if (st != ADIL_OK) return finish(run, ADIL_STOP_ERROR, st);
        if (k > 0) {
            emit_forced(run, forced, k, tok);
            return ADIL_OK;
        }
    }
    return sample_grammar(run, tok);
}

/* ---- lookup runs --------------------------------------------------------------- */

/* The rows of the next position: the pending token and a draft evaluated in
 * one pass into lk->rows, or (no draft) the plain single-token pass into
 * ctx->logits.  *row is the pending token's row. */
static adil_status advance_lookup(adil_run *run, float **row) {
    run_lookup *lk = &run->lk;
    adil_context *ctx = run->ctx;
    lk->n_batch = lk->at = 0;
    /* The pending token goes first; check_start keeps it inside the window. */
    size_t max = ctx->n_ctx > ctx->n_past ? ctx->n_ctx - ctx->n_past - 1 : 0;
    const size_t left = run->max_tokens - run->stats.n_generated - 1; /* the last row's token is free */
    if (max > left) max = left;
    if (max > ctx->n_batch - 1) max = ctx->n_batch - 1;
    const size_t n_draft = run_lookup_next(lk, max);
    *row = ctx->logits;
    if (n_draft == 0) return advance(run);
    lk->batch[0] = run->pending;
    lk->pos0 = ctx->n_past;
    const double t0 = adil_now_ms();
    const adil_status st = adil_context_eval(ctx, lk->batch, n_draft + 1, lk->rows, stop_hook, run);
    run->stats.decode_ms += adil_now_ms() - t0;
    if (st != ADIL_OK) return st;
    run->stats.n_drafted += (uint32_t)n_draft;
    lk->n_batch = n_draft + 1;
    ctx->n_past = lk->pos0 + 1; /* only the pending token is verified yet */
    *row = lk->rows;
    return ADIL_OK;
}

/* The row to sample next: a verified one left from the last pass (the cache
 * is cut back to the tokens verified through it), else a new pass's first. */
static adil_status next_row(adil_run *run, float **row) {
    run_lookup *lk = &run->lk;
    if (lk->at < lk->n_batch) {
        run->ctx->n_past = lk->pos0 + (uint32_t)lk->at + 1;
        *row = lk->rows + lk->at * (size_t)lk->n_vocab;
        return ADIL_OK;
    }
    if (!run->prefilled) {
        *row = run->ctx->logits;
        return advance(run);
    }
    return advance_lookup(run, row);
}

/* After token t was drawn from row lk->at: when it is the drafted token that
 * follows, it is already cached (and the next row is its successor's);
 * otherwise it is the pending token and the pass is over. */
static void settle_lookup(adil_run *run, int32_t t) {
    run_lookup *lk = &run->lk;
    run_lookup_push(lk, t);
    if (lk->at >= lk->n_batch) return; /* a plain pass: t is pending */
    const size_t next = lk->at + 1;
    if (next < lk->n_batch && lk->batch[next] == t) {
        run->ctx->n_past++;
        run->stats.n_draft_accepted++;
        run->pending = -1;
        lk->at = next;
        return;
    }
    run_lookup_adapt(lk, lk->n_batch - 1, lk->at);
    lk->at = lk->n_batch;
}

/* ---- the step ------------------------------------------------------------------ */

/* Draws the next token from `row` (the raw logits of its position, which the
 * sampler may change): the stop token check, logprobs, the sampler's history.
 * *tok stays -1 when the run ended. */
static adil_status sample_row(adil_run *run, float *row, int32_t *tok) {
    const double t0 = adil_now_ms();
    if (run->lp.k) run_logprobs_keep_row(&run->lp, row);
    const int32_t t = adil_sampler_sample(run->sampler, row);
    /* The first token belongs to the prompt's time (time to first token). */
    *(run->stats.n_generated == 0 ? &run->stats.prefill_ms : &run->stats.decode_ms) += adil_now_ms() - t0;
    if (is_stop_token(run, t)) return finish(run, ADIL_STOP_END_OF_TEXT, ADIL_OK);
    adil_status st;
    if (run->lp.k && (st = run_logprobs_add(&run->lp, run->lp.row, t)) != ADIL_OK)
        return finish(run, ADIL_STOP_ERROR, st);
    adil_sampler_accept(run->sampler, t);
    run->pending = t;
    run->stats.n_generated++;
    *tok = t;
    return ADIL_OK;
}

/* Produces one token into *tok, or returns the status that ends the run
 * (ADIL_OK with *tok = -1 when it ended normally). */
static adil_status next_token(adil_run *run, int32_t *tok) {
    *tok = -1;
    if (run->grammar) return next_token_grammar(run, tok);
    adil_status st = check_stop(run);
    if (st != ADIL_OK) return finish(run, run->pending_reason, st);
    if (run->stats.n_generated >= run->max_tokens) return finish(run, ADIL_STOP_MAX_TOKENS, ADIL_OK);

    float *row = run->ctx->logits;
    st = run->lk.on ? next_row(run, &row) : advance(run);
    if (st == ADIL_STATUS_CANCELLED || st == ADIL_STATUS_DEADLINE)
        return finish(run, run->pending_reason, st);
    if (st != ADIL_OK) return finish(run, ADIL_STOP_ERROR, st);
    st = sample_row(run, row, tok);
    if (*tok >= 0 && run->lk.on) settle_lookup(run, *tok);
    return st;
}

ADIL_API adil_status adil_run_step(adil_run *run, int32_t *tokens, size_t capacity, size_t *n_tokens) {
    if (n_tokens) *n_tokens = 0;
    if (!run || !tokens || !n_tokens || capacity == 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_step: run, tokens (capacity >= 1) and n_tokens are required");
    if (run->stats.stop_reason != ADIL_STOP_NONE) return ADIL_OK; /* stepping a stopped run */
    const double step_t0 = adil_now_ms();
    size_t n = 0;
    adil_status st = gguf_check_unchanged(run->ctx->model->file); /* one fstat per step */
    if (st != ADIL_OK) return finish(run, ADIL_STOP_ERROR, st);
    while (n < capacity) {
        run->token_t0 = adil_now_ms();
        int32_t tok;
        st = next_token(run, &tok);
        if (tok < 0) break;
        tokens[n++] = tok;
        if (run->grammar) {
            if (run->n_queue == 0 && grammar_ended(run, &st)) break;
        } else if (run->stats.n_generated >= run->max_tokens) {
            finish(run, ADIL_STOP_MAX_TOKENS, ADIL_OK);
            break;
        }
        if (adil_now_ms() - step_t0 >= run->step_budget_ms) break;
    }
    *n_tokens = n;
    if (run->grammar) run->stats.grammar_ms = run_grammar_ms(run->grammar);
    if (st != ADIL_OK && st != ADIL_STATUS_CANCELLED && st != ADIL_STATUS_DEADLINE) return st;
    if (st != ADIL_OK) {
        const char *what = st == ADIL_STATUS_CANCELLED                         ? "cancelled"
                           : run->stats.stop_reason == ADIL_STOP_DEADLINE_READ ? "read deadline expired"
                                                                               : "total deadline expired";
        return adil_fail(st, "adil_run_step: %s after %u tokens", what, run->stats.n_generated);
    }
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_run_cancel(adil_run *run) {
    if (run) atomic_store(&run->own_flag.set, 1);
}

ADIL_API adil_status adil_run_get_stats(const adil_run *run, adil_run_stats *out) {
    if (!run || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_get_stats: run and out are required");
    return adil_copy_out(out, &run->stats, sizeof run->stats, ADIL_SIZE_2_0_RUN_STATS,
                         "adil_run_get_stats: run stats");
}

ADIL_API void adil_run_free(adil_run *run) {
    if (!run) return;
    adil_run *self = run;
    atomic_compare_exchange_strong(&run->ctx->model->live_run, &self, NULL);
    if (run->ctx->run == run) run->ctx->run = NULL;
    adil_sampler_free(run->sampler);
    run_grammar_free(run->grammar);
    run_logprobs_free(&run->lp);
    run_lookup_free(&run->lk);
    free(run->batch);
    free(run->prompt);
    free(run->stop_tokens);
    free(run);
}

ADIL_API adil_status adil_run_token_logprobs(const adil_run *run, size_t index, float *logprob,
                                             int32_t *top_tokens, float *top_logprobs, size_t capacity,
                                             size_t *n_top) {
    if (n_top) *n_top = 0;
    if (!run || !logprob || !n_top || (capacity && (!top_tokens || !top_logprobs)))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_token_logprobs: run, logprob, n_top and (capacity %zu > 0) top_tokens and "
                         "top_logprobs are required",
                         capacity);
    /* Forced tokens still queued are counted but not yet handed out. */
    const size_t handed_out = run->stats.n_generated - run->n_queue;
    adil_status st =
        run_logprobs_get(&run->lp, handed_out, index, logprob, top_tokens, top_logprobs, capacity, n_top);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}
