/*
 * ops.c — RMS norm, RoPE, attention and the output head (see ops.h).  The
 * row kernels are compute/activation.h's and compute/attention.h's, per CPU
 * level; this file cuts the work into chunks for the pool.
 */
#include "models/ops.h"

#include "compute/activation.h"
#include "compute/attention.h"
#include "compute/matmul.h"

#include <math.h>
#include <string.h>

typedef struct norm_job {
    adil_rmsnorm_fn norm;
    float *out;
    const float *x, *w;
    int64_t n, rows_per_chunk, T;
    float eps;
} norm_job;

static void norm_chunk(void *p, int64_t c, int ith) {
    (void)ith;
    const norm_job *j = p;
    const int64_t t1 = (c + 1) * j->rows_per_chunk < j->T ? (c + 1) * j->rows_per_chunk : j->T;
    for (int64_t t = c * j->rows_per_chunk; t < t1; t++)
        j->norm(j->out + t * j->n, j->x + t * j->n, j->w, j->n, j->eps);
}

void adil_rmsnorm_rows(adil_pool *pool, float *out, const float *x, const float *w, int64_t T, int64_t n,
                       float eps) {
    /* rows in chunks of about 16k floats: a single token's rows stay on the caller */
    int64_t per = 16384 / (n > 0 ? n : 1);
    per = per < 1 ? 1 : per;
    norm_job j = {adil_act_kernels_get()->rmsnorm, out, x, w, n, per, T, eps};
    adil_pool_for(pool, (T + per - 1) / per, norm_chunk, &j);
}

void adil_add(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

void adil_add_bias(float *x, const float *b, int64_t T, int64_t n) {
    for (int64_t t = 0; t < T; t++) adil_add(x + t * n, b, n);
}

void adil_scale(float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

/* ---- RoPE ------------------------------------------------------------------ */

#define ADIL_MAX_ROT 1024 /* n_rot is checked against this at load */

static bool same_rope(const adil_rope *a, const adil_rope *b) {
    return a->n_rot == b->n_rot && a->base == b->base && a->scale == b->scale && a->neox == b->neox &&
           a->factors == b->factors && a->yarn == b->yarn;
}

static bool yarn_on(const adil_yarn *y) { return y && (y->ext_factor != 0.0f || y->attn_factor != 1.0f); }

/* The dim where a frequency turns `rotations` times over n_ctx_orig
 * positions (in float, as ggml computes it, so that floor / ceil agree;
 * the rest is in double). */
static float yarn_corr_dim(int64_t n_rot, int64_t n_ctx_orig, float rotations, float base) {
    return (float)n_rot * logf((float)n_ctx_orig / (rotations * 2.0f * 3.14159265358979f)) /
           (2.0f * logf(base));
}

/* YaRN's per-frequency multipliers of the unscaled angle (transformer.h):
 * mult[i] = scale (1 - r_i) + r_i; returns the factor of cos and sin. */
static float yarn_multipliers(const adil_rope *rope, double *mult) {
    const adil_yarn *y = rope->yarn;
    const float lo = fmaxf(0.0f, floorf(yarn_corr_dim(rope->n_rot, y->n_ctx_orig, y->beta_fast, rope->base)));
    const float hi = fminf((float)(rope->n_rot - 1),
                           ceilf(yarn_corr_dim(rope->n_rot, y->n_ctx_orig, y->beta_slow, rope->base)));
    for (int64_t i = 0; i < rope->n_rot / 2; i++) {
        const double ramp = 1.0 - fmin(1.0, fmax(0.0, ((double)i - lo) / fmax(0.001, (double)hi - lo)));
        const double r = ramp * y->ext_factor;
        mult[i] = rope->scale * (1.0 - r) + r;
    }
    return y->ext_factor != 0.0f ? y->attn_factor * (1.0f + 0.1f * logf(1.0f / rope->scale)) : y->attn_factor;
}

/* inv_freq[i] (i < n_rot / 2): the angle frequency i turns by per position
 * (double: exact angles even at long positions); returns the magnitude of
 * cos and sin (1 without YaRN). */
static double rope_frequencies(const adil_rope *rope, double *inv_freq) {
    const int64_t half = rope->n_rot / 2;
    /* base^(-2i/n_rot), times the scale */
    for (int64_t i = 0; i < half; i++) {
        inv_freq[i] = rope->scale * pow((double)rope->base, -2.0 * (double)i / (double)rope->n_rot);
        if (rope->factors) inv_freq[i] /= rope->factors[i];
    }
    if (!yarn_on(rope->yarn)) return 1.0;
    /* YaRN: each frequency's own mix of the scaled and the unscaled angle */
    double mult[ADIL_MAX_ROT / 2];
    const float mscale = yarn_multipliers(rope, mult);
    for (int64_t i = 0; i < half; i++) {
        inv_freq[i] = pow((double)rope->base, -2.0 * (double)i / (double)rope->n_rot) * mult[i];
        if (rope->factors) inv_freq[i] /= rope->factors[i];
    }
    return mscale;
}

/* The cos / sin table of `rope` for positions pos0 .. pos0 + T - 1: found in
 * fw->rope (made by an earlier layer of this batch) or made now in the slot
 * used least recently. */
static const adil_rope_table *rope_table(adil_forward *fw, int64_t T, int64_t pos0, const adil_rope *rope) {
    adil_rope_table *tab = NULL;
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        adil_rope_table *c = &fw->rope[i];
        if (c->valid && c->pos0 == pos0 && c->T == T && same_rope(&c->cfg, rope)) tab = c;
    }
    fw->rope_clock++;
    if (tab != NULL) {
        tab->used = fw->rope_clock;
        return tab;
    }
    tab = &fw->rope[0];
    for (int i = 1; i < ADIL_ROPE_TABLES; i++)
        if (fw->rope[i].used < tab->used) tab = &fw->rope[i];
    const int64_t half = rope->n_rot / 2;
    double inv_freq[ADIL_MAX_ROT / 2];
    const double mscale = rope_frequencies(rope, inv_freq);
    for (int64_t t = 0; t < T; t++) {
        for (int64_t i = 0; i < half; i++) {
            const double theta = (double)(pos0 + t) * inv_freq[i];
            tab->cs[t * half + i] = (float)(cos(theta) * mscale);
            tab->sn[t * half + i] = (float)(sin(theta) * mscale);
        }
    }
    tab->cfg = *rope;
    tab->pos0 = pos0;
    tab->T = T;
    tab->valid = true;
    tab->used = fw->rope_clock;
    return tab;
}

void adil_rope_rows(adil_forward *fw, float *x, int64_t T, int64_t row_width, int64_t n_heads,
                    int64_t head_dim, int64_t pos0, const adil_rope *rope) {
    const adil_rope_table *tab = rope_table(fw, T, pos0, rope);
    const int64_t half = rope->n_rot / 2;
    const int64_t step = rope->neox ? 1 : 2, off = rope->neox ? half : 1;
    for (int64_t t = 0; t < T; t++) {
        const float *cs = tab->cs + t * half, *sn = tab->sn + t * half;
        for (int64_t h = 0; h < n_heads; h++) {
            float *v = x + t * row_width + h * head_dim;
            /* neox pairs (i, i + half), otherwise (2i, 2i + 1) */
            for (int64_t i = 0; i < half; i++) {
                const float x0 = v[i * step], x1 = v[i * step + off];
                v[i * step] = x0 * cs[i] - x1 * sn[i];
                v[i * step + off] = x0 * sn[i] + x1 * cs[i];
            }
        }
    }
}

/* ---- attention ---------------------------------------------------------------- */

/* The query rows of a batch are cut into tiles of the attention kernel
 * (compute/attention.h): the heads of one KV group for a few consecutive
 * tokens (group × tokens <= ADIL_ATT_MAX_ROWS rows), so each cached key and
 * value is read once for all of them.  Tiles are handed out to the threads
 * one at a time, the latest tokens (the most positions) first.  A row whose
 * range is longer than ADIL_ATT_PART is computed in parts, folded in order
 * (attention.h); in a decode those parts are the work items, so that the
 * threads share one long range.  Every row is computed the same way whoever
 * runs it and whichever tile it is in, so the result does not depend on the
 * number of threads nor on the batch (adil_pool_for hands out one item per
 * chunk). */
typedef struct att_job {
    adil_forward *fw;
    const adil_hparams *hp;
    int64_t il, T, pos0, window;
    float scale;
    const float *sinks; /* (n_head) or NULL */
    const float *q;
    float *out;
    adil_att_fn kernel;
    int64_t heads_per_tile; /* <= group, divides into it in chunks */
    int64_t tokens_per_tile;
    int64_t head_chunks; /* chunks of heads_per_tile per KV group */
    int64_t token_blocks;
    int64_t n_tiles;
    int64_t n_parts; /* a decode cut into parts: parts per tile (items n_tiles * n_parts); else 1 */
} att_job;

/* Where part k of query head h of a decode goes in fw->att_parts. */
static float *decode_part(const att_job *j, int64_t h, int64_t k) {
    return j->fw->att_parts + (size_t)(h * j->n_parts + k) * (size_t)ADIL_ATT_PART_FLOATS(j->hp);
}

/* First position a row at position p sees. */
static int64_t first_seen(const att_job *j, int64_t p) {
    return (j->window > 0 && p - j->window + 1 > 0) ? p - j->window + 1 : 0;
}

static bool is_long(int64_t first, int64_t last) { return last - first + 1 > ADIL_ATT_PART; }

/* Tile `item` % n_tiles: KV head, chunk of its query heads (from *first_head
 * on), block of tokens (the last blocks first), with every row's query,
 * output and range. */
static adil_att_tile att_tile_of(const att_job *j, int64_t item, float *scratch, int64_t *first_head) {
    const adil_hparams *hp = j->hp;
    const adil_kv_cache *kv = &j->fw->kv;
    const int64_t group = hp->n_head / hp->n_head_kv;
    const int64_t per_block = hp->n_head_kv * j->head_chunks;
    const int64_t tb = j->token_blocks - 1 - item / per_block;
    const int64_t g = item % per_block / j->head_chunks, hc = item % j->head_chunks;
    const int64_t t0 = tb * j->tokens_per_tile;
    const int64_t t1 = t0 + j->tokens_per_tile < j->T ? t0 + j->tokens_per_tile : j->T;
    const int64_t h0 = g * group + hc * j->heads_per_tile;
    const int64_t h1 = h0 + j->heads_per_tile < (g + 1) * group ? h0 + j->heads_per_tile : (g + 1) * group;
    *first_head = h0;
    adil_att_tile t = {
        .n_rows = 0,
        .kv_type = kv->type,
        .k = adil_kv_at(adil_kv_k(kv, j->il, 0), (size_t)(g * hp->head_dim), kv->type),
        .k_stride = (size_t)kv->k_width,
        .v = adil_kv_at(adil_kv_v(kv, j->il, 0), (size_t)(g * hp->head_dim_v), kv->type),
        .v_stride = (size_t)kv->v_width,
        .ring = kv->rows[j->il],
        .head_dim = hp->head_dim,
        .head_dim_v = hp->head_dim_v,
        .scale = j->scale,
        .has_sinks = j->sinks != NULL,
        .scratch = scratch,
    };
    for (int64_t tt = t0; tt < t1; tt++) {
        const int64_t p = j->pos0 + tt;
        for (int64_t h = h0; h < h1; h++) {
            t.q[t.n_rows] = j->q + (tt * hp->n_head + h) * hp->head_dim;
            t.o[t.n_rows] = j->out + (tt * hp->n_head + h) * hp->head_dim_v;
            t.first[t.n_rows] = first_seen(j, p);
            t.last[t.n_rows] = p;
            if (j->sinks) t.sink[t.n_rows] = j->sinks[h];
            t.n_rows++;
        }
    }
    return t;
}

/* The rows of t whose range is long (want_long) or not, into sub (the same
 * keys and values), their ranges cut to [lo, hi]; idx[i]: sub's row i in t.
 * sub gets no rows when none is selected. */
static void sub_tile(const adil_att_tile *t, bool want_long, int64_t lo, int64_t hi, adil_att_tile *sub,
                     int idx[ADIL_ATT_MAX_ROWS]) {
    *sub = *t;
    sub->n_rows = 0;
    for (int r = 0; r < t->n_rows; r++) {
        const int64_t f = t->first[r] > lo ? t->first[r] : lo, l = t->last[r] < hi ? t->last[r] : hi;
        if (is_long(t->first[r], t->last[r]) != want_long || f > l) continue;
        const int i = sub->n_rows++;
        sub->q[i] = t->q[r];
        sub->o[i] = t->o[r];
        sub->first[i] = f;
        sub->last[i] = l;
        sub->sink[i] = t->sink[r];
        idx[i] = r;
    }
}

/* The tile of part k (positions [k, k + 1) * ADIL_ATT_PART) of t's long
 * rows: no sinks (the fold adds them), each row's max and sum into pmax and
 * psum; the caller points its outputs at the part's rows. */
static void part_tile(const adil_att_tile *t, int64_t k, adil_att_tile *sub, int idx[ADIL_ATT_MAX_ROWS],
                      float pmax[ADIL_ATT_MAX_ROWS], float psum[ADIL_ATT_MAX_ROWS]) {
    sub_tile(t, true, k * ADIL_ATT_PART, k * ADIL_ATT_PART + ADIL_ATT_PART - 1, sub, idx);
    sub->has_sinks = false;
    sub->part_max = pmax;
    sub->part_sum = psum;
}

/* A batch's tile: its short rows at once, its long ones part by part,
 * each part folded into the row's output as soon as it is computed. */
static void att_batch_tile(const att_job *j, const adil_att_tile *t, float *part_rows) {
    int64_t lo = INT64_MAX, hi = -1; /* the long rows' positions */
    for (int r = 0; r < t->n_rows; r++) {
        if (!is_long(t->first[r], t->last[r])) continue;
        lo = t->first[r] < lo ? t->first[r] : lo;
        hi = t->last[r] > hi ? t->last[r] : hi;
    }
    if (hi < 0) {
        j->kernel(t);
        return;
    }
    adil_att_tile sub;
    int idx[ADIL_ATT_MAX_ROWS];
    sub_tile(t, false, 0, INT64_MAX, &sub, idx);
    if (sub.n_rows > 0) j->kernel(&sub);
    const int64_t dv = j->hp->head_dim_v, stride = ADIL_ATT_PART_FLOATS(j->hp);
    adil_att_state acc[ADIL_ATT_MAX_ROWS];
    for (int r = 0; r < t->n_rows; r++) acc[r] = (adil_att_state){t->o[r], 0.0f, 0.0f};
    float part_max[ADIL_ATT_MAX_ROWS], part_sum[ADIL_ATT_MAX_ROWS];
    for (int64_t k = lo / ADIL_ATT_PART; k <= hi / ADIL_ATT_PART; k++) {
        part_tile(t, k, &sub, idx, part_max, part_sum);
        if (sub.n_rows == 0) continue;
        for (int i = 0; i < sub.n_rows; i++) sub.o[i] = part_rows + (size_t)(i * stride);
        j->kernel(&sub);
        for (int i = 0; i < sub.n_rows; i++)
            adil_att_fold(&acc[idx[i]], sub.o[i], part_max[i], part_sum[i], dv);
    }
    for (int r = 0; r < t->n_rows; r++)
        if (is_long(t->first[r], t->last[r]) && t->has_sinks) adil_att_fold_sink(&acc[r], t->sink[r], dv);
}

/* Part k (counted from the range's first) of a decode's tile, whose rows
 * are heads h0 .. and all long with the same range: into fw->att_parts,
 * folded by adil_attention once all parts are done. */
static void att_decode_part(const att_job *j, const adil_att_tile *t, int64_t h0, int64_t k) {
    const int64_t dv = j->hp->head_dim_v;
    adil_att_tile sub;
    int idx[ADIL_ATT_MAX_ROWS];
    float part_max[ADIL_ATT_MAX_ROWS], part_sum[ADIL_ATT_MAX_ROWS];
    part_tile(t, t->first[0] / ADIL_ATT_PART + k, &sub, idx, part_max, part_sum);
    for (int i = 0; i < sub.n_rows; i++) sub.o[i] = decode_part(j, h0 + idx[i], k);
    j->kernel(&sub);
    for (int i = 0; i < sub.n_rows; i++) {
        sub.o[i][dv] = part_max[i];
        sub.o[i][dv + 1] = part_sum[i];
    }
}

static void att_chunk(void *p, int64_t item, int ith) {
    const att_job *j = p;
    float *scratch = j->fw->scores + (size_t)ith * ADIL_ATT_MAX_ROWS * (size_t)j->fw->kv.n_ctx;
    int64_t h0;
    const adil_att_tile t = att_tile_of(j, item / j->n_parts, scratch, &h0);
    if (j->n_parts > 1) {
        att_decode_part(j, &t, h0, item % j->n_parts);
        return;
    }
    att_batch_tile(j, &t,
                   j->fw->att_part_rows + (size_t)ith * ADIL_ATT_MAX_ROWS * ADIL_ATT_PART_FLOATS(j->hp));
}

/* A decode's parts folded into each head's output, in part order. */
static void fold_decode_parts(const att_job *j) {
    const int64_t dv = j->hp->head_dim_v;
    for (int64_t h = 0; h < j->hp->n_head; h++) {
        adil_att_state acc = {j->out + h * dv, 0.0f, 0.0f};
        for (int64_t k = 0; k < j->n_parts; k++) {
            const float *part = decode_part(j, h, k);
            adil_att_fold(&acc, part, part[dv], part[dv + 1], dv);
        }
        if (j->sinks) adil_att_fold_sink(&acc, j->sinks[h], dv);
    }
}

void adil_attention(adil_forward *fw, const adil_hparams *hp, int64_t il, const float *q, float *out,
                    int64_t T, int64_t pos0, int64_t window, float scale, const float *sinks) {
    const int64_t group = hp->n_head / hp->n_head_kv;
    att_job j = {.fw = fw,
                 .hp = hp,
                 .il = il,
                 .T = T,
                 .pos0 = pos0,
                 .window = window,
                 .scale = scale,
                 .sinks = sinks,
                 .q = q,
                 .out = out,
                 .kernel = adil_attention_kernel(),
                 .n_parts = 1};
    j.heads_per_tile = group < ADIL_ATT_MAX_ROWS ? group : ADIL_ATT_MAX_ROWS;
    const int64_t first = first_seen(&j, pos0);
    if (T == 1 && is_long(first, pos0)) { /* decode of a long range: the parts are the items */
        j.n_parts = pos0 / ADIL_ATT_PART - first / ADIL_ATT_PART + 1;
    } else if (T == 1) { /* decode: split a group's heads so every thread gets a tile */
        const int64_t per_kv = adil_pool_n_threads(fw->pool) / hp->n_head_kv;
        const int64_t split = per_kv > 1 ? (group + per_kv - 1) / per_kv : group;
        j.heads_per_tile = split < j.heads_per_tile ? split : j.heads_per_tile;
    }
    j.tokens_per_tile = ADIL_ATT_MAX_ROWS / j.heads_per_tile;
    j.head_chunks = (group + j.heads_per_tile - 1) / j.heads_per_tile;
    j.token_blocks = (T + j.tokens_per_tile - 1) / j.tokens_per_tile;
    j.n_tiles = j.token_blocks * hp->n_head_kv * j.head_chunks;
    adil_pool_for(fw->pool, j.n_tiles * j.n_parts, att_chunk, &j);
    if (j.n_parts > 1) fold_decode_parts(&j);
}

/* ---- output ------------------------------------------------------------------------ */

void adil_softcap(float *logits, int64_t n, float cap) {
    for (int64_t i = 0; i < n; i++) logits[i] = cap * tanhf(logits[i] / cap);
}

adil_status adil_output_logits(const adil_transformer *m, adil_forward *fw, float *x, int64_t T,
                               float *logits, bool all_logits) {
    const adil_hparams *hp = &m->hp;
    if (!logits) return ADIL_OK; /* a prefill batch whose logits nobody reads */
    /* only the rows whose logits are wanted */
    float *rows = all_logits ? x : x + (T - 1) * hp->n_embd;
    const int64_t n = all_logits ? T : 1;
    adil_rmsnorm_rows(fw->pool, rows, rows, m->output_norm, n, hp->n_embd, hp->rms_eps);
    const adil_mm_group head = {.n = 1, .w = {&m->output}, .y = {logits}};
    adil_status st = adil_matmul_group(fw->pool, &head, rows, n, fw->mm_scratch, fw->mm_scratch_size);
    if (st != ADIL_OK) return st;
    if (hp->final_softcap > 0.0f) adil_softcap(logits, n * hp->n_vocab, hp->final_softcap);
    return ADIL_OK;
}
