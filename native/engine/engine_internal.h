/*
 * engine_internal.h — the CPU engine's handles, as the api/ files share them.
 * Not part of the ABI: hosts see only the opaque names from adil.h.
 *
 * Ownership: an engine outlives its models; a model outlives its contexts; a
 * context outlives its runs.  A model serves one live run at a time
 * (model->live_run).
 */
#ifndef ADIL_ENGINE_INTERNAL_H
#define ADIL_ENGINE_INTERNAL_H

#include "adil/adil.h"
#include "adil_common.h"

#include <stdint.h>

#define ADIL_CPU_ENGINE_NAME "adil-cpu"
#define ADIL_CPU_ENGINE_VERSION "0.1.0"

struct adil_engine {
    uint32_t n_threads;            /* default thread count for models (>= 1) */
    char backend[16];              /* "cpu" */
};

/* The number of CPU cores available to this process (>= 1). */
uint32_t adil_cpu_count(void);

/* Comma-separated CPU features that the kernels can use, detected at run
 * time, e.g. "sse3,avx2,fma,f16c,avx512f,avx512vnni".  Static storage. */
const char *adil_cpu_features(void);

#endif /* ADIL_ENGINE_INTERNAL_H */
