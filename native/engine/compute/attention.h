/*
 * attention.h — softmax(q·Kᵀ · scale) · V for a tile of query rows over the
 * KV cache, per CPU level.
 *
 * A tile is up to ADIL_ATT_MAX_ROWS query rows that read the same KV head
 * (the heads of one GQA group, for a few consecutive tokens).  Row r sees
 * the cached positions [first[r], last[r]] (causal mask and sliding window
 * already applied by the caller); the kernel computes the scores of the
 * union of those ranges once, as matrix-matrix work (every key row loaded
 * once for all the tile's queries), masks per row, and multiplies by V the
 * same way.  Positions outside the union are never read, so blocks of the
 * cache that no row sees (beyond a sliding window) cost nothing.
 *
 * Determinism: every score, softmax sum and output element of a row is
 * computed in an order that depends only on that row's own data and range,
 * not on which other rows share its tile or where it sits in it, so results
 * do not depend on the number of threads or on how tiles are formed.
 *
 * Levels: scalar is the reference (per row, per key, double softmax sum);
 * AVX2 and AVX-512 use register tiles and the vector e^x of simd/vmath_x86.h.
 * Budget (test_attention.c): each output element within
 *     ADIL_ATT_MAX_ERROR * max_p |v[p]| * (1 + max_p |q·k[p] * scale|)
 * of the reference, p over the row's visible positions, the sink counted as
 * a score (rounding a score s moves its weight e^(s - max) by about
 * |s - max| ulp(1)).
 */
#ifndef ADIL_ATTENTION_H
#define ADIL_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADIL_ATT_MAX_ROWS  16
#define ADIL_ATT_MAX_ERROR 2e-6

/* How cached keys and values are stored: IEEE half (the KV cache's default),
 * f32, or Q8_0 blocks (block_q8_0 of weight_types.h: 32 int8 and a half
 * scale; a head's key and value then start on a block, so head_dim and
 * head_dim_v are multiples of ADIL_KV_Q8_0_BLOCK).  Kernels widen each
 * element to f32 as they load it (a Q8_0 element: (float)q * (float)d, one
 * rounding), so the budget below holds against the scalar reference reading
 * the same elements. */
typedef enum adil_kv_type { ADIL_KV_F32 = 0, ADIL_KV_F16 = 1, ADIL_KV_Q8_0 = 2 } adil_kv_type;

#define ADIL_KV_Q8_0_BLOCK 32 /* elements of a Q8_0 block */
#define ADIL_KV_Q8_0_BYTES 34 /* its bytes: 32 int8 and a half scale */

/* Bytes of n elements of `type` (for Q8_0, n a multiple of the block). */
static inline size_t adil_kv_bytes_of(adil_kv_type type, size_t n) {
    if (type == ADIL_KV_Q8_0) return n / ADIL_KV_Q8_0_BLOCK * ADIL_KV_Q8_0_BYTES;
    return n * (type == ADIL_KV_F32 ? sizeof(float) : sizeof(uint16_t));
}

/* Element `at` of a K/V array (for Q8_0, `at` a multiple of the block). */
static inline const void *adil_kv_at(const void *base, size_t at, adil_kv_type type) {
    return (const char *)base + adil_kv_bytes_of(type, at);
}

typedef struct adil_att_tile {
    int n_rows;                        /* 1 .. ADIL_ATT_MAX_ROWS */
    const float *q[ADIL_ATT_MAX_ROWS]; /* query rows, head_dim floats each */
    float *o[ADIL_ATT_MAX_ROWS];       /* output rows, head_dim_v floats each */
    int64_t first[ADIL_ATT_MAX_ROWS];  /* row r sees positions first[r] .. last[r] */
    int64_t last[ADIL_ATT_MAX_ROWS];   /* (first[r] <= last[r]) */
    adil_kv_type kv_type;              /* of the elements of k and v */
    const void *k;                     /* key of position p at element p * k_stride */
    size_t k_stride;                   /* elements (Q8_0: a multiple of the block) */
    const void *v;                     /* value of position p at element p * v_stride */
    size_t v_stride;
    int64_t ring;       /* > 0: position p's key and value are in row p % ring (a
                     sliding window's ring buffer; the tile's positions then
                     span at most ring); 0: row p */
    int64_t head_dim;   /* q and k */
    int64_t head_dim_v; /* v and o */
    float scale;        /* multiplies q·k */
    bool has_sinks;     /* when true, row r's softmax includes sink[r] */
    float sink[ADIL_ATT_MAX_ROWS];
    /* ADIL_ATT_MAX_ROWS * (max last - min first + 1) floats, clobbered */
    float *scratch;
    /* Non-NULL: row r's softmax max and sum (sink included, if any) into
     * part_max[r] and part_sum[r], for adil_att_fold (o is normalized by
     * that sum as always). */
    float *part_max, *part_sum;
} adil_att_tile;

/* A row's range longer than ADIL_ATT_PART positions is computed in parts,
 * cut at the multiples of ADIL_ATT_PART (of absolute positions, so a row's
 * parts depend on its own range only), each part a tile without sinks, and
 * the parts folded in ascending order (then the sink): the parts of a long
 * range can run on different threads (decode), and a row's result is the
 * same whichever tile computed it, in a batch or alone. */
#define ADIL_ATT_PART 1024

/* The running result of a row's parts: its output (head_dim_v floats, o
 * normalized by sum), max and sum; sum 0 before the first part. */
typedef struct adil_att_state {
    float *o;
    float max, sum;
} adil_att_state;

/* Folds a part's output o (normalized by its sum), max and sum into acc. */
void adil_att_fold(adil_att_state *acc, const float *o, float max, float sum, int64_t dv);

/* Folds a sink (a logit with no value) into acc: the last step of a row
 * whose softmax has one. */
void adil_att_fold_sink(adil_att_state *acc, float sink, int64_t dv);

/* Rows of a tile's positions from `lo` on (lo .. lo + ring - 1 at most):
 * adil_att_row gives position p's with one compare, no division per key. */
typedef struct adil_att_rows {
    int64_t lo, lo_row, ring;
} adil_att_rows;

static inline adil_att_rows adil_att_rows_from(const adil_att_tile *t, int64_t lo) {
    adil_att_rows w = {lo, t->ring > 0 ? lo % t->ring : lo, t->ring > 0 ? t->ring : INT64_MAX};
    return w;
}

static inline size_t adil_att_row(const adil_att_rows *w, int64_t p) {
    const int64_t r = w->lo_row + (p - w->lo);
    return (size_t)(r < w->ring ? r : r - w->ring);
}

typedef void (*adil_att_fn)(const adil_att_tile *tile);

/* The kernel of the selected CPU level (cpu_level.h). */
adil_att_fn adil_attention_kernel(void);

/* The kernel of `level` (an adil_cpu_level); NULL when out of range.  Only
 * call it when adil_cpu_level_supported() is at least that level. */
adil_att_fn adil_attention_kernel_at(int level);

#if defined(__x86_64__)
void adil_attend_avx2(const adil_att_tile *tile);
void adil_attend_avx512(const adil_att_tile *tile);
#endif

#endif /* ADIL_ATTENTION_H */
