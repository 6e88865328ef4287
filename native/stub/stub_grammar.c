/*
 * stub_grammar.c — the stub engine has no grammar support: it writes its
 * scripted bytes whatever the constraint, so it refuses to compile one rather
 * than pretend to honour it.
 */
#include "stub_internal.h"

ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json, size_t schema_len,
                                          adil_grammar **out) {
    (void)model;
    (void)schema_json;
    (void)schema_len;
    if (out != NULL) *out = NULL;
    return adil_fail(
        ADIL_STATUS_CAPABILITY,
        "adil_grammar_compile: the stub engine has no grammar support (it only replays its script)");
}

ADIL_API void adil_grammar_free(adil_grammar *grammar) {
    /* No grammar can be made by this engine, so there is nothing to free. */
    (void)grammar;
}
