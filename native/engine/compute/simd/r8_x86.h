/*
 * r8_x86.h — what the tile kernels of the 8-row layouts (compute/repack.h,
 * the simd/..._r8_... files) share: 8 activation bytes broadcast to every
 * qword (they meet the same 8 levels of each row), and on zmm, each row's
 * float scale in its two lanes and the sum of each row's two lanes.  Include
 * only from files compiled with AVX2 (the zmm part with AVX-512).
 */
#ifndef ADIL_R8_X86_H
#define ADIL_R8_X86_H

#include "compute/simd/simd_x86.h"

ADIL_INLINE long long r8_u64(const void *p) {
    long long v;
    __builtin_memcpy(&v, p, 8);
    return v;
}

ADIL_INLINE __m256i r8_bcast_u64_256(const void *p) { return _mm256_set1_epi64x(r8_u64(p)); }

#if defined(__AVX512F__)
ADIL_INLINE __m512i r8_bcast_u64(const void *p) { return _mm512_set1_epi64(r8_u64(p)); }

/* The 8 rows' fp16 scales, row r's in lanes 2r and 2r + 1. */
ADIL_INLINE __m512 r8_row_pairs(const adil_fp16 d[8]) {
    const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    return _mm512_permutexvar_ps(
        pairs, _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d))));
}

/* Lanes 2r + 2r + 1 into lane r: the 8 rows' results. */
ADIL_INLINE __m256 r8_pair_sums(__m512 acc) {
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    return _mm256_add_ps(_mm512_castps512_ps256(_mm512_permutexvar_ps(evens, acc)),
                         _mm512_castps512_ps256(_mm512_permutexvar_ps(odds, acc)));
}
#endif

#endif /* ADIL_R8_X86_H */
