/*
 * legacy_level.h — what legacy_avx2.c and legacy_avx512.c both compile at
 * their own level: the fixed-shape cores of the 32-element types (from
 * legacy_cores.h), their shape tables, and the bodies of the tile_dot and
 * vec_dot entry points.  Each level file only names its exported functions;
 * everything here is static, so each gets its own copy built with its own
 * -m flags (and, with VNNI, its own LG_MAX_ROWS).
 * One token (decode) goes through the row-sequential GEMV, several
 * (prefill) through lg_gemm's register tiles of LG_MAX_ROWS x LG_MAX_TOKS
 * pairs.
 */
#ifndef ADIL_LEGACY_LEVEL_H
#define ADIL_LEGACY_LEVEL_H

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
static void q4_1_full(const adil_tile *t) { lg_core(t, LG_Q4_1, LG_MAX_ROWS, LG_MAX_TOKS); }
static void q4_1_rows(const adil_tile *t) { lg_core(t, LG_Q4_1, LG_MAX_ROWS, 1); }
static void q4_1_toks(const adil_tile *t) { lg_core(t, LG_Q4_1, 1, LG_MAX_TOKS); }
static void q4_1_one(const adil_tile *t) { lg_core(t, LG_Q4_1, 1, 1); }
static void q5_1_full(const adil_tile *t) { lg_core(t, LG_Q5_1, LG_MAX_ROWS, LG_MAX_TOKS); }
static void q5_1_rows(const adil_tile *t) { lg_core(t, LG_Q5_1, LG_MAX_ROWS, 1); }
static void q5_1_toks(const adil_tile *t) { lg_core(t, LG_Q5_1, 1, LG_MAX_TOKS); }
static void q5_1_one(const adil_tile *t) { lg_core(t, LG_Q5_1, 1, 1); }
static void iq4_nl_full(const adil_tile *t) { lg_core(t, LG_IQ4_NL, LG_MAX_ROWS, LG_MAX_TOKS); }
static void iq4_nl_rows(const adil_tile *t) { lg_core(t, LG_IQ4_NL, LG_MAX_ROWS, 1); }
static void iq4_nl_toks(const adil_tile *t) { lg_core(t, LG_IQ4_NL, 1, LG_MAX_TOKS); }
static void iq4_nl_one(const adil_tile *t) { lg_core(t, LG_IQ4_NL, 1, 1); }
static void mxfp4_full(const adil_tile *t) { lg_core(t, LG_MXFP4, LG_MAX_ROWS, LG_MAX_TOKS); }
static void mxfp4_rows(const adil_tile *t) { lg_core(t, LG_MXFP4, LG_MAX_ROWS, 1); }
static void mxfp4_toks(const adil_tile *t) { lg_core(t, LG_MXFP4, 1, LG_MAX_TOKS); }
static void mxfp4_one(const adil_tile *t) { lg_core(t, LG_MXFP4, 1, 1); }

/* The cores of each kind, indexed by lg_kind. */
static const adil_tile_shapes LG_SHAPES[] = {
    [LG_Q8_0] = {LG_MAX_ROWS, LG_MAX_TOKS, q8_0_full, q8_0_rows, q8_0_toks, q8_0_one},
    [LG_Q4_0] = {LG_MAX_ROWS, LG_MAX_TOKS, q4_0_full, q4_0_rows, q4_0_toks, q4_0_one},
    [LG_Q5_0] = {LG_MAX_ROWS, LG_MAX_TOKS, q5_0_full, q5_0_rows, q5_0_toks, q5_0_one},
    [LG_Q4_1] = {LG_MAX_ROWS, LG_MAX_TOKS, q4_1_full, q4_1_rows, q4_1_toks, q4_1_one},
    [LG_Q5_1] = {LG_MAX_ROWS, LG_MAX_TOKS, q5_1_full, q5_1_rows, q5_1_toks, q5_1_one},
    [LG_IQ4_NL] = {LG_MAX_ROWS, LG_MAX_TOKS, iq4_nl_full, iq4_nl_rows, iq4_nl_toks, iq4_nl_one},
    [LG_MXFP4] = {LG_MAX_ROWS, LG_MAX_TOKS, mxfp4_full, mxfp4_rows, mxfp4_toks, mxfp4_one},
};

/* tile_dot: decode through the GEMV, prefill through the register tiles. */
ADIL_INLINE void lg_tile(const adil_tile *t, lg_kind kind) {
    if (t->n_tok == 1) {
        lg_gemv(t, kind, LG_SHAPES[kind].one);
        return;
    }
    lg_gemm(t, kind, &LG_SHAPES[kind]);
}

/* vec_dot: the 1 x 1 core, so that it equals tile_dot bit for bit. */
ADIL_INLINE float lg_vec_dot(lg_kind kind, int64_t n, const void *w, const void *a) {
    return adil_tile_one_dot(LG_SHAPES[kind].one, n, w, a);
}

#endif /* ADIL_LEGACY_LEVEL_H */
