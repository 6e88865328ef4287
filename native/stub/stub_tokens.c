/*
 * stub_tokens.c — the stub's byte-level tokenizer: every byte is the token of
 * its value (0..255); 256 is BOS "<bos>" and 257 is EOS "<eos>".  With
 * parse_special, the literal texts "<bos>" and "<eos>" become those ids.
 */
#include "stub_internal.h"

#include <string.h>

static const char BOS_TEXT[] = "<bos>";
static const char EOS_TEXT[] = "<eos>";
#define SPECIAL_TEXT_LEN 5

/* The special token spelled at text[i ..], or -1. */
static int32_t special_at(const char *text, size_t text_len, size_t i) {
    if (text_len - i < SPECIAL_TEXT_LEN) return -1;
    if (memcmp(text + i, BOS_TEXT, SPECIAL_TEXT_LEN) == 0) return STUB_TOKEN_BOS;
    if (memcmp(text + i, EOS_TEXT, SPECIAL_TEXT_LEN) == 0) return STUB_TOKEN_EOS;
    return -1;
}

/* Writes the token if there is room; always counts it. */
static void emit(int32_t token, int32_t *tokens, size_t capacity, size_t *n) {
    if (*n < capacity) tokens[*n] = token;
    (*n)++;
}

ADIL_API adil_status adil_tokenize(const adil_model *model, const char *text, size_t text_len,
                                   int32_t add_bos, int32_t parse_special, int32_t *tokens, size_t capacity,
                                   size_t *n_tokens) {
    if (model == NULL || n_tokens == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_tokenize: expected a model and n_tokens, got NULL");
    if ((text == NULL && text_len > 0) || (tokens == NULL && capacity > 0))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_tokenize: expected %s, got NULL with a length of %zu",
                         text == NULL && text_len > 0 ? "text" : "a token buffer",
                         text == NULL && text_len > 0 ? text_len : capacity);
    if (add_bos < -1 || add_bos > 1)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenize: add_bos expected -1, 0 or 1, got %d",
                         (int)add_bos);
    size_t n = 0;
    if (add_bos == 1) /* -1 means "as the model asks", and the stub asks for none */
        emit(STUB_TOKEN_BOS, tokens, capacity, &n);
    for (size_t i = 0; i < text_len;) {
        int32_t special = parse_special ? special_at(text, text_len, i) : -1;
        if (special >= 0) {
            emit(special, tokens, capacity, &n);
            i += SPECIAL_TEXT_LEN;
        } else {
            emit((int32_t)(unsigned char)text[i], tokens, capacity, &n);
            i++;
        }
    }
    *n_tokens = n;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API adil_status adil_token_to_piece(const adil_model *model, int32_t token, int32_t special, char *buf,
                                         size_t capacity, size_t *n_bytes) {
    if (model == NULL || n_bytes == NULL || (buf == NULL && capacity > 0))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_token_to_piece: expected a model, n_bytes and a buffer, got NULL");
    if (token < 0 || token >= STUB_N_VOCAB)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_token_to_piece: token expected in [0, %d), got %d", STUB_N_VOCAB, (int)token);
    char byte = (char)(unsigned char)(token & 0xFF);
    const char *piece = &byte;
    size_t len = 1;
    if (token >= 256) {
        /* Control tokens are invisible unless the caller asks for them. */
        piece = token == STUB_TOKEN_BOS ? BOS_TEXT : EOS_TEXT;
        len = special ? SPECIAL_TEXT_LEN : 0;
    }
    if (len > 0 && capacity > 0) memcpy(buf, piece, len < capacity ? len : capacity);
    *n_bytes = len;
    adil_clear_error();
    return ADIL_OK;
}
