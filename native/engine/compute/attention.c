/*
 * attention.c — the scalar reference attention kernel and the per-level
 * table (see attention.h).  One row at a time, one key at a time: the plain
 * definition, against which the SIMD tiles are tested.
 */
#include "compute/attention.h"

#include "compute/cpu_level.h"
#include "compute/weight_types.h"

#include <math.h>
#include <string.h>

_Static_assert(sizeof(block_q8_0) == ADIL_KV_Q8_0_BYTES, "a Q8_0 KV block is a block_q8_0");

/* q·k over n floats with 8 independent partial sums (the compiler may then
 * vectorize without reordering float additions itself). */
static float dot_f32(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* The same sums over a row of halves, each widened exactly to f32. */
static float dot_f16(const float *a, const adil_fp16 *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * adil_fp16_to_f32(b[i + j]);
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += a[i] * adil_fp16_to_f32(b[i]);
    return sum;
}

/* Element i of a row of Q8_0 blocks, widened as every kernel widens it. */
static float q8_0_at(const block_q8_0 *b, int64_t i) {
    const block_q8_0 *blk = b + i / ADIL_KV_Q8_0_BLOCK;
    return (float)blk->qs[i % ADIL_KV_Q8_0_BLOCK] * adil_fp16_to_f32(blk->d);
}

/* The same sums over a row of Q8_0 blocks (n a multiple of the block). */
static float dot_q8_0(const float *a, const block_q8_0 *b, int64_t n) {
    float acc[8] = {0};
    for (int64_t i = 0; i < n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * q8_0_at(b, i + j);
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

/* q · key of row `row`. */
static float key_dot(const adil_att_tile *t, const float *q, size_t row) {
    const size_t at = row * t->k_stride;
    if (t->kv_type == ADIL_KV_Q8_0) return dot_q8_0(q, adil_kv_at(t->k, at, ADIL_KV_Q8_0), t->head_dim);
    if (t->kv_type == ADIL_KV_F16) return dot_f16(q, (const adil_fp16 *)t->k + at, t->head_dim);
    return dot_f32(q, (const float *)t->k + at, t->head_dim);
}

/* o += w * value of row `row`. */
static void add_value(const adil_att_tile *t, float *o, float w, size_t row) {
    const size_t at = row * t->v_stride;
    if (t->kv_type == ADIL_KV_Q8_0) {
        const block_q8_0 *v = adil_kv_at(t->v, at, ADIL_KV_Q8_0);
        for (int64_t i = 0; i < t->head_dim_v; i++) o[i] += w * q8_0_at(v, i);
        return;
    }
    if (t->kv_type == ADIL_KV_F16) {
        const adil_fp16 *v = (const adil_fp16 *)t->v + at;
        for (int64_t i = 0; i < t->head_dim_v; i++) o[i] += w * adil_fp16_to_f32(v[i]);
        return;
    }
    const float *v = (const float *)t->v + at;
    for (int64_t i = 0; i < t->head_dim_v; i++) o[i] += w * v[i];
}

static void attend_row(const adil_att_tile *t, int r, float *s) {
    const int64_t first = t->first[r], last = t->last[r];
    const adil_att_rows rows = adil_att_rows_from(t, first);
    float max = -INFINITY;
    for (int64_t p = first; p <= last; p++) {
        s[p - first] = key_dot(t, t->q[r], adil_att_row(&rows, p)) * t->scale;
        if (s[p - first] > max) max = s[p - first];
    }
    /* a sink joins the max and the denominator, with no value */
    if (t->has_sinks && t->sink[r] > max) max = t->sink[r];
    double sum = 0.0;
    for (int64_t p = first; p <= last; p++) {
        s[p - first] = expf(s[p - first] - max);
        sum += s[p - first];
    }
    if (t->has_sinks) sum += expf(t->sink[r] - max);
    const float inv = (float)(1.0 / sum);
    if (t->part_max != NULL) {
        t->part_max[r] = max;
        t->part_sum[r] = (float)sum;
    }
    float *o = t->o[r];
    memset(o, 0, (size_t)t->head_dim_v * sizeof(float));
    for (int64_t p = first; p <= last; p++) add_value(t, o, s[p - first] * inv, adil_att_row(&rows, p));
}

static void attend_scalar(const adil_att_tile *t) {
    for (int r = 0; r < t->n_rows; r++) attend_row(t, r, t->scratch);
}

void adil_att_fold(adil_att_state *acc, const float *o, float max, float sum, int64_t dv) {
    if (acc->sum == 0.0f) { /* the first part */
        memcpy(acc->o, o, (size_t)dv * sizeof(float));
        acc->max = max;
        acc->sum = sum;
        return;
    }
    const float m = max > acc->max ? max : acc->max;
    const float a = acc->sum * expf(acc->max - m), b = sum * expf(max - m);
    const float inv = 1.0f / (a + b), wa = a * inv, wb = b * inv;
    for (int64_t i = 0; i < dv; i++) acc->o[i] = acc->o[i] * wa + o[i] * wb;
    acc->max = m;
    acc->sum = a + b;
}

void adil_att_fold_sink(adil_att_state *acc, float sink, int64_t dv) {
    const float m = sink > acc->max ? sink : acc->max;
    const float a = acc->sum * expf(acc->max - m);
    const float wa = a / (a + expf(sink - m));
    for (int64_t i = 0; i < dv; i++) acc->o[i] *= wa;
}

static const adil_att_fn LEVELS[ADIL_CPU_LEVEL_COUNT] = {
    [ADIL_CPU_SCALAR] = attend_scalar,
#if defined(__x86_64__)
    [ADIL_CPU_AVX2] = adil_attend_avx2,
    [ADIL_CPU_AVX512] = adil_attend_avx512,
#else
    [ADIL_CPU_AVX2] = attend_scalar,
    [ADIL_CPU_AVX512] = attend_scalar,
#endif
};

adil_att_fn adil_attention_kernel_at(int level) {
    return level >= 0 && level < ADIL_CPU_LEVEL_COUNT ? LEVELS[level] : NULL;
}

adil_att_fn adil_attention_kernel(void) { return LEVELS[adil_cpu_level_selected()]; }
