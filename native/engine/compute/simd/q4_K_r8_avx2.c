/*
 * q4_K_r8_avx2.c — the tile kernel of 8-row Q4_K (compute/repack.h) for the
 * avx2 level: q4_K_r8_avx512.c's scheme on ymm, so each chunk of the 8 rows
 * is two halves of 4 rows (bytes 0..31 rows 0..3, 32..63 rows 4..7), each
 * with its own scales and accumulators (prefill takes one half at a time); a
 * sub-block's maddubs pair sums are added in int16 and meet its scale in one
 * madd.
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/kquant_cores.h"
#include "compute/simd/r8_x86.h"
#include "compute/simd/tile_walk.h"

#define R8_MAX_TOKS 2 /* 16 ymm registers: two tokens of two halves */

/* Byte 4s + r of a broadcast qword into the 4 int16 lanes of qword r of
 * half s (in-lane shuffle, as in the avx512 kernel). */
static const uint8_t PICK_HALF[2][32] = {
    {0, 128, 0, 128, 0, 128, 0, 128, 1, 128, 1, 128, 1, 128, 1, 128,
     2, 128, 2, 128, 2, 128, 2, 128, 3, 128, 3, 128, 3, 128, 3, 128},
    {4, 128, 4, 128, 4, 128, 4, 128, 5, 128, 5, 128, 5, 128, 5, 128,
     6, 128, 6, 128, 6, 128, 6, 128, 7, 128, 7, 128, 7, 128, 7, 128},
};

/* mins * block sums of the 8 rows, one int32 lane per row (see the avx512
 * kernel: pair p's sums sit in dword 0, 1, 4, 5 of the hadd). */
ADIL_INLINE __m256i mins_dot(const block_q4_K_r8 *b, const block_q8_K *y) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
    const __m256i bp = _mm256_hadd_epi16(bs, bs);
    static const int dword_of_pair[4] = {0, 1, 4, 5};
    __m256i s = _mm256_setzero_si256();
    for (int p = 0; p < 4; p++) {
        const __m256i m = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)b->mins[p]));
        const __m256i bpp = _mm256_permutevar8x32_epi32(bp, _mm256_set1_epi32(dword_of_pair[p]));
        s = _mm256_add_epi32(s, _mm256_madd_epi16(m, bpp));
    }
    return s;
}

/* Halves s0..s0 + S - 1 (half s: rows 4s..4s + 3) of the 8 rows' scaled
 * dots, row 4s + r in lanes 2r and 2r + 1 of acc[s][k].  Two tokens take one
 * half at a time, so that their accumulators, the sub-block sums and the
 * chunk in flight fit the 16 ymm registers (both halves at once spilled on
 * every chunk); one token takes both, so that each weight byte is read once
 * while decode streams them. */
ADIL_INLINE void half_dots(const adil_tile *t, const int T, const int s0, const int S,
                           __m256 acc[2][R8_MAX_TOKS]) {
    const block_q4_K_r8 *x = (const block_q4_K_r8 *)t->w;
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    for (int s = s0; s < s0 + S; s++) {
        for (int k = 0; k < T; k++) acc[s][k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const block_q4_K_r8 *b = x + i;
        __m256i dots[2][R8_MAX_TOKS];
        for (int s = s0; s < s0 + S; s++) {
            for (int k = 0; k < T; k++) dots[s][k] = _mm256_setzero_si256();
        }
        for (int h = 0; h < 4; h++) { /* sub-blocks 2h (low nibbles) and 2h + 1 */
            /* A sub-block's maddubs pair sums, added over its 4 chunks in
             * int16 (at most 4 * 2 * 15 * 128 < 2^15, exact), meet its
             * scale in one madd instead of one per chunk. */
            __m256i sub[2][R8_MAX_TOKS][2];
            for (int s = s0; s < s0 + S; s++) {
                for (int k = 0; k < T; k++) sub[s][k][0] = sub[s][k][1] = _mm256_setzero_si256();
            }
            for (int q = 0; q < 4; q++) {
                for (int s = s0; s < s0 + S; s++) {
                    const __m256i v = _mm256_loadu_si256((const __m256i *)b->qs[4 * h + q][4 * s]);
                    const __m256i lo = _mm256_and_si256(v, low4);
                    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
                    for (int k = 0; k < T; k++) {
                        const int8_t *a = kq_act(t, k, i)->qs + 64 * h + 8 * q;
                        __m256i *u = sub[s][k];
                        u[0] = _mm256_add_epi16(u[0], _mm256_maddubs_epi16(lo, r8_bcast_u64_256(a)));
                        u[1] = _mm256_add_epi16(u[1], _mm256_maddubs_epi16(hi, r8_bcast_u64_256(a + 32)));
                    }
                }
            }
            for (int s = s0; s < s0 + S; s++) {
                const __m256i pick = _mm256_loadu_si256((const __m256i *)PICK_HALF[s]);
                const __m256i sc_lo = _mm256_shuffle_epi8(r8_bcast_u64_256(b->scales[2 * h]), pick);
                const __m256i sc_hi = _mm256_shuffle_epi8(r8_bcast_u64_256(b->scales[2 * h + 1]), pick);
                for (int k = 0; k < T; k++) {
                    const __m256i *u = sub[s][k];
                    dots[s][k] =
                        _mm256_add_epi32(dots[s][k], _mm256_add_epi32(_mm256_madd_epi16(u[0], sc_lo),
                                                                      _mm256_madd_epi16(u[1], sc_hi)));
                }
            }
        }
        const __m256 d8 = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->d));
        for (int s = s0; s < s0 + S; s++) {
            const __m256 d =
                _mm256_permutevar8x32_ps(d8, _mm256_setr_epi32(4 * s, 4 * s, 4 * s + 1, 4 * s + 1, 4 * s + 2,
                                                               4 * s + 2, 4 * s + 3, 4 * s + 3));
            for (int k = 0; k < T; k++) {
                const __m256 yd = _mm256_set1_ps(kq_act(t, k, i)->d);
                acc[s][k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dots[s][k]), _mm256_mul_ps(d, yd), acc[s][k]);
            }
        }
    }
}

ADIL_INLINE void r8_core(const adil_tile *t, const int T) {
    const block_q4_K_r8 *x = (const block_q4_K_r8 *)t->w;
    __m256 acc[2][R8_MAX_TOKS]; /* half s, row 4s + r: lanes 2r, 2r + 1 */
    __m256 offs[R8_MAX_TOKS];   /* row r: lane r */
    if (T == 1) {
        half_dots(t, T, 0, 2, acc);
    } else {
        half_dots(t, T, 0, 1, acc);
        half_dots(t, T, 1, 1, acc);
    }
    for (int k = 0; k < T; k++) offs[k] = _mm256_setzero_ps();
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const block_q4_K_r8 *b = x + i;
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->dmin));
        for (int k = 0; k < T; k++) {
            const block_q8_K *y = kq_act(t, k, i);
            offs[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins_dot(b, y)),
                                      _mm256_mul_ps(dmin, _mm256_set1_ps(y->d)), offs[k]);
        }
    }
    for (int k = 0; k < T; k++) {
        /* hadd: rows 0, 1, 4, 5 | 2, 3, 6, 7 */
        const __m256 sums = _mm256_hadd_ps(acc[0][k], acc[1][k]);
        const __m256 rows = _mm256_permutevar8x32_ps(sums, _mm256_setr_epi32(0, 1, 4, 5, 2, 3, 6, 7));
        _mm256_storeu_ps(t->y + (size_t)k * t->y_stride, _mm256_sub_ps(rows, offs[k]));
    }
}

static void r8_toks(const adil_tile *t) { r8_core(t, R8_MAX_TOKS); }
static void r8_one(const adil_tile *t) { r8_core(t, 1); }

/* Rows come in whole groups of 8 (the tile_dot_r8 contract). */
static const adil_tile_shapes R8_SHAPES = {ADIL_R8_ROWS, R8_MAX_TOKS, r8_toks, r8_one, r8_toks, r8_one};

void adil_tile_q4_K_r8_avx2(const adil_tile *t) { adil_tile_walk(&R8_SHAPES, t); }
