/*
 * int8_peak.h — the int8 multiply-accumulate peak of this CPU: a
 * register-resident micro-kernel (no loads or stores in its loop, enough
 * independent accumulators to cover the instruction's latency) run on n
 * threads for a fixed time (adil_engine_int8_peak, adil.h).
 *
 * MACs are counted as the int8 x int8 products each instruction does:
 * vpdpbusd on zmm 64, on ymm (AVX-VNNI) 32; vpmaddubsw on ymm 32 (its
 * vpmaddwd + vpaddd only add those products up, so they count nothing).
 */
#ifndef ADIL_INT8_PEAK_H
#define ADIL_INT8_PEAK_H

#include "adil_common.h"

#include <stdbool.h>
#include <stdint.h>

typedef enum adil_int8_peak_kernel {
    ADIL_INT8_PEAK_AVX2 = 0,    /* vpmaddubsw + vpmaddwd + vpaddd on ymm */
    ADIL_INT8_PEAK_AVX_VNNI,    /* vpdpbusd on ymm, VEX encoded (AVX-VNNI) */
    ADIL_INT8_PEAK_AVX512_VNNI, /* vpdpbusd on zmm (AVX-512 VNNI) */
    ADIL_INT8_PEAK_KERNEL_COUNT
} adil_int8_peak_kernel;

/* One micro-kernel: n_iter iterations of macs_per_iter products; returns a
 * value of its accumulators (so that the loop is not optimised away). */
typedef uint64_t (*adil_int8_peak_fn)(uint64_t n_iter);

/* "avx2", "avx-vnni", "avx512-vnni" ("?" out of range). */
const char *adil_int8_peak_kernel_name(adil_int8_peak_kernel kernel);

/* True when this CPU (and this build) can run the kernel. */
bool adil_int8_peak_kernel_supported(adil_int8_peak_kernel kernel);

/* The kernel of the engine's selected CPU level (adil_cpu_level_selected):
 * avx512 -> AVX-512 VNNI; avx2 -> AVX-VNNI when the CPU has it, else AVX2;
 * false at the scalar level (see int8_peak.c for why no figure there). */
bool adil_int8_peak_kernel_for_level(adil_int8_peak_kernel *out);

/* Runs `kernel` on n_threads threads (>= 1) for about `ms` milliseconds
 * (after a short warm-up) and writes the total MACs per second.
 * ADIL_STATUS_CAPABILITY when the kernel is not supported here. */
adil_status adil_int8_peak_measure(adil_int8_peak_kernel kernel, int n_threads, double ms,
                                   double *macs_per_s);

#endif /* ADIL_INT8_PEAK_H */
