/*
 * moe.c — the mixture-of-experts FFN (see moe.h): router, gating, the
 * (token, slot) assignments grouped by expert, the experts' products, and
 * the weighted sum back into each token's row.
 */
#include "models/moe.h"

#include "compute/activation.h"
#include "compute/kernels.h"
#include "compute/matmul.h"
#include "compute/matmul_experts.h"
#include "models/blocks.h"

#include <math.h>
#include <string.h>

#define MOE_MAX_EXPERTS    1024            /* more than any released model (384) */
#define MOE_MIN_WEIGHT_SUM 6.103515625e-5f /* 2^-14: llama.cpp's clamp of the sum */

/* ---- loading ------------------------------------------------------------------ */

adil_status adil_moe_read_hparams(const gguf_file *f, const char *arch, adil_hparams *hp) {
    adil_status st;
    if ((st = adil_hp_int(f, arch, "expert_count", -1, MOE_MAX_EXPERTS, &hp->n_expert))) return st;
    if ((st = adil_hp_int(f, arch, "expert_used_count", -1, hp->n_expert, &hp->n_expert_used))) return st;
    /* llama.cpp's default when absent: the dense width shared by the k experts */
    const int64_t dflt = hp->n_ff / hp->n_expert_used > 0 ? hp->n_ff / hp->n_expert_used : 1;
    return adil_hp_int(f, arch, "expert_feed_forward_length", dflt, 1 << 20, &hp->n_ff_exp);
}

size_t adil_moe_layer_floats(const adil_hparams *hp) {
    const size_t E = (size_t)hp->n_expert;
    return E + 2 * E * (size_t)hp->n_ff_exp + E * (size_t)hp->n_embd;
}

/* The router is used in float32: its type must dot with float activations. */
static adil_status check_router(const adil_weight *w, int il) {
    const adil_wtype_kernels *wk = adil_wtype_kernels_get(w->type);
    if (wk && wk->vec_dot_type == ADIL_WT_F32) return ADIL_OK;
    return adil_fail(ADIL_STATUS_CAPABILITY,
                     "model: tensor 'blk.%d.ffn_gate_inp.weight': expected F32, F16 or BF16 (the router is "
                     "computed in float32), got %s",
                     il, adil_wtype_name(w->type));
}

adil_status adil_moe_bind_layer(const gguf_file *f, adil_transformer *m, int il, adil_f32_arena *a) {
    const adil_hparams *hp = &m->hp;
    adil_layer *L = &m->layers[il];
    const int64_t D = hp->n_embd, E = hp->n_expert, F = hp->n_ff_exp;
    adil_status st;
    if ((st = adil_bind_matrix(f, "blk.%d.ffn_gate_inp.weight", il, E, D, &L->ffn_gate_inp, NULL))) return st;
    if ((st = check_router(&L->ffn_gate_inp, il))) return st;
    if ((st = adil_bind_vector(f, "blk.%d.ffn_gate_inp.bias", il, E, a, &L->ffn_gate_inp_b, &(bool){0})))
        return st;
    if ((st = adil_bind_experts(f, "blk.%d.ffn_gate_exps.weight", il, E, F, D, &L->ffn_gate_exps, NULL)))
        return st;
    if ((st = adil_bind_experts(f, "blk.%d.ffn_up_exps.weight", il, E, F, D, &L->ffn_up_exps, NULL)))
        return st;
    if ((st = adil_bind_experts(f, "blk.%d.ffn_down_exps.weight", il, E, D, F, &L->ffn_down_exps, NULL)))
        return st;
    if ((st = adil_bind_table(f, "blk.%d.ffn_gate_exps.bias", il, E, F, a, &L->ffn_gate_exps_b, &(bool){0})))
        return st;
    if ((st = adil_bind_table(f, "blk.%d.ffn_up_exps.bias", il, E, F, a, &L->ffn_up_exps_b, &(bool){0})))
        return st;
    return adil_bind_table(f, "blk.%d.ffn_down_exps.bias", il, E, D, a, &L->ffn_down_exps_b, &(bool){0});
}

size_t adil_moe_scratch_size(const adil_transformer *m, int64_t n_batch) {
    const adil_hparams *hp = &m->hp;
    const int64_t A = n_batch * hp->n_expert_used;
    size_t most = 0;
    for (int64_t il = 0; hp->n_expert > 0 && il < hp->n_layer; il++) {
        const adil_layer *L = &m->layers[il];
        const adil_mm_experts gate_up = {.n = 2,
                                         .w = {&L->ffn_gate_exps, &L->ffn_up_exps},
                                         .n_expert = hp->n_expert,
                                         .rows = hp->n_ff_exp};
        const adil_mm_experts down = {
            .n = 1, .w = {&L->ffn_down_exps}, .n_expert = hp->n_expert, .rows = hp->n_embd};
        const size_t s[] = {adil_matmul_scratch_size(&L->ffn_gate_inp, n_batch),
                            adil_matmul_experts_scratch_size(&gate_up, n_batch, A),
                            adil_matmul_experts_scratch_size(&down, A, A)};
        for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) most = s[i] > most ? s[i] : most;
    }
    return most;
}

/* ---- gating ------------------------------------------------------------------- */

/* s[i] = softmax(s)[i], i < n. */
static void softmax(float *s, int64_t n) {
    float max = s[0], sum = 0.0f;
    for (int64_t i = 1; i < n; i++) max = s[i] > max ? s[i] : max;
    for (int64_t i = 0; i < n; i++) sum += s[i] = expf(s[i] - max);
    for (int64_t i = 0; i < n; i++) s[i] /= sum;
}

/* ids[0..k) = the indices of the k largest s[i], i < n, largest first (ties:
 * the lower index; a NaN is never larger). */
static void top_k(const float *s, int64_t n, int64_t k, int32_t *ids) {
    unsigned char taken[MOE_MAX_EXPERTS] = {0};
    for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; i++)
            if (!taken[i] && (best < 0 || s[i] > s[best])) best = i;
        taken[best] = 1;
        ids[j] = (int32_t)best;
    }
}

/* One token's experts ids[0..k) and weights w[0..k) from its router logits
 * (n_expert, clobbered). */
static void gate_token(const adil_hparams *hp, float *logits, int32_t *ids, float *w) {
    const int64_t k = hp->n_expert_used;
    if (hp->expert_gating == ADIL_GATING_SOFTMAX_TOPK) softmax(logits, hp->n_expert);
    top_k(logits, hp->n_expert, k, ids);
    for (int64_t j = 0; j < k; j++) w[j] = logits[ids[j]];
    if (hp->expert_gating == ADIL_GATING_TOPK_SOFTMAX) softmax(w, k);
    if (hp->expert_weights_norm) {
        float sum = 0.0f;
        for (int64_t j = 0; j < k; j++) sum += w[j];
        sum = sum > MOE_MIN_WEIGHT_SUM ? sum : MOE_MIN_WEIGHT_SUM;
        for (int64_t j = 0; j < k; j++) w[j] /= sum;
    }
}

/* The router and gating of T tokens: fw->moe_w and the expert ids
 * (T, n_expert_used). */
static adil_status route(const adil_transformer *m, adil_forward *fw, const adil_layer *L, const float *xb,
                         int64_t T, int32_t *ids) {
    const adil_hparams *hp = &m->hp;
    const int64_t E = hp->n_expert, k = hp->n_expert_used;
    const adil_mm_group router = {.n = 1, .w = {&L->ffn_gate_inp}, .y = {fw->moe_logits}};
    adil_status st = adil_matmul_group(fw->pool, &router, xb, T, fw->mm_scratch, fw->mm_scratch_size);
    if (st != ADIL_OK) return st;
    for (int64_t t = 0; t < T; t++) {
        float *logits = fw->moe_logits + t * E;
        if (L->ffn_gate_inp_b) adil_add(logits, L->ffn_gate_inp_b, E);
        gate_token(hp, logits, ids + t * k, fw->moe_w + t * k);
    }
    return ADIL_OK;
}

/* Groups the A = T * k assignments by expert: rows off[e] .. off[e + 1] are
 * expert e's, in token order, and assignment (t, j) is row pos[t * k + j]. */
static void group_by_expert(const int32_t *ids, int64_t A, int64_t n_expert, int32_t *pos, int32_t *off) {
    memset(off, 0, (size_t)(n_expert + 1) * sizeof *off);
    for (int64_t a = 0; a < A; a++) off[ids[a] + 1]++;
    for (int64_t e = 0; e < n_expert; e++) off[e + 1] += off[e];
    int32_t next[MOE_MAX_EXPERTS];
    memcpy(next, off, (size_t)n_expert * sizeof *off);
    for (int64_t a = 0; a < A; a++) pos[a] = next[ids[a]]++;
}

/* ---- the experts -------------------------------------------------------------- */

/* The epilogue of the gate/up product: each assignment's expert biases,
 * then act(gate) * up, on rows [r0, r1). */
typedef struct experts_glu {
    adil_glu_fn glu;
    float *gate;          /* (A, n_ff_exp) */
    float *up;            /* (A, n_ff_exp) */
    const float *bg, *bu; /* (n_expert, n_ff_exp) or NULL */
    const int32_t *off;   /* (n_expert + 1) */
    int64_t n_expert, n_ff;
} experts_glu;

static void glu_epilogue(void *user, int64_t r0, int64_t r1) {
    const experts_glu *g = user;
    for (int64_t e = 0; e < g->n_expert; e++)
        for (int64_t a = g->off[e]; a < g->off[e + 1]; a++) {
            float *gate = g->gate + a * g->n_ff, *up = g->up + a * g->n_ff;
            if (g->bg) adil_add(gate + r0, g->bg + e * g->n_ff + r0, r1 - r0);
            if (g->bu) adil_add(up + r0, g->bu + e * g->n_ff + r0, r1 - r0);
            g->glu(gate + r0, up + r0, r1 - r0);
        }
}

/* The epilogue of the down product: columns [r0, r1) of
 * out[t] = sum_j w[t, j] * (y[pos[t, j]] + bd[e_tj]), slot by slot. */
typedef struct experts_sum {
    float *out;         /* (T, n_embd) */
    const float *y;     /* (A, n_embd) */
    const float *w;     /* (T, k) */
    const int32_t *ids; /* (T, k) */
    const int32_t *pos; /* (T, k) */
    const float *bd;    /* (n_expert, n_embd) or NULL */
    int64_t T, k, n_embd;
} experts_sum;

static void sum_epilogue(void *user, int64_t r0, int64_t r1) {
    const experts_sum *s = user;
    const int64_t D = s->n_embd;
    for (int64_t t = 0; t < s->T; t++) {
        float *row = s->out + t * D;
        memset(row + r0, 0, (size_t)(r1 - r0) * sizeof *row);
        for (int64_t j = 0; j < s->k; j++) {
            const float w = s->w[t * s->k + j];
            const float *y = s->y + (int64_t)s->pos[t * s->k + j] * D;
            const float *b = s->bd ? s->bd + s->ids[t * s->k + j] * D : NULL;
            for (int64_t i = r0; i < r1; i++) row[i] += w * (b ? y[i] + b[i] : y[i]);
        }
    }
}

adil_status adil_moe_ffn(const adil_transformer *m, adil_forward *fw, int64_t il, const float *xb, int64_t T,
                         float *out) {
    const adil_hparams *hp = &m->hp;
    const adil_layer *L = &m->layers[il];
    const int64_t D = hp->n_embd, F = hp->n_ff_exp, E = hp->n_expert, k = hp->n_expert_used, A = T * k;
    int32_t *ids = fw->moe_ids; /* (T, k) expert of each assignment */
    int32_t *pos = ids + A;     /* (T, k) its row in expert order */
    int32_t *src = pos + A;     /* (A) the token of each row in expert order */
    int32_t *off = src + A;     /* (n_expert + 1) each expert's first row */
    adil_status st;

    /* router (float32) and gating: k experts and weights per token */
    if ((st = route(m, fw, L, xb, T, ids))) return st;
    group_by_expert(ids, A, E, pos, off);
    for (int64_t a = 0; a < A; a++) src[pos[a]] = (int32_t)(a / k);

    /* gate and up of every chosen expert on all its tokens, one pool job:
     * moe_h = act(gate + bg) * (up + bu), (A, F) in expert order */
    experts_glu glu = {.glu = adil_ffn_glu(hp->ffn_act),
                       .gate = fw->moe_h,
                       .up = fw->moe_h2,
                       .bg = L->ffn_gate_exps_b,
                       .bu = L->ffn_up_exps_b,
                       .off = off,
                       .n_expert = E,
                       .n_ff = F};
    const adil_mm_experts gate_up = {.n = 2,
                                     .w = {&L->ffn_gate_exps, &L->ffn_up_exps},
                                     .y = {fw->moe_h, fw->moe_h2},
                                     .n_expert = E,
                                     .rows = F,
                                     .off = off,
                                     .src = src,
                                     .epilogue = glu_epilogue,
                                     .user = &glu};
    if ((st = adil_matmul_experts(fw->pool, &gate_up, xb, T, fw->mm_scratch, fw->mm_scratch_size))) return st;

    /* down (A, D), and out = the weighted sum of each token's expert outputs */
    experts_sum sum = {.out = out,
                       .y = fw->moe_y,
                       .w = fw->moe_w,
                       .ids = ids,
                       .pos = pos,
                       .bd = L->ffn_down_exps_b,
                       .T = T,
                       .k = k,
                       .n_embd = D};
    const adil_mm_experts down = {.n = 1,
                                  .w = {&L->ffn_down_exps},
                                  .y = {fw->moe_y},
                                  .n_expert = E,
                                  .rows = D,
                                  .off = off,
                                  .src = NULL,
                                  .epilogue = sum_epilogue,
                                  .user = &sum};
    return adil_matmul_experts(fw->pool, &down, fw->moe_h, A, fw->mm_scratch, fw->mm_scratch_size);
}
