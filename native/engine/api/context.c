/*
 * context.c — contexts (one sequence's KV cache, activations and threads),
 * the batched evaluation both runs and adil_context_logits use, and
 * teacher-forced logits.
 */
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

/* The largest window: every position count fits in uint32 and int, and
 * every size computed from it in 64 bits (checked in adil_forward_bytes). */
#define ADIL_MAX_CTX (1u << 20)

static adil_status pick_pool(adil_context *ctx, uint32_t n_threads) {
    adil_model *m = ctx->model;
    if (n_threads == 0 || (int)n_threads == adil_pool_n_threads(m->pool)) {
        ctx->shared_pool = true;
        return ADIL_OK;
    }
    if (n_threads > ADIL_POOL_MAX_THREADS) n_threads = ADIL_POOL_MAX_THREADS;
    return adil_pool_create((int)n_threads, &ctx->own_pool);
}

/* Refuses a context whose buffers (KV cache, activations, tokens, logits)
 * need more bytes than the machine has: malloc would hand out the untouched
 * pages, and the process would be killed once a long generation filled them. */
static adil_status check_memory(const adil_context *ctx) {
    const adil_model *m = ctx->model;
    const int nth = adil_pool_n_threads(ctx->shared_pool ? m->pool : ctx->own_pool);
    uint64_t need = adil_forward_bytes(&m->tf, ctx->kv, ctx->n_ctx, ctx->n_batch, nth);
    const uint64_t more = ((uint64_t)ctx->n_ctx + (uint64_t)m->tf.hp.n_vocab) * sizeof(float);
    need = need > UINT64_MAX - more ? UINT64_MAX : need + more;
    const uint64_t have = adil_physical_memory();
    if (need <= have) return ADIL_OK;
    return adil_fail(ADIL_STATUS_OUT_OF_MEMORY,
                     "adil_context_new: n_ctx %u needs %llu bytes (%.1f GiB of KV cache and "
                     "activations), more than the %llu bytes (%.1f GiB) of memory of this machine",
                     ctx->n_ctx, (unsigned long long)need, (double)need / 1073741824.0,
                     (unsigned long long)have, (double)have / 1073741824.0);
}

/* How a context made now with params p keeps its KV cache: p->kv_type, or
 * for the default what ADIL_KV_TYPE says; rings unless ADIL_KV_RING=0.
 * ADIL_STATUS_INVALID_ARGUMENT for an unknown kv_type, CAPABILITY for a
 * type the model's head widths do not allow. */
static adil_status kv_opts(const adil_model *model, const adil_context_params *p, const char *what,
                           adil_kv_opts *kv) {
    static const adil_kv_type TYPES[] = {
        [ADIL_KV_CACHE_F16] = ADIL_KV_F16,
        [ADIL_KV_CACHE_F32] = ADIL_KV_F32,
        [ADIL_KV_CACHE_Q8_0] = ADIL_KV_Q8_0,
    };
    if (p->kv_type > ADIL_KV_CACHE_LAST)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "%s: kv_type: expected 0..%d (adil_kv_cache_type), got %u", what, ADIL_KV_CACHE_LAST,
                         p->kv_type);
    kv->type = p->kv_type == ADIL_KV_CACHE_DEFAULT ? adil_kv_type_from_env() : TYPES[p->kv_type];
    kv->ring = adil_kv_ring_from_env();
    const adil_hparams *hp = &model->tf.hp;
    return adil_kv_type_check(what, kv->type, hp->head_dim, hp->head_dim_v);
}

/* The params of a context of `model` as adil_context_new takes them (`what`
 * names the caller in errors): the defaults filled in, n_ctx resolved and
 * checked, n_batch at most n_ctx. */
static adil_status context_params(const adil_model *model, const adil_context_params *params,
                                  const char *what, adil_context_params *p) {
    adil_context_default_params(p);
    adil_status st =
        adil_copy_params(p, sizeof *p, params, ADIL_SIZE_2_0_CONTEXT_PARAMS, "adil_context_params");
    if (st != ADIL_OK) return st;
    if (p->n_ctx == 0)
        p->n_ctx = model->tf.hp.n_ctx_train < ADIL_DEFAULT_N_CTX_CAP ? model->tf.hp.n_ctx_train
                                                                     : ADIL_DEFAULT_N_CTX_CAP;
    if (p->n_ctx > ADIL_MAX_CTX)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "%s: n_ctx: expected 1..%u, got %u", what,
                         ADIL_MAX_CTX, p->n_ctx);
    if (p->n_batch == 0) p->n_batch = ADIL_DEFAULT_N_BATCH;
    if (p->n_batch > p->n_ctx) p->n_batch = p->n_ctx;
    return ADIL_OK;
}

ADIL_API adil_status adil_model_kv_bytes(const adil_model *model, const adil_context_params *params,
                                         uint64_t *out) {
    if (out) *out = 0;
    if (!model || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_kv_bytes: model and out are required");
    adil_context_params p;
    adil_status st = context_params(model, params, "adil_model_kv_bytes", &p);
    if (st != ADIL_OK) return st;
    adil_kv_opts kv;
    st = kv_opts(model, &p, "adil_model_kv_bytes", &kv);
    if (st != ADIL_OK) return st;
    *out = adil_forward_kv_bytes(&model->tf, kv, p.n_ctx, p.n_batch);
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API adil_status adil_context_new(adil_model *model, const adil_context_params *params,
                                      adil_context **out) {
    if (out) *out = NULL;
    if (!model || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_context_new: model and out are required");
    adil_context_params p;
    adil_status st = context_params(model, params, "adil_context_new", &p);
    if (st != ADIL_OK) return st;
    adil_kv_opts kv;
    st = kv_opts(model, &p, "adil_context_new", &kv);
    if (st != ADIL_OK) return st;
    const uint32_t n_ctx = p.n_ctx, n_batch = p.n_batch;

    adil_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_context_new: out of memory");
    ctx->model = model;
    ctx->n_ctx = n_ctx;
    ctx->n_batch = n_batch;
    ctx->kv = kv;
    st = pick_pool(ctx, p.n_threads);
    if (st == ADIL_OK) st = check_memory(ctx);
    if (st == ADIL_OK)
        st = adil_forward_init(&ctx->fw, &model->tf, ctx->kv, n_ctx, n_batch,
                               ctx->shared_pool ? model->pool : ctx->own_pool);
    if (st == ADIL_OK) {
        ctx->tokens = malloc((size_t)n_ctx * sizeof *ctx->tokens);
        ctx->logits = malloc((size_t)model->tf.hp.n_vocab * sizeof *ctx->logits);
        if (!ctx->tokens || !ctx->logits)
            st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_context_new: out of memory");
    }
    if (st != ADIL_OK) {
        adil_context_free(ctx);
        return st;
    }
    *out = ctx;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_context_free(adil_context *ctx) {
    if (!ctx) return;
    adil_forward_free(&ctx->fw);
    adil_pool_free(ctx->own_pool);
    free(ctx->tokens);
    free(ctx->logits);
    free(ctx);
}

ADIL_API uint32_t adil_context_size(const adil_context *ctx) { return ctx ? ctx->n_ctx : 0; }

uint32_t adil_context_keepable(const adil_context *ctx, uint32_t n) {
    return adil_kv_cache_keeps(&ctx->fw.kv, n, ctx->kv_high) ? n : 0;
}

/* One forward pass of at most n_batch tokens at ctx->n_past. */
static adil_status eval_batch(adil_context *ctx, const int32_t *tokens, int64_t T, float *logits,
                              bool all_logits) {
    adil_model *m = ctx->model;
    /* a pass from position 0 rewrites what any later one reads; rows are
     * written even by a pass that stops, so count them first */
    if (ctx->n_past == 0) ctx->kv_high = 0;
    if (ctx->n_past + (uint32_t)T > ctx->kv_high) ctx->kv_high = ctx->n_past + (uint32_t)T;
    if (ctx->shared_pool) pthread_mutex_lock(&m->compute_lock);
    adil_status st = m->arch->forward(&m->tf, &ctx->fw, tokens, T, ctx->n_past, logits, all_logits);
    if (ctx->shared_pool) pthread_mutex_unlock(&m->compute_lock);
    if (st != ADIL_OK) return st;
    memcpy(ctx->tokens + ctx->n_past, tokens, (size_t)T * sizeof *tokens);
    ctx->n_past += (uint32_t)T;
    return ADIL_OK;
}

adil_status adil_context_eval(adil_context *ctx, const int32_t *tokens, size_t n, float *all,
                              adil_stop_fn stop, void *stop_user) {
    const int64_t n_vocab = ctx->model->tf.hp.n_vocab;
    if (n > ctx->n_ctx - ctx->n_past)
        return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                         "context: %u cached + %zu new tokens exceed the context window of %u tokens",
                         ctx->n_past, n, ctx->n_ctx);
    ctx->fw.stop = stop;
    ctx->fw.stop_user = stop_user;
    adil_status st = ADIL_OK;
    for (size_t done = 0; st == ADIL_OK && done < n; done += ctx->n_batch) {
        const int64_t T = (int64_t)(n - done < ctx->n_batch ? n - done : ctx->n_batch);
        const bool last = done + (size_t)T == n;
        float *logits = all ? all + (int64_t)done * n_vocab : (last ? ctx->logits : NULL);
        st = eval_batch(ctx, tokens + done, T, logits, all != NULL);
    }
    ctx->fw.stop = NULL;
    ctx->fw.stop_user = NULL;
    return st;
}

ADIL_API adil_status adil_context_logits(adil_context *ctx, const int32_t *tokens, size_t n_tokens,
                                         float *logits, size_t capacity) {
    if (!ctx || (n_tokens && (!tokens || !logits)))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_context_logits: ctx, tokens and logits are required");
    if (ctx->run)
        return adil_fail(ADIL_STATUS_BUSY, "adil_context_logits: the context serves a run; free it first");
    adil_status st = gguf_check_unchanged(ctx->model->file); /* a truncated mapping: SIGBUS */
    if (st != ADIL_OK) return st;
    const size_t n_vocab = (size_t)ctx->model->tf.hp.n_vocab;
    if (n_tokens > ctx->n_ctx)
        return adil_fail(ADIL_STATUS_CONTEXT_LENGTH,
                         "adil_context_logits: %zu tokens exceed the context window of %u tokens", n_tokens,
                         ctx->n_ctx);
    if (capacity / n_vocab < n_tokens)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_context_logits: capacity: expected >= %zu floats (%zu x %zu), got %zu",
                         n_tokens * n_vocab, n_tokens, n_vocab, capacity);
    size_t bad = 0;
    if (adil_tokens_invalid(ctx->model, tokens, n_tokens, &bad))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_context_logits: token %d at index %zu: expected 0..%zu", tokens[bad], bad,
                         n_vocab - 1);
    ctx->n_past = 0; /* from an empty cache */
    st = adil_context_eval(ctx, tokens, n_tokens, logits, NULL, NULL);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}
