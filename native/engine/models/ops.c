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
 * one at a time, the latest tokens (the most positions) first; every tile is
 * computed the same way whoever runs it, so the result does not depend on the
 * number of threads (adil_pool_for hands out one tile per chunk). */
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
} att_job;

/* Tile `item`: KV head, chunk of its query heads, block of tokens (the
 * last blocks first). */
static void att_tile(const att_job *j, int64_t item, float *scratch) {
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
        const int64_t first = (j->window > 0 && p - j->window + 1 > 0) ? p - j->window + 1 : 0;
        for (int64_t h = h0; h < h1; h++) {
            t.q[t.n_rows] = j->q + (tt * hp->n_head + h) * hp->head_dim;
            t.o[t.n_rows] = j->out + (tt * hp->n_head + h) * hp->head_dim_v;
            t.first[t.n_rows] = first;
            t.last[t.n_rows] = p;
            if (j->sinks) t.sink[t.n_rows] = j->sinks[h];
            t.n_rows++;
        }
    }
    j->kernel(&t);
}

static void att_chunk(void *p, int64_t item, int ith) {
    const att_job *j = p;
    att_tile(j, item, j->fw->scores + (size_t)ith * ADIL_ATT_MAX_ROWS * (size_t)j->fw->kv.n_ctx);
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
                 .kernel = adil_attention_kernel()};
    j.heads_per_tile = group < ADIL_ATT_MAX_ROWS ? group : ADIL_ATT_MAX_ROWS;
    if (T == 1) { /* decode: split a group's heads so every thread gets a tile */
        const int64_t per_kv = adil_pool_n_threads(fw->pool) / hp->n_head_kv;
        const int64_t split = per_kv > 1 ? (group + per_kv - 1) / per_kv : group;
        j.heads_per_tile = split < j.heads_per_tile ? split : j.heads_per_tile;
    }
    j.tokens_per_tile = ADIL_ATT_MAX_ROWS / j.heads_per_tile;
    j.head_chunks = (group + j.heads_per_tile - 1) / j.heads_per_tile;
    j.token_blocks = (T + j.tokens_per_tile - 1) / j.tokens_per_tile;
    j.n_tiles = j.token_blocks * hp->n_head_kv * j.head_chunks;
    adil_pool_for(fw->pool, j.n_tiles, att_chunk, &j);
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
