/*
 * matvec.cu — decode's matrix-vector product on quantized weights
 * (adil_cuda_matvec, cuda_kernels.h).  NEVER RUN ON A GPU.
 *
 * One warp per row: lane l takes the 8-element chunks l, l + 32, ... of the
 * row (dequant.cuh), then the warp sums its 32 partial dots with shuffles.
 * Straightforward rather than tuned: the first aim is parity with the CPU
 * reference on a real device (tests/native/cuda/test_cuda_matvec.c).
 */
#include "backends/cuda/cuda_check.cuh"
#include "backends/cuda/dequant.cuh"

namespace {

constexpr int kWarp = 32;
constexpr int kRowsPerBlock = 4; /* warps per thread block */
constexpr int kChunk = 8;        /* elements per dot8 */

__device__ float warp_sum(float v) {
    for (int offset = kWarp / 2; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

template <typename T>
__global__ void matvec_kernel(const uint8_t *w, const float *x, float *y, int64_t rows, int64_t cols,
                              size_t row_bytes) {
    const int64_t r = static_cast<int64_t>(blockIdx.x) * kRowsPerBlock + threadIdx.x / kWarp;
    if (r >= rows) return; /* whole warps leave together: the shuffles below see all 32 lanes */
    const int lane = static_cast<int>(threadIdx.x % kWarp);
    const uint8_t *row = w + static_cast<size_t>(r) * row_bytes;
    float sum = 0.0f;
    for (int64_t e = static_cast<int64_t>(lane) * kChunk; e < cols;
         e += static_cast<int64_t>(kWarp) * kChunk) {
        const int n = cols - e < kChunk ? static_cast<int>(cols - e) : kChunk;
        sum += T::dot8(row, e, x + e, n);
    }
    sum = warp_sum(sum);
    if (lane == 0) y[r] = sum;
}

template <typename T>
adil_status launch(const void *w, const float *x, float *y, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (cols % T::block != 0)
        return adil_cuda_fail(ADIL_STATUS_INVALID_ARGUMENT,
                              "adil_cuda_matvec: cols is not a multiple of the weight type's block");
    const size_t row_bytes = static_cast<size_t>(cols / T::block) * static_cast<size_t>(T::bytes);
    const int64_t blocks = (rows + kRowsPerBlock - 1) / kRowsPerBlock;
    if (blocks > 0x7fffffff)
        return adil_cuda_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_cuda_matvec: too many rows");
    matvec_kernel<T><<<static_cast<unsigned>(blocks), kRowsPerBlock * kWarp, 0, stream>>>(
        static_cast<const uint8_t *>(w), x, y, rows, cols, row_bytes);
    return ADIL_CUDA_LAUNCHED("matvec_kernel");
}

} // namespace

extern "C" bool adil_cuda_matvec_supports(uint32_t wtype) {
    switch (wtype) {
    case ADIL_WT_F32:
    case ADIL_WT_F16:
    case ADIL_WT_BF16:
    case ADIL_WT_Q4_0:
    case ADIL_WT_Q4_1:
    case ADIL_WT_Q5_0:
    case ADIL_WT_Q8_0:
    case ADIL_WT_Q4_K:
    case ADIL_WT_Q6_K:
        return true;
    default:
        return false;
    }
}

extern "C" adil_status adil_cuda_matvec(uint32_t wtype, const void *dev_w, const float *dev_x, float *dev_y,
                                        int64_t rows, int64_t cols, void *stream) {
    if (!dev_w || !dev_x || !dev_y || rows < 0 || cols < 0)
        return adil_cuda_fail(ADIL_STATUS_INVALID_ARGUMENT,
                              "adil_cuda_matvec: NULL pointer or negative size");
    if (rows == 0) return ADIL_OK;
    cudaStream_t s = static_cast<cudaStream_t>(stream);
    adil_status st;
    switch (wtype) {
    case ADIL_WT_F32:
        st = launch<adil_cuda::f32_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_F16:
        st = launch<adil_cuda::f16_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_BF16:
        st = launch<adil_cuda::bf16_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q4_0:
        st = launch<adil_cuda::q4_0_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q4_1:
        st = launch<adil_cuda::q4_1_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q5_0:
        st = launch<adil_cuda::q5_0_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q8_0:
        st = launch<adil_cuda::q8_0_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q4_K:
        st = launch<adil_cuda::q4_K_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    case ADIL_WT_Q6_K:
        st = launch<adil_cuda::q6_K_t>(dev_w, dev_x, dev_y, rows, cols, s);
        break;
    default:
        return adil_cuda_fail(ADIL_STATUS_CAPABILITY,
                              "adil_cuda_matvec: no CUDA kernel for this weight type");
    }
    if (st == ADIL_OK) adil_cuda_clear_error();
    return st;
}
