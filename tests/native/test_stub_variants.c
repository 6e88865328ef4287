/*
 * test_stub_variants.c — the deliberately mismatched stub variants (built
 * with -DADIL_TEST_VARIANTS=ON next to libadil_stub.so) report what they are
 * meant to: ABI 1.0 and 3.0, a missing adil_run_step, a size_run_params 8
 * bytes smaller than 2.0, and a refusal of a major-2 host; and the five that
 * are to be accepted serve this host: a 2.7 handshake (a later minor) with
 * 8 bytes appended to every struct, a 2.5 handshake without the 2.6 field
 * (no kv_type), a 2.2 handshake without the 2.3 field
 * (no lookup), a 2.1 handshake without the 2.2 field
 * and function (no logprobs), and a 2.0 handshake whose structs end before
 * the 2.1 fields.  Variants that were not built are reported as skipped.
 */
#include "test_stub_api.h"

#include <libgen.h>

static bool variant_path(const char *name, char *path, size_t cap) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s", ADIL_STUB_LIBRARY);
    snprintf(path, cap, "%s/libadil_stub_%s.so", dirname(dir), name);
    if (access(path, R_OK) == 0) return true;
    printf("skipped: %s not built (configure with -DADIL_TEST_VARIANTS=ON)\n", path);
    return false;
}

/* dlopens a variant and checks the one thing that makes it what it is. */
static void *open_variant(const char *name) {
    char path[600];
    if (!variant_path(name, path, sizeof path)) return NULL;
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL) {
        fprintf(stderr, "dlopen %s: %s\n", path, dlerror());
        test_failures++;
    }
    return handle;
}

/* The engine opens, loads the basic script and answers one call. */
static void check_serves(const stub_api *api) {
    adil_engine *engine = test_open_engine(api);
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_basic.json", &model), ADIL_OK);
    test_output out;
    if (model != NULL) CHECK_STATUS(api, test_call(api, model, &out), ADIL_OK);
    api->model_free(model);
    api->engine_close(engine);
}

static void test_abi_versions(void) {
    static const struct {
        const char *name;
        uint32_t version;
    } variants[] = {
        {"abi1", ADIL_MAKE_VERSION(1, 0)},
        {"abi3", ADIL_MAKE_VERSION(3, 0)},
    };
    for (size_t i = 0; i < 2; i++) {
        void *handle = open_variant(variants[i].name);
        if (handle == NULL) continue;
        uint32_t (*abi_version)(void) = (uint32_t (*)(void))dlsym(handle, "adil_abi_version");
        const adil_component_info *(*component)(void) =
            (const adil_component_info *(*)(void))dlsym(handle, "adil_component");
        CHECK(abi_version != NULL && abi_version() == variants[i].version);
        CHECK(component != NULL && component()->abi_major == ADIL_VERSION_MAJOR(variants[i].version));
        dlclose(handle);
    }
}

static void test_missing_symbol(void) {
    void *handle = open_variant("missing_symbol");
    if (handle == NULL) return;
    CHECK(dlsym(handle, "adil_run_step") == NULL);
    CHECK(dlsym(handle, "adil_run_start") != NULL);
    uint32_t (*abi_version)(void) = (uint32_t (*)(void))dlsym(handle, "adil_abi_version");
    CHECK(abi_version != NULL && abi_version() == ADIL_ABI_VERSION);
    dlclose(handle);
}

static void test_short_struct(void) {
    void *handle = open_variant("short_struct");
    if (handle == NULL) return;
    const adil_component_info *(*component)(void) =
        (const adil_component_info *(*)(void))dlsym(handle, "adil_component");
    CHECK(component != NULL && component()->size_run_params == ADIL_SIZE_2_0_RUN_PARAMS - 8);
    CHECK(component != NULL && component()->size_run_params < ADIL_SIZE_2_0_RUN_PARAMS);
    CHECK(component != NULL && component()->size_run_stats == sizeof(adil_run_stats));
    dlclose(handle);
}

/* Reports ABI 2.7 and every struct 8 bytes larger (appended fields of a
 * later minor); this host opens it with its own structs and it generates. */
static void test_abi2_7(void) {
    char path[600];
    if (!variant_path("abi2_7", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    const adil_component_info *info = api.component();
    CHECK(api.abi_version() == ADIL_MAKE_VERSION(2, 7));
    CHECK(info->abi_major == 2 && info->abi_minor == 7);
    CHECK(info->size_run_params == sizeof(adil_run_params) + 8);
    CHECK(info->size_model_info == sizeof(adil_model_info) + 8);
    CHECK(info->size_host_info == sizeof(adil_host_info) + 8);
    CHECK(info->size_run_stats == sizeof(adil_run_stats) + 8);
    CHECK(info->struct_size >= ADIL_SIZE_2_1_COMPONENT_INFO);
    CHECK(strcmp(info->capabilities, "grammar,logprobs,lookup") == 0);
    CHECK(api.run_token_logprobs != NULL);
    CHECK(api.model_kv_bytes != NULL);
    CHECK(api.engine_int8_peak != NULL); /* a 2.5 function */
    check_serves(&api);
    stub_api_close(&api);
}

/* Reports ABI 2.5 and the 2.0 size of adil_context_params (before kv_type),
 * as an engine built before 2.6; it ignores a kv_type it does not know (one
 * a 2.6 engine refuses) in adil_context_new and adil_model_kv_bytes, and
 * serves.  The 2.6 stub refuses that value. */
static void test_abi2_5(void) {
    char path[600];
    if (!variant_path("abi2_5", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    const adil_component_info *info = api.component();
    CHECK(api.abi_version() == ADIL_MAKE_VERSION(2, 5));
    CHECK(info->size_context_params == ADIL_SIZE_2_0_CONTEXT_PARAMS);
    CHECK(info->size_context_params < ADIL_SIZE_2_6_CONTEXT_PARAMS);
    CHECK(info->size_model_info == sizeof(adil_model_info));
    CHECK(api.engine_int8_peak != NULL); /* a 2.5 function */
    adil_engine *engine = test_open_engine(&api);
    adil_model *model = NULL;
    CHECK_STATUS(&api, test_load_data(&api, engine, "stub_basic.json", &model), ADIL_OK);
    adil_context_params p;
    api.context_default_params(&p);
    p.kv_type = ADIL_KV_CACHE_LAST + 1; /* past what a 2.5 engine reads */
    adil_context *ctx = NULL;
    uint64_t bytes = 1;
    if (model != NULL) {
        CHECK_STATUS(&api, api.context_new(model, &p, &ctx), ADIL_OK);
        CHECK_STATUS(&api, api.model_kv_bytes(model, &p, &bytes), ADIL_OK);
        CHECK(bytes == 0);
    }
    api.context_free(ctx);
    api.model_free(model);
    api.engine_close(engine);
    stub_api_close(&api);
    /* the stub of this minor reads the field and refuses the value */
    stub_api cur;
    if (!stub_api_open(&cur, ADIL_STUB_LIBRARY)) {
        test_failures++;
        return;
    }
    engine = test_open_engine(&cur);
    model = NULL;
    CHECK_STATUS(&cur, test_load_data(&cur, engine, "stub_basic.json", &model), ADIL_OK);
    ctx = NULL;
    if (model != NULL) {
        CHECK_STATUS(&cur, cur.context_new(model, &p, &ctx), ADIL_STATUS_INVALID_ARGUMENT);
        CHECK_ERROR_HAS(&cur, "kv_type");
        CHECK(ctx == NULL);
        CHECK_STATUS(&cur, cur.model_kv_bytes(model, &p, &bytes), ADIL_STATUS_INVALID_ARGUMENT);
        p.kv_type = ADIL_KV_CACHE_Q8_0; /* no KV cache: any type is fine */
        CHECK_STATUS(&cur, cur.context_new(model, &p, &ctx), ADIL_OK);
    }
    cur.context_free(ctx);
    cur.model_free(model);
    cur.engine_close(engine);
    stub_api_close(&cur);
}

/* Reports ABI 2.2 and the 2.2 size of adil_run_params (before speculative),
 * without "lookup", as an engine built before 2.3; it ignores a speculative
 * value it does not know (one a 2.3 engine refuses), and serves. */
static void test_abi2_2(void) {
    char path[600];
    if (!variant_path("abi2_2", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    const adil_component_info *info = api.component();
    CHECK(api.abi_version() == ADIL_MAKE_VERSION(2, 2));
    CHECK(info->size_run_params == ADIL_SIZE_2_2_RUN_PARAMS);
    CHECK(info->size_run_params < ADIL_SIZE_2_3_RUN_PARAMS);
    CHECK(info->size_run_stats == ADIL_SIZE_2_1_RUN_STATS);
    CHECK(strcmp(info->capabilities, "grammar,logprobs") == 0);
    CHECK(api.run_token_logprobs != NULL);
    CHECK(api.model_kv_bytes == NULL);   /* a 2.4 function */
    CHECK(api.engine_int8_peak == NULL); /* a 2.5 function */
    adil_engine *engine = test_open_engine(&api);
    adil_model *model = NULL;
    CHECK_STATUS(&api, test_load_data(&api, engine, "stub_basic.json", &model), ADIL_OK);
    adil_context *ctx = model ? test_new_context(&api, model, 0) : NULL;
    adil_run_params params;
    api.run_default_params(&params);
    params.speculative = ADIL_SPECULATIVE_LOOKUP + 1; /* past what a 2.2 engine reads */
    adil_run *run = NULL;
    if (ctx != NULL) CHECK_STATUS(&api, test_start(&api, ctx, &params, &run), ADIL_OK);
    test_output out;
    if (run != NULL) test_drain(&api, run, 64, &out);
    api.run_free(run);
    api.context_free(ctx);
    api.model_free(model);
    api.engine_close(engine);
    stub_api_close(&api);
}

/* Reports ABI 2.1 and the 2.1 size of adil_run_params (before n_logprobs),
 * without "logprobs" and without adil_run_token_logprobs, as an engine built
 * before 2.2; it ignores an n_logprobs it does not know, and serves. */
static void test_abi2_1(void) {
    char path[600];
    if (!variant_path("abi2_1", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    const adil_component_info *info = api.component();
    CHECK(api.abi_version() == ADIL_MAKE_VERSION(2, 1));
    CHECK(info->abi_minor == 1 && info->struct_size >= ADIL_SIZE_2_1_COMPONENT_INFO);
    CHECK(info->size_run_params == ADIL_SIZE_2_0_RUN_PARAMS);
    CHECK(info->size_run_params < ADIL_SIZE_2_2_RUN_PARAMS);
    CHECK(strcmp(info->capabilities, "grammar") == 0);
    CHECK(api.run_token_logprobs == NULL);
    CHECK(api.model_kv_bytes == NULL);
    CHECK(api.engine_int8_peak == NULL);
    adil_engine *engine = test_open_engine(&api);
    adil_model *model = NULL;
    CHECK_STATUS(&api, test_load_data(&api, engine, "stub_basic.json", &model), ADIL_OK);
    adil_context *ctx = model ? test_new_context(&api, model, 0) : NULL;
    adil_run_params params;
    api.run_default_params(&params);
    params.n_logprobs = ADIL_MAX_LOGPROBS + 1; /* past what a 2.1 engine reads */
    adil_run *run = NULL;
    if (ctx != NULL) CHECK_STATUS(&api, test_start(&api, ctx, &params, &run), ADIL_OK);
    test_output out;
    if (run != NULL) test_drain(&api, run, 64, &out);
    api.run_free(run);
    api.context_free(ctx);
    api.model_free(model);
    api.engine_close(engine);
    stub_api_close(&api);
}

/* Reports ABI 2.0 and the 2.0 sizes of the structs 2.1 appended to, as an
 * engine built before 2.1 does; a host reads no 2.1 field of it, and it
 * serves. */
static void test_abi2_0(void) {
    char path[600];
    if (!variant_path("abi2_0", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    const adil_component_info *info = api.component();
    CHECK(api.abi_version() == ADIL_MAKE_VERSION(2, 0));
    CHECK(info->abi_major == 2 && info->abi_minor == 0);
    CHECK(info->struct_size == ADIL_SIZE_2_0_COMPONENT_INFO);
    CHECK(info->size_run_stats == ADIL_SIZE_2_0_RUN_STATS);
    CHECK(info->size_run_params == ADIL_SIZE_2_0_RUN_PARAMS);
    CHECK(api.run_token_logprobs == NULL);
    CHECK(api.model_kv_bytes == NULL);
    CHECK(api.engine_int8_peak == NULL);
    check_serves(&api);
    stub_api_close(&api);
}

static void test_refuses_host(void) {
    char path[600];
    if (!variant_path("refuses_host", path, sizeof path)) return;
    stub_api api;
    if (!stub_api_open(&api, path)) {
        test_failures++;
        return;
    }
    CHECK(api.component()->host_major_accepted == 3);
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK_STATUS(&api, api.engine_open(&host, NULL, &engine), ADIL_STATUS_HOST_REFUSED);
    CHECK_ERROR_HAS(&api, "this engine accepts host major 3, got host major 2");
    CHECK(engine == NULL);
    stub_api_close(&api);
}

int main(void) {
    test_abi_versions();
    test_missing_symbol();
    test_short_struct();
    test_abi2_7();
    test_abi2_5();
    test_abi2_2();
    test_abi2_1();
    test_abi2_0();
    test_refuses_host();
    /* The good stub still opens and serves after all of that. */
    stub_api api;
    if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
    check_serves(&api);
    stub_api_close(&api);
    return test_report("test_stub_variants");
}
