/*
 * grammar_vocab.c — the tokenizer as the grammar library's vocabulary, and
 * the tokenization of forced text (grammar_vocab.h).
 */
#include "text/grammar_vocab.h"
#include "text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

static const char k_space_marker[] = "\xe2\x96\x81"; /* U+2581 "▁" */

static grammar_token_kind kind_of(const adil_tokenizer *tok, int32_t id, size_t n_bytes) {
    if (adil_tokenizer_is_eog(tok, id)) return GRAMMAR_TOKEN_END;
    switch (adil_tokenizer_token_type(tok, id)) {
    case ADIL_TOKEN_TYPE_NORMAL:
    case ADIL_TOKEN_TYPE_USER_DEFINED:
    case ADIL_TOKEN_TYPE_BYTE:
        return n_bytes > 0 ? GRAMMAR_TOKEN_TEXT : GRAMMAR_TOKEN_CONTROL;
    default: /* control, unknown, unused, undefined: never text of a document */
        return GRAMMAR_TOKEN_CONTROL;
    }
}

/* Pass 1: each token's length (into tokens[i].len) and their sum. */
static adil_status measure(const adil_tokenizer *tok, uint32_t n_tok, grammar_token *tokens, size_t *total) {
    *total = 0;
    for (uint32_t i = 0; i < n_tok; i++) {
        size_t n = 0;
        adil_status st = adil_tokenizer_token_to_piece(tok, (int32_t)i, 0, NULL, 0, &n);
        if (st != ADIL_OK) return st;
        if (n > UINT32_MAX || *total > SIZE_MAX - n)
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar vocab: token %u has %zu bytes", i, n);
        tokens[i].len = (uint32_t)n;
        *total += n;
    }
    return ADIL_OK;
}

/* Pass 2: the bytes into `arena` and each token's kind. */
static adil_status fill(const adil_tokenizer *tok, uint32_t n_tok, grammar_token *tokens, uint8_t *arena) {
    size_t at = 0;
    for (uint32_t i = 0; i < n_tok; i++) {
        size_t n = 0;
        adil_status st =
            adil_tokenizer_token_to_piece(tok, (int32_t)i, 0, (char *)arena + at, tokens[i].len, &n);
        if (st != ADIL_OK) return st;
        if (n != tokens[i].len)
            return adil_fail(ADIL_STATUS_INTERNAL, "grammar vocab: token %u changed length (%u, then %zu)", i,
                             tokens[i].len, n);
        tokens[i].bytes = arena + at;
        tokens[i].kind = kind_of(tok, (int32_t)i, n);
        at += n;
    }
    return ADIL_OK;
}

adil_status adil_grammar_vocab_build(const adil_tokenizer *tok, uint32_t n_vocab, grammar_vocab **out) {
    *out = NULL;
    adil_tokenizer_info ti;
    adil_tokenizer_get_info(tok, &ti);
    const uint32_t n_tok = ti.n_vocab < n_vocab ? ti.n_vocab : n_vocab;
    grammar_token *tokens = calloc(n_vocab ? n_vocab : 1, sizeof *tokens);
    if (!tokens)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar vocab: out of memory for %u tokens", n_vocab);
    size_t total = 0;
    uint8_t *arena = NULL;
    adil_status st = measure(tok, n_tok, tokens, &total);
    if (st == ADIL_OK && !(arena = malloc(total ? total : 1)))
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar vocab: out of memory for %zu bytes", total);
    if (st == ADIL_OK) st = fill(tok, n_tok, tokens, arena);
    for (uint32_t i = n_tok; i < n_vocab; i++) /* padding rows of the embedding */
        tokens[i] = (grammar_token){.bytes = NULL, .len = 0, .kind = GRAMMAR_TOKEN_CONTROL};
    if (st == ADIL_OK) st = grammar_vocab_new(tokens, n_vocab, out); /* copies the bytes */
    free(arena);
    free(tokens);
    return st;
}

/* SentencePiece on one raw fragment, spaces written as "▁", no prefix. */
static adil_status spm_continuation(const adil_tokenizer *tok, const uint8_t *text, size_t len,
                                    adil_ids *out) {
    size_t n_spaces = 0;
    for (size_t i = 0; i < len; i++) n_spaces += text[i] == ' ';
    char *buf = malloc(len + 2 * n_spaces + 1);
    if (!buf) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu bytes", len);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + k, k_space_marker, 3);
            k += 3;
        } else {
            buf[k++] = (char)text[i];
        }
    }
    adil_status st = adil_spm_tokenize(tok, buf, k, out);
    free(buf);
    return st;
}

adil_status adil_tokenize_continuation(const adil_tokenizer *tok, const uint8_t *text, size_t len,
                                       int32_t *ids, size_t capacity, size_t *n) {
    /* Only a SentencePiece model that adds a space prefix tokenizes a start
     * differently from a continuation. */
    if (!tok->is_spm || !tok->add_space_prefix)
        return adil_tokenizer_tokenize(tok, (const char *)text, len, 0, 0, ids, capacity, n);
    adil_fragments frags = {0};
    adil_ids out = {0};
    adil_status st = adil_special_split(tok, (const char *)text, len, false, &frags);
    for (size_t i = 0; st == ADIL_OK && i < frags.n; i++) {
        const adil_fragment *f = &frags.data[i];
        st = f->token >= 0 ? adil_ids_push(&out, f->token)
                           : spm_continuation(tok, text + f->start, f->len, &out);
    }
    if (st == ADIL_OK) {
        const size_t k = out.n < capacity ? out.n : capacity;
        if (k > 0) memcpy(ids, out.data, k * sizeof *ids);
        *n = out.n;
    }
    free(frags.data);
    adil_ids_free(&out);
    return st;
}
