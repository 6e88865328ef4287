/*
 * ops.c — RMS norm, RoPE, gated activations, attention and the output head
 * (see ops.h).  Plain loops; the heavy work of a forward pass is in the
 * matrix products, these run in a small fraction of its time.
 */
#include "models/ops.h"

#include "compute/activation.h"
#include "compute/attention.h"

#include <stdalign.h>
#include <stdatomic.h>

#include <math.h>
#include <string.h>

void adil_rmsnorm_rows(float *out, const float *x, const float *w, int64_t T, int64_t n, float eps) {
    for (int64_t t = 0; t < T; t++) {
        const float *xr = x + t * n;
        float *o = out + t * n;
        double ss = 0.0; /* double: a 640..8192-term sum of squares keeps its digits */
        for (int64_t i = 0; i < n; i++) ss += (double)xr[i] * xr[i];
        const float r = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
        for (int64_t i = 0; i < n; i++) o[i] = xr[i] * r * w[i];
    }
}

void adil_add(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

void adil_scale(float *x, float s, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] *= s;
}

/* ---- RoPE ------------------------------------------------------------------ */

#define ADIL_MAX_ROT 1024 /* n_rot is checked against this at load */

void adil_rope_rows(float *x, int64_t T, int64_t row_width, int64_t n_heads, int64_t head_dim,
                    int64_t pos0, const adil_rope *rope) {
    const int64_t half = rope->n_rot / 2;
    double inv_freq[ADIL_MAX_ROT / 2];
    float cs[ADIL_MAX_ROT / 2], sn[ADIL_MAX_ROT / 2];
    /* frequency i turns by base^(-2i/n_rot) per position (double: exact
     * angles even at long positions) */
    for (int64_t i = 0; i < half; i++) {
        inv_freq[i] = rope->scale * pow((double)rope->base, -2.0 * (double)i / (double)rope->n_rot);
        if (rope->factors) inv_freq[i] /= rope->factors[i];
    }
    for (int64_t t = 0; t < T; t++) {
        /* the angles of this position, shared by every head */
        for (int64_t i = 0; i < half; i++) {
            const double theta = (double)(pos0 + t) * inv_freq[i];
            cs[i] = (float)cos(theta);
            sn[i] = (float)sin(theta);
        }
        for (int64_t h = 0; h < n_heads; h++) {
            float *v = x + t * row_width + h * head_dim;
            for (int64_t i = 0; i < half; i++) {
                const int64_t a = rope->neox ? i : 2 * i;
                const int64_t b = rope->neox ? i + half : 2 * i + 1;
                const float x0 = v[a], x1 = v[b];
                v[a] = x0 * cs[i] - x1 * sn[i];
                v[b] = x0 * sn[i] + x1 * cs[i];
            }
        }
    }
}

/* ---- gated activations ------------------------------------------------------ */

typedef struct act_job {
    adil_glu_fn glu;
    float *gate;
    const float *up;
    int64_t n;
} act_job;

static void act_worker(void *p, int ith, int nth) {
    const act_job *j = p;
    int64_t b, e;
    adil_pool_split(j->n, 64, ith, nth, &b, &e);
    if (e > b) j->glu(j->gate + b, j->up + b, e - b);
}

void adil_gated_act(adil_pool *pool, adil_ffn_act act, float *gate, const float *up, int64_t n) {
    const adil_act_kernels *k = adil_act_kernels_get();
    act_job j = {act == ADIL_FFN_GELU_TANH ? k->gelu_tanh : k->silu, gate, up, n};
    if (n < 16384) /* one token's worth: waking the pool costs more than it saves */
        act_worker(&j, 0, 1);
    else
        adil_pool_run(pool, act_worker, &j);
}

/* ---- attention ---------------------------------------------------------------- */

/* The query rows of a batch are cut into tiles of the attention kernel
 * (compute/attention.h): the heads of one KV group for a few consecutive
 * tokens (group × tokens <= ADIL_ATT_MAX_ROWS rows), so each cached key and
 * value is read once for all of them.  Tiles are handed out to the threads
 * one at a time, the latest tokens (the most positions) first; every tile is
 * computed the same way whoever runs it, so the result does not depend on the
 * number of threads. */
typedef struct att_job {
    adil_forward *fw;
    const adil_hparams *hp;
    int64_t il, T, pos0, window;
    float scale;
    const float *q;
    float *out;
    adil_att_fn kernel;
    int64_t heads_per_tile;   /* <= group, divides into it in chunks */
    int64_t tokens_per_tile;
    int64_t head_chunks;      /* chunks of heads_per_tile per KV group */
    int64_t token_blocks;
    int64_t n_tiles;
    alignas(64) atomic_int_fast64_t next; /* the next tile to hand out */
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
        .n_rows = 0, .k = adil_kv_k(kv, j->il, 0) + g * hp->head_dim, .k_stride = (size_t)kv->k_width,
        .v = adil_kv_v(kv, j->il, 0) + g * hp->head_dim_v, .v_stride = (size_t)kv->v_width,
        .head_dim = hp->head_dim, .head_dim_v = hp->head_dim_v, .scale = j->scale, .scratch = scratch,
    };
    for (int64_t tt = t0; tt < t1; tt++) {
        const int64_t p = j->pos0 + tt;
        const int64_t first = (j->window > 0 && p - j->window + 1 > 0) ? p - j->window + 1 : 0;
        for (int64_t h = h0; h < h1; h++) {
            t.q[t.n_rows] = j->q + (tt * hp->n_head + h) * hp->head_dim;
            t.o[t.n_rows] = j->out + (tt * hp->n_head + h) * hp->head_dim_v;
            t.first[t.n_rows] = first;
            t.last[t.n_rows] = p;
            t.n_rows++;
        }
    }
    j->kernel(&t);
}

static void att_worker(void *p, int ith, int nth) {
    att_job *j = p;
    (void)nth;
    float *scratch = j->fw->scores + (size_t)ith * ADIL_ATT_MAX_ROWS * (size_t)j->fw->kv.n_ctx;
    for (;;) {
        const int64_t item = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed);
        if (item >= j->n_tiles) return;
        att_tile(j, item, scratch);
    }
}

void adil_attention(adil_forward *fw, const adil_hparams *hp, int64_t il, const float *q, float *out,
                    int64_t T, int64_t pos0, int64_t window, float scale) {
    const int64_t group = hp->n_head / hp->n_head_kv;
    att_job j = {.fw = fw, .hp = hp, .il = il, .T = T, .pos0 = pos0, .window = window,
                 .scale = scale, .q = q, .out = out, .kernel = adil_attention_kernel()};
    j.heads_per_tile = group < ADIL_ATT_MAX_ROWS ? group : ADIL_ATT_MAX_ROWS;
    j.tokens_per_tile = ADIL_ATT_MAX_ROWS / j.heads_per_tile;
    j.head_chunks = (group + j.heads_per_tile - 1) / j.heads_per_tile;
    j.token_blocks = (T + j.tokens_per_tile - 1) / j.tokens_per_tile;
    j.n_tiles = j.token_blocks * hp->n_head_kv * j.head_chunks;
    atomic_init(&j.next, 0);
    /* one tile (a decoded token of a model with one KV head): not worth a wake-up */
    adil_pool_run(j.n_tiles > 1 ? fw->pool : NULL, att_worker, &j);
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
    adil_rmsnorm_rows(rows, rows, m->output_norm, n, hp->n_embd, hp->rms_eps);
    adil_status st = adil_matmul(fw->pool, &m->output, rows, n, logits, fw->mm_scratch,
                                 fw->mm_scratch_size);
    if (st != ADIL_OK) return st;
    if (hp->final_softcap > 0.0f) adil_softcap(logits, n * hp->n_vocab, hp->final_softcap);
    return ADIL_OK;
}
