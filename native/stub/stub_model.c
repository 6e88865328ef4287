/*
 * stub_model.c — a "model" of the stub engine is a loaded JSON script
 * (stub_script.h) plus the per-model call counter that scripted faults and
 * turns are keyed on, and the byte vocabulary its grammars are compiled for
 * (stub_grammar.c).
 */
#define _POSIX_C_SOURCE 200809L

#include "stub_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static uint32_t default_threads(const adil_engine *engine, uint32_t requested) {
    if (requested > 0) return requested;
    if (engine->n_threads > 0) return engine->n_threads;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 ? (uint32_t)cores : 1;
}

static char *file_name(const char *path) {
    const char *slash = strrchr(path, '/');
    return strdup(slash != NULL ? slash + 1 : path);
}

ADIL_API adil_status adil_model_load(adil_engine *engine, const char *path, const adil_model_params *params,
                                     adil_model **out) {
    if (out == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_load: expected an out pointer, got NULL");
    *out = NULL;
    if (engine == NULL || path == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_model_load: expected an engine and a path, got NULL %s",
                         engine == NULL ? "engine" : "path");
    adil_model_params p;
    adil_model_default_params(&p);
    adil_status st =
        adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_MODEL_PARAMS, "adil_model_load: model params");
    if (st != ADIL_OK) return st;
    adil_model *model = calloc(1, sizeof *model);
    if (model == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_model_load: could not allocate %zu bytes",
                         sizeof *model);
    st = stub_script_load(path, &model->script);
    if (st != ADIL_OK) {
        free(model);
        return st;
    }
    model->name = file_name(path);
    if (model->name == NULL) {
        adil_model_free(model);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_model_load: could not copy the file name");
    }
    st = stub_vocab_new(&model->grammar_vocab);
    if (st != ADIL_OK) {
        adil_model_free(model);
        return st;
    }
    model->n_threads = default_threads(engine, p.n_threads);
    atomic_init(&model->run_live, 0);
    model->loaded_ms = adil_now_ms();
    *out = model;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_model_free(adil_model *model) {
    if (model == NULL) return;
    stub_script_free(&model->script);
    if (model->grammar_vocab != NULL) grammar_vocab_free(model->grammar_vocab);
    free(model->name);
    free(model);
}

ADIL_API adil_status adil_model_get_info(const adil_model *model, adil_model_info *out) {
    if (model == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_get_info: expected a model, got NULL");
    adil_model_info info = {
        .struct_size = sizeof info,
        .architecture = "stub",
        .name = model->name,
        .chat_template = model->script.chat_template,
        .n_vocab = STUB_N_VOCAB,
        .n_ctx_train = model->script.context_length,
        .bos_token = STUB_TOKEN_BOS,
        .eos_token = STUB_TOKEN_EOS,
        .eot_token = -1,
        .add_bos = 0,
        .n_params = 0,
        .size_bytes = 0,
        .n_threads = model->n_threads,
        .decode_bytes = 0,
        .decode_params = 0,
        .n_embd = 0,
    };
    /* A variant of an earlier minor writes only the fields that minor has. */
    adil_status st = adil_copy_out(out, &info, STUB_SIZEOF_MODEL_INFO, ADIL_SIZE_2_0_MODEL_INFO,
                                   "adil_model_get_info: model info");
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

adil_status stub_model_check_ready(const adil_model *model, const char *what) {
    double elapsed = adil_now_ms() - model->loaded_ms;
    if (elapsed < (double)model->script.not_ready_ms)
        return adil_fail(ADIL_STATUS_MODEL_NOT_READY,
                         "%s: the model is not ready: expected %u ms after load (scripted not_ready_ms), "
                         "got %.0f ms",
                         what, model->script.not_ready_ms, elapsed);
    return ADIL_OK;
}

ADIL_API adil_status adil_model_ready(const adil_model *model) {
    if (model == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_ready: expected a model, got NULL");
    adil_status st = stub_model_check_ready(model, "adil_model_ready");
    if (st == ADIL_OK) adil_clear_error();
    return st;
}
