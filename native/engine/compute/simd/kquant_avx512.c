/*
 * kquant_avx512.c — the K-quant dot products (Q4_K, Q5_K, Q6_K with Q8_K
 * activations) compiled for the avx512 level; the cores are in kquant_cores.h.
 * Each core keeps one weight row: the unpacked super-block is reused for
 * KQ_MAX_TOKS tokens in prefill.
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/kquant_cores.h"
#include "compute/simd/tile_walk.h"

static void q4_K_toks(const adil_tile *t) { kq_k4_core(t, false, KQ_MAX_TOKS); }
static void q4_K_one(const adil_tile *t) { kq_k4_core(t, false, 1); }
static void q5_K_toks(const adil_tile *t) { kq_k4_core(t, true, KQ_MAX_TOKS); }
static void q5_K_one(const adil_tile *t) { kq_k4_core(t, true, 1); }
static void q6_K_toks(const adil_tile *t) { kq_q6_K_core(t, KQ_MAX_TOKS); }
static void q6_K_one(const adil_tile *t) { kq_q6_K_core(t, 1); }

/* One row at a time: rows x toks cores are the 1 x toks ones. */
static const adil_tile_shapes Q4_K_SHAPES = {1, KQ_MAX_TOKS, q4_K_toks, q4_K_one, q4_K_toks,
                                             q4_K_one};
static const adil_tile_shapes Q5_K_SHAPES = {1, KQ_MAX_TOKS, q5_K_toks, q5_K_one, q5_K_toks,
                                             q5_K_one};
static const adil_tile_shapes Q6_K_SHAPES = {1, KQ_MAX_TOKS, q6_K_toks, q6_K_one, q6_K_toks,
                                             q6_K_one};

void adil_tile_q4_K_avx512(const adil_tile *t) {
    adil_tile_walk(&Q4_K_SHAPES, t);
}

void adil_tile_q5_K_avx512(const adil_tile *t) {
    adil_tile_walk(&Q5_K_SHAPES, t);
}

void adil_tile_q6_K_avx512(const adil_tile *t) {
    adil_tile_walk(&Q6_K_SHAPES, t);
}

float adil_vec_dot_q4_K_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q4_K_one, n, w, a);
}

float adil_vec_dot_q5_K_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q5_K_one, n, w, a);
}

float adil_vec_dot_q6_K_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q6_K_one, n, w, a);
}
