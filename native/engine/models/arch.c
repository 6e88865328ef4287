/*
 * arch.c — the architectures this engine runs, by general.architecture.
 */
#include "models/transformer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const adil_arch *const archs[] = {&adil_arch_llama,  &adil_arch_gemma3, &adil_arch_qwen2,
                                         &adil_arch_qwen3,  &adil_arch_phi3,   &adil_arch_qwen3moe,
                                         &adil_arch_gpt_oss};

const adil_arch *adil_arch_find(const char *name, size_t len) {
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strlen(archs[i]->name) == len && memcmp(archs[i]->name, name, len) == 0) return archs[i];
    return NULL;
}

void adil_arch_names(char *buf, size_t cap) {
    size_t used = 0;
    if (cap > 0) buf[0] = '\0';
    for (size_t i = 0; i < sizeof archs / sizeof archs[0] && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", archs[i]->name);
}

void adil_transformer_free(adil_transformer *m) {
    free(m->layers);
    free(m->owned);
    free(m->repacked);
    m->layers = NULL;
    m->owned = NULL;
    m->repacked = NULL;
}
