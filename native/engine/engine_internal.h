/*
 * engine_internal.h — the CPU engine's handles, as the api/ files share them.
 * Not part of the ABI: hosts see only the opaque names from adil.h.
 *
 * Ownership: an engine outlives its models; a model outlives its contexts; a
 * context outlives its runs.  A model serves one live run at a time
 * (model->live_run).
 */
#ifndef ADIL_ENGINE_INTERNAL_H
#define ADIL_ENGINE_INTERNAL_H

#include "adil/adil.h"
#include "adil_common.h"
#include "compute/threadpool.h"
#include "format/gguf.h"
#include "grammar.h"
#include "models/transformer.h"
#include "text/sampler.h"
#include "text/tokenizer.h"
#include "text/tokenizer_gguf.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define ADIL_CPU_ENGINE_NAME    "adil-cpu"
#define ADIL_CPU_ENGINE_VERSION "0.1.0"

struct adil_engine {
    uint32_t n_threads; /* default thread count for models (>= 1) */
    char backend[16];   /* the backend that computes: "cpu" (backends/backend_select.h) */
};

struct adil_model {
    adil_engine *engine;
    gguf_file *file;  /* the mapped (or read) GGUF; weights point into it */
    void *file_bytes; /* the file's bytes when loaded without mmap, else NULL */
    const adil_arch *arch;
    adil_transformer tf; /* hyperparameters and weights */
    adil_tokenizer *tok;
    adil_pool *pool;              /* n_threads workers, shared by contexts that use as many */
    pthread_mutex_t compute_lock; /* one forward pass at a time on `pool` */
    _Atomic(adil_run *) live_run; /* the one run the model serves, or NULL */
    /* The tokenizer as the grammar library's vocabulary, built by the first
     * adil_grammar_compile (under grammar_lock) and read-only from then on;
     * NULL until then.  Freed with the model. */
    pthread_mutex_t grammar_lock;
    _Atomic(grammar_vocab *) grammar_vocab;
    char *name;           /* general.name or the file name */
    char *chat_template;  /* tokenizer.chat_template, or NULL */
    adil_model_info info; /* filled at load; strings point at the fields above */
};

struct adil_context {
    adil_model *model;
    uint32_t n_ctx;      /* window in tokens */
    uint32_t n_batch;    /* prompt tokens per forward pass */
    adil_kv_opts kv;     /* how its KV cache is kept (ADIL_KV_TYPE, ADIL_KV_RING) */
    uint32_t kv_high;    /* positions written since the cache last restarted at 0 */
    adil_pool *own_pool; /* when the context asked for another thread count */
    bool shared_pool;    /* fw.pool is the model's: take compute_lock */
    adil_forward fw;     /* KV cache and activations */
    int32_t *tokens;     /* (n_ctx) the tokens whose keys/values the cache holds */
    uint32_t n_past;     /* valid positions of the cache */
    float *logits;       /* (n_vocab) the last position's logits */
    adil_run *run;       /* the live run on this context, or NULL */
};

/* How many of the first n cached positions a cut back to them can keep: n,
 * or 0 when a sliding window's ring has lost rows position n needs (then
 * everything is evaluated again: a ring cannot restore what it overwrote). */
uint32_t adil_context_keepable(const adil_context *ctx, uint32_t n);

/* Evaluates tokens[0..n) at positions ctx->n_past.. in batches of n_batch,
 * appending them to the cache.  Writes (n, n_vocab) logits to `all` when it
 * is not NULL, else the last position's to ctx->logits.  `stop` (may be
 * NULL) is polled between batches and layers; a stop or an error leaves
 * n_past at the end of the last whole batch. */
adil_status adil_context_eval(adil_context *ctx, const int32_t *tokens, size_t n, float *all,
                              adil_stop_fn stop, void *stop_user);

/* The model's grammar vocabulary (api/grammar.c), or NULL when no grammar
 * was compiled for it yet.  Any thread. */
const grammar_vocab *adil_model_grammar_vocab(const adil_model *model);

/* Non-zero when `token` is out of [0, n_vocab) for `model`; index of the
 * first bad one in *bad. */
bool adil_tokens_invalid(const adil_model *model, const int32_t *tokens, size_t n, size_t *bad);

/* The number of CPU cores available to this process (>= 1). */
uint32_t adil_cpu_count(void);

/* Bytes of physical memory of the machine (UINT64_MAX when unknown). */
uint64_t adil_physical_memory(void);

/* Comma-separated CPU features that the kernels can use, detected at run
 * time, e.g. "sse3,avx2,fma,f16c,avx512f,avx512vnni".  Static storage. */
const char *adil_cpu_features(void);

#endif /* ADIL_ENGINE_INTERNAL_H */
