/*
 * q8_0_r8_avx512.c — the tile kernel of 8-row Q8_0 (compute/repack.h) for
 * the avx512 level.  A zmm holds 8 levels of each of the 8 rows (one row per
 * qword, stored as q + 128, so o = 128), which r8_q8_0_core multiplies by
 * one broadcast activation qword.  (AVX2 has no vpdpbusd, and its maddubs
 * would saturate on q + 128: Q8_0 stays row-major there.)
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/r8_q8_0_acts.h"
#include "compute/simd/r8_x86.h"

ADIL_INLINE void q8_0_levels(const uint8_t *block, __m512 *d, __m512i w[4]) {
    const block_q8_0_r8 *b = (const block_q8_0_r8 *)block;
    *d = r8_row_pairs(b->d);
    for (int c = 0; c < 4; c++) w[c] = _mm512_loadu_si512(b->qs[c]);
}

static void r8_toks(const adil_tile *t, const r8_act *pre) {
    r8_q8_0_core(t, pre, R8_Q8_0_TOKS, 128, sizeof(block_q8_0_r8), q8_0_levels);
}
static void r8_one(const adil_tile *t, const r8_act *pre) {
    r8_q8_0_core(t, pre, 1, 128, sizeof(block_q8_0_r8), q8_0_levels);
}

/* Rows come in whole groups of 8 (the tile_dot_r8 contract). */
void adil_tile_q8_0_r8_avx512(const adil_tile *t) { r8_q8_0_walk(t, 128, r8_toks, r8_one); }
