/*
 * kquant_avx512.c — the K-quant dot products (Q2_K .. Q6_K and IQ4_XS with
 * Q8_K activations) compiled for the avx512 level; the cores and their shapes are
 * in kquant_level.h (shared with the other level).
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/kquant_level.h"

void adil_tile_q2_K_avx512(const adil_tile *t) { adil_tile_walk(&Q2_K_SHAPES, t); }

void adil_tile_q3_K_avx512(const adil_tile *t) { adil_tile_walk(&Q3_K_SHAPES, t); }

void adil_tile_q4_K_avx512(const adil_tile *t) { adil_tile_walk(&Q4_K_SHAPES, t); }

void adil_tile_q5_K_avx512(const adil_tile *t) { adil_tile_walk(&Q5_K_SHAPES, t); }

void adil_tile_q6_K_avx512(const adil_tile *t) { adil_tile_walk(&Q6_K_SHAPES, t); }

void adil_tile_iq4_xs_avx512(const adil_tile *t) { adil_tile_walk(&IQ4_XS_SHAPES, t); }

float adil_vec_dot_q2_K_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q2_K_one, n, w, a);
}

float adil_vec_dot_q3_K_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q3_K_one, n, w, a);
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

float adil_vec_dot_iq4_xs_avx512(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(iq4_xs_one, n, w, a);
}
