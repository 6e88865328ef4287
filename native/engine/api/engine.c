/*
 * engine.c — adil_engine_open / adil_engine_close: checks the host and keeps
 * the defaults (thread count, backend) that models inherit.
 */
#include "backends/backend_select.h"
#include "compute/cpu_level.h"
#include "compute/int8_peak.h"
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

ADIL_API adil_status adil_engine_open(const adil_host_info *host, const adil_engine_params *params,
                                      adil_engine **out) {
    if (!out) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_engine_open: out is NULL");
    *out = NULL;
    adil_status st = adil_check_host(host, ADIL_HOST_MAJOR);
    if (st != ADIL_OK) return st;

    adil_engine_params p;
    adil_engine_default_params(&p);
    st = adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_ENGINE_PARAMS, "adil_engine_params");
    if (st != ADIL_OK) return st;

    adil_engine *engine = calloc(1, sizeof *engine);
    if (!engine) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_engine_open: out of memory");
    engine->n_threads = p.n_threads ? p.n_threads : adil_cpu_count();
    st = adil_backend_select(p.backend, engine->backend, sizeof engine->backend);
    if (st != ADIL_OK) {
        free(engine);
        return st;
    }
    *out = engine;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_engine_close(adil_engine *engine) { free(engine); }

ADIL_API adil_status adil_engine_int8_peak(adil_engine *engine, uint32_t n_threads, double *macs_per_s) {
    if (!engine || !macs_per_s)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_engine_int8_peak: engine and macs_per_s are required");
    adil_int8_peak_kernel kernel;
    if (!adil_int8_peak_kernel_for_level(&kernel))
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "adil_engine_int8_peak: no int8 kernel at the %s CPU level to measure a peak of",
                         adil_cpu_level_name());
    if (n_threads == 0) n_threads = engine->n_threads;
    if (n_threads > ADIL_POOL_MAX_THREADS) n_threads = ADIL_POOL_MAX_THREADS;
    adil_status st = adil_int8_peak_measure(kernel, (int)n_threads, 50.0, macs_per_s);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}
