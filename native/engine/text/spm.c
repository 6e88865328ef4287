/*
 * spm.c — the SentencePiece-style merge of the "llama" tokenizer model.
 *
 * The text (spaces already written as U+2581) starts as one symbol per UTF-8
 * character.  Every adjacent pair whose concatenation is a vocabulary token
 * is a candidate; the candidate with the best score is merged first (ties:
 * the leftmost), and the merged symbol forms new candidates with its
 * neighbours.  A max-heap keeps this O(n log n).  Stale candidates (a side
 * already merged elsewhere) are recognised by their size and skipped.
 * Finally each symbol becomes its token, or its bytes' <0xXX> tokens when
 * it is not in the vocabulary (byte fallback).
 */
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdlib.h>

typedef struct spm_symbol {
    int32_t prev;                  /* -1 = none */
    int32_t next;                  /* -1 = none */
    uint32_t start;                /* byte offset in the text */
    uint32_t n;                    /* bytes; 0 once merged into its left neighbour */
} spm_symbol;

typedef struct spm_bigram {
    float score;
    int32_t left;
    int32_t right;
    uint32_t size;                 /* bytes of left + right when proposed */
} spm_bigram;

typedef struct spm_heap {
    spm_bigram *data;
    size_t n;
    size_t cap;
} spm_heap;

/* True when a should be merged before b: higher score, then leftmost. */
static bool before(const spm_bigram *a, const spm_bigram *b)
{
    return a->score > b->score || (a->score == b->score && a->left < b->left);
}

static adil_status heap_push(spm_heap *h, spm_bigram b)
{
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 64;
        spm_bigram *d = realloc(h->data, cap * sizeof *d);
        if (!d) {
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu bigrams",
                             cap);
        }
        h->data = d;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&b, &h->data[(i - 1) / 2])) {
        h->data[i] = h->data[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->data[i] = b;
    return ADIL_OK;
}

static spm_bigram heap_pop(spm_heap *h)
{
    spm_bigram top = h->data[0];
    spm_bigram last = h->data[--h->n];
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

/* Proposes merging symbols left and right when their text is a token. */
static adil_status try_pair(const adil_tokenizer *tok, const char *text, const spm_symbol *syms,
                            int32_t left, int32_t right, spm_heap *heap)
{
    if (left < 0 || right < 0) {
        return ADIL_OK;
    }
    uint32_t size = syms[left].n + syms[right].n;
    int32_t id = adil_vocab_find(tok, text + syms[left].start, size);
    if (id < 0) {
        return ADIL_OK;
    }
    spm_bigram b = {.score = tok->vocab[id].score, .left = left, .right = right, .size = size};
    return heap_push(heap, b);
}

/* Emits one final symbol: its token, or byte tokens when it has none. */
static adil_status emit_symbol(const adil_tokenizer *tok, const char *text, const spm_symbol *s,
                               adil_ids *out)
{
    int32_t id = adil_vocab_find(tok, text + s->start, s->n);
    if (id >= 0) {
        return adil_ids_push(out, id);
    }
    for (uint32_t i = 0; i < s->n; i++) {
        int32_t b = tok->byte_token[(uint8_t)text[s->start + i]];
        if (b < 0) {
            b = tok->unk_id; /* a vocabulary without byte tokens */
        }
        if (b >= 0) {
            adil_status st = adil_ids_push(out, b);
            if (st != ADIL_OK) {
                return st;
            }
        }
    }
    return ADIL_OK;
}

/* Splits the text into one symbol per UTF-8 character (a truncated
 * character at the end keeps the bytes that remain). */
static size_t split_chars(const char *text, size_t len, spm_symbol *syms)
{
    size_t n = 0;
    for (size_t off = 0; off < len;) {
        size_t c = adil_utf8_len((uint8_t)text[off]);
        if (c > len - off) {
            c = len - off;
        }
        syms[n] = (spm_symbol){.prev = (int32_t)n - 1, .next = -1, .start = (uint32_t)off,
                               .n = (uint32_t)c};
        if (n > 0) {
            syms[n - 1].next = (int32_t)n;
        }
        n++;
        off += c;
    }
    return n;
}

static adil_status merge_all(const adil_tokenizer *tok, const char *text, spm_symbol *syms,
                             size_t n, spm_heap *heap)
{
    adil_status st = ADIL_OK;
    for (size_t i = 1; i < n && st == ADIL_OK; i++) {
        st = try_pair(tok, text, syms, (int32_t)i - 1, (int32_t)i, heap);
    }
    while (st == ADIL_OK && heap->n > 0) {
        spm_bigram b = heap_pop(heap);
        spm_symbol *l = &syms[b.left], *r = &syms[b.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != b.size) {
            continue; /* stale: a side was merged since this was proposed */
        }
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0) {
            syms[r->next].prev = b.left;
        }
        st = try_pair(tok, text, syms, l->prev, b.left, heap);
        if (st == ADIL_OK) {
            st = try_pair(tok, text, syms, b.left, l->next, heap);
        }
    }
    return st;
}

adil_status adil_spm_tokenize(const adil_tokenizer *tok, const char *text, size_t len,
                              adil_ids *out)
{
    if (len == 0) {
        return ADIL_OK;
    }
    spm_symbol *syms = malloc(len * sizeof *syms);
    if (!syms) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu symbols", len);
    }
    size_t n = split_chars(text, len, syms);
    spm_heap heap = {0};
    adil_status st = merge_all(tok, text, syms, n, &heap);
    for (int32_t i = 0; st == ADIL_OK && i >= 0; i = syms[i].next) {
        st = emit_symbol(tok, text, &syms[i], out);
    }
    free(heap.data);
    free(syms);
    return st;
}
