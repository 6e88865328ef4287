/*
 * test_stub_logprobs.c — adil_run_token_logprobs on the stub: each token it
 * wrote has logprob 0 and is its own only alternative; an index not yet
 * written, a run without n_logprobs, n_logprobs over ADIL_MAX_LOGPROBS and
 * NULL arrays with room are refused with ADIL_STATUS_INVALID_ARGUMENT.
 */
#include "test_stub_api.h"

#include <math.h>

static void test_certain_tokens(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api,
                 test_load_text(api, engine, "{\"turns\": [{\"text\": \"Hey\"}, {\"text\": \"x\"}]}", &model),
                 ADIL_OK);
    if (model == NULL) return;
    CHECK(api->run_token_logprobs != NULL);
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run_params params;
    api->run_default_params(&params);
    CHECK(params.n_logprobs == 0);
    params.n_logprobs = ADIL_MAX_LOGPROBS + 1;
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "n_logprobs: expected 0..20, got 21");
    params.n_logprobs = 4;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    float lp = 1.0f, top[2] = {5.0f, 5.0f};
    int32_t ids[2] = {-1, -1};
    size_t n_top = 9;
    CHECK_STATUS(api, api->run_token_logprobs(run, 0, &lp, ids, top, 2, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "index 0: expected one of the 0 tokens generated so far");
    CHECK(n_top == 0);
    test_output out;
    test_drain(api, run, 2, &out);
    CHECK(out.len == 3 && memcmp(out.text, "Hey", 3) == 0);
    for (size_t i = 0; i < out.len; i++) {
        CHECK_STATUS(api, api->run_token_logprobs(run, i, &lp, ids, top, 2, &n_top), ADIL_OK);
        CHECK(lp == 0.0f && n_top == 1 && ids[0] == (unsigned char)out.text[i] && top[0] == 0.0f);
        CHECK(ids[1] == -1 && top[1] == 5.0f);
    }
    CHECK_STATUS(api, api->run_token_logprobs(run, 1, &lp, NULL, NULL, 0, &n_top), ADIL_OK);
    CHECK(n_top == 1);
    CHECK_STATUS(api, api->run_token_logprobs(run, 3, &lp, ids, top, 2, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_token_logprobs(run, 0, &lp, NULL, top, 1, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_token_logprobs(run, 0, NULL, ids, top, 1, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->run_token_logprobs(NULL, 0, &lp, ids, top, 1, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    api->run_free(run);
    /* the next call, without n_logprobs */
    params.n_logprobs = 0;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    test_drain(api, run, 2, &out);
    CHECK_STATUS(api, api->run_token_logprobs(run, 0, &lp, ids, top, 2, &n_top),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "started with n_logprobs 0");
    api->run_free(run);
    api->context_free(ctx);
    api->model_free(model);
}

int main(void) {
    static const test_engine_case cases[] = {test_certain_tokens};
    return test_stub_main("test_stub_logprobs", cases, sizeof cases / sizeof cases[0]);
}
