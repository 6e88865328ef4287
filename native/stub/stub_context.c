/*
 * stub_context.c — contexts of the stub engine.  The stub keeps no KV cache:
 * a context only carries its window size, against which runs check
 * prompt + max_tokens.
 */
#include "stub_internal.h"

#include <stdlib.h>

/* The params as the reported minor has them (a 2.5 variant reads no
 * kv_type); a kv_type is checked and otherwise ignored: no KV cache. */
static adil_status context_params(adil_context_params *p, const adil_context_params *params,
                                  const char *what) {
    adil_context_default_params(p);
    adil_status st =
        adil_copy_params(p, STUB_SIZEOF_CONTEXT_PARAMS, params, ADIL_SIZE_2_0_CONTEXT_PARAMS, what);
    if (st == ADIL_OK && p->kv_type > ADIL_KV_CACHE_LAST)
        st = adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                       "%s: kv_type: expected 0..%d (adil_kv_cache_type), got %u", what, ADIL_KV_CACHE_LAST,
                       p->kv_type);
    return st;
}

ADIL_API adil_status adil_context_new(adil_model *model, const adil_context_params *params,
                                      adil_context **out) {
    if (out == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_context_new: expected an out pointer, got NULL");
    *out = NULL;
    if (model == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_context_new: expected a model, got NULL");
    adil_context_params p;
    adil_status st = context_params(&p, params, "adil_context_new: context params");
    if (st != ADIL_OK) return st;
    adil_context *ctx = calloc(1, sizeof *ctx);
    if (ctx == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_context_new: could not allocate %zu bytes",
                         sizeof *ctx);
    uint32_t train = model->script.context_length;
    ctx->model = model;
    ctx->n_ctx = p.n_ctx > 0 ? p.n_ctx : (train < ADIL_DEFAULT_N_CTX_CAP ? train : ADIL_DEFAULT_N_CTX_CAP);
    ctx->n_batch = p.n_batch > 0 ? p.n_batch : ADIL_DEFAULT_N_BATCH;
    ctx->n_threads = p.n_threads > 0 ? p.n_threads : model->n_threads;
    *out = ctx;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_context_free(adil_context *ctx) { free(ctx); }

ADIL_API uint32_t adil_context_size(const adil_context *ctx) { return ctx != NULL ? ctx->n_ctx : 0; }

/* No KV cache: 0 bytes, after the same checks as adil_context_new. */
ADIL_API adil_status adil_model_kv_bytes(const adil_model *model, const adil_context_params *params,
                                         uint64_t *out) {
    if (out == NULL || model == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_kv_bytes: model and out are required");
    *out = 0;
    adil_context_params p;
    adil_status st = context_params(&p, params, "adil_model_kv_bytes: context params");
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

ADIL_API adil_status adil_context_logits(adil_context *ctx, const int32_t *tokens, size_t n_tokens,
                                         float *logits, size_t capacity) {
    (void)ctx;
    (void)tokens;
    (void)n_tokens;
    (void)logits;
    (void)capacity;
    return adil_fail(ADIL_STATUS_CAPABILITY, "adil_context_logits: the stub engine has no logits");
}
