/*
 * attention_level.h — the per-tile driver every SIMD attention file shares:
 * the span of key positions the tile's rows see, zeros outside each row's
 * window, softmax (with the row's sink, if any), then P·V; a part of a
 * longer range (attention.h) also reports each row's max and sum.
 * attention_avx2.c and attention_avx512.c include it after defining their
 * own scores(), softmax() and pv(), so the driver is compiled at each file's
 * instruction-set level, once per KV element type.
 */
#ifndef ADIL_ATTENTION_LEVEL_H
#define ADIL_ATTENTION_LEVEL_H

#include "compute/attention.h"
#include "compute/simd/always_inline.h"

#include <string.h>

ADIL_INLINE void attend_tile_as(const adil_att_tile *t, adil_kv_type ty) {
    int64_t f0 = t->first[0], l0 = t->last[0];
    for (int r = 1; r < t->n_rows; r++) {
        f0 = t->first[r] < f0 ? t->first[r] : f0;
        l0 = t->last[r] > l0 ? t->last[r] : l0;
    }
    const int64_t span = l0 - f0 + 1;
    float *s = t->scratch;
    float inv[ADIL_ATT_MAX_ROWS];
    scores(t, f0, span, s, ty);
    for (int r = 0; r < t->n_rows; r++) {
        float *row = s + r * span;
        const int64_t a = t->first[r] - f0, b = t->last[r] - f0 + 1;
        memset(row, 0, (size_t)a * sizeof(float));
        memset(row + b, 0, (size_t)(span - b) * sizeof(float));
        float max;
        const float sum = softmax(row + a, b - a, t->has_sinks ? &t->sink[r] : NULL, &max);
        inv[r] = 1.0f / sum;
        if (t->part_max != NULL) {
            t->part_max[r] = max;
            t->part_sum[r] = sum;
        }
    }
    pv(t, s, span, f0, inv, ty);
}

/* One copy of the passes per element type, so the inner loops test no flag. */
static void attend_tile_f32(const adil_att_tile *t) { attend_tile_as(t, ADIL_KV_F32); }
static void attend_tile_f16(const adil_att_tile *t) { attend_tile_as(t, ADIL_KV_F16); }
static void attend_tile_q8_0(const adil_att_tile *t) { attend_tile_as(t, ADIL_KV_Q8_0); }

static inline void attend_tile(const adil_att_tile *t) {
    if (t->kv_type == ADIL_KV_F16)
        attend_tile_f16(t);
    else if (t->kv_type == ADIL_KV_Q8_0)
        attend_tile_q8_0(t);
    else
        attend_tile_f32(t);
}

#endif /* ADIL_ATTENTION_LEVEL_H */
