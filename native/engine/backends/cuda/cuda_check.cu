/*
 * cuda_check.cu — CUDA errors to adil_status, and the per-thread last error
 * of libadil_cuda_kernels (cuda_check.cuh).
 */
#include "backends/cuda/cuda_check.cuh"

#include <cstdio>

namespace {
thread_local char last_error[512];

adil_status status_of(cudaError_t err) {
    switch (err) {
    case cudaErrorMemoryAllocation:
        return ADIL_STATUS_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorInvalidDevice:
    case cudaErrorNoKernelImageForDevice:
        return ADIL_STATUS_CAPABILITY;
    default:
        return ADIL_STATUS_INTERNAL;
    }
}
} // namespace

adil_status adil_cuda_check(cudaError_t err, const char *what, const char *file, int line) {
    if (err == cudaSuccess) return ADIL_OK;
    std::snprintf(last_error, sizeof last_error, "%s (%s:%d): %s: %s", what, file, line,
                  cudaGetErrorName(err), cudaGetErrorString(err));
    return status_of(err);
}

adil_status adil_cuda_fail(adil_status status, const char *message) {
    std::snprintf(last_error, sizeof last_error, "%s", message);
    return status;
}

void adil_cuda_clear_error(void) { last_error[0] = '\0'; }

extern "C" const char *adil_cuda_last_error(void) { return last_error; }
