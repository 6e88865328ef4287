/*
 * q5_0_r8_avx512.c — the tile kernel of 8-row Q5_0 (compute/repack.h) for
 * the avx512 level.  A chunk of the 8 rows is one zmm of 8 level bytes per
 * row (one row per qword); its low nibbles are elements 8c .. 8c + 7, its high
 * ones 16 + 8c .., and each gets its fifth bits from one 64-bit byte mask
 * (qh[j]: bit 8r + b is row r's element 8j + b), added as 16 with a masked
 * byte add.  The unsigned levels u = q + 16 (o = 16) then go through
 * r8_q8_0_core.
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/r8_q8_0_acts.h"
#include "compute/simd/r8_x86.h"

/* Elements 8j .. 8j + 7 of every row in w[j] (j = 0, 1 the chunks' low
 * nibbles, 2, 3 their high). */
ADIL_INLINE void q5_0_levels(const uint8_t *block, __m512 *d, __m512i w[4]) {
    const block_q5_0_r8 *b = (const block_q5_0_r8 *)block;
    const __m512i low4 = _mm512_set1_epi8(0x0F), fifth = _mm512_set1_epi8(16);
    *d = r8_row_pairs(b->d);
    for (int c = 0; c < 2; c++) {
        const __m512i v = _mm512_loadu_si512(b->qs[c]);
        const __m512i lo = _mm512_and_si512(v, low4);
        const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
        w[c] = _mm512_mask_add_epi8(lo, (__mmask64)r8_u64(b->qh[c]), lo, fifth);
        w[2 + c] = _mm512_mask_add_epi8(hi, (__mmask64)r8_u64(b->qh[2 + c]), hi, fifth);
    }
}

static void r8_toks(const adil_tile *t, const r8_act *pre) {
    r8_q8_0_core(t, pre, R8_Q8_0_TOKS, 16, sizeof(block_q5_0_r8), q5_0_levels);
}
static void r8_one(const adil_tile *t, const r8_act *pre) {
    r8_q8_0_core(t, pre, 1, 16, sizeof(block_q5_0_r8), q5_0_levels);
}

/* Rows come in whole groups of 8 (the tile_dot_r8 contract). */
void adil_tile_q5_0_r8_avx512(const adil_tile *t) { r8_q8_0_walk(t, 16, r8_toks, r8_one); }
