/*
 * spm.c — the SentencePiece-style merge of the "llama" tokenizer model.
 *
 * The text (spaces already written as U+2581) starts as one symbol per UTF-8
 * character.  Every adjacent pair whose concatenation is a vocabulary token
 * is a candidate; the candidate with the best score is merged first (ties:
 * the leftmost), and the merged symbol forms new candidates with its
 * neighbours (the loop is merge.c's, with minus the score as the cost).
 * Finally each symbol becomes its token, or its bytes' <0xXX> tokens when
 * it is not in the vocabulary (byte fallback).
 */
#include "text/tokenizer_internal.h"

#include <stdlib.h>

/* A pair merges when its text is a token; the best score merges first. */
static bool score_cost(const adil_tokenizer *tok, const char *text, const adil_merge_symbol *l,
                       const adil_merge_symbol *r, double *cost) {
    int32_t id = adil_vocab_find(tok, text + l->start, l->n + r->n);
    if (id < 0) {
        return false;
    }
    *cost = -(double)tok->vocab[id].score;
    return true;
}

/* Emits one final symbol: its token, or byte tokens when it has none. */
static adil_status emit_symbol(const adil_tokenizer *tok, const char *text, const adil_merge_symbol *s,
                               adil_ids *out) {
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

adil_status adil_spm_tokenize(const adil_tokenizer *tok, const char *text, size_t len, adil_ids *out) {
    if (len == 0) {
        return ADIL_OK;
    }
    adil_merge_symbol *syms = malloc(len * sizeof *syms);
    if (!syms) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu symbols", len);
    }
    size_t n = adil_merge_split_chars(text, len, syms);
    adil_merge_heap heap = {.what = "tokenize: bigrams"};
    adil_status st = adil_merge_symbols(tok, text, syms, n, score_cost, &heap);
    for (int32_t i = 0; st == ADIL_OK && i >= 0; i = syms[i].next) {
        st = emit_symbol(tok, text, &syms[i], out);
    }
    free(heap.data);
    free(syms);
    return st;
}
