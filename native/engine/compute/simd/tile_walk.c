/*
 * tile_walk.c — covers a tile with a kernel's fixed-shape cores (see
 * tile_walk.h).  Compiled for the baseline CPU: it only does pointer
 * arithmetic and calls the cores.
 */
#include "compute/simd/tile_walk.h"

/* The sub-tile at row r, token t (its shape is the core's). */
static adil_tile sub_tile(const adil_tile *tile, int64_t r, int64_t t) {
    adil_tile s = *tile;
    s.w += (size_t)r * tile->w_stride;
    s.act += (size_t)t * tile->act_stride;
    s.y += (size_t)t * tile->y_stride + (size_t)r;
    return s;
}

/* Tokens of one row group: `many` cores of `toks` tokens, then `single`s. */
static void walk_tokens(const adil_tile *tile, int64_t r, int toks, adil_tile_core_fn many,
                        adil_tile_core_fn single) {
    int64_t t = 0;
    for (; t + toks <= tile->n_tok; t += toks) {
        adil_tile s = sub_tile(tile, r, t);
        many(&s);
    }
    for (; t < tile->n_tok; t++) {
        adil_tile s = sub_tile(tile, r, t);
        single(&s);
    }
}

void adil_tile_walk(const adil_tile_shapes *shapes, const adil_tile *tile) {
    int64_t r = 0;
    for (; r + shapes->rows <= tile->n_rows; r += shapes->rows) {
        walk_tokens(tile, r, shapes->toks, shapes->full, shapes->rows_1);
    }
    for (; r < tile->n_rows; r++) {
        walk_tokens(tile, r, shapes->toks, shapes->one_toks, shapes->one);
    }
}

float adil_tile_one_dot(adil_tile_core_fn one, int64_t n, const void *w, const void *act) {
    float y;
    adil_tile t = {n, w, 0, 1, act, 0, 1, &y, 0};
    one(&t);
    return y;
}
