/*
 * fake_cuda_driver.c — libadil_fake_cuda, a stand-in for the CUDA driver
 * (libcuda.so.1) with the five entry points backends/cuda_probe.c calls, so
 * that the probe's every path runs on a machine without a GPU.  Tests point
 * ADIL_CUDA_DRIVER at it and choose what it answers:
 *   ADIL_FAKE_CUDA_INIT     cuInit's result (default 0, CUDA_SUCCESS)
 *   ADIL_FAKE_CUDA_DEVICES  the device count (default 1); device i is "Fake GPU i"
 * It computes nothing: a device it reports cannot run a kernel.
 */
#include <stdio.h>
#include <stdlib.h>

#define FAKE_API                   __attribute__((visibility("default")))
#define CUDA_SUCCESS               0
#define CUDA_ERROR_INVALID_VALUE   1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE       100
#define CUDA_ERROR_INVALID_DEVICE  101

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && v[0] ? atoi(v) : fallback;
}

static int device_count(void) { return env_int("ADIL_FAKE_CUDA_DEVICES", 1); }

FAKE_API int cuInit(unsigned int flags) {
    return flags ? CUDA_ERROR_INVALID_VALUE : env_int("ADIL_FAKE_CUDA_INIT", 0);
}

FAKE_API int cuDeviceGetCount(int *count) {
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    *count = device_count();
    return CUDA_SUCCESS;
}

FAKE_API int cuDeviceGet(int *device, int ordinal) {
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= device_count()) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

FAKE_API int cuDeviceGetName(char *name, int len, int device) {
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "Fake GPU %d", device);
    return CUDA_SUCCESS;
}

/* The names of the codes the tests use; others are unknown, as a real
 * driver answers for a code it does not have. */
FAKE_API int cuGetErrorName(int error, const char **name) {
    switch (error) {
    case CUDA_ERROR_NO_DEVICE:
        *name = "CUDA_ERROR_NO_DEVICE";
        return CUDA_SUCCESS;
    case CUDA_ERROR_NOT_INITIALIZED:
        *name = "CUDA_ERROR_NOT_INITIALIZED";
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}
