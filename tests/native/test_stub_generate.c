/*
 * test_stub_generate.c — what a stub run writes: each call takes the next
 * turn (text, then the tool call in the SDK's syntax with the arguments
 * copied verbatim), EOS ends it; max_tokens, stop tokens, the context
 * window, one live run per model, the run's statistics, and a turn of
 * 1.5 MB that comes out whole.
 */
#include "test_stub_api.h"

static const char TURN1[] = "Checking.<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\":  "
                            "\"Oslo\", \"days\": [1, 2]}}</tool_call>";
static const char TURN2[] =
    "<tool_call>{\"name\": \"set_counter\", \"arguments\": {\"value\": 9007199254740993}}</tool_call>";
static const char TURN3[] = "It is sunny in Oslo. \xc3\xa6\xc3\xb8\xc3\xa5 \xf0\x9f\x98\x80";

static bool output_is(const test_output *out, const char *expected) {
    size_t n = strlen(expected);
    if (out->len == n && memcmp(out->text, expected, n) == 0) return true;
    fprintf(stderr, "output \"%.*s\", expected \"%s\"\n", (int)out->len, out->text, expected);
    return false;
}

static void test_turns_in_order(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_basic.json", &model), ADIL_OK);
    if (model == NULL) return;
    const char *expected[] = {TURN1, TURN2, TURN3, ""};
    for (int call = 0; call < 4; call++) {
        test_output out;
        CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
        CHECK(output_is(&out, expected[call]));
        CHECK_STATUS(api, out.status, ADIL_OK);
        CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        CHECK(out.stats.n_generated == strlen(expected[call]));
        CHECK(out.stats.n_prompt_tokens == 2 && out.stats.n_cached_tokens == 0);
        CHECK(out.stats.cancel_acknowledged == 0);
        CHECK(out.stats.prefill_ms == 0.0 && out.stats.decode_ms >= 0.0);
    }
    /* Turns ran out: every further call is an empty answer that stops at once. */
    test_output out;
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    CHECK(out.len == 0 && out.steps == 1 && out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
    api->model_free(model);
}

static void test_small_steps(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_basic.json", &model), ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, NULL, &run), ADIL_OK);
    test_output out;
    test_drain(api, run, 3, &out);
    CHECK(output_is(&out, TURN1));
    CHECK(out.steps == (int)(strlen(TURN1) + 2) / 3 + 1); /* full steps, then the EOS step */
    /* A stopped run steps to zero tokens and ADIL_OK. */
    int32_t tokens[4];
    size_t n = 9;
    CHECK_STATUS(api, api->run_step(run, tokens, 4, &n), ADIL_OK);
    CHECK(n == 0);
    CHECK_STATUS(api, api->run_step(run, tokens, 0, &n), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_step(run, NULL, 4, &n), ADIL_STATUS_INVALID_ARGUMENT);
    adil_run_stats small = {.struct_size = 4};
    CHECK_STATUS(api, api->run_get_stats(run, &small), ADIL_STATUS_INVALID_ARGUMENT);
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

static void test_max_tokens_and_stop_tokens(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api,
                 test_load_text(api, engine,
                                "{\"turns\": [{\"text\": \"abcdefgh\"}, {\"text\": \"Hello! World\"},"
                                " {\"text\": \"four\"}]}",
                                &model),
                 ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run_params params;
    api->run_default_params(&params);
    params.max_tokens = 5;
    adil_run *run = NULL;
    test_output out;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 64, &out);
    api->run_free(run);
    CHECK(output_is(&out, "abcde"));
    CHECK_STATUS(api, out.status, ADIL_OK);
    CHECK(out.stats.stop_reason == ADIL_STOP_MAX_TOKENS && out.stats.n_generated == 5);

    /* A stop token ends the run with END_OF_TEXT and is not written. */
    const int32_t stops[] = {'!'};
    params.max_tokens = 0;
    params.stop_tokens = stops;
    params.n_stop_tokens = 1;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 64, &out);
    api->run_free(run);
    CHECK(output_is(&out, "Hello"));
    CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);

    /* A turn exactly max_tokens long stops at max_tokens, before EOS. */
    params.n_stop_tokens = 0;
    params.max_tokens = 4;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 64, &out);
    api->run_free(run);
    CHECK(output_is(&out, "four"));
    CHECK(out.stats.stop_reason == ADIL_STOP_MAX_TOKENS);

    const int32_t bad_stop[] = {999};
    params.stop_tokens = bad_stop;
    params.n_stop_tokens = 1;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "stop_tokens[0] expected a token id in [0, 258), got 999");
    params.stop_tokens = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_STATUS_INVALID_ARGUMENT);
    api->context_free(ctx);
    api->model_free(model);
}

static void test_context_window(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api,
                 test_load_text(api, engine,
                                "{\"turns\": [{\"text\": \"0123456789\"}], \"context_length\": 16}", &model),
                 ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    CHECK(api->context_size(ctx) == 16);
    int32_t prompt[20];
    for (int i = 0; i < 20; i++) prompt[i] = 'p';
    adil_run_params params;
    api->run_default_params(&params);
    params.max_tokens = 7;
    adil_run *run = NULL;
    CHECK_STATUS(api, api->run_start(ctx, prompt, 10, &params, &run), ADIL_STATUS_CONTEXT_LENGTH);
    CHECK_ERROR_HAS(api, "a prompt of 10 tokens plus max_tokens 7 exceed the context window of 16 tokens");
    CHECK(run == NULL);
    params.max_tokens = 0;
    CHECK_STATUS(api, api->run_start(ctx, prompt, 16, &params, &run), ADIL_STATUS_CONTEXT_LENGTH);
    CHECK_ERROR_HAS(api,
                    "a prompt of 16 tokens leaves no room for output in the context window of 16 tokens");
    CHECK_STATUS(api, api->run_start(ctx, prompt, 20, &params, &run), ADIL_STATUS_CONTEXT_LENGTH);
    /* Refused starts are not calls and take no turn: max_tokens 0 = the rest of the window. */
    CHECK_STATUS(api, api->run_start(ctx, prompt, 10, &params, &run), ADIL_OK);
    test_output out;
    test_drain(api, run, 64, &out);
    api->run_free(run);
    CHECK(output_is(&out, "012345"));
    CHECK(out.stats.stop_reason == ADIL_STOP_MAX_TOKENS && out.stats.n_prompt_tokens == 10);
    api->context_free(ctx);

    /* An explicit n_ctx is the window. */
    ctx = test_new_context(api, model, 4);
    params.max_tokens = 3;
    CHECK_STATUS(api, api->run_start(ctx, prompt, 2, &params, &run), ADIL_STATUS_CONTEXT_LENGTH);
    CHECK_ERROR_HAS(api, "window of 4 tokens");
    api->context_free(ctx);
    api->model_free(model);
}

static void test_bad_prompts(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": [{\"text\": \"kept\"}]}", &model), ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run *run = NULL;
    const int32_t bad[] = {'a', 258};
    const int32_t negative[] = {-1};
    const int32_t good[] = {256, 'a', 257};
    CHECK_STATUS(api, api->run_start(ctx, bad, 0, NULL, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "expected a non-empty prompt");
    CHECK_STATUS(api, api->run_start(ctx, NULL, 2, NULL, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_start(ctx, bad, 2, NULL, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "prompt[1] expected a token id in [0, 258), got 258");
    CHECK_STATUS(api, api->run_start(ctx, negative, 1, NULL, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_start(NULL, good, 3, NULL, &run), ADIL_STATUS_INVALID_ARGUMENT);
    adil_run_params small = {.struct_size = 8};
    CHECK_STATUS(api, api->run_start(ctx, good, 3, &small, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "run params: struct_size expected at least");
    adil_sampling_params sampling;
    api->sampling_default_params(&sampling);
    adil_run_params params;
    api->run_default_params(&params);
    params.sampling = &sampling;
    sampling.struct_size = 4;
    CHECK_STATUS(api, api->run_start(ctx, good, 3, &params, &run), ADIL_STATUS_INVALID_ARGUMENT);
    sampling.struct_size = sizeof sampling;
    /* None of those was a call: the first good start gets the first turn. */
    CHECK_STATUS(api, api->run_start(ctx, good, 3, &params, &run), ADIL_OK);
    test_output out;
    test_drain(api, run, 64, &out);
    api->run_free(run);
    CHECK(output_is(&out, "kept"));
    api->context_free(ctx);
    api->model_free(model);
}

static void test_one_run_per_model(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api,
                 test_load_text(api, engine, "{\"turns\": [{\"text\": \"A\"}, {\"text\": \"B\"}]}", &model),
                 ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx1 = test_new_context(api, model, 0);
    adil_context *ctx2 = test_new_context(api, model, 0);
    adil_run *first = NULL, *second = NULL;
    CHECK_STATUS(api, test_start(api, ctx1, NULL, &first), ADIL_OK);
    CHECK_STATUS(api, test_start(api, ctx2, NULL, &second), ADIL_STATUS_BUSY);
    CHECK_ERROR_HAS(api, "the model already serves a run");
    CHECK(second == NULL);
    /* Still busy after the first run stopped: only adil_run_free releases the model. */
    test_output out;
    test_drain(api, first, 64, &out);
    CHECK(output_is(&out, "A"));
    CHECK_STATUS(api, test_start(api, ctx1, NULL, &second), ADIL_STATUS_BUSY);
    api->run_free(first);
    CHECK_STATUS(api, test_start(api, ctx2, NULL, &second), ADIL_OK);
    test_drain(api, second, 64, &out);
    CHECK(output_is(&out, "B")); /* the refused starts took no turn */
    api->run_free(second);
    api->run_free(NULL);

    /* Another model is not busy because this one is. */
    adil_model *other = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": [{\"text\": \"C\"}]}", &other), ADIL_OK);
    adil_context *ctx3 = test_new_context(api, other, 0);
    CHECK_STATUS(api, test_start(api, ctx1, NULL, &first), ADIL_OK);
    CHECK_STATUS(api, test_start(api, ctx3, NULL, &second), ADIL_OK);
    api->run_free(second);
    api->run_free(first);
    api->context_free(ctx3);
    api->model_free(other);
    api->context_free(ctx1);
    api->context_free(ctx2);
    api->model_free(model);
}

/* A turn of 1.5 MB comes out whole, byte for byte, in steps of 256 tokens:
 * the stub's cost per token does not depend on how far into the turn it is
 * (the run only keeps a position in the compiled turn). */
static void test_long_output(const stub_api *api, adil_engine *engine) {
    enum { LEN = 1500000 };
    static const char head[] = "{\"context_length\": 2000000, \"turns\": [{\"text\": \"";
    static const char tail[] = "\"}]}";
    char *json = malloc(sizeof head + LEN + sizeof tail);
    if (json == NULL) return;
    memcpy(json, head, sizeof head - 1);
    for (size_t i = 0; i < LEN; i++) json[sizeof head - 1 + i] = (char)('a' + i % 26);
    memcpy(json + sizeof head - 1 + LEN, tail, sizeof tail);
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, json, &model), ADIL_OK);
    free(json);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 2000000);
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, NULL, &run), ADIL_OK);
    size_t total = 0, wrong = 0;
    for (;;) {
        int32_t tokens[256];
        size_t n = 0;
        adil_status st = api->run_step(run, tokens, 256, &n);
        for (size_t i = 0; i < n; i++, total++) wrong += tokens[i] != 'a' + (int32_t)(total % 26);
        if (st != ADIL_OK || n == 0) {
            CHECK_STATUS(api, st, ADIL_OK);
            break;
        }
    }
    CHECK(total == LEN && wrong == 0);
    adil_run_stats stats = {.struct_size = sizeof stats};
    CHECK_STATUS(api, api->run_get_stats(run, &stats), ADIL_OK);
    CHECK(stats.n_generated == LEN && stats.stop_reason == ADIL_STOP_END_OF_TEXT);
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

int main(void) {
    static const test_engine_case cases[] = {
        test_turns_in_order, test_small_steps, test_max_tokens_and_stop_tokens,
        test_context_window, test_bad_prompts, test_one_run_per_model,
        test_long_output,
    };
    return test_stub_main("test_stub_generate", cases, sizeof cases / sizeof cases[0]);
}
