/*
 * model.c — adil_model_load and friends: GGUF file → architecture (weights
 * bound in place) → tokenizer → thread pool.
 */
#define _POSIX_C_SOURCE 200809L
#include "engine_internal.h"

#include <stdlib.h>
#include <string.h>

/* A NUL-terminated copy of a GGUF string (NULL when out of memory). */
static char *str_dup(gguf_str s) {
    char *p = malloc((size_t)s.len + 1);
    if (!p) return NULL;
    memcpy(p, s.ptr, (size_t)s.len);
    p[s.len] = '\0';
    return p;
}

static adil_status open_file(adil_model *m, const char *path, bool use_mmap) {
    if (use_mmap) return gguf_open_file(path, &m->file);
    size_t size = 0;
    adil_status st = gguf_read_file(path, &m->file_bytes, &size);
    return st == ADIL_OK ? gguf_open_memory(m->file_bytes, size, &m->file) : st;
}

/* general.architecture → the architecture's loader. */
static adil_status load_architecture(adil_model *m) {
    gguf_str arch;
    adil_status st = gguf_get_cstr(m->file, "general.architecture", &arch, NULL);
    if (st != ADIL_OK) return st;
    m->arch = adil_arch_find(arch.ptr, (size_t)arch.len);
    if (!m->arch) {
        char names[256];
        adil_arch_names(names, sizeof names);
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: architecture '%.*s' is not supported by the %s engine "
                         "(supported: %s)",
                         (int)(arch.len > 64 ? 64 : arch.len), arch.ptr, ADIL_CPU_ENGINE_NAME, names);
    }
    return m->arch->load(m->file, &m->tf);
}

/* name, chat template and the info struct. */
static adil_status fill_info(adil_model *m, const char *path) {
    gguf_str s;
    bool found = false;
    adil_status st = gguf_get_cstr(m->file, "general.name", &s, &found);
    if (st != ADIL_OK) return st;
    if (!found) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        s = (gguf_str){base, strlen(base)};
    }
    m->name = str_dup(s);
    st = gguf_get_cstr(m->file, "tokenizer.chat_template", &s, &found);
    if (st != ADIL_OK) return st;
    if (found) m->chat_template = str_dup(s);
    if (!m->name || (found && !m->chat_template))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "model: out of memory");

    adil_tokenizer_info ti;
    adil_tokenizer_get_info(m->tok, &ti);
    adil_model_info *info = &m->info;
    info->struct_size = sizeof *info;
    info->architecture = m->arch->name;
    info->name = m->name;
    info->chat_template = m->chat_template;
    info->n_vocab = (uint32_t)m->tf.hp.n_vocab;
    info->n_ctx_train = m->tf.hp.n_ctx_train;
    info->bos_token = ti.bos_id;
    info->eos_token = ti.eos_id;
    info->eot_token = ti.eot_id;
    info->add_bos = ti.add_bos;
    info->n_params = m->tf.n_params;
    info->size_bytes = m->tf.n_bytes;
    info->n_threads = (uint32_t)adil_pool_n_threads(m->pool);
    info->decode_bytes = m->tf.decode_bytes;
    info->decode_params = m->tf.decode_params;
    info->n_embd = (uint32_t)m->tf.hp.n_embd;
    return ADIL_OK;
}

static adil_status load(adil_model *m, const char *path, const adil_model_params *p) {
    adil_status st = open_file(m, path, p->use_mmap != 0);
    if (st == ADIL_OK) st = load_architecture(m);
    if (st == ADIL_OK) st = adil_tokenizer_from_gguf(m->file, &m->tok);
    if (st != ADIL_OK) return st;
    adil_tokenizer_info ti;
    adil_tokenizer_get_info(m->tok, &ti);
    if ((int64_t)ti.n_vocab > m->tf.hp.n_vocab)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: tokenizer has %u tokens: expected at most the %lld rows of "
                         "token_embd.weight",
                         ti.n_vocab, (long long)m->tf.hp.n_vocab);
    uint32_t n_threads = p->n_threads ? p->n_threads : m->engine->n_threads;
    if (n_threads > ADIL_POOL_MAX_THREADS) n_threads = ADIL_POOL_MAX_THREADS;
    st = adil_pool_create((int)n_threads, &m->pool);
    if (st == ADIL_OK) st = adil_transformer_repack(&m->tf, m->pool, m->file_bytes == NULL);
    if (st == ADIL_OK) st = fill_info(m, path);
    return st;
}

ADIL_API adil_status adil_model_load(adil_engine *engine, const char *path, const adil_model_params *params,
                                     adil_model **out) {
    if (out) *out = NULL;
    if (!engine || !path || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_load: engine, path and out are required");
    adil_model_params p;
    adil_model_default_params(&p);
    adil_status st = adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_MODEL_PARAMS, "adil_model_params");
    if (st != ADIL_OK) return st;

    adil_model *m = calloc(1, sizeof *m);
    if (!m) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_model_load: out of memory");
    m->engine = engine;
    pthread_mutex_init(&m->compute_lock, NULL);
    pthread_mutex_init(&m->grammar_lock, NULL);
    atomic_init(&m->live_run, NULL);
    atomic_init(&m->grammar_vocab, NULL);
    st = load(m, path, &p);
    if (st != ADIL_OK) {
        adil_model_free(m);
        return st;
    }
    *out = m;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_model_free(adil_model *m) {
    if (!m) return;
    adil_pool_free(m->pool);
    adil_tokenizer_free(m->tok);
    adil_transformer_free(&m->tf);
    gguf_close(m->file);
    free(m->file_bytes);
    free(m->name);
    free(m->chat_template);
    pthread_mutex_destroy(&m->compute_lock);
    grammar_vocab_free(atomic_load(&m->grammar_vocab));
    pthread_mutex_destroy(&m->grammar_lock);
    free(m);
}

ADIL_API adil_status adil_model_get_info(const adil_model *model, adil_model_info *out) {
    if (!model || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_get_info: model and out are required");
    return adil_copy_out(out, &model->info, sizeof model->info, ADIL_SIZE_2_0_MODEL_INFO,
                         "adil_model_get_info: model info");
}

ADIL_API adil_status adil_model_ready(const adil_model *model) {
    if (!model) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_model_ready: model is NULL");
    return ADIL_OK; /* loading is synchronous: a model handle is always ready */
}

bool adil_tokens_invalid(const adil_model *model, const int32_t *tokens, size_t n, size_t *bad) {
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= model->tf.hp.n_vocab) {
            *bad = i;
            return true;
        }
    return false;
}
