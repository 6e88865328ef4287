/*
 * memory.cu — the device, its memory and copies to and from it
 * (cuda_kernels.h).  Synchronous copies: weights are uploaded once per
 * model, and decode reads back one logits row per token.
 */
#include "backends/cuda/cuda_check.cuh"

extern "C" adil_status adil_cuda_use_device(int ordinal) {
    int count = 0;
    ADIL_CUDA_TRY(cudaGetDeviceCount(&count));
    if (ordinal < 0 || ordinal >= count)
        return adil_cuda_fail(ADIL_STATUS_INVALID_ARGUMENT,
                              "adil_cuda_use_device: no device of that ordinal");
    ADIL_CUDA_TRY(cudaSetDevice(ordinal));
    adil_cuda_clear_error();
    return ADIL_OK;
}

extern "C" adil_status adil_cuda_alloc(size_t bytes, void **dev_out) {
    if (!dev_out) return adil_cuda_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_cuda_alloc: dev_out is NULL");
    *dev_out = nullptr;
    ADIL_CUDA_TRY(cudaMalloc(dev_out, bytes));
    adil_cuda_clear_error();
    return ADIL_OK;
}

extern "C" adil_status adil_cuda_free(void *dev_ptr) {
    if (dev_ptr) ADIL_CUDA_TRY(cudaFree(dev_ptr));
    adil_cuda_clear_error();
    return ADIL_OK;
}

extern "C" adil_status adil_cuda_upload(void *dev_dst, const void *host_src, size_t bytes) {
    ADIL_CUDA_TRY(cudaMemcpy(dev_dst, host_src, bytes, cudaMemcpyHostToDevice));
    adil_cuda_clear_error();
    return ADIL_OK;
}

extern "C" adil_status adil_cuda_download(void *host_dst, const void *dev_src, size_t bytes) {
    ADIL_CUDA_TRY(cudaMemcpy(host_dst, dev_src, bytes, cudaMemcpyDeviceToHost));
    adil_cuda_clear_error();
    return ADIL_OK;
}

extern "C" adil_status adil_cuda_synchronize(void) {
    ADIL_CUDA_TRY(cudaDeviceSynchronize());
    adil_cuda_clear_error();
    return ADIL_OK;
}
