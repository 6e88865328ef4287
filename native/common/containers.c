/*
 * containers.c — growing arrays and the hash index (adil_containers.h).
 */
#include "adil_containers.h"

#include "adil_common.h"

#include <stdlib.h>

/* ---- growing arrays --------------------------------------------------- */

adil_status adil_grow_realloc(void **items, size_t *cap, size_t need, size_t item_size, const char *what) {
    size_t new_cap = *cap ? *cap : 4;
    while (new_cap < need && new_cap <= SIZE_MAX / 2) {
        new_cap *= 2;
    }
    void *p = NULL;
    if (new_cap >= need && item_size > 0 && new_cap <= SIZE_MAX / item_size) {
        p = realloc(*items, new_cap * item_size);
    }
    if (p == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: out of memory for %zu entries of %zu bytes", what,
                         need, item_size);
    }
    *items = p;
    *cap = new_cap;
    return ADIL_OK;
}

/* ---- hash index ------------------------------------------------------- */

adil_status adil_hash_index_init(adil_hash_index *ix, uint64_t n, const char *what) {
    ix->slots = NULL;
    ix->mask = 0;
    if (n > ADIL_HASH_INDEX_MAX) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY,
                         "%s: an index of %llu entries: expected at "
                         "most %u",
                         what, (unsigned long long)n, (unsigned)ADIL_HASH_INDEX_MAX);
    }
    uint64_t cap = 16;
    while (cap < 2 * n) {
        cap *= 2;
    }
    ix->slots = cap <= SIZE_MAX / sizeof(*ix->slots) ? calloc((size_t)cap, sizeof(*ix->slots)) : NULL;
    if (ix->slots == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: out of memory for an index of %llu slots", what,
                         (unsigned long long)cap);
    }
    ix->mask = cap - 1;
    return ADIL_OK;
}

void adil_hash_index_free(adil_hash_index *ix) {
    free(ix->slots);
    ix->slots = NULL;
    ix->mask = 0;
}
