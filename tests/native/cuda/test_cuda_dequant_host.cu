/*
 * test_cuda_dequant_host.cu — the block decoding of the CUDA matvec
 * (backends/cuda/dequant.cuh) compiled for the host and run on the CPU:
 * each row's dot, summed chunk by chunk as a warp's lanes do, against the
 * CPU's scalar reference (matvec_cases.h).  It needs no GPU, so it checks
 * the layouts where the kernels themselves cannot run; the warp reduction
 * and the launch are left to test_cuda_matvec.
 */
#include "backends/cuda/dequant.cuh"

extern "C" {
#include "matvec_cases.h"
#include "test_util.h"
}

#include <cstdio>
#include <vector>

namespace {

/* Lane l of a warp takes chunks l, l + 32, ...; the sums are added lane by lane. */
template <typename T> double host_row_dot(const uint8_t *row, const float *x, int64_t cols) {
    double total = 0.0;
    for (int lane = 0; lane < 32; lane++) {
        float sum = 0.0f;
        for (int64_t e = static_cast<int64_t>(lane) * 8; e < cols; e += 32 * 8)
            sum += T::dot8(row, e, x + e, cols - e < 8 ? static_cast<int>(cols - e) : 8);
        total += sum;
    }
    return total;
}

template <typename T> void check_type(const matvec_case *c) {
    const size_t row_bytes = adil_row_size(c->type, c->cols);
    std::vector<uint8_t> w(matvec_bytes(c));
    std::vector<float> x(static_cast<size_t>(c->cols)), scratch(x.size());
    matvec_fill_weights(c, w.data());
    matvec_fill_vector(x.data(), c->cols);
    for (int r = 0; r < CASE_ROWS; r++) {
        const uint8_t *row = w.data() + static_cast<size_t>(r) * row_bytes;
        double mag;
        const double want = matvec_reference(c, row, x.data(), scratch.data(), &mag);
        const double got = host_row_dot<T>(row, x.data(), c->cols);
        if (!matvec_close(got, want, mag)) {
            std::fprintf(stderr, "%s row %d: dequant.cuh %.8g, reference %.8g\n", adil_wtype_name(c->type), r,
                         got, want);
            test_failures++;
        }
    }
}

template <typename T> bool run_if(const matvec_case *c) {
    if (c->type != T::id) return false;
    check_type<T>(c);
    return true;
}

} // namespace

int main() {
    using namespace adil_cuda;
    for (size_t i = 0; i < MATVEC_CASE_COUNT; i++) {
        const matvec_case *c = &matvec_cases[i];
        const bool ran = run_if<f32_t>(c) || run_if<f16_t>(c) || run_if<bf16_t>(c) || run_if<q4_0_t>(c) ||
                         run_if<q4_1_t>(c) || run_if<q5_0_t>(c) || run_if<q8_0_t>(c) || run_if<q4_K_t>(c) ||
                         run_if<q6_K_t>(c);
        CHECK(ran);
    }
    return test_report("test_cuda_dequant_host");
}
