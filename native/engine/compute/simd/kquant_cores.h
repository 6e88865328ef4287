/*
 * kquant_cores.h — the dot-product cores of the K-quants Q2_K, Q3_K, Q4_K,
 * Q5_K and Q6_K and of IQ4_XS with Q8_K activations, included through
 * kquant_level.h by
 * kquant_avx2.c and kquant_avx512.c; the only difference between the two is
 * how an int16 product is accumulated (madd + add, or the fused AVX-512 VNNI
 * vpdpwssd) and how single high bits (Q3_K, Q5_K) are set (shifts, or a byte
 * mask).
 *
 * Within a super-block everything stays in integers, as in the scalar
 * reference: maddubs multiplies the unsigned levels by the activation bytes
 * into int16 pairs (at most 63 * 128 * 2, no saturation), those are
 * multiplied by the sub-block's integer scale and summed into int32 lanes.
 * The float scales are applied once per super-block.  Offsets are taken out
 * with the activations' block sums (bsums):
 *   Q4_K / Q5_K: x = d * sc * u - dmin * m  ->  d * sum(sc * u * a)
 *                - dmin * sum(m * bsum), per 32-element sub-block;
 *   Q2_K:        the same per 16-element sub-block;
 *   Q3_K / Q6_K: q = u - 4 / u - 32  ->  sum(sc * u * a) - 4 (32) * sum(sc * bsum);
 *   IQ4_XS:      signed table values q, no offset: maddubs takes |q| and
 *                moves the sign onto the activation (|q| <= 127, a >= -127
 *                as the Q8_K quantizer writes it, so the negation is exact).
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

ADIL_INLINE void kq_zero_dots(__m256i dots[KQ_MAX_TOKS][KQ_CHAINS], const int T, const int C) {
    for (int k = 0; k < T; k++) {
        for (int c = 0; c < C; c++) {
            dots[k][c] = _mm256_setzero_si256();
        }
    }
}

/* Each token's result: the sum of its float lanes. */
ADIL_INLINE void kq_store(const adil_tile *t, const __m256 acc[KQ_MAX_TOKS], const int T) {
    for (int k = 0; k < T; k++) {
        t->y[(size_t)k * t->y_stride] = simd_hsum_ps(acc[k]);
    }
}

/* int16 lane j of each 128-bit half of `v`, in all 16 lanes. */
ADIL_INLINE __m256i kq_broadcast_i16(__m256i v, int j) {
    return _mm256_shuffle_epi8(v, _mm256_set1_epi16((short)((2 * j + 1) << 8 | 2 * j)));
}

/* levels + 2^shift where bit j of the byte of `bits` is set (those bits of
 * levels are clear): the fifth bits of Q5_K (shift 4), the third of Q3_K
 * (shift 2). */
ADIL_INLINE __m256i kq_add_high_bit(__m256i levels, __m256i bits, int j, int shift) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    __mmask32 set = _mm256_test_epi8_mask(bits, _mm256_set1_epi8((char)(1 << j)));
    return _mm256_mask_add_epi8(levels, set, levels, _mm256_set1_epi8((char)(1 << shift)));
#else
    __m256i bit = _mm256_and_si256(_mm256_srli_epi16(bits, j), _mm256_set1_epi8(1));
    return _mm256_or_si256(levels, _mm256_slli_epi16(bit, shift));
#endif
}

/* ---- Q4_K and Q5_K -------------------------------------------------------- */

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
        kq_zero_dots(dots, T, C);
        for (int h = 0; h < 4; h++) { /* 64 elements: sub-blocks 2h (low nibbles), 2h + 1 */
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * h));
            __m256i lo = _mm256_and_si256(v, low4);
            __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), low4);
            if (five_bits) {
                lo = kq_add_high_bit(lo, qh, 2 * h, 4);
                hi = kq_add_high_bit(hi, qh, 2 * h + 1, 4);
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
    kq_store(t, acc, T);
}

/* ---- Q2_K, Q3_K and Q6_K: 16 sub-blocks of 16 -------------------------------- */

/* The three share a shape: unsigned levels u per 32-element chunk c (0..7,
 * sub-blocks 2c and 2c + 1), one scale per sub-block, and an offset taken
 * out with the activations' block sums:
 *   Q2_K  x = d * sc * u - dmin * m   u 0..3,  sc and m 4-bit
 *   Q3_K  x = d * sc * (u - 4)        u 0..7,  sc 6-bit minus 32
 *   Q6_K  x = d * sc * (u - 32)       u 0..63, sc int8
 * Chunk c covers elements 32c .. 32c + 31: in Q2_K/Q3_K the 2-bit field
 * c % 4 of qs[32 (c / 4) ..], in Q3_K plus bit c of hmask as the third bit;
 * in Q6_K see kq_q6_levels. */
typedef enum { KQ_Q2_K, KQ_Q3_K, KQ_Q6_K } kq_sub16;

ADIL_INLINE size_t kq_sub16_bytes(kq_sub16 kind) {
    return kind == KQ_Q2_K ? sizeof(block_q2_K) : kind == KQ_Q3_K ? sizeof(block_q3_K) : sizeof(block_q6_K);
}

/* Q6_K chunk c: low 4 bits from the low (c % 4 < 2) or high nibbles of
 * ql[64 (c / 4) + 32 (c % 2) ..], high 2 bits from bits 2 (c % 4), + 1 of
 * qh[32 (c / 4) ..]. */
ADIL_INLINE __m256i kq_q6_levels(const block_q6_K *x, int c) {
    const int half = c / 4, j = c % 4;
    __m256i ql = _mm256_loadu_si256((const __m256i *)(x->ql + 64 * half + 32 * (j % 2)));
    __m256i qh = _mm256_loadu_si256((const __m256i *)(x->qh + 32 * half));
    __m256i low = _mm256_and_si256(j < 2 ? ql : _mm256_srli_epi16(ql, 4), _mm256_set1_epi8(0x0F));
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), _mm256_set1_epi8(3));
    return _mm256_or_si256(low, _mm256_slli_epi16(high, 4));
}

/* The levels u of chunk c (0..7) of the super-block at x. */
ADIL_INLINE __m256i kq_sub16_levels(kq_sub16 kind, const uint8_t *x, int c) {
    if (kind == KQ_Q6_K) {
        return kq_q6_levels((const block_q6_K *)x, c);
    }
    const block_q2_K *x2 = (const block_q2_K *)x;
    const block_q3_K *x3 = (const block_q3_K *)x;
    const uint8_t *qs = kind == KQ_Q2_K ? x2->qs : x3->qs;
    __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * (c / 4)));
    __m256i low = _mm256_and_si256(_mm256_srli_epi16(v, 2 * (c % 4)), _mm256_set1_epi8(3));
    if (kind == KQ_Q2_K) {
        return low;
    }
    return kq_add_high_bit(low, _mm256_loadu_si256((const __m256i *)x3->hmask), c, 2);
}

/* Q3_K's 16 scales (6-bit, minus 32) as int8.  With u0, u1, u2 the three
 * little-endian 32-bit words of the 12 bytes: low 4 bits of scales 0..7 the
 * low nibbles of u0, u1's bytes, of scales 8..15 their high nibbles; high 2
 * bits of scales 4i .. 4i + 3 bits 2i, 2i + 1 of u2's bytes. */
ADIL_INLINE __m128i kq_q3_scales(const uint8_t packed[12]) {
    const __m128i low4 = _mm_set1_epi8(0x0F);
    __m128i u01 = _mm_loadl_epi64((const __m128i *)packed);
    __m128i low = _mm_unpacklo_epi64(_mm_and_si128(u01, low4), _mm_and_si128(_mm_srli_epi16(u01, 4), low4));
    __m128i u2 = _mm_set1_epi32((int)simd_load_u32(packed + 8));
    __m128i high = _mm_and_si128(_mm_srlv_epi32(u2, _mm_setr_epi32(0, 2, 4, 6)), _mm_set1_epi8(3));
    __m128i sc = _mm_or_si128(low, _mm_slli_epi16(high, 4));
    return _mm_sub_epi8(sc, _mm_set1_epi8(32));
}

/* The 16 sub-block scales as int8 (Q2_K: the low nibbles). */
ADIL_INLINE __m128i kq_sub16_scales(kq_sub16 kind, const uint8_t *x) {
    if (kind == KQ_Q6_K) {
        return _mm_loadu_si128((const __m128i *)((const block_q6_K *)x)->scales);
    }
    if (kind == KQ_Q2_K) {
        __m128i packed = _mm_loadu_si128((const __m128i *)((const block_q2_K *)x)->scales);
        return _mm_and_si128(packed, _mm_set1_epi8(0x0F));
    }
    return kq_q3_scales(((const block_q3_K *)x)->scales);
}

/* int16 scales of chunk c (0..7): scales[2c] in the low 8 lanes,
 * scales[2c + 1] in the high 8. */
ADIL_INLINE __m256i kq_chunk_scales(__m128i scales, int c) {
    __m128i pick = _mm_set_epi64x(0x0101010101010101 * (2 * c + 1), 0x0101010101010101 * (2 * c));
    return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(scales, pick));
}

/* acc + one token's super-block: the integer dot sum(sc * u * a) with the
 * offset taken out, times the float scales. */
ADIL_INLINE __m256 kq_sub16_finish(kq_sub16 kind, const uint8_t *x, __m128i scales, __m256i dot,
                                   const block_q8_K *y, __m256 acc) {
    __m256i bsums = _mm256_loadu_si256((const __m256i *)y->bsums);
    if (kind == KQ_Q2_K) {
        const block_q2_K *x2 = (const block_q2_K *)x;
        __m128i packed = _mm_loadu_si128((const __m128i *)x2->scales);
        __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(0x0F)));
        __m256 msum = _mm256_cvtepi32_ps(_mm256_madd_epi16(bsums, mins));
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(simd_fp16(x2->d) * y->d), acc);
        return _mm256_fnmadd_ps(msum, _mm256_set1_ps(simd_fp16(x2->dmin) * y->d), acc);
    }
    __m256i bs = _mm256_madd_epi16(bsums, _mm256_cvtepi8_epi16(scales));
    dot = _mm256_sub_epi32(dot, _mm256_slli_epi32(bs, kind == KQ_Q3_K ? 2 : 5));
    float d = simd_fp16(kind == KQ_Q3_K ? ((const block_q3_K *)x)->d : ((const block_q6_K *)x)->d);
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(dot), _mm256_set1_ps(d * y->d), acc);
}

ADIL_INLINE void kq_sub16_core(const adil_tile *t, kq_sub16 kind, const int T) {
    const int C = KQ_CHAINS_FOR(T);
    __m256 acc[KQ_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        acc[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const uint8_t *x = t->w + (size_t)i * kq_sub16_bytes(kind);
        __m128i scales = kq_sub16_scales(kind, x);
        __m256i dots[KQ_MAX_TOKS][KQ_CHAINS];
        kq_zero_dots(dots, T, C);
        for (int c = 0; c < 8; c++) {
            __m256i u = kq_sub16_levels(kind, x, c);
            __m256i sc = kq_chunk_scales(scales, c);
            for (int k = 0; k < T; k++) {
                const int8_t *a = kq_act(t, k, i)->qs + 32 * c;
                __m256i p = _mm256_maddubs_epi16(u, _mm256_loadu_si256((const __m256i *)a));
                dots[k][c % C] = kq_dot_acc(dots[k][c % C], p, sc);
            }
        }
        for (int k = 0; k < T; k++) {
            acc[k] = kq_sub16_finish(kind, x, scales, kq_sum_chains(dots[k], C), kq_act(t, k, i), acc[k]);
        }
    }
    kq_store(t, acc, T);
}

/* ---- IQ4_XS --------------------------------------------------------------------- */

/* The 8 sub-block scales ls - 32 as int16 in both 128-bit halves. */
ADIL_INLINE __m256i kq_iq4_xs_scales(const block_iq4_xs *x) {
    __m128i ls = _mm_cvtsi64_si128((long long)adil_kscales_iq4_xs(x->scales_h, x->scales_l));
    __m128i sc = _mm_sub_epi16(_mm_cvtepu8_epi16(ls), _mm_set1_epi16(32));
    return _mm256_broadcastsi128_si256(sc);
}

ADIL_INLINE void kq_iq4_xs_core(const adil_tile *t, const int T) {
    const int C = KQ_CHAINS_FOR(T);
    __m256 acc[KQ_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        acc[k] = _mm256_setzero_ps();
    }
    for (int64_t i = 0; i < t->n / ADIL_QK_K; i++) {
        const block_iq4_xs *x = (const block_iq4_xs *)t->w + i;
        __m256i scales = kq_iq4_xs_scales(x);
        __m256i dots[KQ_MAX_TOKS][KQ_CHAINS];
        kq_zero_dots(dots, T, C);
        for (int j = 0; j < 8; j++) { /* sub-block j: elements 32j .. 32j + 31 */
            __m256i q = simd_lookup_32(adil_kvalues_iq4nl, x->qs + 16 * j);
            __m256i mag = _mm256_sign_epi8(q, q);
            __m256i sc = kq_broadcast_i16(scales, j);
            for (int k = 0; k < T; k++) {
                __m256i a = _mm256_loadu_si256((const __m256i *)(kq_act(t, k, i)->qs + 32 * j));
                __m256i p = _mm256_maddubs_epi16(mag, _mm256_sign_epi8(a, q));
                dots[k][j % C] = kq_dot_acc(dots[k][j % C], p, sc);
            }
        }
        float d = simd_fp16(x->d);
        for (int k = 0; k < T; k++) {
            __m256 dot = _mm256_cvtepi32_ps(kq_sum_chains(dots[k], C));
            acc[k] = _mm256_fmadd_ps(dot, _mm256_set1_ps(d * kq_act(t, k, i)->d), acc[k]);
        }
    }
    kq_store(t, acc, T);
}

#endif /* ADIL_KQUANT_CORES_H */
