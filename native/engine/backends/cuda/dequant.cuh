/*
 * dequant.cuh — the dot product of 8 consecutive weights of one row with
 * the matching 8 activations, per weight type: the inner step of
 * matvec.cu.  Each follows the scalar reference of compute/quant_legacy.c
 * and compute/quant_k.c (dequantize_row) element for element.  NEVER RUN
 * ON A GPU (cuda_kernels.h).  Host and device functions both: the host
 * build of the same code is tested against that reference on the CPU
 * (tests/native/cuda/test_cuda_dequant_host.cu), so the block decoding is
 * checked where no GPU is.
 *
 * `row` is the row's first byte, `e` the index of the first of the 8
 * elements (a multiple of 8, so the 8 lie in one block of every type), `x`
 * the activations from element e on.  Plain types take `n` <= 8 for the
 * row's tail; block types always have all 8 (cols is a multiple of the
 * block).
 */
#ifndef ADIL_CUDA_DEQUANT_CUH
#define ADIL_CUDA_DEQUANT_CUH

#include "backends/cuda/block_layouts.cuh"

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

namespace adil_cuda {

__host__ __device__ inline float half_bits(adil_fp16 h) {
    __half_raw raw;
    raw.x = h;
    return __half2float(__half(raw));
}

/* bfloat16 is the top half of a float32. */
__host__ __device__ inline float bf16_bits(adil_bf16 h) {
#if defined(__CUDA_ARCH__)
    return __uint_as_float(static_cast<uint32_t>(h) << 16);
#else
    const uint32_t u = static_cast<uint32_t>(h) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
#endif
}

struct f32_t {
    static constexpr uint32_t id = ADIL_WT_F32;
    static constexpr int block = 1;
    static constexpr int bytes = 4;
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int n) {
        const float *w = reinterpret_cast<const float *>(row) + e;
        float s = 0.0f;
        for (int k = 0; k < n; k++) s += w[k] * x[k];
        return s;
    }
};

struct f16_t {
    static constexpr uint32_t id = ADIL_WT_F16;
    static constexpr int block = 1;
    static constexpr int bytes = 2;
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int n) {
        const adil_fp16 *w = reinterpret_cast<const adil_fp16 *>(row) + e;
        float s = 0.0f;
        for (int k = 0; k < n; k++) s += half_bits(w[k]) * x[k];
        return s;
    }
};

struct bf16_t {
    static constexpr uint32_t id = ADIL_WT_BF16;
    static constexpr int block = 1;
    static constexpr int bytes = 2;
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int n) {
        const adil_bf16 *w = reinterpret_cast<const adil_bf16 *>(row) + e;
        float s = 0.0f;
        for (int k = 0; k < n; k++) s += bf16_bits(w[k]) * x[k];
        return s;
    }
};

/* Element j of a 32-block of nibbles: low nibble of qs[j] for j < 16, high
 * nibble of qs[j - 16] above. */
__host__ __device__ inline int nibble32(const uint8_t *qs, int j) {
    return j < 16 ? qs[j] & 0x0F : qs[j - 16] >> 4;
}

/* The 5th bits of Q5_0/Q5_1, little-endian as stored. */
__host__ __device__ inline uint32_t load_qh(const uint8_t qh[4]) {
    return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
           static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

/* Q4_0: x = d * (q - 8). */
struct q4_0_t {
    static constexpr uint32_t id = ADIL_WT_Q4_0;
    static constexpr int block = ADIL_QK;
    static constexpr int bytes = sizeof(block_q4_0);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q4_0 *b = reinterpret_cast<const block_q4_0 *>(row) + e / ADIL_QK;
        const int j0 = static_cast<int>(e % ADIL_QK);
        float s = 0.0f;
        for (int k = 0; k < 8; k++) s += static_cast<float>(nibble32(b->qs, j0 + k) - 8) * x[k];
        return s * half_bits(b->d);
    }
};

/* Q4_1: x = d * q + m. */
struct q4_1_t {
    static constexpr uint32_t id = ADIL_WT_Q4_1;
    static constexpr int block = ADIL_QK;
    static constexpr int bytes = sizeof(block_q4_1);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q4_1 *b = reinterpret_cast<const block_q4_1 *>(row) + e / ADIL_QK;
        const int j0 = static_cast<int>(e % ADIL_QK);
        float qx = 0.0f, sx = 0.0f;
        for (int k = 0; k < 8; k++) {
            qx += static_cast<float>(nibble32(b->qs, j0 + k)) * x[k];
            sx += x[k];
        }
        return half_bits(b->d) * qx + half_bits(b->m) * sx;
    }
};

/* Q5_0: x = d * (q - 16), the 5th bit of element j is bit j of qh. */
struct q5_0_t {
    static constexpr uint32_t id = ADIL_WT_Q5_0;
    static constexpr int block = ADIL_QK;
    static constexpr int bytes = sizeof(block_q5_0);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q5_0 *b = reinterpret_cast<const block_q5_0 *>(row) + e / ADIL_QK;
        const int j0 = static_cast<int>(e % ADIL_QK);
        const uint32_t qh = load_qh(b->qh);
        float s = 0.0f;
        for (int k = 0; k < 8; k++) {
            const int j = j0 + k;
            const int q = (nibble32(b->qs, j) | static_cast<int>((qh >> j) & 1u) << 4) - 16;
            s += static_cast<float>(q) * x[k];
        }
        return s * half_bits(b->d);
    }
};

/* Q8_0: x = d * q. */
struct q8_0_t {
    static constexpr uint32_t id = ADIL_WT_Q8_0;
    static constexpr int block = ADIL_QK;
    static constexpr int bytes = sizeof(block_q8_0);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q8_0 *b = reinterpret_cast<const block_q8_0 *>(row) + e / ADIL_QK;
        const int j0 = static_cast<int>(e % ADIL_QK);
        float s = 0.0f;
        for (int k = 0; k < 8; k++) s += static_cast<float>(b->qs[j0 + k]) * x[k];
        return s * half_bits(b->d);
    }
};

/* The 6-bit scale and min of Q4_K sub-block j (quant_k.c's scale_min_k4). */
__host__ __device__ inline void scale_min_k4(const uint8_t s[12], int j, int *sc, int *m) {
    if (j < 4) {
        *sc = s[j] & 63;
        *m = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 0x0F) | (s[j - 4] >> 6) << 4;
        *m = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
    }
}

/* Q4_K: x = d * sc * q - dmin * m per sub-block of 32; element i of the
 * super-block is a nibble of qs[32 (i / 64) + i % 32], low for i % 64 < 32. */
struct q4_K_t {
    static constexpr uint32_t id = ADIL_WT_Q4_K;
    static constexpr int block = ADIL_QK_K;
    static constexpr int bytes = sizeof(block_q4_K);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q4_K *b = reinterpret_cast<const block_q4_K *>(row) + e / ADIL_QK_K;
        const int i0 = static_cast<int>(e % ADIL_QK_K);
        int sc, m;
        scale_min_k4(b->scales, i0 / 32, &sc, &m);
        const bool high = i0 % 64 >= 32;
        const uint8_t *qs = b->qs + 32 * (i0 / 64) + i0 % 32;
        float qx = 0.0f, sx = 0.0f;
        for (int k = 0; k < 8; k++) {
            qx += static_cast<float>(high ? qs[k] >> 4 : qs[k] & 0x0F) * x[k];
            sx += x[k];
        }
        return half_bits(b->d) * static_cast<float>(sc) * qx -
               half_bits(b->dmin) * static_cast<float>(m) * sx;
    }
};

/* Q6_K: x = d * scales[i / 16] * (q - 32), q = 4 bits of ql and 2 of qh
 * (quant_k.c's unpack_q6_K). */
struct q6_K_t {
    static constexpr uint32_t id = ADIL_WT_Q6_K;
    static constexpr int block = ADIL_QK_K;
    static constexpr int bytes = sizeof(block_q6_K);
    __host__ __device__ static float dot8(const uint8_t *row, int64_t e, const float *x, int) {
        const block_q6_K *b = reinterpret_cast<const block_q6_K *>(row) + e / ADIL_QK_K;
        const int i0 = static_cast<int>(e % ADIL_QK_K);
        float s = 0.0f;
        for (int k = 0; k < 8; k++) {
            const int i = i0 + k, r = i % 128;
            const uint8_t lo = b->ql[64 * (i / 128) + r % 64];
            const int low = r < 64 ? lo & 0x0F : lo >> 4;
            const int hi = (b->qh[32 * (i / 128) + r % 32] >> (2 * (r / 32))) & 3;
            s += static_cast<float>((low | hi << 4) - 32) * x[k];
        }
        return half_bits(b->d) * static_cast<float>(b->scales[i0 / 16]) * s;
    }
};

} // namespace adil_cuda

#endif /* ADIL_CUDA_DEQUANT_CUH */
