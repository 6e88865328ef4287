/*
 * test_stub_cycles.c — 1,000 open/load/generate/close cycles of the stub,
 * plus repeated dlopen/dlclose of the library.  Under the sanitizer build
 * (-DADIL_SANITIZE=ON, ASAN_OPTIONS=detect_leaks=1) LeakSanitizer fails the
 * test on any leak; in a plain build the resident set must stay bounded.
 */
#include "test_stub_api.h"

#define CYCLES        1000
#define WARMUP        100
#define DLOPEN_CYCLES 20

/* Resident set size in KiB, from /proc/self/statm; 0 if unknown. */
static long rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f == NULL) return 0;
    if (fscanf(f, "%ld %ld", &size, &resident) != 2) resident = 0;
    fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* One whole life: engine, model, context, a full run and a cancelled one. */
static void one_cycle(const stub_api *api) {
    adil_engine *engine = test_open_engine(api);
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_basic.json", &model), ADIL_OK);
    if (model != NULL) {
        test_output out;
        CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
        CHECK(out.len > 100 && out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        adil_context *ctx = test_new_context(api, model, 0);
        adil_cancel_flag *flag = NULL;
        CHECK_STATUS(api, api->cancel_flag_new(&flag), ADIL_OK);
        adil_run_params params;
        api->run_default_params(&params);
        params.cancel_flag = flag;
        const int32_t stops[] = {'!'};
        params.stop_tokens = stops;
        params.n_stop_tokens = 1;
        adil_run *run = NULL;
        CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
        api->cancel_flag_set(flag);
        /* Freed without being stepped to its end: freeing must release everything. */
        api->run_free(run);
        api->cancel_flag_free(flag);
        api->context_free(ctx);
    }
    /* A failed load must not leak either. */
    adil_model *bad = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_bad_unknown_fault.json", &bad),
                 ADIL_STATUS_MODEL_FORMAT);
    api->model_free(model);
    api->engine_close(engine);
}

int main(void) {
    stub_api api;
    if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
    long before = 0;
    for (int i = 0; i < CYCLES && test_failures == 0; i++) {
        if (i == WARMUP) before = rss_kib();
        one_cycle(&api);
    }
    long growth = rss_kib() - before;
    printf("rss growth over %d cycles: %ld KiB\n", CYCLES - WARMUP, growth);
#if !defined(__SANITIZE_ADDRESS__)
    /* ASan's quarantine holds freed memory on purpose, so only a plain build checks RSS. */
    CHECK(growth < 2048);
#endif
    stub_api_close(&api);

    /* Loading and unloading the library itself leaves nothing behind. */
    for (int i = 0; i < DLOPEN_CYCLES && test_failures == 0; i++) {
        if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
        one_cycle(&api);
        stub_api_close(&api);
    }
    return test_report("test_stub_cycles");
}
