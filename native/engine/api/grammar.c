/*
 * grammar.c — output constraints.  Not built into this engine yet: compiling
 * answers ADIL_STATUS_CAPABILITY, so no grammar handle exists.
 */
#include "engine_internal.h"

ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json, size_t schema_len,
                                          adil_grammar **out) {
    (void)schema_json;
    (void)schema_len;
    if (out) *out = NULL;
    if (!model || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_grammar_compile: model and out are required");
    return adil_fail(ADIL_STATUS_CAPABILITY, "adil_grammar_compile: the %s engine has no grammar support yet",
                     ADIL_CPU_ENGINE_NAME);
}

ADIL_API void adil_grammar_free(adil_grammar *grammar) { (void)grammar; }
