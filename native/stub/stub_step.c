/*
 * stub_step.c — stepping a stub run: the scripted bytes, one token each,
 * then EOS, paced by the script's token_delay_ms (a call that found no turn
 * left writes only EOS, at once).
 *
 * Before every token the step checks, in this order: the step's capacity and
 * budget, max_tokens, then the cancelled flags and the deadlines — once per
 * token, and again between sleep slices of at most 1 ms while it waits out
 * token_delay_ms, so a cancel or a deadline is seen within about a
 * millisecond.  A late-answer run (scripted fault) records that it saw the
 * cancel but keeps answering.
 *
 * A run with a grammar checks every scripted byte against it before the
 * byte is output (the stub does not choose its tokens, so it cannot keep
 * them valid; it reports where they are not).  The run stops with
 * ADIL_STATUS_OUTPUT_VALIDATION:
 *   - at a byte the grammar refuses, which is not output (stop reason
 *     ADIL_STOP_ERROR; the message names the byte and its offset in the
 *     turn's output) -- text after a complete document is refused like any
 *     other byte;
 *   - when the script ends (EOS or a stop token) inside the document
 *     (ADIL_STOP_END_OF_TEXT);
 *   - when max_tokens is reached inside the document (ADIL_STOP_MAX_TOKENS;
 *     "truncated"), as the CPU engine does.
 * A grammar never forces tokens here: n_forced_tokens stays 0.
 */
#include "stub_internal.h"

#include <stdio.h>

/* Why the run must stop now (ADIL_STOP_NONE: go on).  `wait_start` is when
 * the wait for the next token began (the read deadline counts from it). */
static uint32_t interruption(adil_run *run, double wait_start) {
    if (stub_run_is_cancelled(run)) {
        run->stats.cancel_acknowledged = 1;
        if (!run->late_answer) return ADIL_STOP_CANCELLED;
    }
    double now = adil_now_ms();
    if (run->total_timeout_ms > 0 && now - run->start_ms >= (double)run->total_timeout_ms)
        return ADIL_STOP_DEADLINE_TOTAL;
    if (run->read_timeout_ms > 0 && now - wait_start >= (double)run->read_timeout_ms)
        return ADIL_STOP_DEADLINE_READ;
    return ADIL_STOP_NONE;
}

/* Waits token_delay_ms from wait_start, in slices, watching for interruptions. */
static uint32_t pace(adil_run *run, double wait_start) {
    double due = wait_start + (double)run->token_delay_ms;
    for (;;) {
        uint32_t stop = interruption(run, wait_start);
        if (stop != ADIL_STOP_NONE) return stop;
        double left = due - adil_now_ms();
        if (left <= 0.0) return ADIL_STOP_NONE;
        adil_sleep_slice_ms(left);
    }
}

static bool is_stop_token(const adil_run *run, int32_t token) {
    for (size_t i = 0; i < run->n_stop_tokens; i++)
        if (run->stop_tokens[i] == token) return true;
    return false;
}

/* The next scripted token: the turn's bytes, then EOS forever. */
static int32_t next_token(adil_run *run) {
    if (run->output_pos < run->output_len) return run->output[run->output_pos++];
    return STUB_TOKEN_EOS;
}

/* The output ends for `reason`: a violation when a grammar's document is
 * still open. */
static uint32_t end_output(adil_run *run, uint32_t reason) {
    if (run->grammar != NULL && grammar_matcher_position(run->grammar) == GRAMMAR_OPEN)
        run->violation = reason == ADIL_STOP_MAX_TOKENS ? STUB_VIOLATION_TRUNCATED : STUB_VIOLATION_ENDED;
    return reason;
}

/* True when the run's grammar (if any) accepts `token` next. */
static bool grammar_accepts(adil_run *run, int32_t token) {
    if (run->grammar == NULL) return true;
    double begin = adil_now_ms();
    bool ok = grammar_matcher_accept_token(run->grammar, token, NULL);
    run->stats.grammar_ms += adil_now_ms() - begin;
    if (!ok) run->violation = STUB_VIOLATION_BYTE;
    return ok;
}

/* Produces tokens until the step is full or over budget, or the run stops;
 * returns the stop reason (ADIL_STOP_NONE when the run goes on). */
static uint32_t produce(adil_run *run, int32_t *tokens, size_t capacity, size_t *n) {
    double step_start = adil_now_ms();
    double wait_start = step_start;
    while (*n < capacity) {
        if (*n > 0 && adil_now_ms() - step_start >= (double)run->step_budget_ms) return ADIL_STOP_NONE;
        if (run->stats.n_generated >= run->max_tokens) return end_output(run, ADIL_STOP_MAX_TOKENS);
        /* An answer with no turn left stops at once: nothing to pace. */
        uint32_t stop = run->output != NULL ? pace(run, wait_start) : interruption(run, wait_start);
        if (stop != ADIL_STOP_NONE) return stop;
        int32_t token = next_token(run);
        if (token == STUB_TOKEN_EOS || is_stop_token(run, token))
            return end_output(run, ADIL_STOP_END_OF_TEXT);        /* the stop token itself is not output */
        if (!grammar_accepts(run, token)) return ADIL_STOP_ERROR; /* nor is a refused byte */
        tokens[(*n)++] = token;
        run->stats.n_generated++;
        wait_start = adil_now_ms();
    }
    return ADIL_STOP_NONE;
}

static adil_status status_of_violation(const adil_run *run) {
    switch (run->violation) {
    case STUB_VIOLATION_BYTE: {
        const size_t at = run->output_pos - 1; /* the refused byte was taken from the output */
        const unsigned char byte = run->output[at];
        char shown[8];
        if (byte >= 0x20 && byte < 0x7f)
            snprintf(shown, sizeof shown, "'%c'", byte);
        else
            snprintf(shown, sizeof shown, "0x%02x", byte);
        return adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                         "adil_run_step: the scripted text breaks the grammar at byte %zu (%s)", at, shown);
    }
    case STUB_VIOLATION_ENDED:
        return adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                         "adil_run_step: the scripted text ended inside the document after %u tokens",
                         run->stats.n_generated);
    default:
        return adil_fail(ADIL_STATUS_OUTPUT_VALIDATION,
                         "adil_run_step: the output was truncated inside the document after %u tokens "
                         "(max_tokens)",
                         run->stats.n_generated);
    }
}

static adil_status status_of_stop(const adil_run *run, uint32_t reason) {
    if (run->violation != STUB_VIOLATION_NONE) return status_of_violation(run);
    double elapsed = adil_now_ms() - run->start_ms;
    switch (reason) {
    case ADIL_STOP_CANCELLED:
        return adil_fail(ADIL_STATUS_CANCELLED, "adil_run_step: the run was cancelled after %u tokens",
                         run->stats.n_generated);
    case ADIL_STOP_DEADLINE_TOTAL:
        return adil_fail(ADIL_STATUS_DEADLINE,
                         "adil_run_step: total deadline of %u ms expired (%.0f ms since the run started, "
                         "%u tokens generated)",
                         run->total_timeout_ms, elapsed, run->stats.n_generated);
    case ADIL_STOP_DEADLINE_READ:
        return adil_fail(ADIL_STATUS_DEADLINE,
                         "adil_run_step: read deadline of %u ms expired waiting for token %u",
                         run->read_timeout_ms, run->stats.n_generated + 1);
    default:
        adil_clear_error();
        return ADIL_OK;
    }
}

ADIL_API adil_status adil_run_step(adil_run *run, int32_t *tokens, size_t capacity, size_t *n_tokens) {
    if (n_tokens != NULL) *n_tokens = 0;
    if (run == NULL || n_tokens == NULL || tokens == NULL || capacity == 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_run_step: expected a run, a token buffer with capacity > 0 and n_tokens, "
                         "got NULL or capacity %zu",
                         capacity);
    if (run->stopped) {
        adil_clear_error();
        return ADIL_OK;
    }
    /* The stub evaluates nothing: prefill_ms stays 0, all time is decode. */
    double begin = adil_now_ms();
    size_t n = 0;
    uint32_t reason = produce(run, tokens, capacity, &n);
    run->stats.decode_ms += adil_now_ms() - begin;
    *n_tokens = n;
    if (reason == ADIL_STOP_NONE) {
        adil_clear_error();
        return ADIL_OK;
    }
    run->stopped = true;
    run->stats.stop_reason = reason;
    return status_of_stop(run, reason);
}
