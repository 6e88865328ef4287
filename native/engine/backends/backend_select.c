/*
 * backend_select.c — "auto", "cpu" and "cuda" to the backend that runs, and
 * the reasons "cuda" cannot be had (backend_select.h).
 */
#include "backends/backend_select.h"
#include "adil_common.h"
#include "backends/cuda_probe.h"

#include <stdio.h>
#include <string.h>

/* ADIL_HAVE_CUDA: set by CMake on the engine's objects when the CUDA
 * kernels (backends/cuda/, libadil_cuda_kernels) are built beside it. */
#if defined(ADIL_HAVE_CUDA)
#    define BUILT "cpu,cuda"
#else
#    define BUILT "cpu"
#endif

const char *adil_backends_built(void) { return BUILT; }

static adil_status select_cuda(void) {
#if !defined(ADIL_HAVE_CUDA)
    return adil_fail(ADIL_STATUS_CAPABILITY,
                     "adil_engine_open: backend \"cuda\": built without CUDA (ADIL_CUDA=OFF)");
#else
    adil_cuda_probe probe;
    if (!adil_cuda_probe_devices(&probe))
        return adil_fail(ADIL_STATUS_CAPABILITY, "adil_engine_open: backend \"cuda\": %s", probe.text);
    /* The kernels of backends/cuda/ have never run on a GPU (bench/cuda/README.md). */
    return adil_fail(ADIL_STATUS_CAPABILITY,
                     "adil_engine_open: backend \"cuda\": the CUDA forward pass is not implemented "
                     "yet (%s); use backend \"cpu\" or \"auto\"",
                     probe.text);
#endif
}

adil_status adil_backend_select(const char *requested, char *out, size_t cap) {
    const char *name = requested ? requested : "auto";
    if (strcmp(name, "cuda") == 0) return select_cuda();
    if (strcmp(name, "auto") != 0 && strcmp(name, "cpu") != 0)
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "adil_engine_open: backend \"%s\" is not built into this engine "
                         "(available: %s, or auto)",
                         name, BUILT);
    snprintf(out, cap, "cpu");
    return ADIL_OK;
}
