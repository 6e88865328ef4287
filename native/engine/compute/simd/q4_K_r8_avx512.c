/*
 * q4_K_r8_avx512.c — the tile kernel of 8-row Q4_K (compute/repack.h) for
 * the avx512 level: one zmm holds chunk c of the 8 rows (8 level bytes of
 * each, one row per qword), so
 *   - the activation bytes that chunk meets are one broadcast qword,
 *   - vpdpbusd adds each row's 4-byte products into the 2 int32 lanes of its
 *     qword, over the 4 chunks of a sub-block (at most 16 * 15 * 128 < 2^15,
 *     so each lane's sum is an int16 sign-extended to 32 bits), and
 *   - one vpdpwssd per sub-block multiplies those lanes' low int16 by that
 *     row's scale (high int16 by 0) into the row's 2 int32 accumulators,
 * one multiply per chunk and a quarter, all in integers per super-block as in
 * the scalar reference (so exact, in any order); the offset (dmin * sum of
 * mins * block sums) is one int32 lane per row.  Then d and dmin of the 8
 * rows are applied as vectors, and the 8 results of a token are one store.
 */
#include "compute/repack.h"
#include "compute/simd/kernels_simd.h"
#include "compute/simd/kquant_cores.h"
#include "compute/simd/r8_x86.h"
#include "compute/simd/tile_walk.h"

#define R8_MAX_TOKS 4
/* Independent int32 accumulators for one token (decode), so that the
 * multiply-adds do not wait on each other; integer sums are exact in any
 * order, so results do not depend on it. */
#define R8_CHAINS 4

/* Byte r of a broadcast qword into the low int16 of both dwords of qword r,
 * zero elsewhere (in-lane shuffle: qword r sits in 128-bit lane r / 2, whose
 * bytes 0..7 are the 8 bytes), to meet a dword that holds an int16. */
#define Z 128
static const uint8_t PICK_ROW[64] = {
    0, Z, Z, Z, 0, Z, Z, Z, 1, Z, Z, Z, 1, Z, Z, Z, 2, Z, Z, Z, 2, Z, Z, Z, 3, Z, Z, Z, 3, Z, Z, Z,
    4, Z, Z, Z, 4, Z, Z, Z, 5, Z, Z, Z, 5, Z, Z, Z, 6, Z, Z, Z, 6, Z, Z, Z, 7, Z, Z, Z, 7, Z, Z, Z,
};
#undef Z

/* The sums of mins * block sums of the 8 rows for activation block y: one
 * int32 lane per row.  hadd gives the sub-block sums bp[j] as int16, pair
 * p's (bp[2p], bp[2p + 1]) in dwords 0, 1, 4, 5; each is broadcast over 8
 * dwords to meet mins[p][r][0..1]. */
ADIL_INLINE __m256i mins_dot(__m512i m01, __m512i m23, const block_q8_K *y) {
    const __m256i bs = _mm256_loadu_si256((const __m256i *)y->bsums);
    const __m512i bp = _mm512_castsi256_si512(_mm256_hadd_epi16(bs, bs));
    const __m512i b01 =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1), bp);
    const __m512i b23 =
        _mm512_permutexvar_epi32(_mm512_setr_epi32(4, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5, 5, 5, 5), bp);
    const __m512i s = _mm512_dpwssd_epi32(_mm512_madd_epi16(m01, b01), m23, b23);
    return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
}

ADIL_INLINE void r8_core(const adil_tile *t, const int T) {
    const int C = T == 1 ? R8_CHAINS : 1;
    const block_q4_K_r8 *x = (const block_q4_K_r8 *)t->w;
    const __m512i low4 = _mm512_set1_epi8(0x0F);
    const __m512i pick = _mm512_loadu_si512(PICK_ROW);
    __m512 acc[R8_MAX_TOKS];  /* row r: lanes 2r, 2r + 1 */
    __m256 offs[R8_MAX_TOKS]; /* row r: lane r */
    for (int k = 0; k < T; k++) {
        acc[k] = _mm512_setzero_ps();
        offs[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const block_q4_K_r8 *b = x + i;
        __m512i dots[R8_MAX_TOKS][R8_CHAINS];
        for (int k = 0; k < T; k++) {
            for (int c = 0; c < C; c++) dots[k][c] = _mm512_setzero_si512();
        }
        for (int h = 0; h < 4; h++) { /* sub-blocks 2h (low nibbles) and 2h + 1 */
            __m512i sub[R8_MAX_TOKS][2];
            for (int k = 0; k < T; k++) sub[k][0] = sub[k][1] = _mm512_setzero_si512();
            for (int q = 0; q < 4; q++) {
                const __m512i v = _mm512_loadu_si512(b->qs[4 * h + q]);
                const __m512i lo = _mm512_and_si512(v, low4);
                const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(v, 4), low4);
                for (int k = 0; k < T; k++) {
                    const int8_t *a = kq_act(t, k, i)->qs + 64 * h + 8 * q;
                    sub[k][0] = _mm512_dpbusd_epi32(sub[k][0], lo, r8_bcast_u64(a));
                    sub[k][1] = _mm512_dpbusd_epi32(sub[k][1], hi, r8_bcast_u64(a + 32));
                }
            }
            const __m512i sc_lo = _mm512_shuffle_epi8(r8_bcast_u64(b->scales[2 * h]), pick);
            const __m512i sc_hi = _mm512_shuffle_epi8(r8_bcast_u64(b->scales[2 * h + 1]), pick);
            for (int k = 0; k < T; k++) {
                __m512i *d = dots[k];
                d[(2 * h) % C] = _mm512_dpwssd_epi32(d[(2 * h) % C], sub[k][0], sc_lo);
                d[(2 * h + 1) % C] = _mm512_dpwssd_epi32(d[(2 * h + 1) % C], sub[k][1], sc_hi);
            }
        }
        const __m512 d = r8_row_pairs(b->d);
        const __m256 dmin = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)b->dmin));
        const __m512i m01 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)b->mins[0]));
        const __m512i m23 = _mm512_cvtepu8_epi16(_mm256_loadu_si256((const __m256i *)b->mins[2]));
        for (int k = 0; k < T; k++) {
            const block_q8_K *y = kq_act(t, k, i);
            __m512i dot = dots[k][0];
            for (int c = 1; c < C; c++) dot = _mm512_add_epi32(dot, dots[k][c]);
            acc[k] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(d, _mm512_set1_ps(y->d)), acc[k]);
            offs[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(mins_dot(m01, m23, y)),
                                      _mm256_mul_ps(dmin, _mm256_set1_ps(y->d)), offs[k]);
        }
    }
    for (int k = 0; k < T; k++) {
        _mm256_storeu_ps(t->y + (size_t)k * t->y_stride, _mm256_sub_ps(r8_pair_sums(acc[k]), offs[k]));
    }
}

static void r8_toks(const adil_tile *t) { r8_core(t, R8_MAX_TOKS); }
static void r8_one(const adil_tile *t) { r8_core(t, 1); }

/* Rows come in whole groups of 8 (the tile_dot_r8 contract), so the
 * one-row cores are never called. */
static const adil_tile_shapes R8_SHAPES = {ADIL_R8_ROWS, R8_MAX_TOKS, r8_toks, r8_one, r8_toks, r8_one};

void adil_tile_q4_K_r8_avx512(const adil_tile *t) { adil_tile_walk(&R8_SHAPES, t); }
