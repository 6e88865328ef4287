/*
 * cuda_probe.h — which CUDA devices this process can see, asked of the CUDA
 * driver (libcuda.so.1) through dlopen, so that the engine never links
 * against CUDA and loads on machines without it.  Compiled into every engine,
 * with or without ADIL_CUDA: probing needs no CUDA toolkit.
 *
 * The driver library is ADIL_CUDA_DRIVER when that is set (a test points it
 * at a fake driver or at a missing file), else "libcuda.so.1" from the
 * loader's search path.
 */
#ifndef ADIL_CUDA_PROBE_H
#define ADIL_CUDA_PROBE_H

#include <stdbool.h>

#define ADIL_CUDA_PROBE_TEXT 512

typedef struct adil_cuda_probe {
    int n_devices; /* devices the driver reports; 0 when it cannot be used */
    /* n_devices > 0: "1 device: 0 NVIDIA H200" (names of the first few);
     * else why there is none, e.g. "no CUDA driver (libcuda.so.1: cannot
     * open shared object file: No such file or directory)" or "cuInit
     * failed: CUDA_ERROR_NO_DEVICE (100)". */
    char text[ADIL_CUDA_PROBE_TEXT];
} adil_cuda_probe;

/* Asks the driver afresh (no cached result: ADIL_CUDA_DRIVER may change
 * between calls).  Returns true when at least one device is seen.  Any
 * thread; calls on several threads at once are safe (dlopen, dlsym and the
 * driver's entry points are).  A driver whose cuInit was called stays
 * loaded: unloading it could pull code from under the threads it started. */
bool adil_cuda_probe_devices(adil_cuda_probe *out);

#endif /* ADIL_CUDA_PROBE_H */
