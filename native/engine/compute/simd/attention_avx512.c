/*
 * attention_avx512.c — the attention tile (attention.h) with 16-lane
 * vectors.  Three passes over the tile's union of visible positions:
 *  1. scores: register tiles of 4 query rows × 4 keys, 16 accumulators of
 *     16 lanes summed over head_dim, then all 16 dot products reduced at
 *     once (reduce_4x4); each key block is loaded once for all rows;
 *  2. softmax of each row over its own range (vector max, e^x, sum), zeros
 *     outside it;
 *  3. P·V: register tiles of up to 4 rows × 64 output dims, one broadcast
 *     weight per row and key, accumulated in key order.
 * Tails (head_dim not a multiple of 16, fewer than 4 rows or keys) use masked
 * loads and padded tiles, so every element goes through the same code.
 * Keys and values are f32, halves (widened with vcvtph2ps as they are
 * loaded) or Q8_0 blocks (int8 widened, times the block's scale); each pass
 * is compiled once per element type (the `ty` argument is a constant).
 */
#if defined(__x86_64__)
#    include "compute/attention.h"
#    include "compute/simd/always_inline.h"
#    include "compute/simd/attention_prefetch.h"
#    include "compute/simd/vmath_x86.h"
#    include "compute/weight_types.h"

#    include <math.h>
#    include <string.h>

/* Lanes [0, left) of a vector, left clamped to 0 .. 16. */
ADIL_INLINE __mmask16 lanes(int64_t left) {
    return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1u);
}

/* Element `at` of a K/V array of `ty` elements. */
ADIL_INLINE const void *kv_row(const void *base, size_t at, adil_kv_type ty) {
    return adil_kv_at(base, at, ty);
}

/* Elements [i, i + 16) of a K/V row as floats, lanes outside m zero (and
 * not read).  Q8_0: i is a multiple of 16, so they lie in one block. */
ADIL_INLINE __m512 load16(const void *row, int64_t i, __mmask16 m, adil_kv_type ty) {
    if (ty == ADIL_KV_Q8_0) {
        if (!m) return _mm512_setzero_ps();
        const block_q8_0 *b = (const block_q8_0 *)row + i / ADIL_KV_Q8_0_BLOCK;
        const __m128i q = _mm_maskz_loadu_epi8(m, b->qs + i % ADIL_KV_Q8_0_BLOCK);
        return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), _mm512_set1_ps(_cvtsh_ss(b->d)));
    }
    if (ty == ADIL_KV_F16) return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, (const uint16_t *)row + i));
    return _mm512_maskz_loadu_ps(m, (const float *)row + i);
}

/* (a.quarters 0,1 + 2,3) of a and b side by side: the same fold for both. */
ADIL_INLINE __m512 fold_halves(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* (quarter 0 + 1, quarter 2 + 3) of a and of b. */
ADIL_INLINE __m512 fold_quarters(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* Adjacent lanes summed within each 128-bit quarter, for a and b. */
ADIL_INLINE __m512 fold_pairs(__m512 a, __m512 b) {
    return _mm512_add_ps(_mm512_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* The 16 lane sums of acc[4i + j], returned in lane 4i + j.  Each
 * accumulator is summed by the same tree whatever its index (every fold
 * treats its two inputs alike), so a dot product's value does not depend on
 * where in the tile it was computed. */
ADIL_INLINE __m512 reduce_4x4(const __m512 acc[16]) {
    __m512 s[8], w[4];
    for (int m = 0; m < 8; m++) s[m] = fold_halves(acc[2 * m], acc[2 * m + 1]);
    for (int n = 0; n < 4; n++) w[n] = fold_quarters(s[2 * n], s[2 * n + 1]);
    const __m512 z = fold_pairs(fold_pairs(w[0], w[1]), fold_pairs(w[2], w[3]));
    /* z holds the sum of acc[4i + j] in lane 4j + i: transpose */
    const __m512i t = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(t, z);
}

/* One 16-element step of dot_4x4 at element d, lanes outside m not read. */
ADIL_INLINE void dot_4x4_step(__m512 acc[16], const float *const q[4], const void *const k[4], int64_t d,
                              __mmask16 m, adil_kv_type ty) {
    __m512 kv[4];
    for (int j = 0; j < 4; j++) kv[j] = load16(k[j], d, m, ty);
    for (int i = 0; i < 4; i++) {
        const __m512 qv = _mm512_maskz_loadu_ps(m, q[i] + d);
        for (int j = 0; j < 4; j++) acc[4 * i + j] = _mm512_fmadd_ps(qv, kv[j], acc[4 * i + j]);
    }
}

/* q[i] · k[j] for 4 rows and 4 keys of n floats, in lane 4i + j.  Full
 * steps with a constant mask (plain loads, no mask arithmetic per step:
 * ~10% of a tile's time in L2), then the tail. */
ADIL_INLINE __m512 dot_4x4(const float *const q[4], const void *const k[4], int64_t n, adil_kv_type ty) {
    __m512 acc[16];
    for (int i = 0; i < 16; i++) acc[i] = _mm512_setzero_ps();
    int64_t d = 0;
    for (; d + 16 <= n; d += 16) dot_4x4_step(acc, q, k, d, (__mmask16)0xFFFF, ty);
    if (d < n) dot_4x4_step(acc, q, k, d, lanes(n - d), ty);
    return reduce_4x4(acc);
}

/* Lanes [4i, 4i + 4) of v. */
ADIL_INLINE __m128 quarter(__m512 v, int i) {
    switch (i) {
    case 0:
        return _mm512_castps512_ps128(v);
    case 1:
        return _mm512_extractf32x4_ps(v, 1);
    case 2:
        return _mm512_extractf32x4_ps(v, 2);
    default:
        return _mm512_extractf32x4_ps(v, 3);
    }
}

/* Pass 1: s[r * span + j] = q_r · k(f0 + j) * scale for every row and j < span. */
ADIL_INLINE void scores(const adil_att_tile *t, int64_t f0, int64_t span, float *s, adil_kv_type ty) {
    const int nr = t->n_rows;
    const adil_att_rows rows = adil_att_rows_from(t, f0);
    for (int64_t j0 = 0; j0 < span; j0 += 4) {
        const void *kp[4];
        for (int j = 0; j < 4; j++) { /* a short last block repeats its last key */
            const int64_t jj = j0 + j < span ? j0 + j : span - 1;
            kp[j] = kv_row(t->k, adil_att_row(&rows, f0 + jj) * t->k_stride, ty);
        }
        for (int j = 0; j < 4; j++) att_prefetch_kv(t, &rows, f0, j0 + ADIL_ATT_PREFETCH_AHEAD + j, span, ty);
        for (int r0 = 0; r0 < nr; r0 += 4) {
            const float *qp[4];
            for (int i = 0; i < 4; i++) qp[i] = t->q[r0 + i < nr ? r0 + i : nr - 1];
            const __m512 d = _mm512_mul_ps(dot_4x4(qp, kp, t->head_dim, ty), _mm512_set1_ps(t->scale));
            const __mmask8 km = (__mmask8)(lanes(span - j0) & 0xF); /* the block's keys in the span */
            for (int i = 0; i < 4 && r0 + i < nr; i++)
                _mm_mask_storeu_ps(s + (r0 + i) * span + j0, km, quarter(d, i));
        }
    }
}

/* Pass 2: x[0..n) = e^(x - m), m = max(max x, *sink) (into *max_out);
 * returns their sum + e^(*sink - m).  sink NULL: none. */
static float softmax(float *x, int64_t n, const float *sink, float *max_out) {
    __m512 vmax = _mm512_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 16)
        vmax = _mm512_max_ps(vmax, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), lanes(n - i), x + i));
    float m = _mm512_reduce_max_ps(vmax);
    if (sink && *sink > m) m = *sink;
    const __m512 mx = _mm512_set1_ps(m);
    __m512 vsum = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
        const __mmask16 m = lanes(n - i);
        const __m512 e = vmath_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), mx));
        _mm512_mask_storeu_ps(x + i, m, e);
        vsum = _mm512_mask_add_ps(vsum, m, vsum, e);
    }
    const float sum = _mm512_reduce_add_ps(vsum);
    *max_out = m;
    return sink ? sum + expf(*sink - m) : sum;
}

/* Pass 3 for R rows (p: their weights, span apart) and output dims
 * [d0, d0 + 64): o = (Σ_j p[j] v(f0 + j)) * inv, summed in key order. */
ADIL_INLINE void pv_rows(const adil_att_tile *t, int R, int r0, const float *p, int64_t span, int64_t f0,
                         const adil_att_rows *rows, int64_t d0, const float *inv, adil_kv_type ty) {
    __mmask16 dm[4];
    for (int c = 0; c < 4; c++) dm[c] = lanes(t->head_dim_v - d0 - 16 * c);
    __m512 acc[4][4];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 4; c++) acc[r][c] = _mm512_setzero_ps();
    for (int64_t j = 0; j < span; j++) {
        const void *v = kv_row(t->v, adil_att_row(rows, f0 + j) * t->v_stride, ty);
        __m512 vv[4];
        for (int c = 0; c < 4; c++) vv[c] = load16(v, d0 + 16 * c, dm[c], ty);
        for (int r = 0; r < R; r++) {
            const __m512 w = _mm512_set1_ps(p[(r0 + r) * span + j]);
            for (int c = 0; c < 4; c++) acc[r][c] = _mm512_fmadd_ps(w, vv[c], acc[r][c]);
        }
    }
    for (int r = 0; r < R; r++)
        for (int c = 0; c < 4; c++)
            _mm512_mask_storeu_ps(t->o[r0 + r] + d0 + 16 * c, dm[c],
                                  _mm512_mul_ps(acc[r][c], _mm512_set1_ps(inv[r0 + r])));
}

ADIL_INLINE void pv(const adil_att_tile *t, const float *p, int64_t span, int64_t f0, const float *inv,
                    adil_kv_type ty) {
    const adil_att_rows rows = adil_att_rows_from(t, f0);
    for (int64_t d0 = 0; d0 < t->head_dim_v; d0 += 64) {
        for (int r0 = 0; r0 < t->n_rows; r0 += 4) {
            switch (t->n_rows - r0) {
            case 1:
                pv_rows(t, 1, r0, p, span, f0, &rows, d0, inv, ty);
                break;
            case 2:
                pv_rows(t, 2, r0, p, span, f0, &rows, d0, inv, ty);
                break;
            case 3:
                pv_rows(t, 3, r0, p, span, f0, &rows, d0, inv, ty);
                break;
            default:
                pv_rows(t, 4, r0, p, span, f0, &rows, d0, inv, ty);
                break;
            }
        }
    }
}

#    include "compute/simd/attention_level.h"

void adil_attend_avx512(const adil_att_tile *t) { attend_tile(t); }
#endif
