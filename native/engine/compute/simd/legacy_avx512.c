/*
 * legacy_avx512.c — the dot products of Q8_0, Q4_0, Q5_0, IQ4_NL and MXFP4
 * weights with Q8_0 activations and of Q4_1 and Q5_1 weights with Q8_1
 * activations compiled for the avx512 level; the cores, their shapes and the
 * entry bodies are in legacy_level.h (shared with the other level).
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/legacy_level.h"

void adil_tile_q8_0_avx512(const adil_tile *t) { lg_tile(t, LG_Q8_0); }

void adil_tile_q4_0_avx512(const adil_tile *t) { lg_tile(t, LG_Q4_0); }

void adil_tile_q5_0_avx512(const adil_tile *t) { lg_tile(t, LG_Q5_0); }

void adil_tile_q4_1_avx512(const adil_tile *t) { lg_tile(t, LG_Q4_1); }

float adil_vec_dot_q8_0_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_Q8_0, n, w, a);
}

float adil_vec_dot_q4_0_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_Q4_0, n, w, a);
}

float adil_vec_dot_q5_0_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_Q5_0, n, w, a);
}

float adil_vec_dot_q4_1_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_Q4_1, n, w, a);
}

void adil_tile_q5_1_avx512(const adil_tile *t) { lg_tile(t, LG_Q5_1); }

float adil_vec_dot_q5_1_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_Q5_1, n, w, a);
}

void adil_tile_iq4_nl_avx512(const adil_tile *t) { lg_tile(t, LG_IQ4_NL); }

float adil_vec_dot_iq4_nl_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_IQ4_NL, n, w, a);
}

void adil_tile_mxfp4_avx512(const adil_tile *t) { lg_tile(t, LG_MXFP4); }

float adil_vec_dot_mxfp4_avx512(int64_t n, const void *w, const void *a) {
    return lg_vec_dot(LG_MXFP4, n, w, a);
}
