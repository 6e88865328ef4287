/*
 * q5_0_r8_avx512.c — the tile kernel of 8-row Q5_0 (compute/repack.h) for
 * the avx512 level.  A chunk of the 8 rows is one zmm of 8 level bytes per
 * row (one row per qword); its low nibbles are elements 8c .. 8c + 7, its high
 * ones 16 + 8c .., and each gets its fifth bits from one 64-bit byte mask
 * (qh[j]: bit 8r + b is row r's element 8j + b), added as 16 with a masked
 * byte add.  The unsigned levels u = q + 16 meet one broadcast activation
 * qword in vpdpbusd, 4 products into each int32 lane, 2 lanes per row,
 * starting from the block's -16 * sum(a) (r8_q8_0_acts.h): the integer dot
 * of each block is exact, then it meets d_w * d_a as in the scalar
 * reference.
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/r8_q8_0_acts.h"
#include "compute/simd/r8_x86.h"

#define R8_MAX_TOKS 4
#define R8_CHAINS   2 /* float accumulators per token, alternating blocks (any T: same sums) */

/* The 4 vectors of unsigned levels of block b: elements 8j .. 8j + 7 of
 * every row in w[j] (j = 0, 1 the chunks' low nibbles, 2, 3 their high). */
ADIL_INLINE void unpack_levels(const block_q5_0_r8 *b, __m512i w[4]) {
    const __m512i low4 = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(16);
    for (int c = 0; c < 2; c++) {
        const __m512i v = _mm512_loadu_si512(b->qs[c]);
        const __m512i lo = _mm512_and_si512(v, low4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        w[c] = _mm512_mask_add_epi8(lo, (__mmask64)r8_u64(b->qh[c]), lo, fifth);
        w[2 + c] = _mm512_mask_add_epi8(hi, (__mmask64)r8_u64(b->qh[2 + c]), hi, fifth);
    }
}

ADIL_INLINE void r8_core(const adil_tile *t, const r8_act *pre, const int T) {
    const int C = R8_CHAINS;
    const int64_t nb = t->n / ADIL_QK;
    const block_q5_0_r8 *x = (const block_q5_0_r8 *)t->w;
    __m512 acc[R8_MAX_TOKS][R8_CHAINS]; /* row r: lanes 2r, 2r + 1 */
    for (int k = 0; k < T; k++)
        for (int c = 0; c < C; c++) acc[k][c] = _mm512_setzero_ps();
    for (int64_t i = 0; i < nb; i++) {
        const block_q5_0_r8 *b = x + i;
        const __m512 d = r8_row_pairs(b->d);
        __m512i w[4];
        unpack_levels(b, w);
        for (int k = 0; k < T; k++) {
            const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)k * t->act_stride) + i;
            const r8_act p = pre != NULL ? pre[k * nb + i] : r8_act_of(y, 16);
            __m512i dot = _mm512_set1_epi64(p.fix);
            for (int j = 0; j < 4; j++) dot = _mm512_dpbusd_epi32(dot, w[j], r8_bcast_u64(y->qs + 8 * j));
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
void adil_tile_q5_0_r8_avx512(const adil_tile *t) { r8_q8_0_walk(t, 16, R8_MAX_TOKS, r8_toks, r8_one); }
