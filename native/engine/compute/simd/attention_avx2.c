/*
 * attention_avx2.c — the attention tile (attention.h) with 8-lane vectors;
 * the same three passes as attention_avx512.c, with register tiles sized for
 * 16 registers: scores 4 query rows × 2 keys, P·V 4 rows × 16 output dims.
 * Tails use maskload / maskstore and padded tiles.  Keys and values are
 * f32, halves (widened with F16C as they are loaded) or Q8_0 blocks (int8
 * widened, times the block's scale); each pass is compiled once per element
 * type (the `ty` argument is a constant).
 */
#if defined(__x86_64__)
#    include "compute/attention.h"
#    include "compute/simd/always_inline.h"
#    include "compute/simd/attention_prefetch.h"
#    include "compute/simd/vmath_x86.h"
#    include "compute/weight_types.h"

#    include <math.h>
#    include <string.h>

/* Lanes [0, left) as a maskload mask, left clamped to 0 .. 8. */
ADIL_INLINE __m256i lanes(int64_t left) {
    const int l = left >= 8 ? 8 : left <= 0 ? 0 : (int)left;
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(l), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Element `at` of a K/V array of `ty` elements. */
ADIL_INLINE const void *kv_row(const void *base, size_t at, adil_kv_type ty) {
    return adil_kv_at(base, at, ty);
}

/* Elements [i, i + 8) of a row of Q8_0 blocks as floats (i a multiple of
 * 8, so they lie in one block), lanes from `left` on zero (and not read). */
ADIL_INLINE __m256 load8_q8_0(const void *row, int64_t i, int64_t left) {
    if (left <= 0) return _mm256_setzero_ps();
    const block_q8_0 *b = (const block_q8_0 *)row + i / ADIL_KV_Q8_0_BLOCK;
    const int8_t *q = b->qs + i % ADIL_KV_Q8_0_BLOCK;
    int8_t tail[8] = {0};
    if (left < 8) q = memcpy(tail, q, (size_t)left);
    const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q)));
    return _mm256_mul_ps(x, _mm256_set1_ps(_cvtsh_ss(b->d)));
}

/* Elements [i, i + 8) of a K/V row as floats, lanes from `left` on zero
 * (and not read). */
ADIL_INLINE __m256 load8(const void *row, int64_t i, int64_t left, adil_kv_type ty) {
    if (ty == ADIL_KV_Q8_0) return load8_q8_0(row, i, left);
    if (ty == ADIL_KV_F32)
        return left >= 8 ? _mm256_loadu_ps((const float *)row + i)
                         : _mm256_maskload_ps((const float *)row + i, lanes(left));
    const uint16_t *h = (const uint16_t *)row + i;
    if (left >= 8) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    uint16_t tail[8] = {0};
    if (left > 0) memcpy(tail, h, (size_t)left * sizeof *h);
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)tail));
}

/* (low half + high half) of a and of b, side by side. */
ADIL_INLINE __m256 fold_halves(__m256 a, __m256 b) {
    return _mm256_add_ps(_mm256_permute2f128_ps(a, b, 0x20), _mm256_permute2f128_ps(a, b, 0x31));
}

/* Adjacent lanes summed within each 128-bit half, for a and b. */
ADIL_INLINE __m256 fold_pairs(__m256 a, __m256 b) {
    return _mm256_add_ps(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
}

/* The 8 lane sums of acc[2i + j] (i < 4, j < 2), in lane 4j + i.  The same
 * tree for every accumulator (see attention_avx512.c). */
ADIL_INLINE __m256 reduce_4x2(const __m256 acc[8]) {
    __m256 s[4];
    for (int m = 0; m < 4; m++) s[m] = fold_halves(acc[2 * m], acc[2 * m + 1]);
    return fold_pairs(fold_pairs(s[0], s[1]), fold_pairs(s[2], s[3]));
}

/* One 8-element step of dot_4x2 at element d; full: all 8 in range (plain
 * loads), else the lanes from n - d on are zero and not read. */
ADIL_INLINE void dot_4x2_step(__m256 acc[8], const float *const q[4], const void *const k[2], int64_t d,
                              int64_t n, bool full, adil_kv_type ty) {
    const int64_t left = full ? 8 : n - d;
    const __m256 k0 = load8(k[0], d, left, ty), k1 = load8(k[1], d, left, ty);
    for (int i = 0; i < 4; i++) {
        const __m256 qv = full ? _mm256_loadu_ps(q[i] + d) : _mm256_maskload_ps(q[i] + d, lanes(left));
        acc[2 * i] = _mm256_fmadd_ps(qv, k0, acc[2 * i]);
        acc[2 * i + 1] = _mm256_fmadd_ps(qv, k1, acc[2 * i + 1]);
    }
}

/* q[i] · k[j] for 4 rows and 2 keys of n floats, in lane 4j + i: the full
 * steps, then the tail. */
ADIL_INLINE __m256 dot_4x2(const float *const q[4], const void *const k[2], int64_t n, adil_kv_type ty) {
    __m256 acc[8];
    for (int i = 0; i < 8; i++) acc[i] = _mm256_setzero_ps();
    int64_t d = 0;
    for (; d + 8 <= n; d += 8) dot_4x2_step(acc, q, k, d, n, true, ty);
    if (d < n) dot_4x2_step(acc, q, k, d, n, false, ty);
    return reduce_4x2(acc);
}

/* Pass 1: s[r * span + j] = q_r · k(f0 + j) * scale for every row and j < span. */
ADIL_INLINE void scores(const adil_att_tile *t, int64_t f0, int64_t span, float *s, adil_kv_type ty) {
    const int nr = t->n_rows;
    const adil_att_rows rows = adil_att_rows_from(t, f0);
    for (int64_t j0 = 0; j0 < span; j0 += 2) {
        const void *kp[2];
        for (int j = 0; j < 2; j++) { /* a short last block repeats its last key */
            const int64_t jj = j0 + j < span ? j0 + j : span - 1;
            kp[j] = kv_row(t->k, adil_att_row(&rows, f0 + jj) * t->k_stride, ty);
        }
        for (int j = 0; j < 2; j++) att_prefetch_kv(t, &rows, f0, j0 + ADIL_ATT_PREFETCH_AHEAD + j, span, ty);
        for (int r0 = 0; r0 < nr; r0 += 4) {
            const float *qp[4];
            for (int i = 0; i < 4; i++) qp[i] = t->q[r0 + i < nr ? r0 + i : nr - 1];
            float out[8];
            _mm256_storeu_ps(out, _mm256_mul_ps(dot_4x2(qp, kp, t->head_dim, ty), _mm256_set1_ps(t->scale)));
            for (int i = 0; i < 4 && r0 + i < nr; i++)
                for (int j = 0; j < 2 && j0 + j < span; j++) s[(r0 + i) * span + j0 + j] = out[4 * j + i];
        }
    }
}

/* Lanes-wide maximum and sum, in a fixed order. */
ADIL_INLINE float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    return _mm_cvtss_f32(_mm_max_ss(m, _mm_movehdup_ps(m)));
}

ADIL_INLINE float hsum8(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

/* Pass 2: x[0..n) = e^(x - m), m = max(max x, *sink) (into *max_out);
 * returns their sum + e^(*sink - m).  sink NULL: none. */
static float softmax(float *x, int64_t n, const float *sink, float *max_out) {
    __m256 vmax = _mm256_set1_ps(-INFINITY);
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i m = lanes(n - i);
        const __m256 xv =
            _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), _mm256_maskload_ps(x + i, m), _mm256_castsi256_ps(m));
        vmax = _mm256_max_ps(vmax, xv);
    }
    float m = hmax8(vmax);
    if (sink && *sink > m) m = *sink;
    const __m256 mx = _mm256_set1_ps(m);
    __m256 vsum = _mm256_setzero_ps();
    for (int64_t i = 0; i < n; i += 8) {
        const __m256i m = lanes(n - i);
        const __m256 e = _mm256_and_ps(vmath_exp8(_mm256_sub_ps(_mm256_maskload_ps(x + i, m), mx)),
                                       _mm256_castsi256_ps(m));
        _mm256_maskstore_ps(x + i, m, e);
        vsum = _mm256_add_ps(vsum, e);
    }
    *max_out = m;
    return sink ? hsum8(vsum) + expf(*sink - m) : hsum8(vsum);
}

/* Pass 3 for R rows and output dims [d0, d0 + 16), in key order. */
ADIL_INLINE void pv_rows(const adil_att_tile *t, int R, int r0, const float *p, int64_t span, int64_t f0,
                         const adil_att_rows *rows, int64_t d0, const float *inv, adil_kv_type ty) {
    const __m256i m0 = lanes(t->head_dim_v - d0), m1 = lanes(t->head_dim_v - d0 - 8);
    __m256 acc[4][2];
    for (int r = 0; r < R; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
    for (int64_t j = 0; j < span; j++) {
        const void *v = kv_row(t->v, adil_att_row(rows, f0 + j) * t->v_stride, ty);
        const __m256 v0 = load8(v, d0, t->head_dim_v - d0, ty);
        const __m256 v1 = load8(v, d0 + 8, t->head_dim_v - d0 - 8, ty);
        for (int r = 0; r < R; r++) {
            const __m256 w = _mm256_broadcast_ss(p + (r0 + r) * span + j);
            acc[r][0] = _mm256_fmadd_ps(w, v0, acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(w, v1, acc[r][1]);
        }
    }
    for (int r = 0; r < R; r++) {
        const __m256 s = _mm256_set1_ps(inv[r0 + r]);
        _mm256_maskstore_ps(t->o[r0 + r] + d0, m0, _mm256_mul_ps(acc[r][0], s));
        _mm256_maskstore_ps(t->o[r0 + r] + d0 + 8, m1, _mm256_mul_ps(acc[r][1], s));
    }
}

ADIL_INLINE void pv(const adil_att_tile *t, const float *p, int64_t span, int64_t f0, const float *inv,
                    adil_kv_type ty) {
    const adil_att_rows rows = adil_att_rows_from(t, f0);
    for (int64_t d0 = 0; d0 < t->head_dim_v; d0 += 16) {
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

void adil_attend_avx2(const adil_att_tile *t) { attend_tile(t); }
#endif
