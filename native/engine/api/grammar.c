/*
 * grammar.c — output constraints: adil_grammar_compile and adil_grammar_free
 * over the shared grammar library (native/grammar/grammar.h).
 *
 * A model's vocabulary as the library sees it (text/grammar_vocab.h) is built
 * by the first compile on that model, under the model's grammar_lock, and is
 * read-only afterwards: compiles on one model from several threads share it,
 * and a run tells a grammar of its own model by it (adil_model_grammar_vocab).
 */
#include "engine_internal.h"
#include "text/grammar_vocab.h"

/* The model's grammar vocabulary, built on first use. */
static adil_status model_vocab(adil_model *m, const grammar_vocab **out) {
    grammar_vocab *v = atomic_load_explicit(&m->grammar_vocab, memory_order_acquire);
    adil_status st = ADIL_OK;
    if (!v) {
        pthread_mutex_lock(&m->grammar_lock);
        v = atomic_load_explicit(&m->grammar_vocab, memory_order_relaxed);
        if (!v) {
            st = adil_grammar_vocab_build(m->tok, (uint32_t)m->tf.hp.n_vocab, &v);
            if (st == ADIL_OK) atomic_store_explicit(&m->grammar_vocab, v, memory_order_release);
        }
        pthread_mutex_unlock(&m->grammar_lock);
    }
    *out = v;
    return st;
}

const grammar_vocab *adil_model_grammar_vocab(const adil_model *model) {
    return atomic_load_explicit(&((adil_model *)model)->grammar_vocab, memory_order_acquire);
}

ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json, size_t schema_len,
                                          adil_grammar **out) {
    if (out) *out = NULL;
    if (!model || !out || (!schema_json && schema_len))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_grammar_compile: model, schema_json and out are required");
    /* The vocabulary is the model's own cache, not part of what the
     * caller's const promises: building it changes no observable state. */
    const grammar_vocab *vocab = NULL;
    adil_status st = model_vocab((adil_model *)model, &vocab);
    if (st == ADIL_OK) st = grammar_compile(vocab, schema_json ? schema_json : "", schema_len, out);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

ADIL_API void adil_grammar_free(adil_grammar *grammar) {
    if (grammar) grammar_free(grammar);
}
