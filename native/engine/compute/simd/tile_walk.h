/*
 * tile_walk.h — splitting an arbitrary tile of dot products (adil_tile,
 * kernels.h) into the few fixed shapes a SIMD kernel is compiled for.
 *
 * A kernel keeps one accumulator per (row, token) pair in registers, so its
 * loops must have compile-time trip counts: each type provides a `full`
 * core of rows x toks pairs plus the narrower cores for the edges, and
 * adil_tile_walk covers the tile with them.  Every core computes each pair
 * with the same instructions in the same order, so a pair's result does not
 * depend on the shape it was computed in (matmul equals vec_dot bit for bit).
 */
#ifndef ADIL_TILE_WALK_H
#define ADIL_TILE_WALK_H

#include "compute/kernels.h"

/* Computes a tile of exactly the core's shape (tile->n_rows / n_tok are
 * not read). */
typedef void (*adil_tile_core_fn)(const adil_tile *tile);

typedef struct adil_tile_shapes {
    int rows, toks;             /* the shape of `full` */
    adil_tile_core_fn full;     /* rows x toks */
    adil_tile_core_fn rows_1;   /* rows x 1: decode, and tokens left over */
    adil_tile_core_fn one_toks; /* 1 x toks: rows left over */
    adil_tile_core_fn one;      /* 1 x 1 */
} adil_tile_shapes;

/* Runs the cores over the whole tile: row groups outermost, so a group of
 * weight rows is read once for all the tile's tokens. */
void adil_tile_walk(const adil_tile_shapes *shapes, const adil_tile *tile);

/* vec_dot through a kernel's 1 x 1 core, so that matmul's tiles and
 * vec_dot agree bit for bit. */
float adil_tile_one_dot(adil_tile_core_fn one, int64_t n, const void *w, const void *act);

#endif /* ADIL_TILE_WALK_H */
