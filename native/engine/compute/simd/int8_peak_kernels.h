/*
 * int8_peak_kernels.h — the micro-kernels of compute/int8_peak.c, one per
 * file compiled with its level's flags (int8_peak_avx2.c,
 * int8_peak_avx512.c).  Call one only after the CPU check of
 * adil_int8_peak_kernel_supported.
 */
#ifndef ADIL_INT8_PEAK_KERNELS_H
#define ADIL_INT8_PEAK_KERNELS_H

#include <stdint.h>

/* Independent accumulators per loop iteration: vpdpbusd has a latency of
 * about 5 cycles and up to 2 issue per cycle, so 10-12 chains keep the
 * ports busy. */
#define ADIL_INT8_PEAK_CHAINS_AVX2 10
#define ADIL_INT8_PEAK_CHAINS_VNNI 12

/* vpmaddubsw + vpmaddwd + vpaddd on ymm: 32 products per chain and iteration. */
uint64_t adil_int8_peak_avx2(uint64_t n_iter);
/* vpdpbusd on ymm (AVX-VNNI): 32 products per chain and iteration. */
uint64_t adil_int8_peak_avx_vnni(uint64_t n_iter);
/* vpdpbusd on zmm (AVX-512 VNNI): 64 products per chain and iteration. */
uint64_t adil_int8_peak_avx512_vnni(uint64_t n_iter);

#endif /* ADIL_INT8_PEAK_KERNELS_H */
