/*
 * cuda_check.cuh — the one way CUDA errors become adil_status in this
 * library: every runtime call and every kernel launch goes through
 * adil_cuda_check (usually by ADIL_CUDA_TRY), which records the message for
 * adil_cuda_last_error() with the call's text and place.
 */
#ifndef ADIL_CUDA_CHECK_CUH
#define ADIL_CUDA_CHECK_CUH

#include "backends/cuda/cuda_kernels.h"

#include <cuda_runtime.h>

/* ADIL_OK for cudaSuccess; else the mapped status, with "what (file:line):
 * cudaErrorName: description" as the thread's last error. */
adil_status adil_cuda_check(cudaError_t err, const char *what, const char *file, int line);

/* Records a failure that is not a CUDA error (a bad argument) and returns `status`. */
adil_status adil_cuda_fail(adil_status status, const char *message);

/* Clears the thread's last error (on success of a public function). */
void adil_cuda_clear_error(void);

/* Returns from the calling function when `call` fails. */
#define ADIL_CUDA_TRY(call)                                                                          \
    do {                                                                                             \
        const adil_status adil_cuda_try_status = adil_cuda_check((call), #call, __FILE__, __LINE__); \
        if (adil_cuda_try_status != ADIL_OK) return adil_cuda_try_status;                            \
    } while (0)

/* The status of the <<<...>>> launch just made, named `name`: its own
 * error (a bad configuration, no kernel image for this GPU), or one left by
 * an earlier kernel; a kernel that fails while running shows at the next
 * synchronisation. */
#define ADIL_CUDA_LAUNCHED(name) adil_cuda_check(cudaGetLastError(), "launch of " name, __FILE__, __LINE__)

#endif /* ADIL_CUDA_CHECK_CUH */
