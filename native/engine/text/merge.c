/*
 * merge.c — the merge loop both tokenizer models share (spm.c and bpe.c).
 *
 * The text starts as one symbol per UTF-8 character, linked in order.  Every
 * adjacent pair that may merge is a candidate with a cost given by the model
 * (SentencePiece: minus the merged token's score; BPE: the merge rank); the
 * cheapest candidate merges first (ties: the leftmost), and the merged symbol
 * forms new candidates with its neighbours.  A binary min-heap keeps this
 * O(n log n).  Stale candidates (a side already merged elsewhere) are
 * recognised by their size and skipped.
 */
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdlib.h>

size_t adil_merge_split_chars(const char *text, size_t len, adil_merge_symbol *syms) {
    size_t n = 0;
    for (size_t off = 0; off < len;) {
        size_t c = adil_utf8_len((uint8_t)text[off]);
        if (c > len - off) {
            c = len - off;
        }
        syms[n] =
            (adil_merge_symbol){.prev = (int32_t)n - 1, .next = -1, .start = (uint32_t)off, .n = (uint32_t)c};
        if (n > 0) {
            syms[n - 1].next = (int32_t)n;
        }
        n++;
        off += c;
    }
    return n;
}

/* ---- the candidate heap ---------------------------------------------------- */

/* True when a merges before b: lower cost, then leftmost. */
static bool before(const adil_merge_cand *a, const adil_merge_cand *b) {
    return a->cost < b->cost || (a->cost == b->cost && a->left < b->left);
}

static adil_status heap_push(adil_merge_heap *h, adil_merge_cand c) {
    adil_status st = adil_grow((void **)&h->data, &h->cap, h->n + 1, sizeof *h->data, h->what);
    if (st != ADIL_OK) {
        return st;
    }
    size_t i = h->n++;
    while (i > 0 && before(&c, &h->data[(i - 1) / 2])) {
        h->data[i] = h->data[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->data[i] = c;
    return ADIL_OK;
}

static adil_merge_cand heap_pop(adil_merge_heap *h) {
    adil_merge_cand top = h->data[0];
    adil_merge_cand last = h->data[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) {
            break;
        }
        if (c + 1 < h->n && before(&h->data[c + 1], &h->data[c])) {
            c++;
        }
        if (!before(&h->data[c], &last)) {
            break;
        }
        h->data[i] = h->data[c];
        i = c;
    }
    if (h->n > 0) {
        h->data[i] = last;
    }
    return top;
}

/* ---- merging ----------------------------------------------------------------- */

/* Proposes merging symbols left and right when the model has a cost for it. */
static adil_status try_pair(const adil_tokenizer *tok, const char *text, const adil_merge_symbol *syms,
                            int32_t left, int32_t right, adil_merge_cost_fn cost_of, adil_merge_heap *heap) {
    if (left < 0 || right < 0) {
        return ADIL_OK;
    }
    const adil_merge_symbol *l = &syms[left], *r = &syms[right];
    double cost;
    if (!cost_of(tok, text, l, r, &cost)) {
        return ADIL_OK;
    }
    adil_merge_cand c = {.cost = cost, .left = left, .right = right, .size = l->n + r->n};
    return heap_push(heap, c);
}

adil_status adil_merge_symbols(const adil_tokenizer *tok, const char *text, adil_merge_symbol *syms, size_t n,
                               adil_merge_cost_fn cost_of, adil_merge_heap *heap) {
    adil_status st = ADIL_OK;
    heap->n = 0;
    for (size_t i = 1; i < n && st == ADIL_OK; i++) {
        st = try_pair(tok, text, syms, (int32_t)i - 1, (int32_t)i, cost_of, heap);
    }
    while (st == ADIL_OK && heap->n > 0) {
        adil_merge_cand c = heap_pop(heap);
        adil_merge_symbol *l = &syms[c.left], *r = &syms[c.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != c.size) {
            continue; /* stale: a side was merged since this was proposed */
        }
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) {
            syms[r->next].prev = c.left;
        }
        st = try_pair(tok, text, syms, l->prev, c.left, cost_of, heap);
        if (st == ADIL_OK) {
            st = try_pair(tok, text, syms, c.left, l->next, cost_of, heap);
        }
    }
    return st;
}
