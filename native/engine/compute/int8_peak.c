/*
 * int8_peak.c — measures the int8 multiply-accumulate peak (int8_peak.h):
 * picks the micro-kernel of the selected CPU level and runs it on a pool of
 * threads until a deadline.
 *
 * No figure at the scalar level (ADIL_STATUS_CAPABILITY): the scalar kernels
 * are the portable reference, and a plain C loop measures what the compiler
 * made of it for baseline x86-64 (or another CPU), not a peak the engine's
 * kernels aim at; a fraction of it would mislead more than it tells.
 */
#include "compute/int8_peak.h"

#include "compute/cpu_level.h"
#include "compute/threadpool.h"

#if defined(__x86_64__)
#    include "compute/simd/int8_peak_kernels.h"
#endif

#include <stdatomic.h>

/* Iterations between two looks at the clock: some 20-60 us of work. */
#define PEAK_BATCH 4096
/* The warm-up before the measured run: wakes the pool's threads and lets the
 * cores reach the clock they keep under this load. */
#define PEAK_WARMUP_MS 10.0

static const char *const KERNEL_NAMES[ADIL_INT8_PEAK_KERNEL_COUNT] = {"avx2", "avx-vnni", "avx512-vnni"};

const char *adil_int8_peak_kernel_name(adil_int8_peak_kernel kernel) {
    return (unsigned)kernel < ADIL_INT8_PEAK_KERNEL_COUNT ? KERNEL_NAMES[kernel] : "?";
}

bool adil_int8_peak_kernel_supported(adil_int8_peak_kernel kernel) {
#if defined(__x86_64__)
    adil_cpu_level best = adil_cpu_level_supported();
    switch (kernel) {
    case ADIL_INT8_PEAK_AVX2:
        return best >= ADIL_CPU_AVX2;
    case ADIL_INT8_PEAK_AVX_VNNI:
        return best >= ADIL_CPU_AVX2 && __builtin_cpu_supports("avxvnni");
    case ADIL_INT8_PEAK_AVX512_VNNI:
        return best >= ADIL_CPU_AVX512;
    default:
        return false;
    }
#else
    (void)kernel;
    return false;
#endif
}

bool adil_int8_peak_kernel_for_level(adil_int8_peak_kernel *out) {
    switch (adil_cpu_level_selected()) {
    case ADIL_CPU_AVX512:
        *out = ADIL_INT8_PEAK_AVX512_VNNI;
        return true;
    case ADIL_CPU_AVX2:
        *out = adil_int8_peak_kernel_supported(ADIL_INT8_PEAK_AVX_VNNI) ? ADIL_INT8_PEAK_AVX_VNNI
                                                                        : ADIL_INT8_PEAK_AVX2;
        return true;
    default:
        return false;
    }
}

typedef struct peak_job {
    adil_int8_peak_fn fn;
    double deadline_ms;
    atomic_uint_fast64_t iterations;
    atomic_uint_fast64_t sink; /* the kernels' results, so none is optimised away */
} peak_job;

static void peak_part(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    peak_job *job = ctx;
    uint64_t n = 0, sink = 0;
    do {
        sink += job->fn(PEAK_BATCH);
        n += PEAK_BATCH;
    } while (adil_now_ms() < job->deadline_ms);
    atomic_fetch_add(&job->iterations, n);
    atomic_fetch_add(&job->sink, sink);
}

/* Runs the job on every thread of the pool for `ms`; MACs per second. */
static double peak_run(adil_pool *pool, peak_job *job, uint32_t macs_per_iter, double ms) {
    atomic_store(&job->iterations, 0);
    double start = adil_now_ms();
    job->deadline_ms = start + ms;
    adil_pool_run(pool, peak_part, job);
    double elapsed_ms = adil_now_ms() - start;
    double macs = (double)atomic_load(&job->iterations) * macs_per_iter;
    return elapsed_ms > 0 ? macs / (elapsed_ms / 1000.0) : 0.0;
}

adil_status adil_int8_peak_measure(adil_int8_peak_kernel kernel, int n_threads, double ms,
                                   double *macs_per_s) {
    if (n_threads < 1 || n_threads > ADIL_POOL_MAX_THREADS || !(ms > 0) || macs_per_s == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "int8 peak: expected 1..%d threads, ms > 0 and an output, got %d threads",
                         ADIL_POOL_MAX_THREADS, n_threads);
    if (!adil_int8_peak_kernel_supported(kernel))
        return adil_fail(ADIL_STATUS_CAPABILITY, "int8 peak: this CPU cannot run the %s kernel",
                         adil_int8_peak_kernel_name(kernel));
    peak_job job = {0};
    uint32_t macs_per_iter = 0;
#if defined(__x86_64__)
    switch (kernel) {
    case ADIL_INT8_PEAK_AVX2:
        job.fn = adil_int8_peak_avx2;
        macs_per_iter = ADIL_INT8_PEAK_CHAINS_AVX2 * 32;
        break;
    case ADIL_INT8_PEAK_AVX_VNNI:
        job.fn = adil_int8_peak_avx_vnni;
        macs_per_iter = ADIL_INT8_PEAK_CHAINS_VNNI * 32;
        break;
    default:
        job.fn = adil_int8_peak_avx512_vnni;
        macs_per_iter = ADIL_INT8_PEAK_CHAINS_VNNI * 64;
        break;
    }
#endif
    if (job.fn == NULL) return adil_fail(ADIL_STATUS_INTERNAL, "int8 peak: no kernel");
    adil_pool *pool = NULL;
    adil_status st = adil_pool_create(n_threads, &pool);
    if (st != ADIL_OK) return st;
    (void)peak_run(pool, &job, macs_per_iter, PEAK_WARMUP_MS);
    *macs_per_s = peak_run(pool, &job, macs_per_iter, ms);
    adil_pool_free(pool);
    return ADIL_OK;
}
