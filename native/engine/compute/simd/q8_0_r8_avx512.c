/*
 * q8_0_r8_avx512.c — the tile kernel of 8-row Q8_0 (compute/repack.h) for
 * the avx512 level.  A zmm holds 8 levels of each of the 8 rows (one row per
 * qword, stored as q + 128), one broadcast activation qword meets all 8, and
 * vpdpbusd sums 4 products into each int32 lane, 2 lanes per row.  The
 * same vpdpbusd with 128 in every byte gives the 128 * sum(a) to take back
 * out, lane for lane, so the integer dot of each block is exact; then it
 * meets d_w * d_a as in the scalar reference.  (AVX2 has no vpdpbusd, and
 * its maddubs would saturate on q + 128: Q8_0 stays row-major there.)
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/simd_x86.h"
#include "compute/simd/tile_walk.h"

#define R8_MAX_TOKS 4
#define R8_CHAINS   2 /* float accumulators per token, alternating blocks (any T: same sums) */

ADIL_INLINE __m512i bcast_u64(const void *p) {
    long long v;
    __builtin_memcpy(&v, p, 8);
    return _mm512_set1_epi64(v);
}

ADIL_INLINE void r8_core(const adil_tile *t, const int T) {
    const int C = R8_CHAINS;
    const block_q8_0_r8 *x = (const block_q8_0_r8 *)t->w;
    const __m512i k128 = _mm512_set1_epi8((char)0x80);
    const __m512i pairs = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    __m512 acc[R8_MAX_TOKS][R8_CHAINS]; /* row r: lanes 2r, 2r + 1 */
    for (int k = 0; k < T; k++)
        for (int c = 0; c < C; c++) acc[k][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < t->n / ADIL_QK; i++) {
        const block_q8_0_r8 *b = x + i;
        const __m512 d = _mm512_permutexvar_ps(
            pairs, _mm512_castps256_ps512(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->d))));
        const __m512i w[4] = {_mm512_loadu_si512(b->qs[0]), _mm512_loadu_si512(b->qs[1]),
                              _mm512_loadu_si512(b->qs[2]), _mm512_loadu_si512(b->qs[3])};
        for (int k = 0; k < T; k++) {
            const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)k * t->act_stride) + i;
            __m512i dot = _mm512_setzero_si512(), fix = _mm512_setzero_si512();
            for (int c = 0; c < 4; c++) {
                const __m512i a = bcast_u64(y->qs + 8 * c);
                dot = _mm512_dpbusd_epi32(dot, w[c], a);
                fix = _mm512_dpbusd_epi32(fix, k128, a);
            }
            __m512 *s = &acc[k][i % C];
            *s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dot, fix)),
                                 _mm512_mul_ps(d, _mm512_set1_ps(simd_fp16(y->d))), *s);
        }
    }
    const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 0, 0, 0, 0, 0, 0, 0, 0);
    for (int k = 0; k < T; k++) {
        __m512 a = acc[k][0];
        for (int c = 1; c < C; c++) a = _mm512_add_ps(a, acc[k][c]);
        const __m256 e = _mm512_castps512_ps256(_mm512_permutexvar_ps(evens, a));
        const __m256 o = _mm512_castps512_ps256(_mm512_permutexvar_ps(odds, a));
        _mm256_storeu_ps(t->y + (size_t)k * t->y_stride, _mm256_add_ps(e, o));
    }
}

static void r8_toks(const adil_tile *t) { r8_core(t, R8_MAX_TOKS); }
static void r8_one(const adil_tile *t) { r8_core(t, 1); }

/* Rows come in whole groups of 8 (the tile_dot_r8 contract). */
static const adil_tile_shapes R8_SHAPES = {ADIL_R8_ROWS, R8_MAX_TOKS, r8_toks, r8_one, r8_toks, r8_one};

void adil_tile_q8_0_r8_avx512(const adil_tile *t) { adil_tile_walk(&R8_SHAPES, t); }
