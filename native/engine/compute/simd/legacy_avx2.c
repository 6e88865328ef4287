/*
 * legacy_avx2.c — the dot products of Q8_0, Q4_0 and Q5_0 weights with Q8_0
 * activations compiled for the avx2 level; the cores are in legacy_cores.h.
 * One token (decode) goes through the row-sequential GEMV, several
 * (prefill) through lg_gemm's register tiles of LG_MAX_ROWS x LG_MAX_TOKS
 * pairs.
 */
#include "compute/simd/kernels_simd.h"
#include "compute/simd/legacy_cores.h"

static void q8_0_full(const adil_tile *t) { lg_core(t, LG_Q8_0, LG_MAX_ROWS, LG_MAX_TOKS); }
static void q8_0_rows(const adil_tile *t) { lg_core(t, LG_Q8_0, LG_MAX_ROWS, 1); }
static void q8_0_toks(const adil_tile *t) { lg_core(t, LG_Q8_0, 1, LG_MAX_TOKS); }
static void q8_0_one(const adil_tile *t) { lg_core(t, LG_Q8_0, 1, 1); }
static void q4_0_full(const adil_tile *t) { lg_core(t, LG_Q4_0, LG_MAX_ROWS, LG_MAX_TOKS); }
static void q4_0_rows(const adil_tile *t) { lg_core(t, LG_Q4_0, LG_MAX_ROWS, 1); }
static void q4_0_toks(const adil_tile *t) { lg_core(t, LG_Q4_0, 1, LG_MAX_TOKS); }
static void q4_0_one(const adil_tile *t) { lg_core(t, LG_Q4_0, 1, 1); }
static void q5_0_full(const adil_tile *t) { lg_core(t, LG_Q5_0, LG_MAX_ROWS, LG_MAX_TOKS); }
static void q5_0_rows(const adil_tile *t) { lg_core(t, LG_Q5_0, LG_MAX_ROWS, 1); }
static void q5_0_toks(const adil_tile *t) { lg_core(t, LG_Q5_0, 1, LG_MAX_TOKS); }
static void q5_0_one(const adil_tile *t) { lg_core(t, LG_Q5_0, 1, 1); }

static const adil_tile_shapes Q8_0_SHAPES = {LG_MAX_ROWS, LG_MAX_TOKS, q8_0_full, q8_0_rows,
                                             q8_0_toks, q8_0_one};
static const adil_tile_shapes Q4_0_SHAPES = {LG_MAX_ROWS, LG_MAX_TOKS, q4_0_full, q4_0_rows,
                                             q4_0_toks, q4_0_one};
static const adil_tile_shapes Q5_0_SHAPES = {LG_MAX_ROWS, LG_MAX_TOKS, q5_0_full, q5_0_rows,
                                             q5_0_toks, q5_0_one};

void adil_tile_q8_0_avx2(const adil_tile *t) {
    if (t->n_tok == 1) {
        lg_gemv(t, LG_Q8_0, q8_0_one);
        return;
    }
    lg_gemm(t, LG_Q8_0, &Q8_0_SHAPES);
}

void adil_tile_q4_0_avx2(const adil_tile *t) {
    if (t->n_tok == 1) {
        lg_gemv(t, LG_Q4_0, q4_0_one);
        return;
    }
    lg_gemm(t, LG_Q4_0, &Q4_0_SHAPES);
}

void adil_tile_q5_0_avx2(const adil_tile *t) {
    if (t->n_tok == 1) {
        lg_gemv(t, LG_Q5_0, q5_0_one);
        return;
    }
    lg_gemm(t, LG_Q5_0, &Q5_0_SHAPES);
}

float adil_vec_dot_q8_0_avx2(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q8_0_one, n, w, a);
}

float adil_vec_dot_q4_0_avx2(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q4_0_one, n, w, a);
}

float adil_vec_dot_q5_0_avx2(int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(q5_0_one, n, w, a);
}
