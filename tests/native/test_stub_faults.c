/*
 * test_stub_faults.c — the stub's injectable faults: a status on the Nth
 * call (without consuming a turn), a not-ready window after load, and a
 * late answer after a cancel.
 */
#include "test_stub_api.h"

static void test_status_faults(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_faults.json", &model), ADIL_OK);
    if (model == NULL) return;
    static const struct {
        adil_status status;
        const char *message;
    } faults[] = {
        {ADIL_STATUS_BUSY, "scripted fault on call 1: busy"},
        {ADIL_STATUS_MODEL_NOT_READY, "scripted fault on call 2: model_not_ready"},
        {ADIL_STATUS_CONTEXT_LENGTH, "scripted fault on call 3: context_length"},
        {ADIL_STATUS_CAPABILITY, "scripted fault on call 4: capability"},
    };
    test_output out;
    for (int i = 0; i < 4; i++) {
        CHECK_STATUS(api, test_call(api, model, &out), faults[i].status);
        CHECK_ERROR_HAS(api, faults[i].message);
    }
    /* The faulted calls took no turn, and the model is free again. */
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    CHECK(out.len == 5 && memcmp(out.text, "first", 5) == 0);
    CHECK(out.stats.cancel_acknowledged == 0);
    /* Call 6 is a late answer; without a cancel it is an ordinary call. */
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    CHECK(out.len == 6 && memcmp(out.text, "second", 6) == 0);
    CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT && out.stats.cancel_acknowledged == 0);
    api->model_free(model);
}

static void test_not_ready_window(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    double loaded = test_now_ms();
    CHECK_STATUS(
        api,
        test_load_text(api, engine,
                       "{\"turns\": [{\"text\": \"ready\"}],"
                       " \"faults\": [{\"not_ready_ms\": 150}, {\"on_call\": 1, \"status\": \"busy\"}]}",
                       &model),
        ADIL_OK);
    if (model == NULL) return;
    test_output out;
    CHECK_STATUS(api, api->model_ready(model), ADIL_STATUS_MODEL_NOT_READY);
    CHECK_ERROR_HAS(api, "the model is not ready: expected 150 ms after load");
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_STATUS_MODEL_NOT_READY);
    CHECK_ERROR_HAS(api, "adil_run_start: the model is not ready");
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_STATUS_MODEL_NOT_READY);
    while (test_now_ms() - loaded < 160) test_sleep_ms(5);
    CHECK_STATUS(api, api->model_ready(model), ADIL_OK);
    /* Refusals inside the window are not calls: the first accepted start is call 1. */
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_STATUS_BUSY);
    CHECK_ERROR_HAS(api, "scripted fault on call 1: busy");
    CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    CHECK(out.len == 5 && memcmp(out.text, "ready", 5) == 0);
    api->model_free(model);
}

/* Starts a run and cancels it before its first step, with the run's own
 * flag or with a shared cancel flag. */
static void cancelled_call(const stub_api *api, adil_model *model, bool use_flag, test_output *out) {
    adil_context *ctx = test_new_context(api, model, 0);
    adil_cancel_flag *flag = NULL;
    CHECK_STATUS(api, api->cancel_flag_new(&flag), ADIL_OK);
    adil_run_params params;
    api->run_default_params(&params);
    params.cancel_flag = flag;
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    if (use_flag)
        api->cancel_flag_set(flag);
    else
        api->run_cancel(run);
    CHECK(api->run_cancelled(run) == 1);
    test_drain(api, run, 64, out);
    api->run_free(run);
    api->cancel_flag_free(flag);
    api->context_free(ctx);
}

static void test_late_answer(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api,
                 test_load_text(api, engine,
                                "{\"turns\": [{\"text\": \"late but whole\"}, {\"text\": \"dropped\"},"
                                " {\"text\": \"also late\"}],"
                                " \"token_delay_ms\": 1,"
                                " \"faults\": [{\"on_call\": 1, \"late_answer\": true},"
                                "            {\"on_call\": 3, \"late_answer\": true}]}",
                                &model),
                 ADIL_OK);
    if (model == NULL) return;
    test_output out;
    cancelled_call(api, model, false, &out);
    CHECK_STATUS(api, out.status, ADIL_OK);
    CHECK(out.len == 14 && memcmp(out.text, "late but whole", 14) == 0);
    CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT && out.stats.cancel_acknowledged == 1);
    /* An ordinary call stops at the cancel, with no token. */
    cancelled_call(api, model, false, &out);
    CHECK_STATUS(api, out.status, ADIL_STATUS_CANCELLED);
    CHECK(out.len == 0 && out.stats.stop_reason == ADIL_STOP_CANCELLED && out.stats.cancel_acknowledged == 1);
    /* The shared flag is acknowledged the same way. */
    cancelled_call(api, model, true, &out);
    CHECK_STATUS(api, out.status, ADIL_OK);
    CHECK(out.len == 9 && out.stats.cancel_acknowledged == 1);
    api->model_free(model);
}

int main(void) {
    static const test_engine_case cases[] = {test_status_faults, test_not_ready_window, test_late_answer};
    return test_stub_main("test_stub_faults", cases, sizeof cases / sizeof cases[0]);
}
