/*
 * legacy_cores.h — the dot-product cores of the 32-element weight types
 * Q8_0, Q4_0 and Q5_0 with Q8_0 activations, included by legacy_avx2.c and
 * legacy_avx512.c.  The two differ only in how a block's integer dot
 * product is formed (lg_pair_dot):
 *
 *   AVX-512 VNNI: vpdpbusd multiplies unsigned by signed bytes and adds
 *     groups of four into int32 lanes, exactly.  Weight levels are made
 *     unsigned, u = q + o (Q8_0: flip the sign bit, o = 128; Q4_0: the
 *     nibble, o = 8; Q5_0: nibble + 16 * fifth bit, o = 16), and a block is
 *     sum(u * a) - o * sum(a).  The correction depends on the activation
 *     block only: it is formed once per token block as int32 lanes and is
 *     the starting value of every row's vpdpbusd.
 *   AVX2: maddubs forms int16 pairs, which must not saturate: Q8_0 moves the
 *     weight's sign onto the activation (|w| * sign(a, w); |w| <= 128,
 *     |a| <= 127); Q4_0 / Q5_0 subtract the pairs of o * a (formed once per
 *     token block) from those of u * a.  madd sums pairs into int32 lanes.
 *
 * The int32 lanes of block b are scaled by d_w * d_a and accumulated in
 * float into chain b % LG_CHAINS of the (row, token) pair; two chains halve
 * the dependency on the FMA latency.  Every core and the decode GEMV run
 * exactly these operations per pair, so results never depend on the tile
 * shape (matmul equals vec_dot bit for bit).
 */
#ifndef ADIL_LEGACY_CORES_H
#define ADIL_LEGACY_CORES_H

#include "compute/simd/simd_x86.h"
#include "compute/simd/tile_walk.h"

#if defined(__AVX512VNNI__) && defined(__AVX512VL__) && defined(__AVX512BW__)
#define LG_VNNI 1
#define LG_MAX_ROWS 4 /* 32 registers: 4 x 2 pairs x 2 chains of accumulators */
#else
#define LG_VNNI 0
#define LG_MAX_ROWS 2 /* 16 registers */
#endif
#define LG_MAX_TOKS 2
#define LG_CHAINS 2 /* the loops below are written out for two */
#define LG_GEMV_MAX_BLOCKS 512 /* prepared activation blocks on the stack */

typedef enum { LG_Q8_0, LG_Q4_0, LG_Q5_0 } lg_kind;

/* A weight block ready for the dot products, and its scale. */
typedef struct lg_row {
    __m256i u;     /* levels: unsigned (Q4_0, Q5_0, VNNI Q8_0) or |q| (AVX2 Q8_0) */
    __m256i sign;  /* AVX2 Q8_0: q itself, whose signs go onto the activation */
    __m256 d;
} lg_row;

/* An activation block ready for the dot products. */
typedef struct lg_token {
    __m256i a;
    __m256i fix;   /* VNNI: -o * sum(a) lanes; AVX2 Q4_0/Q5_0: o * a pairs */
    __m256 d;
} lg_token;

ADIL_INLINE char lg_offset(lg_kind kind) {
    return kind == LG_Q8_0 ? (char)0x80 : kind == LG_Q4_0 ? 8 : 16;
}

/* Levels plus 16 where bit j of the 32-bit qh is set, for element j. */
ADIL_INLINE __m256i lg_add_fifth_bits(__m256i levels, uint32_t qh) {
#if LG_VNNI
    return _mm256_mask_add_epi8(levels, (__mmask32)qh, levels, _mm256_set1_epi8(16));
#else
    /* byte j gets byte j / 8 of qh, keeps bit j % 8, becomes 16 if set */
    const __m256i spread = _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202,
                                             0x0101010101010101, 0x0000000000000000);
    const __m256i bit = _mm256_set1_epi64x((int64_t)0x8040201008040201);
    __m256i bytes = _mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), spread);
    __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bit), bit);
    return _mm256_or_si256(levels, _mm256_and_si256(set, _mm256_set1_epi8(16)));
#endif
}

ADIL_INLINE lg_row lg_row_prep(lg_kind kind, const uint8_t *row, int64_t b) {
    lg_row r;
    r.sign = _mm256_setzero_si256();
    if (kind == LG_Q8_0) {
        const block_q8_0 *x = (const block_q8_0 *)row + b;
        __m256i q = _mm256_loadu_si256((const __m256i *)x->qs);
        r.d = simd_fp16_x8(x->d);
#if LG_VNNI
        r.u = _mm256_xor_si256(q, _mm256_set1_epi8((char)0x80));
#else
        r.u = _mm256_abs_epi8(q);
        r.sign = q;
#endif
    } else if (kind == LG_Q4_0) {
        const block_q4_0 *x = (const block_q4_0 *)row + b;
        r.u = simd_nibbles_32(x->qs);
        r.d = simd_fp16_x8(x->d);
    } else {
        const block_q5_0 *x = (const block_q5_0 *)row + b;
        r.u = lg_add_fifth_bits(simd_nibbles_32(x->qs), simd_load_u32(x->qh));
        r.d = simd_fp16_x8(x->d);
    }
    return r;
}

/* The activation-side correction of a block (see the file comment). */
ADIL_INLINE __m256i lg_token_fix(lg_kind kind, __m256i a) {
    __m256i offset = _mm256_set1_epi8(lg_offset(kind));
#if LG_VNNI
    __m256i oa = _mm256_dpbusd_epi32(_mm256_setzero_si256(), offset, a);
    return _mm256_sub_epi32(_mm256_setzero_si256(), oa);
#else
    return kind == LG_Q8_0 ? _mm256_setzero_si256() : _mm256_maddubs_epi16(offset, a);
#endif
}

ADIL_INLINE lg_token lg_token_prep(lg_kind kind, const uint8_t *act_row, int64_t b) {
    const block_q8_0 *y = (const block_q8_0 *)act_row + b;
    lg_token k;
    k.a = _mm256_loadu_si256((const __m256i *)y->qs);
    k.fix = lg_token_fix(kind, k.a);
    k.d = simd_fp16_x8(y->d);
    return k;
}

/* The block's exact integer dot product, as int32 lanes. */
ADIL_INLINE __m256i lg_pair_dot(lg_kind kind, const lg_row *r, const lg_token *k) {
#if LG_VNNI
    (void)kind;
    return _mm256_dpbusd_epi32(k->fix, r->u, k->a);
#else
    __m256i p = kind == LG_Q8_0
                    ? _mm256_maddubs_epi16(r->u, _mm256_sign_epi8(k->a, r->sign))
                    : _mm256_sub_epi16(_mm256_maddubs_epi16(r->u, k->a), k->fix);
    return simd_pairs_i32(p);
#endif
}

ADIL_INLINE __m256 lg_pair_step(lg_kind kind, const lg_row *r, const lg_token *k, __m256 acc) {
    __m256 s = _mm256_cvtepi32_ps(lg_pair_dot(kind, r, k));
    return _mm256_fmadd_ps(s, _mm256_mul_ps(r->d, k->d), acc);
}

_Static_assert(LG_CHAINS == 2, "the loops are written out for two chains");

ADIL_INLINE float lg_finish(const __m256 chains[LG_CHAINS]) {
    return simd_hsum_ps(_mm256_add_ps(chains[0], chains[1]));
}

/* Block b of an R x T tile into chain c of every pair. */
ADIL_INLINE void lg_core_block(const adil_tile *t, lg_kind kind, const int R, const int T,
                               int64_t b, int c, __m256 acc[LG_MAX_ROWS][LG_MAX_TOKS][LG_CHAINS]) {
    lg_token tok[LG_MAX_TOKS];
    for (int k = 0; k < T; k++) {
        tok[k] = lg_token_prep(kind, t->act + (size_t)k * t->act_stride, b);
    }
    for (int r = 0; r < R; r++) {
        lg_row row = lg_row_prep(kind, t->w + (size_t)r * t->w_stride, b);
        for (int k = 0; k < T; k++) {
            acc[r][k][c] = lg_pair_step(kind, &row, &tok[k], acc[r][k][c]);
        }
    }
}

/* R rows x T tokens with all accumulators in registers (prefill). */
ADIL_INLINE void lg_core(const adil_tile *t, lg_kind kind, const int R, const int T) {
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
        lg_core_block(t, kind, R, T, b, 0, acc);
        lg_core_block(t, kind, R, T, b + 1, 1, acc);
    }
    if (b < nb) {
        lg_core_block(t, kind, R, T, b, 0, acc);
    }
    for (int r = 0; r < R; r++) {
        for (int k = 0; k < T; k++) {
            t->y[(size_t)k * t->y_stride + (size_t)r] = lg_finish(acc[r][k]);
        }
    }
}

/* One block of the GEMV: the token's side comes prepared. */
ADIL_INLINE __m256 lg_gemv_step(const adil_tile *t, lg_kind kind, const uint8_t *w, int64_t b,
                                const __m256i *fix, const float *da, __m256 acc) {
    const block_q8_0 *y = (const block_q8_0 *)t->act + b;
    lg_token k = {_mm256_loadu_si256((const __m256i *)y->qs), fix[b], _mm256_set1_ps(da[b])};
    lg_row row = lg_row_prep(kind, w, b);
    return lg_pair_step(kind, &row, &k, acc);
}

/* Decode (one token): rows one after the other, so the weights are a single
 * sequential stream through memory that the hardware prefetchers follow
 * (interleaving rows halved the bandwidth).  The activation side of every
 * block is prepared once for all the tile's rows.  Rows too long for the
 * stack buffers go through `one`, the 1 x 1 core: same results. */
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
    float da[LG_GEMV_MAX_BLOCKS];
    for (int64_t b = 0; b < nb; b++) {
        const block_q8_0 *y = (const block_q8_0 *)t->act + b;
        fix[b] = lg_token_fix(kind, _mm256_loadu_si256((const __m256i *)y->qs));
        da[b] = simd_fp16(y->d);
    }
    for (int64_t r = 0; r < t->n_rows; r++) {
        const uint8_t *w = t->w + (size_t)r * t->w_stride;
        __m256 acc[LG_CHAINS] = {_mm256_setzero_ps(), _mm256_setzero_ps()};
        int64_t b = 0;
        for (; b + LG_CHAINS <= nb; b += LG_CHAINS) {
            acc[0] = lg_gemv_step(t, kind, w, b, fix, da, acc[0]);
            acc[1] = lg_gemv_step(t, kind, w, b + 1, fix, da, acc[1]);
        }
        if (b < nb) {
            acc[0] = lg_gemv_step(t, kind, w, b, fix, da, acc[0]);
        }
        t->y[r] = lg_finish(acc);
    }
}

#endif /* ADIL_LEGACY_CORES_H */
