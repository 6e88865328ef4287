/*
 * attention_prefetch.h — asks for a cached position's key and value before
 * the score pass reaches it; shared by the SIMD attention files.
 *
 * A decode streams its KV from memory.  Both rows are requested in the
 * score pass: P·V's first pass over the output dims reads a value row with
 * a quarter of the FMAs the score pass spends on a key, so V requested
 * there would leave the FMAs waiting; requested here, both streams overlap
 * the score FMAs.  Into L2 (T1): a T0 request holds an L1 miss buffer until
 * its line arrives and stalls the FMAs' own loads.  Measured on a Zen 4
 * (bench/native/attention_tile.c: 4 rows over 1024 f16 positions of 256
 * dims, from memory): 121 → 71 ns per position at AVX-512 (against keys by
 * T0 and values in P·V), 142 → 75 at AVX2 (against no prefetch); in the
 * cache the requests cost about 3%.
 */
#ifndef ADIL_ATTENTION_PREFETCH_H
#define ADIL_ATTENTION_PREFETCH_H

#include "compute/attention.h"
#include "compute/simd/always_inline.h"

#include <immintrin.h>

/* How many positions ahead of the score pass its keys and values are asked for. */
#define ADIL_ATT_PREFETCH_AHEAD 16

ADIL_INLINE void att_prefetch_bytes(const void *p, size_t bytes) {
    for (size_t b = 0; b < bytes; b += 64) _mm_prefetch((const char *)p + b, _MM_HINT_T1);
}

/* The key and value of position f0 + j (of the tile's span: j < span). */
ADIL_INLINE void att_prefetch_kv(const adil_att_tile *t, const adil_att_rows *rows, int64_t f0, int64_t j,
                                 int64_t span, adil_kv_type ty) {
    if (j >= span) return;
    const size_t row = adil_att_row(rows, f0 + j);
    att_prefetch_bytes(adil_kv_at(t->k, row * t->k_stride, ty), adil_kv_bytes_of(ty, (size_t)t->head_dim));
    att_prefetch_bytes(adil_kv_at(t->v, row * t->v_stride, ty), adil_kv_bytes_of(ty, (size_t)t->head_dim_v));
}

#endif /* ADIL_ATTENTION_PREFETCH_H */
