/*
 * test_stub_api.h — what the stub tests share: the stub loaded with dlopen
 * the way a host loads it (by path, every symbol resolved by name, never
 * linked), status checks that show the engine's last error (on top of
 * test_util.h's CHECK), and small helpers that write a script, load it and
 * run a generation to its end.
 */
#ifndef TEST_STUB_API_H
#define TEST_STUB_API_H

#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "test_util.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- checks ------------------------------------------------------------ */

/* Checks a status and, on a mismatch, shows the engine's last error. */
#define CHECK_STATUS(api, got, want)                                                                    \
    do {                                                                                                \
        adil_status got_ = (got);                                                                       \
        if (got_ != (want)) {                                                                           \
            fprintf(stderr, "%s:%d: status %s, expected %s (%s): %s\n", __FILE__, __LINE__,             \
                    (api)->status_string(got_), (api)->status_string(want), #got, (api)->last_error()); \
            test_failures++;                                                                            \
        }                                                                                               \
    } while (0)

/* Checks that the engine's last error contains `needle`. */
#define CHECK_ERROR_HAS(api, needle) CHECK_HAS((api)->last_error(), needle)

/* ---- the ABI, resolved by name ------------------------------------------ */

/* Every ABI function, by its name without the adil_ prefix. */
// clang-format off: an X-macro list
#define STUB_API_FUNCTIONS(X)                                                              \
    X(abi_version) X(component) X(status_string) X(last_error) X(engine_default_params)    \
    X(engine_open) X(engine_close) X(model_default_params) X(model_load) X(model_free)     \
    X(model_get_info) X(model_ready) X(tokenize) X(token_to_piece) X(grammar_compile)     \
    X(grammar_free) X(context_default_params) X(context_new) X(context_free)              \
    X(context_size) X(context_logits) X(sampling_default_params) X(run_default_params)    \
    X(run_start) X(run_step) X(run_cancel) X(run_cancelled) X(run_get_stats) X(run_free)  \
    X(cancel_flag_new) X(cancel_flag_set) X(cancel_flag_is_set) X(cancel_flag_free)
// clang-format on

typedef struct stub_api {
    void *handle;
#define STUB_API_FIELD(name) __typeof__(&adil_##name) name;
    STUB_API_FUNCTIONS(STUB_API_FIELD)
#undef STUB_API_FIELD
    adil_native_tool_fn sleep_tool; /* adil_stub_sleep_tool */
    /* 2.2: NULL from a variant of an earlier minor, which does not export it. */
    __typeof__(&adil_run_token_logprobs) run_token_logprobs;
    __typeof__(&adil_model_kv_bytes) model_kv_bytes;     /* 2.4: NULL when not exported */
    __typeof__(&adil_engine_int8_peak) engine_int8_peak; /* 2.5: NULL when not exported */
} stub_api;

/* dlopens `path` and resolves every symbol; false (with a message) if any is missing. */
static inline bool stub_api_open(stub_api *api, const char *path) {
    memset(api, 0, sizeof *api);
    api->handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (api->handle == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        return false;
    }
    bool ok = true;
#define STUB_API_LOAD(name)                                               \
    api->name = (__typeof__(api->name))dlsym(api->handle, "adil_" #name); \
    if (api->name == NULL) {                                              \
        fprintf(stderr, "%s: missing symbol adil_%s\n", path, #name);     \
        ok = false;                                                       \
    }
    STUB_API_FUNCTIONS(STUB_API_LOAD)
#undef STUB_API_LOAD
    api->sleep_tool = (adil_native_tool_fn)dlsym(api->handle, "adil_stub_sleep_tool");
    api->run_token_logprobs =
        (__typeof__(api->run_token_logprobs))dlsym(api->handle, "adil_run_token_logprobs");
    api->model_kv_bytes = (__typeof__(api->model_kv_bytes))dlsym(api->handle, "adil_model_kv_bytes");
    api->engine_int8_peak = (__typeof__(api->engine_int8_peak))dlsym(api->handle, "adil_engine_int8_peak");
    return ok && api->sleep_tool != NULL;
}

static inline void stub_api_close(stub_api *api) {
    if (api->handle != NULL) dlclose(api->handle);
    memset(api, 0, sizeof *api);
}

/* ---- helpers ------------------------------------------------------------ */

static inline double test_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1.0e6;
}

static inline void test_sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static inline adil_engine *test_open_engine(const stub_api *api) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK_STATUS(api, api->engine_open(&host, NULL, &engine), ADIL_OK);
    return engine;
}

/* Writes `json` to a fresh temporary file; its path goes to path[64]. */
static inline bool test_write_script(const char *json, char path[64]) {
    snprintf(path, 64, "/tmp/adil_stub_test_XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0) return false;
    size_t len = strlen(json);
    bool ok = write(fd, json, len) == (ssize_t)len;
    close(fd);
    return ok;
}

/* Loads a script given as text; returns the status and, on success, *model. */
static inline adil_status test_load_text(const stub_api *api, adil_engine *engine, const char *json,
                                         adil_model **model) {
    char path[64];
    *model = NULL;
    if (!test_write_script(json, path)) {
        fprintf(stderr, "cannot write a temporary script\n");
        test_failures++;
        return ADIL_STATUS_IO;
    }
    adil_status st = api->model_load(engine, path, NULL, model);
    unlink(path);
    return st;
}

/* Loads tests/native/data/<name>. */
static inline adil_status test_load_data(const stub_api *api, adil_engine *engine, const char *name,
                                         adil_model **model) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", ADIL_TEST_DATA_DIR, name);
    return api->model_load(engine, path, NULL, model);
}

static inline adil_context *test_new_context(const stub_api *api, adil_model *model, uint32_t n_ctx) {
    adil_context_params p;
    api->context_default_params(&p);
    p.n_ctx = n_ctx;
    adil_context *ctx = NULL;
    CHECK_STATUS(api, api->context_new(model, &p, &ctx), ADIL_OK);
    return ctx;
}

/* The result of stepping a run to its end. */
typedef struct test_output {
    char text[4096];
    size_t len;
    adil_status status; /* the last step's status */
    char error[512];    /* adil_last_error() right after that step */
    int steps;
    adil_run_stats stats;
} test_output;

/* Steps `run` with `capacity` tokens per step until a step returns zero
 * tokens or fails, collecting the bytes. */
static inline void test_drain(const stub_api *api, adil_run *run, size_t capacity, test_output *out) {
    int32_t tokens[256];
    memset(out, 0, sizeof *out);
    if (capacity > 256) capacity = 256;
    for (;;) {
        size_t n = 0;
        out->status = api->run_step(run, tokens, capacity, &n);
        snprintf(out->error, sizeof out->error, "%s", api->last_error());
        out->steps++;
        for (size_t i = 0; i < n; i++) {
            CHECK(tokens[i] >= 0 && tokens[i] < 256);
            if (out->len < sizeof out->text) out->text[out->len++] = (char)tokens[i];
        }
        if (out->status != ADIL_OK || n == 0) break;
    }
    out->stats.struct_size = sizeof out->stats;
    CHECK_STATUS(api, api->run_get_stats(run, &out->stats), ADIL_OK);
}

/* Starts a run on `ctx` with the prompt "hi" and the given params (may be NULL). */
static inline adil_status test_start(const stub_api *api, adil_context *ctx, const adil_run_params *params,
                                     adil_run **run) {
    static const int32_t prompt[] = {'h', 'i'};
    *run = NULL;
    return api->run_start(ctx, prompt, 2, params, run);
}

/* Runs one whole call with default params on a fresh context: start, drain, free. */
static inline adil_status test_call(const stub_api *api, adil_model *model, test_output *out) {
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run *run = NULL;
    adil_status st = test_start(api, ctx, NULL, &run);
    memset(out, 0, sizeof *out);
    if (st == ADIL_OK) {
        test_drain(api, run, 64, out);
        api->run_free(run);
    }
    api->context_free(ctx);
    return st;
}

/* A test case that runs against an open engine. */
typedef void (*test_engine_case)(const stub_api *api, adil_engine *engine);

/* The whole of a stub test's main: dlopens the stub, opens one engine, runs
 * `cases` on it in order, closes both and reports under `name`. */
static inline int test_stub_main(const char *name, const test_engine_case *cases, size_t n_cases) {
    stub_api api;
    if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
    adil_engine *engine = test_open_engine(&api);
    for (size_t i = 0; i < n_cases; i++) cases[i](&api, engine);
    api.engine_close(engine);
    stub_api_close(&api);
    return test_report(name);
}

#endif /* TEST_STUB_API_H */
