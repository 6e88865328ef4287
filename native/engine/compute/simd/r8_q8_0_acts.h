/*
 * r8_q8_0_acts.h — what the 8-row kernels whose activations are Q8_0
 * blocks (q8_0_r8_avx512.c, q5_0_r8_avx512.c) share: the activation side,
 * formed once per tile instead of once per 8-row group, the core that
 * multiplies a block's 4 vectors of levels by it, and the walk over a tile.
 * Each kernel only says how its block becomes those vectors.
 *
 * Their weights are unsigned levels u = q + o for vpdpbusd (Q8_0 stored as
 * q + 128, Q5_0's 5-bit levels with o = 16), so a block's integer dot is
 * sum(u * a) - o * sum(a).  The correction depends on the token's block only:
 * the walk below forms it for every (token, block) of a run of tokens, as the
 * qword (-o * s0, -o * s1), s0 the sum of the activations that meet the low
 * dword of a row's qword (bytes 0..3 of each 8-byte chunk), s1 of those that
 * meet the high one (bytes 4..7); one broadcast puts it into every row's pair
 * of int32 lanes, and each core starts its vpdpbusd from it.  That saves the
 * 4 vpdpbusd per block and token that forming it inside every 8-row
 * group costs.  The activation's d is converted once here too.  Include only
 * from files compiled with AVX-512.
 */
#ifndef ADIL_R8_Q8_0_ACTS_H
#define ADIL_R8_Q8_0_ACTS_H

#include "compute/simd/r8_x86.h"
#include "compute/simd/tile_walk.h"

#include <stdbool.h>
#include <stdint.h>

#define R8_ACT_BLOCKS 2048 /* (token, block) pairs formed on the stack: 32 KiB */

typedef struct r8_act {
    int64_t fix; /* dwords -o * s0, -o * s1 */
    float d;     /* the block's d_a */
} r8_act;

ADIL_INLINE r8_act r8_act_of(const block_q8_0 *y, int o) {
    const __m256i a = _mm256_loadu_si256((const __m256i *)y->qs);
    /* dword j: the sum of bytes 4j .. 4j + 3; even j meet low dwords, odd j high ones */
    const __m256i s = _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_set1_epi8(1), a);
    __m128i h = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    h = _mm_add_epi32(h, _mm_unpackhi_epi64(h, h)); /* qword 0: (s0, s1) */
    h = _mm_mullo_epi32(h, _mm_set1_epi32(-o));     /* |o * s| <= 128 * 2048 */
    const r8_act r = {_mm_cvtsi128_si64(h), simd_fp16(y->d)};
    return r;
}

#define R8_Q8_0_TOKS 4 /* tokens of a full core */

/* A layout's block i (at `block`): the 8 rows' d_w, row r's in lanes 2r and
 * 2r + 1, and the unsigned levels u = q + o of elements 8j .. 8j + 7 of every
 * row in w[j] (one row per qword), which meet activation bytes 8j .. 8j + 7. */
typedef void (*r8_q8_0_levels)(const uint8_t *block, __m512 *d, __m512i w[4]);

/* Block i of the 8 rows times the T tokens, into acc (r8_q8_0_core). */
ADIL_INLINE void r8_q8_0_block(const adil_tile *t, const r8_act *pre, const int T, int o, size_t block_bytes,
                               r8_q8_0_levels levels, int64_t i, __m512 acc[R8_Q8_0_TOKS]) {
    const int64_t nb = t->n / ADIL_QK;
    __m512 d;
    __m512i w[4];
    levels(t->w + (size_t)i * block_bytes, &d, w);
    for (int k = 0; k < T; k++) {
        const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)k * t->act_stride) + i;
        const r8_act p = pre != NULL ? pre[k * nb + i] : r8_act_of(y, o);
        __m512i dot = _mm512_set1_epi64(p.fix);
        for (int j = 0; j < 4; j++) dot = _mm512_dpbusd_epi32(dot, w[j], r8_bcast_u64(y->qs + 8 * j));
        acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(d, _mm512_set1_ps(p.d)), acc[k]);
    }
}

/* The 8 rows of t (at w, blocks of block_bytes) times its T tokens (at act):
 * per block and token, vpdpbusd of the 4 level vectors with the broadcast
 * activation qwords, 4 products into each int32 lane, 2 lanes per row,
 * starting from the block's r8_act fix, so the integer dot is exact; then
 * it meets d_w * d_a as in the scalar reference, into one of two float
 * accumulators per token: even blocks into the first, odd ones into the
 * second.  The blocks go in pairs so each accumulator is a named register
 * (indexed by i % 2, the compiler kept them on the stack, every FMA a store
 * and a reload).  pre: the tokens' r8_act, token k's block i at
 * pre[k * nb + i], or NULL (blocks too many for the stack): the core forms
 * each itself, the same values. */
ADIL_INLINE void r8_q8_0_core(const adil_tile *t, const r8_act *pre, const int T, int o, size_t block_bytes,
                              r8_q8_0_levels levels) {
    const int64_t nb = t->n / ADIL_QK;
    __m512 even[R8_Q8_0_TOKS], odd[R8_Q8_0_TOKS]; /* row r: lanes 2r, 2r + 1 */
    for (int k = 0; k < T; k++) even[k] = odd[k] = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 2 <= nb; i += 2) {
        r8_q8_0_block(t, pre, T, o, block_bytes, levels, i, even);
        r8_q8_0_block(t, pre, T, o, block_bytes, levels, i + 1, odd);
    }
    if (i < nb) r8_q8_0_block(t, pre, T, o, block_bytes, levels, i, even);
    for (int k = 0; k < T; k++)
        _mm256_storeu_ps(t->y + (size_t)k * t->y_stride, r8_pair_sums(_mm512_add_ps(even[k], odd[k])));
}

/* A core of fixed T (r8_q8_0_core for one layout). */
typedef void (*r8_q8_0_core_fn)(const adil_tile *t, const r8_act *pre);

/* Covers the tile: runs of as many tokens as R8_ACT_BLOCKS allows, their
 * r8_act formed first; in each run the 8-row groups one after another (a
 * group's weights are read once per run), each with `full` (R8_Q8_0_TOKS
 * tokens) and then `one` for the tokens left. */
ADIL_INLINE void r8_q8_0_walk(const adil_tile *t, int o, r8_q8_0_core_fn full, r8_q8_0_core_fn one) {
    const int64_t nb = t->n / ADIL_QK;
    r8_act pre[R8_ACT_BLOCKS];
    const int64_t run = nb <= R8_ACT_BLOCKS ? R8_ACT_BLOCKS / nb : t->n_tok;
    for (int64_t k0 = 0; k0 < t->n_tok; k0 += run) {
        const int64_t k1 = k0 + run < t->n_tok ? k0 + run : t->n_tok;
        const bool formed = nb <= R8_ACT_BLOCKS;
        for (int64_t k = k0; formed && k < k1; k++) {
            const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)k * t->act_stride);
            for (int64_t i = 0; i < nb; i++) pre[(k - k0) * nb + i] = r8_act_of(y + i, o);
        }
        for (int64_t r0 = 0; r0 < t->n_rows; r0 += ADIL_R8_ROWS) {
            for (int64_t k = k0; k < k1;) {
                const int T = k1 - k >= R8_Q8_0_TOKS ? R8_Q8_0_TOKS : 1;
                adil_tile s = *t;
                s.w += (size_t)r0 * t->w_stride;
                s.act += (size_t)k * t->act_stride;
                s.y += (size_t)k * t->y_stride + (size_t)r0;
                (T == R8_Q8_0_TOKS ? full : one)(&s, formed ? pre + (k - k0) * nb : NULL);
                k += T;
            }
        }
    }
}

#endif /* ADIL_R8_Q8_0_ACTS_H */
