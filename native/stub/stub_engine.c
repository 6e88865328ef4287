/*
 * stub_engine.c — the version handshake and the engine handle of the
 * reference stub engine.
 */
#include "stub_internal.h"

#include <stdlib.h>
#include <string.h>

/* Constant, built at compile time: the stub keeps no mutable global state. */
static const adil_component_info stub_component = {
    .struct_size = STUB_SIZEOF_COMPONENT_INFO,
    .abi_major = STUB_ABI_MAJOR,
    .abi_minor = STUB_ABI_MINOR,
    .host_major_accepted = STUB_HOST_MAJOR_ACCEPTED,
    .engine_name = "adil-stub",
    .engine_version = "0.1.0",
    .backends = "stub",
    .cpu_features = "",
    .size_host_info = sizeof(adil_host_info) + STUB_SIZE_APPENDED,
    .size_engine_params = sizeof(adil_engine_params) + STUB_SIZE_APPENDED,
    .size_model_params = sizeof(adil_model_params) + STUB_SIZE_APPENDED,
    .size_model_info = STUB_SIZEOF_MODEL_INFO + STUB_SIZE_APPENDED,
    .size_context_params = STUB_SIZEOF_CONTEXT_PARAMS + STUB_SIZE_APPENDED,
    .size_sampling_params = sizeof(adil_sampling_params) + STUB_SIZE_APPENDED,
    .size_run_params = STUB_SIZE_SHORT ? ADIL_SIZE_2_0_RUN_PARAMS - STUB_SIZE_SHORT
                                       : STUB_SIZEOF_RUN_PARAMS + STUB_SIZE_APPENDED,
    .size_run_stats = STUB_SIZEOF_RUN_STATS + STUB_SIZE_APPENDED,
    .capabilities = STUB_CAPABILITIES, /* no logits: the stub computes none */
};

ADIL_API uint32_t adil_abi_version(void) { return ADIL_MAKE_VERSION(STUB_ABI_MAJOR, STUB_ABI_MINOR); }

ADIL_API const adil_component_info *adil_component(void) { return &stub_component; }

/* The stub computes nothing, so any CPU-ish backend request is served. */
static bool backend_supported(const char *backend) {
    return backend == NULL || strcmp(backend, "auto") == 0 || strcmp(backend, "cpu") == 0 ||
           strcmp(backend, "stub") == 0;
}

ADIL_API adil_status adil_engine_open(const adil_host_info *host, const adil_engine_params *params,
                                      adil_engine **out) {
    if (out == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_engine_open: expected an out pointer, got NULL");
    *out = NULL;
    adil_status st = adil_check_host(host, STUB_HOST_MAJOR_ACCEPTED);
    if (st != ADIL_OK) return st;
    adil_engine_params p;
    adil_engine_default_params(&p);
    st = adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_ENGINE_PARAMS,
                          "adil_engine_open: engine params");
    if (st != ADIL_OK) return st;
    if (!backend_supported(p.backend))
        return adil_fail(
            ADIL_STATUS_CAPABILITY,
            "adil_engine_open: backend expected \"auto\", \"cpu\" or \"stub\" (the stub engine), "
            "got \"%s\"",
            p.backend);
    adil_engine *engine = calloc(1, sizeof *engine);
    if (engine == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_engine_open: could not allocate %zu bytes",
                         sizeof *engine);
    engine->n_threads = p.n_threads;
    *out = engine;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_engine_close(adil_engine *engine) { free(engine); }

ADIL_API adil_status adil_engine_int8_peak(adil_engine *engine, uint32_t n_threads, double *macs_per_s) {
    (void)n_threads;
    if (engine == NULL || macs_per_s == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_engine_int8_peak: engine and macs_per_s are required");
    return adil_fail(ADIL_STATUS_CAPABILITY, "adil_engine_int8_peak: the stub has no kernels");
}
