/*
 * test_attention.c — the attention tile kernel of every CPU level this
 * machine supports against the scalar reference (compute/attention.h):
 *   - random tiles: 1..16 rows with their own visible ranges (causal blocks,
 *     sliding windows, arbitrary), head dims that are and are not multiples
 *     of the vector width, padded K/V strides, score magnitudes from tiny to
 *     ones that need the max subtraction; each output element within
 *     ADIL_ATT_MAX_ERROR * max |v| * (1 + max |score|) of the reference;
 *   - determinism: a row's output is bit for bit the same computed alone, or
 *     in a tile whose rows are reversed (so it sits in another register
 *     slot and shares its keys with other rows);
 *   - nothing outside the output rows is written, positions outside every
 *     range are never read (they hold NaN);
 *   - attention sinks (a per-row logit in the softmax denominator): the same
 *     budget with the sink counted as a score, sinks below, among and above
 *     the scores; the scalar reference against the definition in double; a
 *     sink of -inf gives the bits of no sink at every level;
 *   - a ring buffer (kv_cache.h's sliding-window rings): the tile's keys and
 *     values moved to row p % ring of a ring just large enough (or a little
 *     larger) give the same bits as in place, at every level;
 *   - all of it with keys and values stored as f32, as IEEE halves (the
 *     KV cache's default) for 4 of the 16 tile heights (the sanitizer run's
 *     time), and as Q8_0 blocks for 3 others where the head dims are whole
 *     blocks: with halves or blocks, every level reads the same rounded
 *     elements as the reference, so the same budget holds.  Q8_0 blocks
 *     outside every range have a NaN scale (never read either).
 */
#include "compute/attention.h"
#include "compute/cpu_level.h"
#include "compute/kernels_scalar.h"
#include "compute/weight_types.h"
#include "test_util.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_CTX 300
#define GUARD 8 /* floats of sentinel after each output row */

static uint32_t rng_state = 777u;
static uint32_t rnd_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}
static float rnd(float lo, float hi) { return lo + (hi - lo) * (float)(rnd_u32() >> 8) / 16777216.0f; }
static int64_t rnd_int(int64_t lo, int64_t hi) { /* [lo, hi] */
    return lo + (int64_t)(rnd_u32() % (uint32_t)(hi - lo + 1));
}

typedef struct setup {
    int64_t hd, hdv, k_stride, v_stride;
    float *k, *v;        /* N_CTX rows; NaN outside every range of the tile */
    adil_fp16 *kh, *vh;  /* the same as halves (k and v then hold their values) */
    block_q8_0 *kq, *vq; /* or as Q8_0 blocks, rows padded to whole blocks */
    float *q;            /* ADIL_ATT_MAX_ROWS rows of hd */
    float *o;            /* ADIL_ATT_MAX_ROWS rows of hdv + GUARD */
    float *scratch;
} setup;

static void setup_alloc(setup *s, int64_t hd, int64_t hdv) {
    s->hd = hd;
    s->hdv = hdv;
    s->k_stride = hd + rnd_int(0, 5);
    s->v_stride = hdv + rnd_int(0, 5);
    s->k = malloc(sizeof(float) * (size_t)(N_CTX * s->k_stride));
    s->v = malloc(sizeof(float) * (size_t)(N_CTX * s->v_stride));
    s->kh = malloc(sizeof(adil_fp16) * (size_t)(N_CTX * s->k_stride));
    s->vh = malloc(sizeof(adil_fp16) * (size_t)(N_CTX * s->v_stride));
    s->kq = malloc(sizeof(block_q8_0) * (size_t)(N_CTX * (s->k_stride / 32 + 1)));
    s->vq = malloc(sizeof(block_q8_0) * (size_t)(N_CTX * (s->v_stride / 32 + 1)));
    s->q = malloc(sizeof(float) * (size_t)(ADIL_ATT_MAX_ROWS * hd));
    s->o = malloc(sizeof(float) * (size_t)(ADIL_ATT_MAX_ROWS * (hdv + GUARD)));
    s->scratch = malloc(sizeof(float) * (size_t)(ADIL_ATT_MAX_ROWS * N_CTX));
}

static void setup_free(setup *s) {
    free(s->k);
    free(s->v);
    free(s->kh);
    free(s->vh);
    free(s->kq);
    free(s->vq);
    free(s->q);
    free(s->o);
    free(s->scratch);
}

/* x rounded to a half, in place, and that half into *h. */
static void to_half(float *x, adil_fp16 *h) {
    *h = adil_f32_to_fp16(*x);
    *x = adil_fp16_to_f32(*h);
}

/* Points t at K/V stored as halves: s->k and s->v rounded to halves, and
 * those halves in s->kh and s->vh (NaN stays NaN). */
static void use_halves(setup *s, adil_att_tile *t) {
    for (int64_t i = 0; i < N_CTX * s->k_stride; i++) to_half(&s->k[i], &s->kh[i]);
    for (int64_t i = 0; i < N_CTX * s->v_stride; i++) to_half(&s->v[i], &s->vh[i]);
    t->kv_type = ADIL_KV_F16;
    t->k = s->kh;
    t->v = s->vh;
}

/* Rows of x (n_rows, stride) as Q8_0 rows of q_stride elements (stride
 * rounded up to whole blocks) in q: a block whose first element is NaN (out
 * of every range, or row padding) gets a NaN scale, the others are
 * quantized and x takes their values as the kernels widen them. */
static size_t to_q8_0(float *x, int64_t stride, block_q8_0 *q) {
    const int64_t q_stride = (stride + 31) / 32 * 32, nb = q_stride / 32;
    for (int64_t p = 0; p < N_CTX; p++)
        for (int64_t b = 0; b < nb; b++) {
            float *xb = x + p * stride + b * 32;
            block_q8_0 *qb = q + p * nb + b;
            if (b * 32 + 32 > stride || isnan(xb[0])) {
                memset(qb, 0, sizeof *qb);
                qb->d = 0x7E00; /* NaN */
                continue;
            }
            adil_quantize_row_q8_0(xb, qb, 32);
            adil_dequantize_row_q8_0(qb, xb, 32);
        }
    return (size_t)q_stride;
}

/* Points t at K/V stored as Q8_0 blocks (s->k and s->v take their values). */
static void use_q8_0(setup *s, adil_att_tile *t) {
    t->k_stride = to_q8_0(s->k, s->k_stride, s->kq);
    t->v_stride = to_q8_0(s->v, s->v_stride, s->vq);
    t->kv_type = ADIL_KV_Q8_0;
    t->k = s->kq;
    t->v = s->vq;
}

/* Fills the tile's rows: ranges of the given kind, q/k/v of magnitude qmag,
 * with_sinks: a sink per row of about the scores' size or far above, and
 * K/V stored as `ty`. */
static void make_tile(setup *s, adil_att_tile *t, int n_rows, int kind, float qmag, bool with_sinks,
                      adil_kv_type ty) {
    memset(t, 0, sizeof *t);
    t->n_rows = n_rows;
    int64_t lo = N_CTX, hi = 0;
    const int64_t p0 = rnd_int(0, N_CTX - 1 - n_rows), window = rnd_int(1, 80);
    for (int r = 0; r < n_rows; r++) {
        int64_t first, last;
        if (kind == 0) { /* causal: 4 heads per token, consecutive tokens */
            last = p0 + r / 4;
            first = 0;
        } else if (kind == 1) { /* sliding window */
            last = p0 + r / 4;
            first = last - window + 1 > 0 ? last - window + 1 : 0;
        } else { /* anything */
            first = rnd_int(0, N_CTX - 1);
            last = rnd_int(first, N_CTX - 1);
        }
        t->first[r] = first;
        t->last[r] = last;
        lo = first < lo ? first : lo;
        hi = last > hi ? last : hi;
        t->q[r] = s->q + r * s->hd;
        t->o[r] = s->o + r * (s->hdv + GUARD);
        t->sink[r] = r % 5 == 4 ? rnd(5.0f, 30.0f) : rnd(-3.0f, 3.0f) * (qmag > 1.0f ? qmag : 1.0f);
    }
    t->has_sinks = with_sinks;
    for (int64_t i = 0; i < ADIL_ATT_MAX_ROWS * s->hd; i++) s->q[i] = rnd(-qmag, qmag);
    for (int64_t p = 0; p < N_CTX; p++) {
        for (int64_t i = 0; i < s->k_stride; i++)
            s->k[p * s->k_stride + i] = p >= lo && p <= hi && i < s->hd ? rnd(-1.0f, 1.0f) : NAN;
        for (int64_t i = 0; i < s->v_stride; i++)
            s->v[p * s->v_stride + i] = p >= lo && p <= hi && i < s->hdv ? rnd(-2.0f, 2.0f) : NAN;
    }
    for (int64_t i = 0; i < ADIL_ATT_MAX_ROWS * (s->hdv + GUARD); i++) s->o[i] = -7.0f;
    t->k = s->k;
    t->k_stride = (size_t)s->k_stride;
    t->v = s->v;
    t->v_stride = (size_t)s->v_stride;
    t->head_dim = s->hd;
    t->head_dim_v = s->hdv;
    t->scale = 1.0f / sqrtf((float)s->hd);
    t->scratch = s->scratch;
    if (ty == ADIL_KV_F16) use_halves(s, t);
    if (ty == ADIL_KV_Q8_0) use_q8_0(s, t);
}

/* out[r] (copies of the tile's outputs) after running kernel on t. */
static void run(adil_att_fn kernel, const adil_att_tile *t, const setup *s, float *out) {
    for (int64_t i = 0; i < ADIL_ATT_MAX_ROWS * (s->hdv + GUARD); i++) s->o[i] = -7.0f;
    kernel(t);
    for (int r = 0; r < t->n_rows; r++) {
        memcpy(out + r * s->hdv, t->o[r], sizeof(float) * (size_t)s->hdv);
        for (int i = 0; i < GUARD; i++) CHECK(t->o[r][s->hdv + i] == -7.0f);
    }
}

static double max_abs_v(const setup *s, int64_t first, int64_t last) {
    double m = 0.0;
    for (int64_t p = first; p <= last; p++)
        for (int64_t i = 0; i < s->hdv; i++) m = fmax(m, fabs(s->v[p * s->v_stride + i]));
    return m;
}

/* Largest |q·k| * scale of row r (its sink counted as a score): rounding
 * of the scores moves each weight e^(s - max) by about ulp(1) * |s - max|,
 * so the budget scales with it. */
static double max_abs_score(const setup *s, const adil_att_tile *t, int r) {
    double m = t->has_sinks ? fabs(t->sink[r]) : 0.0;
    for (int64_t p = t->first[r]; p <= t->last[r]; p++) {
        double d = 0.0;
        for (int64_t i = 0; i < t->head_dim; i++) d += (double)t->q[r][i] * s->k[p * s->k_stride + i];
        m = fmax(m, fabs(d * t->scale));
    }
    return m;
}

static double worst_seen[ADIL_CPU_LEVEL_COUNT];

/* a[i] == b[i] bit for bit, except that -0 and +0 count as the same: in a
 * tile, keys outside a row's range add 0 * v to its sums, which turns an
 * output of -0 (every weight underflowed) into +0. */
static bool same_values(const float *a, const float *b, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof(float)) != 0 && !(a[i] == 0.0f && b[i] == 0.0f)) return false;
    return true;
}

static void check_level(int level, setup *s, int n_rows, int kind, float qmag, bool with_sinks,
                        adil_kv_type ty) {
    adil_att_tile t;
    make_tile(s, &t, n_rows, kind, qmag, with_sinks, ty);
    const size_t n_out = (size_t)(ADIL_ATT_MAX_ROWS * s->hdv);
    float *ref = malloc(sizeof(float) * n_out), *got = malloc(sizeof(float) * n_out);
    float *alone = malloc(sizeof(float) * n_out);
    run(adil_attention_kernel_at(ADIL_CPU_SCALAR), &t, s, ref);
    run(adil_attention_kernel_at(level), &t, s, got);
    for (int r = 0; r < n_rows; r++) {
        const double vmax = max_abs_v(s, t.first[r], t.last[r]) * (1.0 + max_abs_score(s, &t, r));
        for (int64_t i = 0; i < s->hdv; i++) {
            const double err = fabs((double)got[r * s->hdv + i] - ref[r * s->hdv + i]);
            CHECK(err <= ADIL_ATT_MAX_ERROR * vmax);
            if (vmax > 0 && err / vmax > worst_seen[level]) worst_seen[level] = err / vmax;
        }
    }
    /* each row alone: the same values */
    for (int r = 0; r < n_rows; r++) {
        adil_att_tile one = t;
        one.n_rows = 1;
        one.q[0] = t.q[r];
        one.o[0] = t.o[r];
        one.first[0] = t.first[r];
        one.last[0] = t.last[r];
        one.sink[0] = t.sink[r];
        for (int64_t i = 0; i < ADIL_ATT_MAX_ROWS * (s->hdv + GUARD); i++) s->o[i] = -7.0f;
        adil_attention_kernel_at(level)(&one);
        CHECK(same_values(t.o[r], got + r * s->hdv, s->hdv));
    }
    /* rows reversed: the same bits for each row */
    adil_att_tile rev = t;
    for (int r = 0; r < n_rows; r++) {
        rev.q[r] = t.q[n_rows - 1 - r];
        rev.o[r] = t.o[n_rows - 1 - r];
        rev.first[r] = t.first[n_rows - 1 - r];
        rev.last[r] = t.last[n_rows - 1 - r];
        rev.sink[r] = t.sink[n_rows - 1 - r];
    }
    run(adil_attention_kernel_at(level), &rev, s, alone);
    for (int r = 0; r < n_rows; r++)
        CHECK(memcmp(alone + r * s->hdv, got + (n_rows - 1 - r) * s->hdv, sizeof(float) * (size_t)s->hdv) ==
              0);
    free(ref);
    free(got);
    free(alone);
}

/* The tile's K/V moved into a ring of rows (p in row p % ring): the same
 * bits as with the K/V in place. */
static void check_ring(int level, setup *s, int n_rows, int kind, adil_kv_type ty) {
    adil_att_tile t;
    make_tile(s, &t, n_rows, kind, 1.0f, kind == 1, ty);
    int64_t lo = t.first[0], hi = t.last[0];
    for (int r = 1; r < n_rows; r++) {
        lo = t.first[r] < lo ? t.first[r] : lo;
        hi = t.last[r] > hi ? t.last[r] : hi;
    }
    const int64_t ring = hi - lo + 1 + rnd_int(0, 3);
    const size_t krow = adil_kv_bytes_of(ty, t.k_stride), vrow = adil_kv_bytes_of(ty, t.v_stride);
    char *k = malloc((size_t)ring * krow), *v = malloc((size_t)ring * vrow);
    for (int64_t p = lo; p <= hi; p++) {
        memcpy(k + (size_t)(p % ring) * krow, (const char *)t.k + (size_t)p * krow, krow);
        memcpy(v + (size_t)(p % ring) * vrow, (const char *)t.v + (size_t)p * vrow, vrow);
    }
    const size_t n_out = (size_t)(ADIL_ATT_MAX_ROWS * s->hdv);
    float *flat = malloc(sizeof(float) * n_out), *ringed = malloc(sizeof(float) * n_out);
    run(adil_attention_kernel_at(level), &t, s, flat);
    adil_att_tile r = t;
    r.k = k;
    r.v = v;
    r.ring = ring;
    run(adil_attention_kernel_at(level), &r, s, ringed);
    CHECK(memcmp(flat, ringed, sizeof(float) * (size_t)n_rows * (size_t)s->hdv) == 0);
    free(k);
    free(v);
    free(flat);
    free(ringed);
}

/* The scalar reference with sinks against the definition, in double:
 * o = Σ e^(s_p - m) v_p / (Σ e^(s_p - m) + e^(sink - m)). */
static void check_sink_definition(setup *s, adil_kv_type ty) {
    adil_att_tile t;
    make_tile(s, &t, ADIL_ATT_MAX_ROWS, 2, 1.0f, true, ty);
    float *got = malloc(sizeof(float) * (size_t)(ADIL_ATT_MAX_ROWS * s->hdv));
    double *e = malloc(sizeof(double) * N_CTX);
    run(adil_attention_kernel_at(ADIL_CPU_SCALAR), &t, s, got);
    for (int r = 0; r < t.n_rows; r++) {
        double m = t.sink[r];
        for (int64_t p = t.first[r]; p <= t.last[r]; p++) {
            double d = 0.0;
            for (int64_t j = 0; j < s->hd; j++) d += (double)t.q[r][j] * s->k[p * s->k_stride + j];
            e[p] = d * t.scale;
            m = fmax(m, e[p]);
        }
        double sum = exp(t.sink[r] - m);
        for (int64_t p = t.first[r]; p <= t.last[r]; p++) sum += (e[p] = exp(e[p] - m));
        for (int64_t i = 0; i < s->hdv; i++) {
            double num = 0.0;
            for (int64_t p = t.first[r]; p <= t.last[r]; p++) num += e[p] * s->v[p * s->v_stride + i];
            CHECK(fabs(got[r * s->hdv + i] - num / sum) <= 1e-5 * max_abs_v(s, t.first[r], t.last[r]));
        }
    }
    free(e);
    free(got);
}

/* A sink of -inf takes no share: the bits of the same tile without sinks. */
static void check_minus_inf_sink(int level, setup *s, adil_kv_type ty) {
    adil_att_tile t;
    make_tile(s, &t, ADIL_ATT_MAX_ROWS, 0, 8.0f, false, ty);
    const size_t n_out = (size_t)(ADIL_ATT_MAX_ROWS * s->hdv);
    float *plain = malloc(sizeof(float) * n_out), *inf = malloc(sizeof(float) * n_out);
    run(adil_attention_kernel_at(level), &t, s, plain);
    t.has_sinks = true;
    for (int r = 0; r < t.n_rows; r++) t.sink[r] = -INFINITY;
    run(adil_attention_kernel_at(level), &t, s, inf);
    CHECK(memcmp(plain, inf, sizeof(float) * n_out) == 0);
    free(plain);
    free(inf);
}

int main(void) {
    const int best = adil_cpu_level_supported();
    const int64_t dims[][2] = {{1, 1}, {7, 5}, {16, 16}, {64, 64}, {80, 72}, {128, 96}, {256, 256}};
    const float mags[] = {0.01f, 1.0f, 8.0f, 40.0f};
    for (int level = 0; level <= best; level++) {
        CHECK(adil_attention_kernel_at(level) != NULL);
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; d++) {
            setup s;
            setup_alloc(&s, dims[d][0], dims[d][1]);
            const bool blocks = dims[d][0] % 32 == 0 && dims[d][1] % 32 == 0; /* Q8_0 can keep them */
            for (int n_rows = 1; n_rows <= ADIL_ATT_MAX_ROWS; n_rows++)
                for (int kind = 0; kind < 3; kind++)
                    for (size_t m = 0; m < sizeof mags / sizeof mags[0]; m++)
                        for (int sinks = 0; sinks < 2; sinks++) {
                            check_level(level, &s, n_rows, kind, mags[m], sinks, ADIL_KV_F32);
                            /* halves on 4 of the 16 tile heights (1, 6, 11, 16), Q8_0 on 3
                             * (3, 8, 13), to keep the sanitizer run in its time */
                            if (n_rows % 5 == 1)
                                check_level(level, &s, n_rows, kind, mags[m], sinks, ADIL_KV_F16);
                            if (n_rows % 5 == 3 && blocks)
                                check_level(level, &s, n_rows, kind, mags[m], sinks, ADIL_KV_Q8_0);
                        }
            for (int ty = ADIL_KV_F32; ty <= ADIL_KV_Q8_0; ty++) {
                if (ty == ADIL_KV_Q8_0 && !blocks) continue;
                if (level == ADIL_CPU_SCALAR) check_sink_definition(&s, (adil_kv_type)ty);
                check_minus_inf_sink(level, &s, (adil_kv_type)ty);
                for (int n_rows = 1; n_rows <= ADIL_ATT_MAX_ROWS; n_rows += 5)
                    for (int kind = 0; kind < 3; kind++)
                        check_ring(level, &s, n_rows, kind, (adil_kv_type)ty);
            }
            setup_free(&s);
        }
        printf("level %s: max error %.3g of max |v| (1 + max |score|) (budget %.3g)\n",
               adil_cpu_level_string(level), worst_seen[level], ADIL_ATT_MAX_ERROR);
    }
    CHECK(adil_attention_kernel_at(-1) == NULL && adil_attention_kernel_at(ADIL_CPU_LEVEL_COUNT) == NULL);
    return test_report("test_attention");
}
