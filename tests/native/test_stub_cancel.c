/*
 * test_stub_cancel.c — timing: token pacing, the step budget, cancellation
 * from another thread (the run's own flag and a shared cancel flag), the read
 * and total deadlines, and the stub's sleep tool with a cancelled flag.
 *
 * Bounds are generous (sanitizer builds on a loaded machine), but each says
 * what it measures: a cancel is seen within a few ms, not a token later.
 */
#include "test_stub_api.h"

#include <pthread.h>

/* A 200-byte turn paced at 5 ms a token: a whole second if never cancelled. */
static const char SLOW_SCRIPT[] =
    "{\"turns\": [{\"text\": "
    "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
    "x"
    "xxxxxxxxxxxx\"}, {\"text\": \"next\"}], \"token_delay_ms\": 5}";

/* What the canceller thread does: wait, then cancel, noting when. */
typedef struct canceller {
    const stub_api *api;
    adil_run *run;          /* cancel this run, or */
    adil_cancel_flag *flag; /* set this flag */
    long after_ms;
    double cancelled_at;
} canceller;

static void *cancel_later(void *arg) {
    canceller *c = arg;
    test_sleep_ms(c->after_ms);
    c->cancelled_at = test_now_ms();
    if (c->run != NULL)
        c->api->run_cancel(c->run);
    else
        c->api->cancel_flag_set(c->flag);
    return NULL;
}

static void test_pacing(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_paced.json", &model), ADIL_OK);
    if (model == NULL) return;
    double start = test_now_ms();
    test_output out;
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    double elapsed = test_now_ms() - start;
    /* Ten bytes and EOS at 2 ms each: at least 22 ms. */
    CHECK(out.len == 10 && elapsed >= 21.0 && elapsed < 500.0);
    CHECK(out.stats.decode_ms >= 21.0);
    api->model_free(model);

    /* With no turn left, the answer is empty and stops at once, unpaced. */
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": [], \"token_delay_ms\": 200}", &model),
                 ADIL_OK);
    start = test_now_ms();
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    CHECK(out.len == 0 && out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
    CHECK(test_now_ms() - start < 100.0);
    api->model_free(model);
}

static void test_step_budget(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, SLOW_SCRIPT, &model), ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run_params params;
    api->run_default_params(&params);
    params.step_budget_ms = 12;
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    int32_t tokens[256];
    size_t n = 0;
    double start = test_now_ms();
    CHECK_STATUS(api, api->run_step(run, tokens, 256, &n), ADIL_OK);
    double elapsed = test_now_ms() - start;
    /* Returns once it has a token and 12 ms passed: 3 tokens at 5 ms, not 200. */
    CHECK(n >= 1 && n <= 6);
    CHECK(elapsed >= 12.0 && elapsed < 200.0);
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

/* Runs the slow turn while another thread cancels after 30 ms. */
static void cancel_from_thread(const stub_api *api, adil_engine *engine, bool use_flag) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, SLOW_SCRIPT, &model), ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_cancel_flag *flag = NULL;
    CHECK_STATUS(api, api->cancel_flag_new(&flag), ADIL_OK);
    adil_run_params params;
    api->run_default_params(&params);
    params.cancel_flag = flag;
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    canceller c = {api, use_flag ? NULL : run, flag, 30, 0.0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cancel_later, &c) == 0);
    test_output out;
    test_drain(api, run, 256, &out);
    double stopped_at = test_now_ms();
    pthread_join(thread, NULL);
    CHECK_STATUS(api, out.status, ADIL_STATUS_CANCELLED);
    CHECK_HAS(out.error, "the run was cancelled after");
    CHECK(out.stats.stop_reason == ADIL_STOP_CANCELLED && out.stats.cancel_acknowledged == 1);
    CHECK(out.len > 0 && out.len < 40); /* it stopped early, keeping what it wrote */
    CHECK(out.stats.n_generated == out.len);
    double latency = stopped_at - c.cancelled_at;
    if (latency > 20.0) {
        fprintf(stderr, "cancel seen after %.1f ms\n", latency);
        test_failures++;
    }
    CHECK(api->run_cancelled(run) == 1);
    CHECK(api->cancel_flag_is_set(flag) == use_flag);
    api->run_free(run);
    api->cancel_flag_free(flag);
    api->context_free(ctx);
    api->model_free(model);
}

static void test_deadlines(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(
        api,
        test_load_text(
            api, engine,
            "{\"turns\": [{\"text\": \"slow\"}, {\"text\": \"0123456789012345678901234567890123456789\"}],"
            " \"token_delay_ms\": 50}",
            &model),
        ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run_params params;
    api->run_default_params(&params);
    params.read_timeout_ms = 10; /* a token takes 50 ms */
    adil_run *run = NULL;
    test_output out;
    double start = test_now_ms();
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 64, &out);
    double elapsed = test_now_ms() - start;
    api->run_free(run);
    CHECK_STATUS(api, out.status, ADIL_STATUS_DEADLINE);
    CHECK_HAS(out.error, "read deadline of 10 ms expired waiting for token 1");
    CHECK(out.stats.stop_reason == ADIL_STOP_DEADLINE_READ && out.len == 0);
    CHECK(elapsed >= 10.0 && elapsed < 50.0); /* before the first token was due */
    api->context_free(ctx);
    api->model_free(model);

    /* Total: the tokens made before the deadline stay in the step's output. */
    CHECK_STATUS(api,
                 test_load_text(api, engine,
                                "{\"turns\": [{\"text\": \"0123456789012345678901234567890123456789"
                                "0123456789012345678901234567890123456789\"}], \"token_delay_ms\": 4}",
                                &model),
                 ADIL_OK);
    ctx = test_new_context(api, model, 0);
    api->run_default_params(&params);
    params.total_timeout_ms = 30;
    params.read_timeout_ms = 1000;
    params.step_budget_ms = 1000; /* one step lives through the deadline */
    start = test_now_ms();
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 256, &out);
    elapsed = test_now_ms() - start;
    CHECK_STATUS(api, out.status, ADIL_STATUS_DEADLINE);
    CHECK_HAS(out.error, "total deadline of 30 ms expired");
    CHECK(out.stats.stop_reason == ADIL_STOP_DEADLINE_TOTAL);
    /* Tokens at 4, 8, ... 28 ms: at most 7 before the deadline, far fewer than the 80 of the turn. */
    CHECK(out.steps == 1 && out.len >= 1 && out.len <= 7 && out.stats.n_generated == out.len);
    CHECK(memcmp(out.text, "0123456", out.len) == 0);
    CHECK(elapsed >= 30.0 && elapsed < 200.0);
    /* After the stop: zero tokens and ADIL_OK. */
    int32_t tokens[4];
    size_t n = 5;
    CHECK_STATUS(api, api->run_step(run, tokens, 4, &n), ADIL_OK);
    CHECK(n == 0);
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

static void test_sleep_tool(const stub_api *api, adil_engine *engine) {
    char result[64];
    size_t len = 0;
    CHECK_STATUS(api, api->sleep_tool(NULL, "{\"ms\": 5}", 9, NULL, NULL, result, sizeof result, &len),
                 ADIL_OK);
    CHECK(len == 15 && memcmp(result, "{\"slept_ms\": 5}", 15) == 0);
    CHECK_STATUS(api, api->sleep_tool(NULL, "{\"ms\": 5}", 9, NULL, NULL, result, 4, &len),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(len == 15);
    CHECK_STATUS(api, api->sleep_tool(NULL, "{\"ms\": -5}", 10, NULL, NULL, result, sizeof result, &len),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "expected {\"ms\": an integer from 0 to 600000}");
    CHECK_STATUS(api, api->sleep_tool(NULL, "{\"ms\": ", 7, NULL, NULL, result, sizeof result, &len),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "invalid JSON");

    /* A flag set from another thread stops a 2 s sleep within a few ms. */
    adil_cancel_flag *flag = NULL;
    CHECK_STATUS(api, api->cancel_flag_new(&flag), ADIL_OK);
    canceller c = {api, NULL, flag, 20, 0.0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cancel_later, &c) == 0);
    adil_status st = api->sleep_tool(NULL, "{\"ms\": 2000}", 12, api->cancel_flag_is_set, flag, result,
                                     sizeof result, &len);
    double stopped_at = test_now_ms();
    pthread_join(thread, NULL);
    CHECK_STATUS(api, st, ADIL_STATUS_CANCELLED);
    CHECK(stopped_at - c.cancelled_at < 20.0);
    api->cancel_flag_free(flag);

    /* The engine's function bound to a run works as the tool's cancelled flag. */
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": []}", &model), ADIL_OK);
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, NULL, &run), ADIL_OK);
    adil_cancelled_fn cancelled = api->run_cancelled;
    CHECK(cancelled(run) == 0);
    api->run_cancel(run);
    CHECK_STATUS(api,
                 api->sleep_tool(NULL, "{\"ms\": 2000}", 12, cancelled, run, result, sizeof result, &len),
                 ADIL_STATUS_CANCELLED);
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

static void test_cancel_run_from_thread(const stub_api *api, adil_engine *engine) {
    cancel_from_thread(api, engine, false);
}

static void test_cancel_flag_from_thread(const stub_api *api, adil_engine *engine) {
    cancel_from_thread(api, engine, true);
}

int main(void) {
    static const test_engine_case cases[] = {
        test_pacing,    test_step_budget, test_cancel_run_from_thread, test_cancel_flag_from_thread,
        test_deadlines, test_sleep_tool,
    };
    return test_stub_main("test_stub_cancel", cases, sizeof cases / sizeof cases[0]);
}
