/*
 * cuda_kernels.h — the C interface of libadil_cuda_kernels, the CUDA kernels
 * of the engine's CUDA backend.  NONE OF THESE KERNELS HAS EVER RUN ON A GPU:
 * they were written and compiled (nvcc, warnings as errors) on a machine
 * without one; bench/cuda/README.md says what was verified and what not.
 *
 * Why a library of its own, beside libadil_engine rather than inside it:
 * the engine must load and run where there is no CUDA driver or runtime, and
 * the default wheel is built without the CUDA toolkit.  This library links
 * the CUDA runtime statically (which itself dlopens libcuda.so.1), so the
 * engine can dlopen it by path only once a device has been seen
 * (backends/cuda_probe.h) and never carries a link-time CUDA dependency.
 *
 * Every function returns ADIL_OK or a status with a message in
 * adil_cuda_last_error(): CUDA's "out of memory" is ADIL_STATUS_OUT_OF_MEMORY,
 * no usable device or driver ADIL_STATUS_CAPABILITY, an argument outside the
 * contract ADIL_STATUS_INVALID_ARGUMENT, every other CUDA error
 * ADIL_STATUS_INTERNAL.  Pointers named dev_* are device memory.  The CUDA
 * runtime's current device is per thread: a thread calls
 * adil_cuda_use_device before the others.
 */
#ifndef ADIL_CUDA_KERNELS_H
#define ADIL_CUDA_KERNELS_H

#include "adil/adil.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADIL_CUDA_API __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* The message of the calling thread's last failure here, "" if none; owned
 * by the library, valid until the next call on this thread. */
ADIL_CUDA_API const char *adil_cuda_last_error(void);

/* Makes device `ordinal` current for the calling thread. */
ADIL_CUDA_API adil_status adil_cuda_use_device(int ordinal);

/* Device memory: *dev_out is NULL on failure; free(NULL) is a no-op. */
ADIL_CUDA_API adil_status adil_cuda_alloc(size_t bytes, void **dev_out);
ADIL_CUDA_API adil_status adil_cuda_free(void *dev_ptr);
ADIL_CUDA_API adil_status adil_cuda_upload(void *dev_dst, const void *host_src, size_t bytes);
ADIL_CUDA_API adil_status adil_cuda_download(void *host_dst, const void *dev_src, size_t bytes);

/* Waits for the device; reports errors of kernels that ran since the last call. */
ADIL_CUDA_API adil_status adil_cuda_synchronize(void);

/* True for the weight types adil_cuda_matvec has a kernel for: F32, F16,
 * BF16, Q4_0, Q4_1, Q5_0, Q8_0, Q4_K, Q6_K (ids of weight_types.h). */
ADIL_CUDA_API bool adil_cuda_matvec_supports(uint32_t wtype);

/* dev_y[r] = sum over c of W[r][c] * dev_x[c] for r < rows: W is `rows`
 * rows of `cols` elements of type `wtype` in their GGUF block layout, each
 * row adil_row_size(wtype, cols) bytes, back to back from dev_w (as in the
 * file); cols must be a multiple of the type's block size.  Queued on
 * `stream` (a cudaStream_t; NULL: the default stream) and not waited for:
 * launch errors are reported here, execution errors by the next
 * adil_cuda_synchronize.  Decode's matrix-vector product, one warp per row. */
ADIL_CUDA_API adil_status adil_cuda_matvec(uint32_t wtype, const void *dev_w, const float *dev_x,
                                           float *dev_y, int64_t rows, int64_t cols, void *stream);

#ifdef __cplusplus
}
#endif

#endif /* ADIL_CUDA_KERNELS_H */
