/*
 * tokens.c — adil_tokenize / adil_token_to_piece: the model's tokenizer
 * (text/tokenizer.h) behind the ABI.
 */
#include "engine_internal.h"

ADIL_API adil_status adil_tokenize(const adil_model *model, const char *text, size_t text_len,
                                   int32_t add_bos, int32_t parse_special, int32_t *tokens, size_t capacity,
                                   size_t *n_tokens) {
    if (!model) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenize: model is NULL");
    if (add_bos < -1 || add_bos > 1)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenize: add_bos: expected -1, 0 or 1, got %d",
                         add_bos);
    return adil_tokenizer_tokenize(model->tok, text, text_len, add_bos, parse_special, tokens, capacity,
                                   n_tokens);
}

ADIL_API adil_status adil_token_to_piece(const adil_model *model, int32_t token, int32_t special, char *buf,
                                         size_t capacity, size_t *n_bytes) {
    if (!model) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_token_to_piece: model is NULL");
    if (token < 0 || token >= model->tf.hp.n_vocab)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_token_to_piece: token %d: expected 0..%lld",
                         token, (long long)model->tf.hp.n_vocab - 1);
    adil_tokenizer_info ti;
    adil_tokenizer_get_info(model->tok, &ti);
    if ((uint32_t)token >= ti.n_vocab) { /* a padding row of the embedding: no text */
        if (!n_bytes) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_token_to_piece: n_bytes is NULL");
        *n_bytes = 0;
        return ADIL_OK;
    }
    return adil_tokenizer_token_to_piece(model->tok, token, special, buf, capacity, n_bytes);
}
