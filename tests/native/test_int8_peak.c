/*
 * test_int8_peak.c — the int8 peak micro-kernels (compute/int8_peak.h):
 * each kernel this CPU runs gives a positive, finite figure on one and two
 * threads (no timing is asserted beyond that: the cores are shared); the
 * kernels compute what their instructions do; adil_engine_int8_peak picks
 * the kernel of the selected level and refuses bad arguments.
 */
#include "adil/adil.h"
#include "adil_common.h"
#include "compute/cpu_level.h"
#include "compute/int8_peak.h"
#if defined(__x86_64__)
#    include "compute/simd/int8_peak_kernels.h"
#endif
#include "test_util.h"

#include <math.h>
#include <stdio.h>

static void test_each_supported_kernel(void) {
    int measured = 0;
    for (int k = 0; k < ADIL_INT8_PEAK_KERNEL_COUNT; k++) {
        adil_int8_peak_kernel kernel = (adil_int8_peak_kernel)k;
        double macs = -1.0;
        if (!adil_int8_peak_kernel_supported(kernel)) {
            CHECK(adil_int8_peak_measure(kernel, 1, 5.0, &macs) == ADIL_STATUS_CAPABILITY);
            printf("  %s: not on this CPU\n", adil_int8_peak_kernel_name(kernel));
            continue;
        }
        for (int threads = 1; threads <= 2; threads++) {
            macs = -1.0;
            CHECK(adil_int8_peak_measure(kernel, threads, 10.0, &macs) == ADIL_OK);
            CHECK(macs > 0 && isfinite(macs));
            printf("  %s, %d thread(s): %.1f GMAC/s\n", adil_int8_peak_kernel_name(kernel), threads,
                   macs / 1e9);
        }
        measured++;
    }
    /* Every x86-64 CPU with the AVX2 level runs the AVX2 kernel. */
    CHECK(measured > 0 || adil_cpu_level_supported() == ADIL_CPU_SCALAR);
}

/* The kernels really multiply: u = 3, s = -2 bytes, so every int32 lane of
 * every accumulator gains 4 * 3 * -2 = -24 an iteration (the AVX2 chain
 * adds the same pairs through int16); the sum of the lanes of all chains is
 * chains * lanes * -24 * n_iter. */
static void test_kernels_compute(void) {
#if defined(__x86_64__)
    const uint64_t n = 7;
    if (adil_int8_peak_kernel_supported(ADIL_INT8_PEAK_AVX2))
        CHECK(adil_int8_peak_avx2(n) == (uint32_t)(ADIL_INT8_PEAK_CHAINS_AVX2 * 8 * -24 * (int64_t)n));
    if (adil_int8_peak_kernel_supported(ADIL_INT8_PEAK_AVX_VNNI))
        CHECK(adil_int8_peak_avx_vnni(n) == (uint32_t)(ADIL_INT8_PEAK_CHAINS_VNNI * 8 * -24 * (int64_t)n));
    if (adil_int8_peak_kernel_supported(ADIL_INT8_PEAK_AVX512_VNNI))
        CHECK(adil_int8_peak_avx512_vnni(n) ==
              (uint32_t)(ADIL_INT8_PEAK_CHAINS_VNNI * 16 * -24 * (int64_t)n));
#endif
}

static void test_engine_function(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    double macs = -1.0;
    CHECK(adil_engine_int8_peak(NULL, 1, &macs) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_engine_int8_peak(engine, 1, NULL) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_int8_peak_kernel kernel;
    if (adil_int8_peak_kernel_for_level(&kernel)) {
        CHECK(adil_int8_peak_kernel_supported(kernel));
        CHECK(adil_engine_int8_peak(engine, 0, &macs) == ADIL_OK); /* the engine's threads */
        CHECK(macs > 0 && isfinite(macs));
        printf("  adil_engine_int8_peak (%s, %s): %.1f GMAC/s\n", adil_cpu_level_name(),
               adil_int8_peak_kernel_name(kernel), macs / 1e9);
    } else {
        CHECK(adil_engine_int8_peak(engine, 1, &macs) == ADIL_STATUS_CAPABILITY);
        CHECK_HAS(adil_last_error(), "scalar");
    }
    adil_engine_close(engine);
}

int main(void) {
    test_each_supported_kernel();
    test_kernels_compute();
    test_engine_function();
    return test_report("test_int8_peak");
}
