/*
 * int8_peak_avx2.c — the int8 peak micro-kernels on ymm: AVX2 (vpmaddubsw +
 * vpmaddwd + vpaddd, what the engine's AVX2 int8 dot products do) and
 * AVX-VNNI (vpdpbusd, VEX encoded).  The loops are written in assembly so
 * that they hold nothing but those instructions on registers (the compiler,
 * given intrinsics, copies the accumulators around or spills them).
 */
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
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
                     "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
                     "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"
                     "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"
                     "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
                     "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"
                     "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"
                     "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
                     "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"
                     "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
                     "1:\n\t" AVX2_CHAIN(0, 10) AVX2_CHAIN(1, 11) AVX2_CHAIN(2, 12) AVX2_CHAIN(3, 10)
                         AVX2_CHAIN(4, 11) AVX2_CHAIN(5, 12) AVX2_CHAIN(6, 10) AVX2_CHAIN(7, 11)
                             AVX2_CHAIN(8, 12) AVX2_CHAIN(9, 10) "dec %[n]\n\t"
                                                                 "jnz 1b\n\t"
                                                                 "vpaddd %%ymm1, %%ymm0, %%ymm0\n\t"
                                                                 "vpaddd %%ymm3, %%ymm2, %%ymm2\n\t"
                                                                 "vpaddd %%ymm5, %%ymm4, %%ymm4\n\t"
                                                                 "vpaddd %%ymm7, %%ymm6, %%ymm6\n\t"
                                                                 "vpaddd %%ymm9, %%ymm8, %%ymm8\n\t"
                                                                 "vpaddd %%ymm2, %%ymm0, %%ymm0\n\t"
                                                                 "vpaddd %%ymm6, %%ymm4, %%ymm4\n\t"
                                                                 "vpaddd %%ymm8, %%ymm4, %%ymm4\n\t"
                                                                 "vpaddd %%ymm4, %%ymm0, %[out]\n\t"
                     : [n] "+r"(n_iter), [out] "=x"(out)
                     : [u] "x"(u), [s] "x"(s), [ones] "x"(ones)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "xmm12", "cc");
    return lanes_sum(out);
}

/* One vpdpbusd of the AVX-VNNI kernel into accumulator ymm<a>; the prefix {vex} (%{vex%} in asm) asks
 * the assembler for the VEX (AVX-VNNI) form, not the EVEX (AVX-512 VL) one. */
#define VNNI_CHAIN(a) "%{vex%} vpdpbusd %[s], %[u], %%ymm" #a "\n\t"

/* The ADIL_INT8_PEAK_CHAINS_VNNI (12) accumulators are ymm0-ymm11. */
uint64_t adil_int8_peak_avx_vnni(uint64_t n_iter) {
    if (n_iter == 0) return 0;
    __m256i u = _mm256_set1_epi8(3), s = _mm256_set1_epi8(-2), out;
    __asm__ volatile("vpxor %%xmm0, %%xmm0, %%xmm0\n\t"
                     "vpxor %%xmm1, %%xmm1, %%xmm1\n\t"
                     "vpxor %%xmm2, %%xmm2, %%xmm2\n\t"
                     "vpxor %%xmm3, %%xmm3, %%xmm3\n\t"
                     "vpxor %%xmm4, %%xmm4, %%xmm4\n\t"
                     "vpxor %%xmm5, %%xmm5, %%xmm5\n\t"
                     "vpxor %%xmm6, %%xmm6, %%xmm6\n\t"
                     "vpxor %%xmm7, %%xmm7, %%xmm7\n\t"
                     "vpxor %%xmm8, %%xmm8, %%xmm8\n\t"
                     "vpxor %%xmm9, %%xmm9, %%xmm9\n\t"
                     "vpxor %%xmm10, %%xmm10, %%xmm10\n\t"
                     "vpxor %%xmm11, %%xmm11, %%xmm11\n\t"
                     "1:\n\t" VNNI_CHAIN(0) VNNI_CHAIN(1) VNNI_CHAIN(2) VNNI_CHAIN(3) VNNI_CHAIN(4)
                         VNNI_CHAIN(5) VNNI_CHAIN(6) VNNI_CHAIN(7) VNNI_CHAIN(8) VNNI_CHAIN(9) VNNI_CHAIN(10)
                             VNNI_CHAIN(11) "dec %[n]\n\t"
                                            "jnz 1b\n\t"
                                            "vpaddd %%ymm1, %%ymm0, %%ymm0\n\t"
                                            "vpaddd %%ymm3, %%ymm2, %%ymm2\n\t"
                                            "vpaddd %%ymm5, %%ymm4, %%ymm4\n\t"
                                            "vpaddd %%ymm7, %%ymm6, %%ymm6\n\t"
                                            "vpaddd %%ymm9, %%ymm8, %%ymm8\n\t"
                                            "vpaddd %%ymm11, %%ymm10, %%ymm10\n\t"
                                            "vpaddd %%ymm2, %%ymm0, %%ymm0\n\t"
                                            "vpaddd %%ymm6, %%ymm4, %%ymm4\n\t"
                                            "vpaddd %%ymm10, %%ymm8, %%ymm8\n\t"
                                            "vpaddd %%ymm4, %%ymm0, %%ymm0\n\t"
                                            "vpaddd %%ymm8, %%ymm0, %[out]\n\t"
                     : [n] "+r"(n_iter), [out] "=x"(out)
                     : [u] "x"(u), [s] "x"(s)
                     : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9",
                       "xmm10", "xmm11", "cc");
    return lanes_sum(out);
}
