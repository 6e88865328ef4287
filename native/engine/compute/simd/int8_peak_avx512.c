/*
 * int8_peak_avx512.c — the int8 peak micro-kernel on zmm: vpdpbusd
 * (AVX-512 VNNI), 64 unsigned x signed byte products per instruction.  The
 * loop is written in assembly so that it holds nothing but those
 * instructions on registers (the compiler, given intrinsics, copies the
 * accumulators around).
 */
#include "compute/simd/int8_peak_asm.h"
#include "compute/simd/int8_peak_kernels.h"

#include <immintrin.h>

#define ZMM_CHAIN(a) "vpdpbusd %[s], %[u], %%zmm" #a "\n\t"

/* The ADIL_INT8_PEAK_CHAINS_VNNI (12) accumulators are zmm0-zmm11. */
uint64_t adil_int8_peak_avx512_vnni(uint64_t n_iter) {
    if (n_iter == 0) return 0;
    __m512i u = _mm512_set1_epi8(3), s = _mm512_set1_epi8(-2), out;
    __asm__ volatile(PEAK_ZERO_12("vpxord", "zmm") "1:\n\t" ZMM_CHAIN(0) ZMM_CHAIN(1) ZMM_CHAIN(2)
                         ZMM_CHAIN(3) ZMM_CHAIN(4) ZMM_CHAIN(5) ZMM_CHAIN(6) ZMM_CHAIN(7) ZMM_CHAIN(8)
                             ZMM_CHAIN(9) ZMM_CHAIN(10)
                                 ZMM_CHAIN(11) "dec %[n]\n\t"
                                               "jnz 1b\n\t" PEAK_SUM_12("zmm") "vmovdqa64 %%zmm0, %[out]\n\t"
                     : [n] "+r"(n_iter), [out] "=v"(out)
                     : [u] "v"(u), [s] "v"(s)
                     : PEAK_CLOBBER_12, "cc");
    return (uint32_t)_mm512_reduce_add_epi32(out);
}
