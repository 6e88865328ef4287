/*
 * gguf_index.c — a small open-addressing hash index for key and tensor names
 * (a model has ~40 keys but hundreds of tensors, looked up by name at load).
 */
#include "format/gguf_internal.h"

#include <stdlib.h>

uint64_t gguf_hash_bytes(const void *data, size_t len) {
    const uint8_t *p = data;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ull;
    }
    return h;
}

adil_status gguf_index_init(gguf_index *ix, uint64_t n) {
    /* Capacity: a power of two at least twice n, so probes stay short.  n is
     * bounded by the file size (each entry needs bytes), so this fits. */
    uint64_t cap = 16;
    while (cap < 2 * n) {
        cap *= 2;
    }
    ix->slots = calloc(cap, sizeof(*ix->slots));
    if (ix->slots == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: name index of %llu slots",
                         (unsigned long long)cap);
    }
    ix->mask = cap - 1;
    return ADIL_OK;
}

void gguf_index_free(gguf_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}

uint64_t *gguf_index_slot(const gguf_index *ix, const char *name, size_t len, gguf_name_eq_fn eq,
                          const void *ctx) {
    if (ix->slots == NULL) {
        return NULL;
    }
    uint64_t i = gguf_hash_bytes(name, len) & ix->mask;
    /* Linear probing; the table is at most half full, so an empty slot exists. */
    while (ix->slots[i] != 0 && !eq(ctx, ix->slots[i] - 1, name, len)) {
        i = (i + 1) & ix->mask;
    }
    return &ix->slots[i];
}
