/*
 * int8_peak_avx2.c — the int8 peak micro-kernels on ymm: AVX2 (vpmaddubsw +
 * vpmaddwd + vpaddd, what the engine's AVX2 int8 dot products do) and
 * AVX-VNNI (vpdpbusd, VEX encoded).  The loops are written in assembly so
 * that they hold nothing but those instructions on registers (the compiler,
 * given intrinsics, copies the accumulators around or spills them).
 */
#include "compute/simd/int8_peak_asm.h"
#include "compute/simd/int8_peak_kernels.h"

#include <immintrin.h>

static uint64_t lanes_sum(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return (uint32_t)_mm_cvtsi128_si32(s);
}

/* One chain of the AVX2 kernel: the 32 products of u (unsigned) and s
 * (signed) bytes into int16 pairs (temporary t), the pairs into int32, added
 * to accumulator a. */
#define AVX2_CHAIN(a, t)                             \
    "vpmaddubsw %[s], %[u], %%ymm" #t "\n\t"         \
    "vpmaddwd %[ones], %%ymm" #t ", %%ymm" #t "\n\t" \
    "vpaddd %%ymm" #t ", %%ymm" #a ", %%ymm" #a "\n\t"

/* The ADIL_INT8_PEAK_CHAINS_AVX2 (10) accumulators are ymm0-ymm9; ymm10-12
 * the temporaries. */
uint64_t adil_int8_peak_avx2(uint64_t n_iter) {
    if (n_iter == 0) return 0;
    __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1), out;
    __asm__ volatile(PEAK_ZERO_10("vpxor", "xmm") "1:\n\t" AVX2_CHAIN(0, 10) AVX2_CHAIN(1, 11)
                         AVX2_CHAIN(2, 12) AVX2_CHAIN(3, 10) AVX2_CHAIN(4, 11) AVX2_CHAIN(5, 12)
                             AVX2_CHAIN(6, 10) AVX2_CHAIN(7, 11) AVX2_CHAIN(8, 12) AVX2_CHAIN(
                                 9, 10) "dec %[n]\n\t"
                                        "jnz 1b\n\t" PEAK_SUM_10("ymm") "vmovdqa %%ymm0, %[out]\n\t"
                     : [n] "+r"(n_iter), [out] "=x"(out)
                     : [u] "x"(u), [s] "x"(s), [ones] "x"(ones)
                     : PEAK_CLOBBER_10, "xmm10", "xmm11", "xmm12", "cc");
    return lanes_sum(out);
}

/* One vpdpbusd of the AVX-VNNI kernel into accumulator ymm<a>; the prefix {vex} (%{vex%} in asm) asks
 * the assembler for the VEX (AVX-VNNI) form, not the EVEX (AVX-512 VL) one. */
#define VNNI_CHAIN(a) "%{vex%} vpdpbusd %[s], %[u], %%ymm" #a "\n\t"

/* The ADIL_INT8_PEAK_CHAINS_VNNI (12) accumulators are ymm0-ymm11. */
uint64_t adil_int8_peak_avx_vnni(uint64_t n_iter) {
    if (n_iter == 0) return 0;
    __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2), out;
    __asm__ volatile(PEAK_ZERO_12("vpxor", "xmm") "1:\n\t" VNNI_CHAIN(0) VNNI_CHAIN(1) VNNI_CHAIN(2)
                         VNNI_CHAIN(3) VNNI_CHAIN(4) VNNI_CHAIN(5) VNNI_CHAIN(6) VNNI_CHAIN(7) VNNI_CHAIN(8)
                             VNNI_CHAIN(9) VNNI_CHAIN(10)
                                 VNNI_CHAIN(11) "dec %[n]\n\t"
                                                "jnz 1b\n\t" PEAK_SUM_12("ymm") "vmovdqa %%ymm0, %[out]\n\t"
                     : [n] "+r"(n_iter), [out] "=x"(out)
                     : [u] "x"(u), [s] "x"(s)
                     : PEAK_CLOBBER_12, "cc");
    return lanes_sum(out);
}
