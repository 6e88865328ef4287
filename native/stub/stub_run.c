/*
 * stub_run.c — starting, cancelling and freeing runs of the stub engine.
 *
 * Admission of a run, in order:
 *   1. arguments (prompt ids in range, sizes, a grammar compiled for this
 *      model)                                    -> ADIL_STATUS_INVALID_ARGUMENT
 *   2. prompt + max_tokens against the window   -> ADIL_STATUS_CONTEXT_LENGTH
 *   3. the not-ready window after load          -> ADIL_STATUS_MODEL_NOT_READY
 *   4. one live run per model (an atomic)       -> ADIL_STATUS_BUSY
 *   5. the call is counted (1-based, per model); a fault scripted for this
 *      call with a status fails it now, WITHOUT consuming a turn
 *   6. the call takes the next turn (or an empty answer when none is left)
 * Only starts that pass 1-4 are counted as calls, so a script's on_call
 * numbers do not depend on how often a host retried a not-ready or busy
 * model, nor on how fast it did so.
 */
#include "stub_internal.h"

#include <stdlib.h>
#include <string.h>

#define STUB_MAX_STOP_TOKENS 65536u

bool stub_run_is_cancelled(const adil_run *run) {
    return atomic_load_explicit(&((adil_run *)run)->cancelled, memory_order_acquire) != 0 ||
           adil_cancel_flag_is_set(run->cancel_flag);
}

static adil_status check_tokens(const int32_t *ids, size_t n, const char *what) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= STUB_N_VOCAB)
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "adil_run_start: %s[%zu] expected a token id in [0, %d), got %d", what, i,
                             STUB_N_VOCAB, (int)ids[i]);
    return ADIL_OK;
}

static adil_status check_arguments(const int32_t *prompt, size_t n_prompt, const adil_run_params *p) {
    if (n_prompt == 0 || prompt == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_start: expected a non-empty prompt, got %s",
                         prompt == NULL ? "NULL" : "0 tokens");
    adil_status st = check_tokens(prompt, n_prompt, "prompt");
    if (st != ADIL_OK) return st;
    if (p->sampling != NULL && p->sampling->struct_size < ADIL_SIZE_2_0_SAMPLING_PARAMS)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: sampling struct_size expected at least %zu "
                         "(the version-2.0 struct), got %u",
                         ADIL_SIZE_2_0_SAMPLING_PARAMS, p->sampling->struct_size);
    if (p->n_logprobs > ADIL_MAX_LOGPROBS)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_start: n_logprobs: expected 0..%d, got %u",
                         ADIL_MAX_LOGPROBS, p->n_logprobs);
    /* The stub's output is its script's: lookup decoding (which never changes
     * what a run produces) has nothing to speed up, so a valid value is taken
     * and changes nothing. */
    if (p->speculative > ADIL_SPECULATIVE_LOOKUP)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: speculative: expected ADIL_SPECULATIVE_NONE (0) or "
                         "ADIL_SPECULATIVE_LOOKUP (1), got %u",
                         p->speculative);
    if (p->n_stop_tokens > STUB_MAX_STOP_TOKENS || (p->n_stop_tokens > 0 && p->stop_tokens == NULL))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: stop_tokens expected at most %u ids in a non-NULL array, got %zu%s",
                         STUB_MAX_STOP_TOKENS, p->n_stop_tokens, p->stop_tokens == NULL ? " and NULL" : "");
    return check_tokens(p->stop_tokens, p->n_stop_tokens, "stop_tokens");
}

static adil_status check_grammar(const adil_model *model, const adil_grammar *grammar) {
    if (grammar != NULL && grammar_vocab_of(grammar) != model->grammar_vocab)
        return adil_fail(
            ADIL_STATUS_INVALID_ARGUMENT,
            "adil_run_start: grammar: expected one compiled for this run's model, got one compiled "
            "for another model");
    return ADIL_OK;
}

/* Resolves max_tokens (0 = up to the end of the window) against the window. */
static adil_status check_window(size_t n_prompt, uint32_t max_tokens, uint32_t n_ctx, uint32_t *resolved) {
    if (max_tokens == 0 && n_prompt >= n_ctx)
        return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                         "adil_run_start: a prompt of %zu tokens leaves no room for output in the context "
                         "window of %u tokens",
                         n_prompt, n_ctx);
    if ((uint64_t)n_prompt + max_tokens > n_ctx)
        return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                         "adil_run_start: a prompt of %zu tokens plus max_tokens %u exceed the context "
                         "window of %u tokens",
                         n_prompt, max_tokens, n_ctx);
    *resolved = max_tokens > 0 ? max_tokens : (uint32_t)(n_ctx - n_prompt);
    return ADIL_OK;
}

static adil_run *new_run(adil_context *ctx, const adil_run_params *p, size_t n_prompt, uint32_t max_tokens) {
    adil_run *run = calloc(1, sizeof *run);
    if (run == NULL) return NULL;
    if (p->n_stop_tokens > 0) {
        run->stop_tokens = malloc(p->n_stop_tokens * sizeof *run->stop_tokens);
        if (run->stop_tokens == NULL) {
            free(run);
            return NULL;
        }
        memcpy(run->stop_tokens, p->stop_tokens, p->n_stop_tokens * sizeof *run->stop_tokens);
        run->n_stop_tokens = p->n_stop_tokens;
    }
    run->model = ctx->model;
    atomic_init(&run->cancelled, 0);
    run->cancel_flag = p->cancel_flag;
    run->token_delay_ms = ctx->model->script.token_delay_ms;
    run->max_tokens = max_tokens;
    run->total_timeout_ms = p->total_timeout_ms;
    run->read_timeout_ms = p->read_timeout_ms;
    run->step_budget_ms = p->step_budget_ms > 0 ? p->step_budget_ms : ADIL_DEFAULT_STEP_BUDGET_MS;
    run->n_logprobs = p->n_logprobs;
    run->stats.struct_size = sizeof run->stats;
    run->stats.stop_reason = ADIL_STOP_NONE;
    run->stats.n_prompt_tokens = (uint32_t)n_prompt; /* <= n_ctx, checked */
    run->start_ms = adil_now_ms();
    return run;
}

static void free_run_memory(adil_run *run) {
    if (run->grammar != NULL) grammar_matcher_free(run->grammar);
    free(run->stop_tokens);
    free(run);
}

/* Steps 5 and 6 of the admission; the caller holds the model's run_live. */
static adil_status take_turn(adil_model *model, adil_run *run) {
    uint32_t call = ++model->n_calls;
    const stub_fault *fault = stub_script_fault(&model->script, call);
    if (fault != NULL && fault->status != ADIL_OK)
        return adil_fail(fault->status, "adil_run_start: scripted fault on call %u: %s", call,
                         adil_status_string(fault->status));
    run->late_answer = fault != NULL && fault->late_answer;
    if (model->next_turn < model->script.n_turns) {
        const stub_turn *turn = &model->script.turns[model->next_turn++];
        run->output = turn->bytes;
        run->output_len = turn->len;
    }
    return ADIL_OK;
}

ADIL_API adil_status adil_run_start(adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                                    const adil_run_params *params, adil_run **out) {
    if (out == NULL || ctx == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_start: expected a context and an out pointer, got NULL");
    *out = NULL;
    adil_run_params p;
    adil_run_default_params(&p);
    /* A variant of an earlier minor reads only the fields that minor has. */
    adil_status st = adil_copy_params(&p, STUB_SIZEOF_RUN_PARAMS, params, ADIL_SIZE_2_0_RUN_PARAMS,
                                      "adil_run_start: run params");
    uint32_t max_tokens = 0;
    if (st == ADIL_OK) st = check_arguments(prompt, n_prompt, &p);
    if (st == ADIL_OK) st = check_grammar(ctx->model, p.grammar);
    if (st == ADIL_OK) st = check_window(n_prompt, p.max_tokens, ctx->n_ctx, &max_tokens);
    if (st == ADIL_OK) st = stub_model_check_ready(ctx->model, "adil_run_start");
    if (st != ADIL_OK) return st;
    adil_run *run = new_run(ctx, &p, n_prompt, max_tokens);
    if (run == NULL) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_run_start: could not allocate a run");
    if (p.grammar != NULL && (st = grammar_matcher_new(p.grammar, &run->grammar)) != ADIL_OK) {
        free_run_memory(run);
        return st;
    }
    int expected = 0;
    if (!atomic_compare_exchange_strong_explicit(&ctx->model->run_live, &expected, 1, memory_order_acq_rel,
                                                 memory_order_acquire)) {
        free_run_memory(run);
        return adil_fail(ADIL_STATUS_BUSY, "adil_run_start: the model already serves a run");
    }
    st = take_turn(ctx->model, run);
    if (st != ADIL_OK) {
        atomic_store_explicit(&ctx->model->run_live, 0, memory_order_release);
        free_run_memory(run);
        return st;
    }
    *out = run;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_run_cancel(adil_run *run) {
    if (run != NULL) atomic_store_explicit(&run->cancelled, 1, memory_order_release);
}

ADIL_API int adil_run_cancelled(void *run) { return run != NULL && stub_run_is_cancelled(run); }

ADIL_API adil_status adil_run_get_stats(const adil_run *run, adil_run_stats *out) {
    if (run == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_run_get_stats: expected a run, got NULL");
    adil_status st = adil_copy_out(out, &run->stats, sizeof run->stats, ADIL_SIZE_2_0_RUN_STATS,
                                   "adil_run_get_stats: run stats");
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

ADIL_API void adil_run_free(adil_run *run) {
    if (run == NULL) return;
    /* Nothing runs in the background, so freeing is the cancel: the model is free again. */
    atomic_store_explicit(&run->model->run_live, 0, memory_order_release);
    free_run_memory(run);
}

/* The stub has no model: each token it wrote was certain.  Its logprob is 0
 * and it is its own only alternative. */
ADIL_API adil_status adil_run_token_logprobs(const adil_run *run, size_t index, float *logprob,
                                             int32_t *top_tokens, float *top_logprobs, size_t capacity,
                                             size_t *n_top) {
    if (n_top != NULL) *n_top = 0;
    if (run == NULL || logprob == NULL || n_top == NULL ||
        (capacity > 0 && (top_tokens == NULL || top_logprobs == NULL)))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_token_logprobs: expected a run, logprob, n_top and (capacity %zu > 0) "
                         "top_tokens and top_logprobs, got NULL",
                         capacity);
    if (run->n_logprobs == 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_token_logprobs: the run was started with n_logprobs 0; expected 1..%d",
                         ADIL_MAX_LOGPROBS);
    if (index >= run->stats.n_generated)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_token_logprobs: index %zu: expected one of the %u tokens generated so far",
                         index, run->stats.n_generated);
    *logprob = 0.0f;
    *n_top = 1;
    if (capacity > 0) {
        top_tokens[0] = run->output[index]; /* the tokens written are the turn's first bytes */
        top_logprobs[0] = 0.0f;
    }
    adil_clear_error();
    return ADIL_OK;
}
