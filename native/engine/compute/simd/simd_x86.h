/*
 * simd_x86.h — small AVX2 building blocks shared by the SIMD kernel files.
 *
 * Include only from files compiled with AVX2/FMA/F16C enabled (names ending
 * in _avx2.c or _avx512.c, see native/engine/CMakeLists.txt); their code runs
 * only after the run-time check in cpu_level.c.
 */
#ifndef ADIL_SIMD_X86_H
#define ADIL_SIMD_X86_H

#if !defined(__AVX2__) || !defined(__FMA__) || !defined(__F16C__)
#    error "simd_x86.h needs a file compiled with -mavx2 -mfma -mf16c"
#endif

#include "compute/simd/always_inline.h"
#include "compute/weight_types.h"

#include <immintrin.h>

/* IEEE half to float (exact; F16C). */
ADIL_INLINE float simd_fp16(adil_fp16 h) { return _cvtsh_ss(h); }

/* Sum of the 8 lanes, in a fixed order. */
ADIL_INLINE float simd_hsum_ps(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

/* Adjacent int16 pairs summed into int32 lanes. */
ADIL_INLINE __m256i simd_pairs_i32(__m256i v) { return _mm256_madd_epi16(v, _mm256_set1_epi16(1)); }

/* An IEEE half in all 8 float lanes. */
ADIL_INLINE __m256 simd_fp16_x8(adil_fp16 h) { return _mm256_cvtph_ps(_mm_set1_epi16((short)h)); }

/* The 32 4-bit levels of a legacy block (16 bytes): element j < 16 is the
 * low nibble of byte j, element j + 16 its high nibble.  The bytes are
 * loaded into both halves and only the upper half shifted, which costs one
 * instruction less than shifting and inserting. */
ADIL_INLINE __m256i simd_nibbles_32(const uint8_t qs[16]) {
    __m256i both = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)qs));
    both = _mm256_srlv_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 4, 4, 4, 4));
    return _mm256_and_si256(both, _mm256_set1_epi8(0x0F));
}

/* The 32 values of a block's 4-bit codes (nibbles as simd_nibbles_32) in a
 * 16-entry int8 table (IQ4_NL, IQ4_XS, MXFP4), with one pshufb. */
ADIL_INLINE __m256i simd_lookup_32(const int8_t table[16], const uint8_t qs[16]) {
    __m256i t = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)table));
    return _mm256_shuffle_epi8(t, simd_nibbles_32(qs));
}

/* A 32-bit little-endian field from 4 bytes (no alignment needed). */
ADIL_INLINE uint32_t simd_load_u32(const uint8_t b[4]) {
    uint32_t v;
    __builtin_memcpy(&v, b, 4);
    return v;
}

#endif /* ADIL_SIMD_X86_H */
