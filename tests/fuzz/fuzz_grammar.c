/*
 * fuzz_grammar.c — any bytes as a grammar's input and a document
 * (native/grammar/grammar.h).
 *
 * The input is <schema text> NUL <document bytes>.  The schema is compiled
 * against a fixed vocabulary: every byte, a few tokens that span lexemes or
 * end inside a UTF-8 character, a control token and an end token.  A
 * compile failure must carry a message and a documented status.  On success
 * the document is fed one byte at a time; before each byte:
 *  - the mask's count is the number of bits it sets, and the byte's own
 *    token is in the mask exactly when accepting it succeeds;
 *  - the forced bytes, when there are any, are accepted by a second matcher.
 * When the whole document is accepted and the grammar (not lazy) says the
 * output may end, the document is JSON (after leading whitespace): adil_json_parse
 * accepts it.
 */
#include "adil_json.h"
#include "grammar_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"

static const char *const EXTRA[] = {"\"name\":", "},", "\"},{\"", "true", "12",  "\xc3", "\xa9x", "\\u",
                                    "abc\",",    "  ", "-0",      ".5",   "\"}", "<t>",  "</t>"};
#define N_EXTRA (sizeof EXTRA / sizeof *EXTRA)
#define N_VOCAB (256 + N_EXTRA + 2)

static grammar_vocab *vocab(void) {
    static grammar_vocab *v;
    static uint8_t bytes[256];
    if (v) return v;
    grammar_token t[N_VOCAB];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        t[i] = (grammar_token){&bytes[i], 1, GRAMMAR_TOKEN_TEXT};
    }
    for (size_t i = 0; i < N_EXTRA; i++)
        t[256 + i] =
            (grammar_token){(const uint8_t *)EXTRA[i], (uint32_t)strlen(EXTRA[i]), GRAMMAR_TOKEN_TEXT};
    t[N_VOCAB - 2] = (grammar_token){(const uint8_t *)"<c>", 3, GRAMMAR_TOKEN_CONTROL};
    t[N_VOCAB - 1] = (grammar_token){NULL, 0, GRAMMAR_TOKEN_END};
    REQUIRE(grammar_vocab_new(t, N_VOCAB, &v) == ADIL_OK);
    return v;
}

static bool bit(const uint32_t *mask, uint32_t id) { return (mask[id / 32] >> (id % 32)) & 1u; }

static void check_step(const adil_grammar *g, grammar_matcher *m, const uint8_t *doc, size_t i) {
    uint32_t mask[(N_VOCAB + 31) / 32];
    size_t set = 0;
    const size_t count = grammar_matcher_mask(m, mask);
    for (uint32_t t = 0; t < N_VOCAB; t++) set += bit(mask, t);
    REQUIRE(count == set);
    uint8_t forced[64];
    const size_t n = grammar_matcher_forced(m, forced, sizeof forced);
    if (n > 0) {
        grammar_matcher *probe = NULL;
        REQUIRE(grammar_matcher_new(g, &probe) == ADIL_OK);
        REQUIRE(grammar_matcher_accept_bytes(probe, doc, i, NULL));
        REQUIRE(grammar_matcher_accept_bytes(probe, forced, n, NULL));
        grammar_matcher_free(probe);
    }
}

static void run(const adil_grammar *g, const uint8_t *doc, size_t len) {
    grammar_matcher *m = NULL;
    REQUIRE(grammar_matcher_new(g, &m) == ADIL_OK);
    size_t i = 0;
    for (; i < len; i++) {
        check_step(g, m, doc, i);
        uint32_t mask[(N_VOCAB + 31) / 32];
        grammar_matcher_mask(m, mask);
        const bool ok = grammar_matcher_accept_token(m, doc[i], NULL);
        REQUIRE(ok == bit(mask, doc[i]));
        if (!ok) break;
    }
    /* Sound as JSON: a whole document the grammar lets end is JSON. */
    if (i == len && !g->lazy && grammar_matcher_position(m) != GRAMMAR_OPEN) {
        adil_json value;
        const adil_status st =
            adil_json_parse((const char *)doc, len, ADIL_STATUS_INVALID_ARGUMENT, "fuzz", &value);
        REQUIRE(st == ADIL_OK || st == ADIL_STATUS_OUT_OF_MEMORY);
        if (st == ADIL_OK) adil_json_free(&value);
    }
    grammar_matcher_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    const size_t schema_len = nul ? (size_t)(nul - data) : size;
    const uint8_t *doc = nul ? nul + 1 : data + size;
    const size_t doc_len = nul ? size - schema_len - 1 : 0;
    adil_grammar *g = NULL;
    const adil_status st = grammar_compile(vocab(), (const char *)data, schema_len, &g);
    if (st != ADIL_OK) {
        REQUIRE(st == ADIL_STATUS_INVALID_ARGUMENT || st == ADIL_STATUS_CAPABILITY ||
                st == ADIL_STATUS_OUT_OF_MEMORY);
        REQUIRE(adil_last_error()[0] != '\0');
        REQUIRE(g == NULL);
        return 0;
    }
    run(g, doc, doc_len);
    grammar_free(g);
    return 0;
}
