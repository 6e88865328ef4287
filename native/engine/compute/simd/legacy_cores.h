/*
 * legacy_cores.h — the loops of the 32-element types' dot products
 * (the per-block maths is in legacy_blocks.h), included through
 * legacy_level.h by legacy_avx2.c and legacy_avx512.c:
 *   lg_core  R rows x T tokens with every accumulator in a register;
 *   lg_gemm  prefill: unpacks a group of R weight rows once into a stack
 *            buffer, then runs the R x T cores over all the tile's tokens,
 *            so a weight block is unpacked once per tile, not once per T
 *            tokens;
 *   lg_gemv  decode: one token, rows one after the other.
 * Block b of a (row, token) pair is accumulated into chain b % LG_CHAINS;
 * two chains halve the dependency on the FMA latency.  Every loop performs
 * the same operations per pair in the same order, so results never depend
 * on the tile shape (matmul equals vec_dot bit for bit).
 */
#ifndef ADIL_LEGACY_CORES_H
#define ADIL_LEGACY_CORES_H

#include "compute/simd/legacy_blocks.h"
#include "compute/simd/tile_walk.h"

#if LG_VNNI
#    define LG_MAX_ROWS 4 /* 32 registers: 4 x 2 pairs x 2 chains of accumulators */
#else
#    define LG_MAX_ROWS 2 /* 16 registers */
#endif
#define LG_MAX_TOKS        2
#define LG_CHAINS          2
#define LG_GEMV_MAX_BLOCKS 512 /* activation blocks the GEMV prepares on the stack */
#define LG_PACK_MAX_BLOCKS 128 /* weight blocks per row lg_gemm unpacks on the stack */

_Static_assert(LG_CHAINS == 2, "the loops are written out for two chains");

ADIL_INLINE float lg_finish(const __m256 chains[LG_CHAINS]) {
    return simd_hsum_ps(_mm256_add_ps(chains[0], chains[1]));
}

/* Where a core's weight blocks come from: the rows themselves, or lg_gemm's
 * unpacked copy (pu / pd / pm, LG_PACK_MAX_BLOCKS entries per row; pm, the
 * minimum, is written and read for Q4_1 / Q5_1 only). */
typedef struct lg_rows {
    const __m256i (*pu)[LG_PACK_MAX_BLOCKS];
    const float (*pd)[LG_PACK_MAX_BLOCKS];
    const float (*pm)[LG_PACK_MAX_BLOCKS];
} lg_rows;

ADIL_INLINE lg_row lg_get_row(const adil_tile *t, lg_kind kind, const lg_rows *src, int r, int64_t b) {
    if (src != NULL) {
        return lg_row_unpacked(kind, src->pu[r][b], src->pd[r][b], lg_has_min(kind) ? src->pm[r][b] : 0.0f);
    }
    return lg_row_prep(kind, t->w + (size_t)r * t->w_stride, b);
}

/* Block b of an R x T tile into chain c of every pair. */
ADIL_INLINE void lg_core_block(const adil_tile *t, lg_kind kind, const lg_rows *src, const int R, const int T,
                               int64_t b, int c, __m256 acc[LG_MAX_ROWS][LG_MAX_TOKS][LG_CHAINS]) {
    lg_token tok[LG_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        tok[k] = lg_token_prep(kind, t->act + (size_t)k * t->act_stride, b);
    }
    for (int r = 0; r < R; r++) {
        lg_row row = lg_get_row(t, kind, src, r, b);
        for (int k = 0; k < T; k++) {
            acc[r][k][c] = lg_pair_step(kind, &row, &tok[k], acc[r][k][c]);
        }
    }
}

/* R rows x T tokens with all accumulators in registers. */
ADIL_INLINE void lg_core_from(const adil_tile *t, lg_kind kind, const lg_rows *src, const int R,
                              const int T) {
    const int64_t nb = t->n / ADIL_QK;
    __m256 acc[LG_MAX_ROWS][LG_MAX_TOKS][LG_CHAINS];
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < T; k++) {
            acc[r][k][0] = _mm256_setzero_ps();
            acc[r][k][1] = _mm256_setzero_ps();
        }
    }
    int64_t b = 0;
    for (; b + LG_CHAINS <= nb; b += LG_CHAINS) {
        lg_core_block(t, kind, src, R, T, b, 0, acc);
        lg_core_block(t, kind, src, R, T, b + 1, 1, acc);
    }
    if (b < nb) {
        lg_core_block(t, kind, src, R, T, b, 0, acc);
    }
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < T; k++) {
            t->y[(size_t)k * t->y_stride + (size_t)r] = lg_finish(acc[r][k]);
        }
    }
}

ADIL_INLINE void lg_core(const adil_tile *t, lg_kind kind, const int R, const int T) {
    lg_core_from(t, kind, NULL, R, T);
}

/* The tokens of one unpacked row group: R x T cores, then R x 1. */
ADIL_INLINE void lg_gemm_tokens(const adil_tile *t, lg_kind kind, const lg_rows *src, const int R) {
    int64_t k = 0;
    for (; k + LG_MAX_TOKS <= t->n_tok; k += LG_MAX_TOKS) {
        adil_tile s = *t;
        s.act += (size_t)k * t->act_stride;
        s.y += (size_t)k * t->y_stride;
        lg_core_from(&s, kind, src, R, LG_MAX_TOKS);
    }
    for (; k < t->n_tok; k++) {
        adil_tile s = *t;
        s.act += (size_t)k * t->act_stride;
        s.y += (size_t)k * t->y_stride;
        lg_core_from(&s, kind, src, R, 1);
    }
}

/* Prefill: rows in groups of LG_MAX_ROWS (then one at a time), each group
 * unpacked once for all of the tile's tokens.  Rows too long for the stack
 * buffer go through `plain` (the same cores reading the rows directly). */
ADIL_INLINE void lg_gemm(const adil_tile *t, lg_kind kind, const adil_tile_shapes *plain) {
    const int64_t nb = t->n / ADIL_QK;
    if (nb > LG_PACK_MAX_BLOCKS) {
        adil_tile_walk(plain, t);
        return;
    }
    __m256i pu[LG_MAX_ROWS][LG_PACK_MAX_BLOCKS]; /* 16 KiB with 4 rows */
    float pd[LG_MAX_ROWS][LG_PACK_MAX_BLOCKS], pm[LG_MAX_ROWS][LG_PACK_MAX_BLOCKS];
    const lg_rows src = {(const __m256i(*)[LG_PACK_MAX_BLOCKS])pu, (const float(*)[LG_PACK_MAX_BLOCKS])pd,
                         (const float(*)[LG_PACK_MAX_BLOCKS])pm};
    for (int64_t r0 = 0; r0 < t->n_rows;) {
        const int group = t->n_rows - r0 >= LG_MAX_ROWS ? LG_MAX_ROWS : 1;
        adil_tile s = *t;
        s.w += (size_t)r0 * t->w_stride;
        s.y += r0;
        for (int r = 0; r < group; r++) {
            for (int64_t b = 0; b < nb; b++) {
                lg_row row = lg_row_prep(kind, s.w + (size_t)r * t->w_stride, b);
                pu[r][b] = lg_row_packed(kind, &row);
                pd[r][b] = row.d;
                if (lg_has_min(kind)) {
                    pm[r][b] = row.m;
                }
            }
        }
        if (group == LG_MAX_ROWS) {
            lg_gemm_tokens(&s, kind, &src, LG_MAX_ROWS);
        } else {
            lg_gemm_tokens(&s, kind, &src, 1);
        }
        r0 += group;
    }
}

/* One block of the GEMV: the token's side comes prepared (sa: Q4_1 / Q5_1 only,
 * and only then written or read). */
ADIL_INLINE __m256 lg_gemv_step(const adil_tile *t, lg_kind kind, const uint8_t *w, int64_t b,
                                const __m256i *fix, const float *da, const float *sa, __m256 acc) {
    lg_token k = {_mm256_loadu_si256((const __m256i *)lg_act_qs(kind, t->act, b)), fix[b],
                  _mm256_set1_ps(da[b]), lg_has_min(kind) ? lg_lane0(sa[b]) : _mm256_setzero_ps()};
    lg_row row = lg_row_prep(kind, w, b);
    return lg_pair_step(kind, &row, &k, acc);
}

/* Decode (one token): rows one after the other, so the weights are a single
 * sequential stream through memory that the hardware prefetchers follow
 * (interleaving even two rows halved the bandwidth).  The activation side
 * of every block is prepared once for all the tile's rows.  Rows too long
 * for the stack buffers go through `one`, the 1 x 1 core: same results. */
ADIL_INLINE void lg_gemv(const adil_tile *t, lg_kind kind, adil_tile_core_fn one) {
    const int64_t nb = t->n / ADIL_QK;
    if (nb > LG_GEMV_MAX_BLOCKS) {
        for (int64_t r = 0; r < t->n_rows; r++) {
            adil_tile single = *t;
            single.w += (size_t)r * t->w_stride;
            single.y += r;
            one(&single);
        }
        return;
    }
    __m256i fix[LG_GEMV_MAX_BLOCKS]; /* 16 KiB: fits any thread's stack */
    float da[LG_GEMV_MAX_BLOCKS], sa[LG_GEMV_MAX_BLOCKS];
    for (int64_t b = 0; b < nb; b++) {
        fix[b] = lg_token_fix(kind, _mm256_loadu_si256((const __m256i *)lg_act_qs(kind, t->act, b)));
        da[b] = simd_fp16(lg_act_d(kind, t->act, b));
        if (lg_has_min(kind)) {
            sa[b] = lg_act_s(t->act, b);
        }
    }
    for (int64_t r = 0; r < t->n_rows; r++) {
        const uint8_t *w = t->w + (size_t)r * t->w_stride;
        __m256 acc[LG_CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        int64_t b = 0;
        for (; b + LG_CHAINS <= nb; b += LG_CHAINS) {
            acc[0] = lg_gemv_step(t, kind, w, b, fix, da, sa, acc[0]);
            acc[1] = lg_gemv_step(t, kind, w, b + 1, fix, da, sa, acc[1]);
        }
        if (b < nb) {
            acc[0] = lg_gemv_step(t, kind, w, b, fix, da, sa, acc[0]);
        }
        t->y[r] = lg_finish(acc);
    }
}

#endif /* ADIL_LEGACY_CORES_H */
