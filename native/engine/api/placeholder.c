/*
 * placeholder.c — the ABI entry points of the models, tokens, grammar,
 * contexts and runs, until the engine can load models.  adil_model_load
 * answers ADIL_STATUS_CAPABILITY, so no model, context or run handle can
 * exist yet; the other functions only check their arguments.
 */
#include "engine_internal.h"

#include <stddef.h>

static adil_status no_handle(const char *fn) {
    return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                     "%s: no such handle (this engine cannot load models yet)", fn);
}

ADIL_API adil_status adil_model_load(adil_engine *engine, const char *path,
                                     const adil_model_params *params, adil_model **out) {
    (void)params;
    if (out) *out = NULL;
    if (!engine || !path || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_load: engine, path and out are required");
    return adil_fail(ADIL_STATUS_CAPABILITY,
                     "adil_model_load: the adil-cpu engine cannot load models yet (%s)", path);
}

ADIL_API void adil_model_free(adil_model *model) { (void)model; }

ADIL_API adil_status adil_model_get_info(const adil_model *model, adil_model_info *out) {
    (void)model; (void)out;
    return no_handle("adil_model_get_info");
}

ADIL_API adil_status adil_model_ready(const adil_model *model) {
    (void)model;
    return adil_fail(ADIL_STATUS_MODEL_NOT_READY, "adil_model_ready: no model is loaded");
}

ADIL_API adil_status adil_tokenize(const adil_model *model, const char *text, size_t text_len,
                                   int32_t add_bos, int32_t parse_special, int32_t *tokens,
                                   size_t capacity, size_t *n_tokens) {
    (void)model; (void)text; (void)text_len; (void)add_bos; (void)parse_special;
    (void)tokens; (void)capacity; (void)n_tokens;
    return no_handle("adil_tokenize");
}

ADIL_API adil_status adil_token_to_piece(const adil_model *model, int32_t token, int32_t special,
                                         char *buf, size_t capacity, size_t *n_bytes) {
    (void)model; (void)token; (void)special; (void)buf; (void)capacity; (void)n_bytes;
    return no_handle("adil_token_to_piece");
}

ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json,
                                          size_t schema_len, adil_grammar **out) {
    (void)model; (void)schema_json; (void)schema_len;
    if (out) *out = NULL;
    return adil_fail(ADIL_STATUS_CAPABILITY, "adil_grammar_compile: the adil-cpu engine has no grammar support yet");
}

ADIL_API void adil_grammar_free(adil_grammar *grammar) { (void)grammar; }

ADIL_API adil_status adil_context_new(adil_model *model, const adil_context_params *params,
                                      adil_context **out) {
    (void)model; (void)params;
    if (out) *out = NULL;
    return no_handle("adil_context_new");
}

ADIL_API void adil_context_free(adil_context *ctx) { (void)ctx; }

ADIL_API uint32_t adil_context_size(const adil_context *ctx) { (void)ctx; return 0; }

ADIL_API adil_status adil_context_logits(adil_context *ctx, const int32_t *tokens, size_t n_tokens,
                                         float *logits, size_t capacity) {
    (void)ctx; (void)tokens; (void)n_tokens; (void)logits; (void)capacity;
    return no_handle("adil_context_logits");
}

ADIL_API adil_status adil_run_start(adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                                    const adil_run_params *params, adil_run **out) {
    (void)ctx; (void)prompt; (void)n_prompt; (void)params;
    if (out) *out = NULL;
    return no_handle("adil_run_start");
}

ADIL_API adil_status adil_run_step(adil_run *run, int32_t *tokens, size_t capacity, size_t *n_tokens) {
    (void)run; (void)tokens; (void)capacity;
    if (n_tokens) *n_tokens = 0;
    return no_handle("adil_run_step");
}

ADIL_API void adil_run_cancel(adil_run *run) { (void)run; }

ADIL_API int adil_run_cancelled(void *run) { (void)run; return 1; }

ADIL_API adil_status adil_run_get_stats(const adil_run *run, adil_run_stats *out) {
    (void)run; (void)out;
    return no_handle("adil_run_get_stats");
}

ADIL_API void adil_run_free(adil_run *run) { (void)run; }
