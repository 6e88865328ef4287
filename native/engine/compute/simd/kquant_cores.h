/*
 * kquant_cores.h — the dot-product cores of the K-quants Q4_K, Q5_K and
 * Q6_K with Q8_K activations, included through kquant_level.h by
 * kquant_avx2.c and kquant_avx512.c; the only difference between the two is how an int16
 * product is accumulated (madd + add, or the fused AVX-512 VNNI vpdpwssd)
 * and how the fifth bits of Q5_K are set (shifts, or a byte mask).
 *
 * Within a super-block everything stays in integers, as in the scalar
 * reference: maddubs multiplies the unsigned levels by the activation bytes
 * into int16 pairs (at most 63 * 128 * 2, no saturation), those are
 * multiplied by the sub-block's integer scale and summed into int32 lanes.
 * The float scales are applied once per super-block.  Offsets are taken out
 * with the activations' block sums (bsums):
 *   Q4_K / Q5_K: x = d * sc * u - dmin * m  ->  d * sum(sc * u * a)
 *                - dmin * sum(m * bsum), per 32-element sub-block;
 *   Q6_K:        q = u - 32  ->  sum(sc * u * a) - 32 * sum(sc * bsum).
 * Unpacking a super-block is the costly part, so a core keeps one weight row
 * and reuses the unpacked levels for up to KQ_MAX_TOKS tokens.
 */
#ifndef ADIL_KQUANT_CORES_H
#define ADIL_KQUANT_CORES_H

#include "compute/simd/kscales.h"
#include "compute/simd/simd_x86.h"

#define KQ_MAX_TOKS 4
/* Independent int32 accumulators within a super-block, so that with one
 * token (decode) the multiply-adds do not wait on each other's latency;
 * several tokens are independent already.  Integer sums are exact in any
 * order, so this changes no result. */
#define KQ_CHAINS        4
#define KQ_CHAINS_FOR(T) ((T) == 1 ? KQ_CHAINS : 1)

ADIL_INLINE const block_q8_K *kq_act(const adil_tile *t, int k, int64_t i) {
    return (const block_q8_K *)(t->act + (size_t)k * t->act_stride) + i;
}

/* acc + the int16 pairs of p times sc, summed in pairs into int32 lanes. */
ADIL_INLINE __m256i kq_dot_acc(__m256i acc, __m256i p, __m256i sc) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(acc, p, sc);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(p, sc));
#endif
}

ADIL_INLINE __m256i kq_sum_chains(const __m256i chains[KQ_CHAINS], const int C) {
    __m256i s = chains[0];
    for (int c = 1; c < C; c++) {
        s = _mm256_add_epi32(s, chains[c]);
    }
    return s;
}

/* int16 lane j of each 128-bit half of `v`, in all 16 lanes. */
ADIL_INLINE __m256i kq_broadcast_i16(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)((2 * j + 1) << 8 | 2 * j)));
}

/* ---- Q4_K and Q5_K -------------------------------------------------------- */

/* Levels plus the fifth bits of sub-block j (bit j of each qh byte) as 16. */
ADIL_INLINE __m256i kq_add_fifth_bits(__m256i levels, __m256i qh, int j) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    __mmask32 set = _mm256_test_epi8_mask(qh, _mm256_set1_epi8((char)(1 << j)));
    return _mm256_mask_add_epi8(levels, set, levels, _mm256_set1_epi8(16));
#else
    __m256i bit = _mm256_and_si256(_mm256_srli_epi16(qh, j), _mm256_set1_epi8(1));
    return _mm256_or_si256(levels, _mm256_slli_epi16(bit, 4));
#endif
}

/* The 8 scales as int16 in both 128-bit halves, and the 8 mins each
 * repeated twice (to meet the 16 bsums of the activations). */
ADIL_INLINE void kq_scales_mins(const uint8_t packed[12], __m256i *scales, __m256i *mins) {
    uint8_t sc[8], m[8];
    adil_kscales_unpack(packed, sc, m);
    *scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)sc)));
    __m128i m16 = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)m));
    *mins = _mm256_set_m128i(_mm_unpackhi_epi16(m16, m16), _mm_unpacklo_epi16(m16, m16));
}

ADIL_INLINE void kq_k4_core(const adil_tile *t, bool five_bits, const int T) {
    const int C = KQ_CHAINS_FOR(T);
    const size_t block_size = five_bits ? sizeof(block_q5_K) : sizeof(block_q4_K);
    const __m256i low4 = _mm256_set1_epi8(0x0F);
    __m256 acc[KQ_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        acc[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        /* Q5_K is Q4_K's layout with qh inserted before qs. */
        const block_q4_K *x = (const block_q4_K *)(t->w + (size_t)i * block_size);
        const block_q5_K *x5 = (const block_q5_K *)x;
        const uint8_t *qs = five_bits ? x5->qs : x->qs;
        __m256i qh = five_bits ? _mm256_loadu_si256((const __m256i *)x5->qh) : _mm256_setzero_si256();
        __m256i scales, mins;
        kq_scales_mins(x->scales, &scales, &mins);
        __m256i dots[KQ_MAX_TOKS][KQ_CHAINS];
        for (int k = 0; k < T; k++) {
            for (int c = 0; c < C; c++) {
                dots[k][c] = _mm256_setzero_si256();
            }
        }
        for (int h = 0; h < 4; h++) { /* 64 elements: sub-blocks 2h (low nibbles), 2h + 1 */
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            __m256i lo = _mm256_and_si256(v, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
            if (five_bits) {
                lo = kq_add_fifth_bits(lo, qh, 2 * h);
                hi = kq_add_fifth_bits(hi, qh, 2 * h + 1);
            }
            __m256i sc_lo = kq_broadcast_i16(scales, 2 * h);
            __m256i sc_hi = kq_broadcast_i16(scales, 2 * h + 1);
            for (int k = 0; k < T; k++) {
                const int8_t *a = kq_act(t, k, i)->qs + 64 * h;
                __m256i a_lo = _mm256_loadu_si256((const __m256i *)a);
                __m256i a_hi = _mm256_loadu_si256((const __m256i *)(a + 32));
                __m256i *d = dots[k];
                d[2 * h % C] = kq_dot_acc(d[2 * h % C], _mm256_maddubs_epi16(lo, a_lo), sc_lo);
                d[(2 * h + 1) % C] = kq_dot_acc(d[(2 * h + 1) % C], _mm256_maddubs_epi16(hi, a_hi), sc_hi);
            }
        }
        float d = simd_fp16(x->d), dmin = simd_fp16(x->dmin);
        for (int k = 0; k < T; k++) {
            const block_q8_K *y = kq_act(t, k, i);
            __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
            __m256 msum = _mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, mins));
            __m256i dot = kq_sum_chains(dots[k], C);
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * y->d), acc[k]);
            acc[k] = _mm256_fnmadd_ps(msum, _mm256_set1_ps(dmin * y->d), acc[k]);
        }
    }
    for (int k = 0; k < T; k++) {
        t->y[(size_t)k * t->y_stride] = simd_hsum_ps(acc[k]);
    }
}

/* ---- Q6_K ------------------------------------------------------------------- */

/* Levels 0..63 of the 32-element chunk c (0..3) of a 128-element half:
 * low 4 bits from the low (c < 2) or high nibbles of ql[32 * (c % 2) ..],
 * high 2 bits from bits 2c, 2c + 1 of qh. */
ADIL_INLINE __m256i kq_q6_levels(__m256i ql0, __m256i ql1, __m256i qh, int c) {
    __m256i ql = c % 2 == 0 ? ql0 : ql1;
    __m256i low = _mm256_and_si256(c < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0F));
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * c), _mm256_set1_epi8(3));
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
}

/* int16 scales of chunk `chunk` (0..7): scales[2 chunk] in the low 8
 * lanes, scales[2 chunk + 1] in the high 8. */
ADIL_INLINE __m256i kq_q6_chunk_scales(__m128i scales, int chunk) {
    __m128i pick = _mm_set_epi64x(0x0101010101010101 * (2 * chunk + 1), 0x0101010101010101 * (2 * chunk));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
}

ADIL_INLINE void kq_q6_K_core(const adil_tile *t, const int T) {
    const int C = KQ_CHAINS_FOR(T);
    __m256 acc[KQ_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        acc[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const block_q6_K *x = (const block_q6_K *)t->w + i;
        __m128i scales = _mm_loadu_si128((const __m128i *)x->scales);
        __m256i dots[KQ_MAX_TOKS][KQ_CHAINS];
        for (int k = 0; k < T; k++) {
            for (int c = 0; c < C; c++) {
                dots[k][c] = _mm256_setzero_si256();
            }
        }
        for (int half = 0; half < 2; half++) {
            __m256i ql0 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * half));
            __m256i ql1 = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * half + 32));
            __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * half));
            for (int c = 0; c < 4; c++) {
                int chunk = 4 * half + c;
                __m256i u = kq_q6_levels(ql0, ql1, qh, c);
                __m256i sc = kq_q6_chunk_scales(scales, chunk);
                for (int k = 0; k < T; k++) {
                    const int8_t *a = kq_act(t, k, i)->qs + 32 * chunk;
                    __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a));
                    dots[k][c % C] = kq_dot_acc(dots[k][c % C], p, sc);
                }
            }
        }
        __m256i sc16 = _mm256_cvtepi8_epi16(scales);
        float d = simd_fp16(x->d);
        for (int k = 0; k < T; k++) {
            const block_q8_K *y = kq_act(t, k, i);
            __m256i bs = _mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)y->bsums), sc16);
            __m256i dot = _mm256_sub_epi32(kq_sum_chains(dots[k], C), _mm256_slli_epi32(bs, 5));
            acc[k] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * y->d), acc[k]);
        }
    }
    for (int k = 0; k < T; k++) {
        t->y[(size_t)k * t->y_stride] = simd_hsum_ps(acc[k]);
    }
}

#endif /* ADIL_KQUANT_CORES_H */
