/*
 * stub_grammar.c — grammars in the stub engine, through the shared grammar
 * library (native/grammar/grammar.h), over the stub's byte vocabulary: ids
 * 0..255 are TEXT tokens of one byte, BOS is CONTROL, EOS is END.  Each model
 * builds that vocabulary at load (stub_model.c), so grammars are tied to the
 * model they were compiled for, as in the CPU engine.
 *
 * The stub does not choose its tokens: a run with a grammar checks its
 * scripted bytes against it (stub_step.c) and stops with
 * ADIL_STATUS_OUTPUT_VALIDATION where they break it, so that every
 * output-validation path of a host can be tested without a model.
 */
#include "stub_internal.h"

adil_status stub_vocab_new(grammar_vocab **out) {
    static const uint8_t no_bytes[1] = {0};
    grammar_token tokens[STUB_N_VOCAB];
    uint8_t bytes[256];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        tokens[i] = (grammar_token){.bytes = &bytes[i], .len = 1, .kind = GRAMMAR_TOKEN_TEXT};
    }
    tokens[STUB_TOKEN_BOS] = (grammar_token){.bytes = no_bytes, .len = 0, .kind = GRAMMAR_TOKEN_CONTROL};
    tokens[STUB_TOKEN_EOS] = (grammar_token){.bytes = no_bytes, .len = 0, .kind = GRAMMAR_TOKEN_END};
    return grammar_vocab_new(tokens, STUB_N_VOCAB, out); /* copies the bytes */
}

ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json, size_t schema_len,
                                          adil_grammar **out) {
    if (out != NULL) *out = NULL;
    if (model == NULL || out == NULL || (schema_json == NULL && schema_len > 0))
        return adil_fail(
            ADIL_STATUS_INVALID_ARGUMENT,
            "adil_grammar_compile: expected a model, the schema text and an out pointer, got NULL");
    adil_status st =
        grammar_compile(model->grammar_vocab, schema_json != NULL ? schema_json : "", schema_len, out);
    if (st == ADIL_OK) adil_clear_error();
    return st;
}

ADIL_API void adil_grammar_free(adil_grammar *grammar) {
    if (grammar != NULL) grammar_free(grammar);
}
