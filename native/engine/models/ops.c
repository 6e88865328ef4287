/*
 * ops.c — RMS norm, RoPE, gated activations, attention and the output head
 * (see ops.h).  Plain loops; the heavy work of a forward pass is in the
 * matrix products, these run in a small fraction of its time.
 */
#include "models/ops.h"

#include "compute/activation.h"

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

typedef struct att_job {
    adil_forward *fw;
    const adil_hparams *hp;
    int64_t il, T, pos0, window;
    float scale;
    const float *q;
    float *out;
} att_job;

/* q·k over n floats with 8 independent partial sums: without them the
 * compiler may not reorder the float additions, so it could not vectorize. */
static float dot_f32(const float *a, const float *b, int64_t n) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) acc[j] += a[i + j] * b[i + j];
    float sum = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
    for (; i < n; i++) sum += a[i] * b[i];
    return sum;
}

/* One query head of one token: softmax(q·Kᵀ * scale) · V over its visible
 * positions. */
static void attend_one(const att_job *j, int64_t t, int64_t h, float *s) {
    const adil_hparams *hp = j->hp;
    const adil_kv_cache *kv = &j->fw->kv;
    const int64_t hd = hp->head_dim, hdv = hp->head_dim_v;
    const int64_t kvh = h / (hp->n_head / hp->n_head_kv);
    const int64_t p = j->pos0 + t;
    const int64_t first = (j->window > 0 && p - j->window + 1 > 0) ? p - j->window + 1 : 0;
    const float *q = j->q + t * hp->n_head * hd + h * hd;
    float *o = j->out + t * hp->n_head * hdv + h * hdv;

    float max = -INFINITY;
    for (int64_t pk = first; pk <= p; pk++) {
        const float *k = adil_kv_k(kv, j->il, pk) + kvh * hd;
        s[pk] = dot_f32(q, k, hd) * j->scale;
        if (s[pk] > max) max = s[pk];
    }
    double sum = 0.0;
    for (int64_t pk = first; pk <= p; pk++) {
        s[pk] = expf(s[pk] - max);
        sum += s[pk];
    }
    const float inv = (float)(1.0 / sum);
    memset(o, 0, (size_t)hdv * sizeof(float));
    for (int64_t pk = first; pk <= p; pk++) {
        const float *v = adil_kv_v(kv, j->il, pk) + kvh * hdv;
        const float w = s[pk] * inv;
        for (int64_t i = 0; i < hdv; i++) o[i] += w * v[i];
    }
}

static void att_worker(void *p, int ith, int nth) {
    const att_job *j = p;
    float *s = j->fw->scores + (int64_t)ith * j->fw->kv.n_ctx;
    const int64_t n_items = j->T * j->hp->n_head;
    /* interleaved, not contiguous: later tokens see more positions, so this
     * spreads the long rows over every thread */
    for (int64_t item = ith; item < n_items; item += nth)
        attend_one(j, item / j->hp->n_head, item % j->hp->n_head, s);
}

void adil_attention(adil_forward *fw, const adil_hparams *hp, int64_t il, const float *q, float *out,
                    int64_t T, int64_t pos0, int64_t window, float scale) {
    att_job j = {fw, hp, il, T, pos0, window, scale, q, out};
    adil_pool_run(fw->pool, att_worker, &j);
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
