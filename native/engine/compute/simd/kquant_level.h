/*
 * kquant_level.h — what kquant_avx2.c and kquant_avx512.c both compile at
 * their own level: the fixed-shape cores of Q2_K .. Q6_K and IQ4_XS (from
 * kquant_cores.h), their shape tables, and the bodies of the tile_dot and
 * vec_dot entry points.  Each level file only names its exported functions;
 * everything here is static, so each gets its own copy built with its own
 * -m flags.  Each core keeps one weight row: the unpacked super-block is
 * reused for KQ_MAX_TOKS tokens in prefill.
 */
#ifndef ADIL_KQUANT_LEVEL_H
#define ADIL_KQUANT_LEVEL_H

#include "compute/simd/kquant_cores.h"
#include "compute/simd/tile_walk.h"

static void q4_K_toks(const adil_tile *t) { kq_k4_core(t, false, KQ_MAX_TOKS); }
static void q4_K_one(const adil_tile *t) { kq_k4_core(t, false, 1); }
static void q5_K_toks(const adil_tile *t) { kq_k4_core(t, true, KQ_MAX_TOKS); }
static void q5_K_one(const adil_tile *t) { kq_k4_core(t, true, 1); }
static void q2_K_toks(const adil_tile *t) { kq_sub16_core(t, KQ_Q2_K, KQ_MAX_TOKS); }
static void q2_K_one(const adil_tile *t) { kq_sub16_core(t, KQ_Q2_K, 1); }
static void q3_K_toks(const adil_tile *t) { kq_sub16_core(t, KQ_Q3_K, KQ_MAX_TOKS); }
static void q3_K_one(const adil_tile *t) { kq_sub16_core(t, KQ_Q3_K, 1); }
static void q6_K_toks(const adil_tile *t) { kq_sub16_core(t, KQ_Q6_K, KQ_MAX_TOKS); }
static void q6_K_one(const adil_tile *t) { kq_sub16_core(t, KQ_Q6_K, 1); }
static void iq4_xs_toks(const adil_tile *t) { kq_iq4_xs_core(t, KQ_MAX_TOKS); }
static void iq4_xs_one(const adil_tile *t) { kq_iq4_xs_core(t, 1); }

/* One row at a time: rows x toks cores are the 1 x toks ones. */
static const adil_tile_shapes Q2_K_SHAPES = {1, KQ_MAX_TOKS, q2_K_toks, q2_K_one, q2_K_toks, q2_K_one};
static const adil_tile_shapes Q3_K_SHAPES = {1, KQ_MAX_TOKS, q3_K_toks, q3_K_one, q3_K_toks, q3_K_one};
static const adil_tile_shapes Q4_K_SHAPES = {1, KQ_MAX_TOKS, q4_K_toks, q4_K_one, q4_K_toks, q4_K_one};
static const adil_tile_shapes Q5_K_SHAPES = {1, KQ_MAX_TOKS, q5_K_toks, q5_K_one, q5_K_toks, q5_K_one};
static const adil_tile_shapes Q6_K_SHAPES = {1, KQ_MAX_TOKS, q6_K_toks, q6_K_one, q6_K_toks, q6_K_one};
static const adil_tile_shapes IQ4_XS_SHAPES = {1,          KQ_MAX_TOKS, iq4_xs_toks,
                                               iq4_xs_one, iq4_xs_toks, iq4_xs_one};

#endif /* ADIL_KQUANT_LEVEL_H */
