/*
 * sort.c — the one sort of the grammar library: token ids by their bytes
 * (vocab.c), literal texts by theirs (compile.c).
 */
#include "grammar_internal.h"

#include <string.h>

void grammar_sort_ids(uint32_t *ids, uint32_t *tmp, uint32_t n, grammar_order order, const void *ctx) {
    for (uint32_t width = 1; width < n; width *= 2) {
        for (uint32_t lo = 0; lo < n; lo += 2 * width) {
            const uint32_t mid = lo + width < n ? lo + width : n,
                           hi = lo + 2 * width < n ? lo + 2 * width : n;
            uint32_t i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = order(ctx, ids[i], ids[j]) <= 0 ? ids[i++] : ids[j++];
            while (i < mid) tmp[o++] = ids[i++];
            while (j < hi) tmp[o++] = ids[j++];
        }
        memcpy(ids, tmp, n * sizeof *ids);
    }
}
