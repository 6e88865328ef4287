/*
 * params.c — the *_default_params functions of the ABI, the struct_size
 * checks every engine applies to what a host hands it, and the component-info
 * and host checks of the version handshake.
 */
#include "adil_common.h"

#include <string.h>

/* Every 2.0 size lies inside its struct, past struct_size. */
#define ADIL_ASSERT_2_0_SIZE(type, size_2_0) \
    _Static_assert(sizeof(uint32_t) < (size_2_0) && (size_2_0) <= sizeof(type), #size_2_0)
ADIL_ASSERT_2_0_SIZE(adil_component_info, ADIL_SIZE_2_0_COMPONENT_INFO);
ADIL_ASSERT_2_0_SIZE(adil_host_info, ADIL_SIZE_2_0_HOST_INFO);
ADIL_ASSERT_2_0_SIZE(adil_engine_params, ADIL_SIZE_2_0_ENGINE_PARAMS);
ADIL_ASSERT_2_0_SIZE(adil_model_params, ADIL_SIZE_2_0_MODEL_PARAMS);
ADIL_ASSERT_2_0_SIZE(adil_model_info, ADIL_SIZE_2_0_MODEL_INFO);
ADIL_ASSERT_2_0_SIZE(adil_context_params, ADIL_SIZE_2_0_CONTEXT_PARAMS);
ADIL_ASSERT_2_0_SIZE(adil_sampling_params, ADIL_SIZE_2_0_SAMPLING_PARAMS);
ADIL_ASSERT_2_0_SIZE(adil_run_params, ADIL_SIZE_2_0_RUN_PARAMS);
ADIL_ASSERT_2_0_SIZE(adil_run_stats, ADIL_SIZE_2_0_RUN_STATS);

/* ---- defaults (the ADIL_DEFAULT_* macros of adil.h) ---------------------- */

ADIL_API void adil_engine_default_params(adil_engine_params *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->n_threads = 0;  /* the number of cores */
    out->backend = NULL; /* "auto" */
}

ADIL_API void adil_model_default_params(adil_model_params *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->n_threads = 0; /* the engine's default */
    out->use_mmap = 1;
}

ADIL_API void adil_context_default_params(adil_context_params *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->n_ctx = 0; /* the model's n_ctx_train, at most ADIL_DEFAULT_N_CTX_CAP */
    out->n_batch = ADIL_DEFAULT_N_BATCH;
    out->n_threads = 0; /* the model's */
    out->kv_type = ADIL_KV_CACHE_DEFAULT;
}

ADIL_API void adil_sampling_default_params(adil_sampling_params *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out);
    out->struct_size = sizeof *out;
    out->temperature = ADIL_DEFAULT_TEMPERATURE;
    out->top_k = ADIL_DEFAULT_TOP_K;
    out->top_p = ADIL_DEFAULT_TOP_P;
    out->min_p = ADIL_DEFAULT_MIN_P;
    out->repeat_penalty = ADIL_DEFAULT_REPEAT_PENALTY;
    out->repeat_last_n = ADIL_DEFAULT_REPEAT_LAST_N;
    out->seed = 0;
}

ADIL_API void adil_run_default_params(adil_run_params *out) {
    if (out == NULL) return;
    memset(out, 0, sizeof *out); /* NULL sampling/grammar/flag/stop tokens, no deadlines */
    out->struct_size = sizeof *out;
    out->max_tokens = 0; /* up to the end of the context */
    out->step_budget_ms = ADIL_DEFAULT_STEP_BUDGET_MS;
}

/* ---- struct_size checks ------------------------------------------------ */

/* The struct_size of a caller's struct (the first field of every public
 * struct), refused when smaller than the version-2.0 struct. */
static adil_status read_struct_size(const void *s, size_t min_size, const char *what, uint32_t *size) {
    memcpy(size, s, sizeof *size);
    if (*size < min_size)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "%s: struct_size expected at least %zu (the version-2.0 struct), got %u", what,
                         min_size, *size);
    return ADIL_OK;
}

adil_status adil_copy_params(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what) {
    if (src == NULL) return ADIL_OK;
    uint32_t size;
    adil_status st = read_struct_size(src, min_size, what, &size);
    if (st != ADIL_OK) return st;
    /* A newer minor's struct is larger: read only the fields this engine knows. */
    memcpy(dst, src, size < dst_size ? size : dst_size);
    memcpy(dst, &(uint32_t){(uint32_t)dst_size}, sizeof(uint32_t));
    return ADIL_OK;
}

adil_status adil_copy_out(void *dst, const void *src, size_t src_size, size_t min_size, const char *what) {
    if (dst == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "%s: expected an out struct, got NULL", what);
    uint32_t size;
    adil_status st = read_struct_size(dst, min_size, what, &size);
    if (st != ADIL_OK) return st;
    /* Write only what the caller's struct holds, and keep its struct_size. */
    size_t n = size < src_size ? size : src_size;
    memcpy((char *)dst + sizeof size, (const char *)src + sizeof size, n - sizeof size);
    return ADIL_OK;
}

/* ---- the version handshake --------------------------------------------- */

void adil_component_fill(adil_component_info *info, uint32_t abi_major, uint32_t abi_minor,
                         uint32_t host_major_accepted, const char *engine_name, const char *engine_version,
                         const char *backends, const char *cpu_features, const char *capabilities) {
    memset(info, 0, sizeof *info);
    info->struct_size = sizeof *info;
    info->abi_major = abi_major;
    info->abi_minor = abi_minor;
    info->host_major_accepted = host_major_accepted;
    info->engine_name = engine_name;
    info->engine_version = engine_version;
    info->backends = backends;
    info->cpu_features = cpu_features;
    info->size_host_info = sizeof(adil_host_info);
    info->size_engine_params = sizeof(adil_engine_params);
    info->size_model_params = sizeof(adil_model_params);
    info->size_model_info = sizeof(adil_model_info);
    info->size_context_params = sizeof(adil_context_params);
    info->size_sampling_params = sizeof(adil_sampling_params);
    info->size_run_params = sizeof(adil_run_params);
    info->size_run_stats = sizeof(adil_run_stats);
    info->capabilities = capabilities;
}

adil_status adil_check_host(const adil_host_info *host, uint32_t host_major_accepted) {
    if (host == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_engine_open: expected host info, got NULL");
    if (host->struct_size < ADIL_SIZE_2_0_HOST_INFO)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_engine_open: host info struct_size expected at least %zu "
                         "(the version-2.0 struct), got %u",
                         ADIL_SIZE_2_0_HOST_INFO, host->struct_size);
    if (host->host_major != host_major_accepted)
        return adil_fail(ADIL_STATUS_HOST_REFUSED,
                         "host refused: this engine accepts host major %u, got host major %u (%s %s)",
                         host_major_accepted, host->host_major,
                         host->host_name != NULL ? host->host_name : "unnamed host",
                         host->host_version != NULL ? host->host_version : "?");
    return ADIL_OK;
}
