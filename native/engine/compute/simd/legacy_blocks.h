/*
 * legacy_blocks.h — one block of the dot products of the 32-element weight
 * types Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4 with Q8_0 activations, and Q4_1
 * and Q5_1 with Q8_1 activations: unpacking a weight block, preparing an
 * activation block, and their product, for legacy_cores.h.
 *
 * The weights of a block become 32 bytes of one of two forms:
 *   signed values q (Q8_0 as stored; IQ4_NL and MXFP4 look their 4-bit
 *     codes up in their 16-value int8 table with one pshufb, the table in
 *     both 128-bit lanes: |values| <= 127);
 *   unsigned levels u (Q4_0, Q4_1: the nibble; Q5_0, Q5_1: nibble + 16 *
 *     fifth bit), standing for q = u - o (o = 8 for Q4_0, 16 for Q5_0, 0 for
 *     the offset-free Q4_1 / Q5_1, whose x = d u + m).
 * The AVX2 and AVX-512 builds differ only in how a block's integer dot
 * product is formed (lg_pair_dot):
 *
 *   AVX-512 VNNI: vpdpbusd multiplies unsigned by signed bytes and adds
 *     groups of four into int32 lanes, exactly.  Signed values are made
 *     unsigned by flipping the sign bit (u = q + 128, o = 128), and a block
 *     is sum(u * a) - o * sum(a).  The correction depends on the activation
 *     block only: it is formed once per token block as int32 lanes and is
 *     the starting value of every row's vpdpbusd.
 *   AVX2: maddubs forms int16 pairs, which must not saturate: signed values
 *     move their sign onto the activation (|q| * sign(a, q); |q| <= 128,
 *     |a| <= 127); Q4_0 / Q5_0 subtract the pairs of o * a (formed once per
 *     token block) from those of u * a; Q4_1 / Q5_1 have no offset to
 *     subtract.  madd sums pairs into int32 lanes.
 *
 * The int32 lanes of block b are scaled by d_w * d_a and accumulated in
 * float (lg_pair_step); every loop of legacy_cores.h runs exactly these
 * operations per (row, token) pair.  Q4_1's and Q5_1's x = d u + m adds m
 * times the Q8_1 block's s = d_a * sum(a) (llama.cpp's q8_1 idea: the
 * activation block carries its own sum), as one more FMA into lane 0 only,
 * so the horizontal sum at the end counts it once.  MXFP4's d_w is its
 * halved E8M0 scale (its table holds the E2M1 values doubled).
 */
#ifndef ADIL_LEGACY_BLOCKS_H
#define ADIL_LEGACY_BLOCKS_H

#include "compute/simd/simd_x86.h"

#include <stdbool.h>

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#    define LG_VNNI 1
#else
#    define LG_VNNI 0
#endif

typedef enum { LG_Q8_0, LG_Q4_0, LG_Q5_0, LG_Q4_1, LG_Q5_1, LG_IQ4_NL, LG_MXFP4 } lg_kind;

/* Weights that unpack to signed values (the others to unsigned levels). */
ADIL_INLINE bool lg_signed(lg_kind kind) { return kind == LG_Q8_0 || kind == LG_IQ4_NL || kind == LG_MXFP4; }

/* x = d u + m with Q8_1 activations (the others: x = d q, Q8_0). */
ADIL_INLINE bool lg_has_min(lg_kind kind) { return kind == LG_Q4_1 || kind == LG_Q5_1; }

/* A weight block ready for the dot products, and its scales. */
typedef struct lg_row {
    __m256i u;    /* unsigned levels, VNNI q + 128, or AVX2 |q| (signed kinds) */
    __m256i sign; /* AVX2 signed kinds: q itself, whose signs go onto the activation */
    float d;
    float m; /* Q4_1 / Q5_1: the block's minimum (0 for the others) */
} lg_row;

/* An activation block ready for the dot products. */
typedef struct lg_token {
    __m256i a;
    __m256i fix; /* VNNI: -o * sum(a) lanes; AVX2 Q4_0/Q5_0: o * a pairs */
    __m256 d;
    __m256 s; /* Q4_1 / Q5_1: the Q8_1 block's s in lane 0, zeros elsewhere */
} lg_token;

ADIL_INLINE char lg_offset(lg_kind kind) {
    return lg_signed(kind) ? (char)0x80 : kind == LG_Q4_0 ? 8 : kind == LG_Q5_0 ? 16 : 0;
}

/* Activation block b of a row: Q8_1 blocks for Q4_1 / Q5_1, Q8_0 for the others. */
ADIL_INLINE const int8_t *lg_act_qs(lg_kind kind, const uint8_t *act_row, int64_t b) {
    return lg_has_min(kind) ? ((const block_q8_1 *)act_row)[b].qs : ((const block_q8_0 *)act_row)[b].qs;
}

ADIL_INLINE adil_fp16 lg_act_d(lg_kind kind, const uint8_t *act_row, int64_t b) {
    return lg_has_min(kind) ? ((const block_q8_1 *)act_row)[b].d : ((const block_q8_0 *)act_row)[b].d;
}

/* s = d_a * sum(a) of a Q8_1 block (Q4_1 / Q5_1 only). */
ADIL_INLINE float lg_act_s(const uint8_t *act_row, int64_t b) {
    return simd_fp16(((const block_q8_1 *)act_row)[b].s);
}

/* A float in lane 0, zeros in the others. */
ADIL_INLINE __m256 lg_lane0(float v) { return _mm256_setr_ps(v, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f); }

/* Levels plus 16 where bit j of the 32-bit qh is set, for element j. */
ADIL_INLINE __m256i lg_add_fifth_bits(__m256i levels, uint32_t qh) {
#if LG_VNNI
    return _mm256_mask_add_epi8(levels, (__mmask32)qh, levels, _mm256_set1_epi8(16));
#else
    /* byte j gets byte j / 8 of qh, keeps bit j % 8, becomes 16 if set */
    const __m256i spread =
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0x0000000000000000);
    const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    return _mm256_or_si256(levels, _mm256_and_si256(set, _mm256_set1_epi8(16)));
#endif
}

/* The signed values of a block, read (Q8_0) or looked up (IQ4_NL, MXFP4). */
ADIL_INLINE __m256i lg_signed_values(lg_kind kind, const uint8_t *row, int64_t b, float *d) {
    if (kind == LG_IQ4_NL) {
        const block_iq4_nl *x = (const block_iq4_nl *)row + b;
        *d = simd_fp16(x->d);
        return simd_lookup_32(adil_kvalues_iq4nl, x->qs);
    }
    if (kind == LG_MXFP4) {
        const block_mxfp4 *x = (const block_mxfp4 *)row + b;
        *d = adil_e8m0_half_to_f32(x->e);
        return simd_lookup_32(adil_kvalues_mxfp4, x->qs);
    }
    const block_q8_0 *x = (const block_q8_0 *)row + b;
    *d = simd_fp16(x->d);
    return _mm256_loadu_si256((const __m256i *)x->qs);
}

ADIL_INLINE lg_row lg_row_prep(lg_kind kind, const uint8_t *row, int64_t b) {
    lg_row r;
    r.sign = _mm256_setzero_si256();
    r.m = 0.0f;
    if (lg_signed(kind)) {
        __m256i q = lg_signed_values(kind, row, b, &r.d);
#if LG_VNNI
        r.u = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
#else
        r.u = _mm256_abs_epi8(q);
        r.sign = q;
#endif
    } else if (kind == LG_Q4_0) {
        const block_q4_0 *x = (const block_q4_0 *)row + b;
        r.u = simd_nibbles_32(x->qs);
        r.d = simd_fp16(x->d);
    } else if (kind == LG_Q4_1) {
        const block_q4_1 *x = (const block_q4_1 *)row + b;
        r.u = simd_nibbles_32(x->qs);
        r.d = simd_fp16(x->d);
        r.m = simd_fp16(x->m);
    } else if (kind == LG_Q5_1) {
        const block_q5_1 *x = (const block_q5_1 *)row + b;
        r.u = lg_add_fifth_bits(simd_nibbles_32(x->qs), simd_load_u32(x->qh));
        r.d = simd_fp16(x->d);
        r.m = simd_fp16(x->m);
    } else {
        const block_q5_0 *x = (const block_q5_0 *)row + b;
        r.u = lg_add_fifth_bits(simd_nibbles_32(x->qs), simd_load_u32(x->qh));
        r.d = simd_fp16(x->d);
    }
    return r;
}

/* The activation-side correction of a block (see the file comment). */
ADIL_INLINE __m256i lg_token_fix(lg_kind kind, __m256i a) {
    __m256i offset = _mm256_set1_epi8(lg_offset(kind));
    if (lg_has_min(kind)) {
        return _mm256_setzero_si256(); /* o = 0: nothing to correct */
    }
#if LG_VNNI
    __m256i oa = _mm256_dpbusd_epi32(_mm256_setzero_si256(), offset, a);
    return _mm256_sub_epi32(_mm256_setzero_si256(), oa);
#else
    return lg_signed(kind) ? _mm256_setzero_si256() : _mm256_maddubs_epi16(offset, a);
#endif
}

ADIL_INLINE lg_token lg_token_prep(lg_kind kind, const uint8_t *act_row, int64_t b) {
    lg_token k;
    k.a = _mm256_loadu_si256((const __m256i *)lg_act_qs(kind, act_row, b));
    k.fix = lg_token_fix(kind, k.a);
    k.d = simd_fp16_x8(lg_act_d(kind, act_row, b));
    k.s = lg_has_min(kind) ? lg_lane0(lg_act_s(act_row, b)) : _mm256_setzero_ps();
    return k;
}

/* The block's exact integer dot product, as int32 lanes. */
ADIL_INLINE __m256i lg_pair_dot(lg_kind kind, const lg_row *r, const lg_token *k) {
#if LG_VNNI
    (void)kind;
    return _mm256_dpbusd_epi32(k->fix, r->u, k->a);
#else
    __m256i p = lg_signed(kind)    ? _mm256_maddubs_epi16(r->u, _mm256_sign_epi8(k->a, r->sign))
                : lg_has_min(kind) ? _mm256_maddubs_epi16(r->u, k->a) /* 2 * 31 * 127: no saturation */
                                   : _mm256_sub_epi16(_mm256_maddubs_epi16(r->u, k->a), k->fix);
    return simd_pairs_i32(p);
#endif
}

ADIL_INLINE __m256 lg_pair_step(lg_kind kind, const lg_row *r, const lg_token *k, __m256 acc) {
    __m256 s = _mm256_cvtepi32_ps(lg_pair_dot(kind, r, k));
    acc = _mm256_fmadd_ps(s, _mm256_mul_ps(_mm256_set1_ps(r->d), k->d), acc);
    return lg_has_min(kind) ? _mm256_fmadd_ps(_mm256_set1_ps(r->m), k->s, acc) : acc;
}

/* A weight block kept unpacked for reuse (prefill): 32 bytes and the
 * scales, from which lg_row_unpacked rebuilds the lg_row. */
ADIL_INLINE __m256i lg_row_packed(lg_kind kind, const lg_row *r) {
    return !LG_VNNI && lg_signed(kind) ? r->sign : r->u;
}

ADIL_INLINE lg_row lg_row_unpacked(lg_kind kind, __m256i packed, float d, float m) {
    lg_row r = {packed, _mm256_setzero_si256(), d, m};
    if (!LG_VNNI && lg_signed(kind)) {
        r.u = _mm256_abs_epi8(packed);
        r.sign = packed;
    }
    return r;
}

#endif /* ADIL_LEGACY_BLOCKS_H */
