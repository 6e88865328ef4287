/*
 * q8_0_r8_avx512.c — the tile kernel of 8-row Q8_0 (compute/repack.h) for
 * the avx512 level.  A zmm holds 8 levels of each of the 8 rows (one row per
 * qword, stored as q + 128), one broadcast activation qword meets all 8, and
 * vpdpbusd sums 4 products into each int32 lane, 2 lanes per row, starting
 * from the block's -128 * sum(a) (r8_q8_0_acts.h), so the integer dot of
 * each block is exact; then it meets d_w * d_a as in the scalar reference.
 * (AVX2 has no vpdpbusd, and its maddubs would saturate on q + 128: Q8_0
 * stays row-major there.)
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/r8_q8_0_acts.h"
#include "compute/simd/r8_x86.h"

#define R8_MAX_TOKS 4
#define R8_CHAINS   2 /* float accumulators per token, alternating blocks (any T: same sums) */

ADIL_INLINE void r8_core(const adil_tile *t, const r8_act *pre, const int T) {
    const int C = R8_CHAINS;
    const int64_t nb = t->n / ADIL_QK;
    const block_q8_0_r8 *x = (const block_q8_0_r8 *)t->w;
    __m512 acc[R8_MAX_TOKS][R8_CHAINS]; /* row r: lanes 2r, 2r + 1 */
    for (int k = 0; k < T; k++)
        for (int c = 0; c < C; c++) acc[k][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const block_q8_0_r8 *b = x + i;
        const __m512 d = r8_row_pairs(b->d);
        const __m512i w[4] = {_mm512_loadu_si512(b->qs[0]), _mm512_loadu_si512(b->qs[1]),
                              _mm512_loadu_si512(b->qs[2]), _mm512_loadu_si512(b->qs[3])};
        for (int k = 0; k < T; k++) {
            const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)k * t->act_stride) + i;
            const r8_act p = pre != NULL ? pre[k * nb + i] : r8_act_of(y, 128);
            __m512i dot = _mm512_set1_epi64(p.fix);
            for (int c = 0; c < 4; c++) dot = _mm512_dpbusd_epi32(dot, w[c], r8_bcast_u64(y->qs + 8 * c));
            __m512 *s = &acc[k][i % C];
            *s = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(d, _mm512_set1_ps(p.d)), *s);
        }
    }
    for (int k = 0; k < T; k++) {
        __m512 a = acc[k][0];
        for (int c = 1; c < C; c++) a = _mm512_add_ps(a, acc[k][c]);
        _mm256_storeu_ps(t->y + (size_t)k * t->y_stride, r8_pair_sums(a));
    }
}

static void r8_toks(const adil_tile *t, const r8_act *pre) { r8_core(t, pre, R8_MAX_TOKS); }
static void r8_one(const adil_tile *t, const r8_act *pre) { r8_core(t, pre, 1); }

/* Rows come in whole groups of 8 (the tile_dot_r8 contract). */
void adil_tile_q8_0_r8_avx512(const adil_tile *t) { r8_q8_0_walk(t, 128, R8_MAX_TOKS, r8_toks, r8_one); }
