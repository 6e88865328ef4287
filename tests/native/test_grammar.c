/*
 * test_grammar.c — the grammar library (native/grammar) on a small vocabulary:
 * every byte as a token, some multi-byte tokens that span lexemes or end
 * inside a UTF-8 character, a control token and an end token.
 *  - documents valid for a schema are accepted byte by byte and end the
 *    output; invalid ones are refused at the first wrong byte;
 *  - at every step of a valid document, the mask equals what accepting each
 *    token would say (the fast paths agree with plain feeding);
 *  - forced bytes, lazy mode, compile errors with JSON Pointers.
 */
#include "grammar.h"
#include "test_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const EXTRA[] = {"\"name\":", "},",       "\"},{\"", "true",         "12",   "\xc3",
                                    "\xa9x",     "\xc3\xa9", "\":\"",   "\",\"",        "\\u",  "d83d",
                                    "\\ude00",   "abc\"",    "abc\",",  "  ",           "-0",   ".5",
                                    "\"}",       "<tool",    "_call>{", "</tool_call>", "ok\"}"};
#define N_EXTRA  (sizeof EXTRA / sizeof *EXTRA)
#define N_VOCAB  (256 + N_EXTRA + 2)
#define TOK_CTRL (256 + N_EXTRA)
#define TOK_END  (256 + N_EXTRA + 1)

static bool mask_test(const uint32_t *mask, uint32_t id) { return (mask[id / 32] >> (id % 32)) & 1u; }

static grammar_vocab *make_vocab(void) {
    static uint8_t bytes[256];
    grammar_token t[N_VOCAB];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        t[i] = (grammar_token){&bytes[i], 1, GRAMMAR_TOKEN_TEXT};
    }
    for (size_t i = 0; i < N_EXTRA; i++)
        t[256 + i] =
            (grammar_token){(const uint8_t *)EXTRA[i], (uint32_t)strlen(EXTRA[i]), GRAMMAR_TOKEN_TEXT};
    t[TOK_CTRL] = (grammar_token){(const uint8_t *)"<c>", 3, GRAMMAR_TOKEN_CONTROL};
    t[TOK_END] = (grammar_token){NULL, 0, GRAMMAR_TOKEN_END};
    grammar_vocab *v = NULL;
    CHECK(grammar_vocab_new(t, N_VOCAB, &v) == ADIL_OK);
    return v;
}

static adil_grammar *compile(const grammar_vocab *v, const char *schema) {
    adil_grammar *g = NULL;
    adil_status st = grammar_compile(v, schema, strlen(schema), &g);
    if (st != ADIL_OK) fprintf(stderr, "compile %s: %s\n", schema, adil_last_error());
    CHECK(st == ADIL_OK);
    return g;
}

/* Accepts `doc` byte by byte; returns the offset refused or -1, and the final position. */
static long run_bytes(const adil_grammar *g, const char *doc, grammar_position *pos) {
    grammar_matcher *m = NULL;
    CHECK(grammar_matcher_new(g, &m) == ADIL_OK);
    size_t bad = 0;
    const bool ok = grammar_matcher_accept_bytes(m, (const uint8_t *)doc, strlen(doc), &bad);
    *pos = grammar_matcher_position(m);
    grammar_matcher_free(m);
    return ok ? -1 : (long)bad;
}

static void expect_valid(const adil_grammar *g, const char *doc) {
    grammar_position pos;
    const long bad = run_bytes(g, doc, &pos);
    if (bad >= 0 || pos == GRAMMAR_OPEN)
        fprintf(stderr, "expected valid: %s (bad %ld, pos %d)\n", doc, bad, pos);
    CHECK(bad < 0 && pos != GRAMMAR_OPEN);
}

static void expect_invalid(const adil_grammar *g, const char *doc) {
    grammar_position pos;
    const long bad = run_bytes(g, doc, &pos);
    if (bad < 0 && pos != GRAMMAR_OPEN) fprintf(stderr, "expected invalid: %s\n", doc);
    CHECK(bad >= 0 || pos == GRAMMAR_OPEN);
}

/* At each byte of doc: the mask equals accept_token tried on every token. */
static void expect_masks_exact(const grammar_vocab *v, const adil_grammar *g, const char *doc) {
    grammar_matcher *m = NULL;
    uint32_t mask[(N_VOCAB + 31) / 32];
    CHECK(grammar_matcher_new(g, &m) == ADIL_OK);
    const size_t len = strlen(doc);
    for (size_t i = 0; i <= len; i++) {
        const size_t count = grammar_matcher_mask(m, mask);
        size_t set = 0;
        for (uint32_t t = 0; t < N_VOCAB; t++) set += mask_test(mask, t);
        CHECK(count == set);
        for (uint32_t t = 0; t < N_VOCAB; t++) {
            grammar_matcher *probe = NULL;
            CHECK(grammar_matcher_new(g, &probe) == ADIL_OK);
            CHECK(grammar_matcher_accept_bytes(probe, (const uint8_t *)doc, i, NULL));
            const bool ok = grammar_matcher_accept_token(probe, (int32_t)t, NULL);
            if (ok != (bool)mask_test(mask, t))
                fprintf(stderr, "mask differs: %s at %zu, token %u: accept %d mask %d\n", doc, i, t, ok,
                        (int)mask_test(mask, t));
            CHECK(ok == (bool)mask_test(mask, t));
            grammar_matcher_free(probe);
        }
        if (i < len) CHECK(grammar_matcher_accept_bytes(m, (const uint8_t *)doc + i, 1, NULL));
    }
    grammar_matcher_free(m);
    (void)v;
}

static void test_documents(const grammar_vocab *v) {
    adil_grammar *g =
        compile(v, "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\",\"maxLength\":3},"
                   "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":150},"
                   "\"tags\":{\"type\":\"array\",\"items\":{\"enum\":[\"a\",\"b\",1.5]},\"maxItems\":2}},"
                   "\"required\":[\"name\"],\"additionalProperties\":false}");
    expect_valid(g, "{\"name\":\"abc\"}");
    expect_valid(g, "{\"age\":150,\"name\":\"\xc3\xa9\"}");
    expect_valid(g, "{\"name\": \"x\", \"tags\": [\"a\", 1.5]}");
    expect_valid(g, "{\"name\":\"\\ud83d\\ude00ab\"}");
    expect_invalid(g, "{\"name\":\"abcd\"}");
    expect_invalid(g, "{\"name\":  \"x\"}"); /* one space at most */
    expect_invalid(g, "{\n\"name\":\"x\"}"); /* no blank lines or indentation */
    expect_invalid(g, " {\"name\":\"x\"}");  /* nothing before the document */
    expect_invalid(g, "{\"age\":151,\"name\":\"a\"}");
    expect_invalid(g, "{\"age\":1}");
    expect_invalid(g, "{\"name\":\"a\",\"name\":\"b\"}");
    expect_invalid(g, "{\"name\":\"a\",\"x\":1}");
    expect_invalid(g, "{\"name\":\"\\ude00\"}");
    expect_invalid(g, "{\"name\":\"a\",\"tags\":[\"a\",\"b\",\"a\"]}");
    expect_masks_exact(v, g, "{\"age\":12,\"name\":\"a\xc3\xa9\",\"tags\":[\"b\",1.5]}");
    grammar_free(g);

    g = compile(v, "{\"type\":\"number\",\"minimum\":-1,\"maximum\":2.5}");
    expect_valid(g, "2.5");
    expect_valid(g, "-0.0");
    expect_valid(g, "-1");
    expect_invalid(g, "-0");
    expect_invalid(g, "2.51");
    expect_invalid(g, "1e2");
    expect_invalid(g, "0.1234567890123456");
    expect_masks_exact(v, g, "-0.5");
    grammar_free(g);

    /* One value only: the end of a prefix's range is not in it (-215.223 can
     * only grow towards -215.224, never reach it). */
    g = compile(v, "{\"type\":\"number\",\"minimum\":-215.224,\"maximum\":-215.224}");
    expect_valid(g, "-215.224");
    grammar_position where;
    CHECK(run_bytes(g, "-215.223", &where) == 7); /* refused at its last digit */
    CHECK(run_bytes(g, "-215.2241", &where) == 8);
    grammar_free(g);

    g = compile(v, "{\"type\":\"string\",\"minLength\":2,\"maxLength\":5}");
    expect_valid(g, "\"ab\\u00e9c\"");
    expect_invalid(g, "\"a\"");
    expect_invalid(g, "\"abcdef\"");
    expect_masks_exact(v, g, "\"a\\nabc\"");
    expect_masks_exact(v, g, "\"\xc3\xa9x\\\"\"");
    grammar_free(g);

    g = compile(v, "{}");
    expect_valid(g, "{\"a\":[1,{\"b\":null}],\"c\":\"\\\"\"}");
    expect_invalid(g, "{\"a\":1,\"a\":2}");
    expect_invalid(g, "[1,]");
    expect_masks_exact(v, g, "{\"k\":[true,-0.5,\"abc\"]}");
    grammar_free(g);
}

static void test_forced_and_lazy(const grammar_vocab *v) {
    adil_grammar *g =
        compile(v, "{\"x-adil-tools\":[{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
                   "\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],"
                   "\"additionalProperties\":false}}]}");
    grammar_matcher *m = NULL;
    CHECK(grammar_matcher_new(g, &m) == ADIL_OK);
    uint8_t buf[128];
    const size_t n = grammar_matcher_forced(m, buf, sizeof buf);
    const char *want = "{\"name\":\"get_weather\",\"arguments\":{\"city\":\"";
    if (n != strlen(want) || memcmp(buf, want, n) != 0) fprintf(stderr, "forced: %.*s\n", (int)n, buf);
    CHECK(n == strlen(want) && memcmp(buf, want, n) == 0);
    /* peek: where tokens would lead, the matcher unmoved */
    const int32_t call[] = {'{', 256 /* "name": */, '"', 'g'};
    grammar_position where = GRAMMAR_DONE;
    CHECK(grammar_matcher_peek(m, call, 4, &where) && where == GRAMMAR_OPEN);
    const int32_t bad[] = {'{', '}'};
    CHECK(!grammar_matcher_peek(m, bad, 2, &where));
    CHECK(grammar_matcher_forced(m, buf, sizeof buf) == n);
    grammar_matcher_free(m);
    expect_valid(g, "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}");
    grammar_free(g);

    /* A space inside a value is forced like any other byte. */
    g = compile(v, "{\"const\":{\"a b\\\"c\":\"Ann and me\"}}");
    CHECK(grammar_matcher_new(g, &m) == ADIL_OK);
    const char *whole = "{\"a b\\\"c\":\"Ann and me\"}";
    CHECK(grammar_matcher_forced(m, buf, sizeof buf) == strlen(whole) &&
          memcmp(buf, whole, strlen(whole)) == 0);
    grammar_matcher_free(m);
    grammar_free(g);

    /* Parameters with literals of their own (enum, booleans) beside several tools. */
    g = compile(v, "{\"x-adil-tools\":[{\"name\":\"b\",\"parameters\":{\"type\":\"object\",\"properties\":"
                   "{\"u\":{\"enum\":[\"c\",\"f\"]},\"ok\":{\"type\":\"boolean\"}}}},"
                   "{\"name\":\"a\",\"parameters\":{\"type\":\"object\"}}]}");
    expect_valid(g, "{\"name\":\"b\",\"arguments\":{\"u\":\"f\",\"ok\":true}}");
    expect_valid(g, "{\"name\":\"a\",\"arguments\":{\"x\":[1]}}");
    expect_invalid(g, "{\"name\":\"c\",\"arguments\":{}}");
    expect_invalid(g, "{\"name\":\"b\",\"arguments\":{\"u\":\"x\"}}");
    grammar_free(g);

    g = compile(v, "{\"x-adil-tools\":[{\"name\":\"a\",\"parameters\":{\"type\":\"object\"}}],"
                   "\"x-adil-trigger\":\"<tool_call>\",\"x-adil-end\":\"</tool_call>\"}");
    grammar_position pos;
    CHECK(run_bytes(g, "Hello <b> <tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> done", &pos) < 0);
    CHECK(pos == GRAMMAR_CAN_END);
    CHECK(run_bytes(g, "<tool_call>\n{\"name\":\"a\",\"arguments\":{}}\n</tool_call>", &pos) < 0);
    CHECK(run_bytes(g, "<tool_call>\n\n\n{", &pos) >= 0);
    CHECK(run_bytes(g, "Hi <tool_call>{\"name\":\"b\"", &pos) >= 0);
    CHECK(run_bytes(g, "<tool_call>{\"name\":\"a\",\"arguments\":{}}", &pos) < 0 && pos == GRAMMAR_OPEN);
    expect_masks_exact(v, g, "x <tool_call>{\"name\":\"a\",\"arguments\":{\"q\":1}}</tool_call>");
    grammar_free(g);
}

static void expect_error(const grammar_vocab *v, const char *schema, adil_status want, const char *pointer) {
    adil_grammar *g = NULL;
    const adil_status st = grammar_compile(v, schema, strlen(schema), &g);
    if (st != want || !strstr(adil_last_error(), pointer))
        fprintf(stderr, "%s: status %d, message %s\n", schema, st, adil_last_error());
    CHECK(st == want && g == NULL && strstr(adil_last_error(), pointer));
}

static void test_errors(const grammar_vocab *v) {
    expect_error(v, "{\"type\":\"object\",\"properties\":{\"to\":{\"$ref\":\"#/x\"}}}",
                 ADIL_STATUS_CAPABILITY, "\"/properties/to/$ref\"");
    expect_error(v, "{\"type\":\"integer\",\"minimum\":0.5,\"maximum\":0.7}", ADIL_STATUS_CAPABILITY,
                 "maximum");
    expect_error(v, "{\"type\":\"integer\",\"minimum\":9007199254740992}", ADIL_STATUS_CAPABILITY, "minimum");
    expect_error(v, "{\"type\":\"number\",\"maximum\":-1e300}", ADIL_STATUS_CAPABILITY, "between");
    expect_error(v, "{\"type\":\"string\",\"type\":\"integer\"}", ADIL_STATUS_INVALID_ARGUMENT, "twice");
    expect_error(v, "{\"properties\":{\"a\":{},\"a\":{}}}", ADIL_STATUS_INVALID_ARGUMENT, "\"/properties\"");
    /* not side by side, and among more keys than the 64 a grammar takes */
    expect_error(v, "{\"properties\":{\"b\":{},\"a\":{},\"c\":{},\"b\":{}}}", ADIL_STATUS_INVALID_ARGUMENT,
                 "'b' appears twice");
    expect_error(v, "{\"description\":\"\",\"type\":\"string\",\"title\":\"\",\"description\":\"\"}",
                 ADIL_STATUS_INVALID_ARGUMENT, "'description' appears twice");
    expect_error(v, "{\"type\":\"strin\"}", ADIL_STATUS_INVALID_ARGUMENT, "\"/type\"");
    expect_error(v, "{\"type\":", ADIL_STATUS_INVALID_ARGUMENT, "invalid JSON");
    expect_error(v, "[1]", ADIL_STATUS_INVALID_ARGUMENT, "JSON object");
    expect_error(v, "{\"enum\":[1e400]}", ADIL_STATUS_CAPABILITY, "\"/enum\"");
    expect_error(v, "{\"type\":\"string\",\"enum\":[1,2]}", ADIL_STATUS_CAPABILITY, "\"/enum\"");
    expect_error(v, "{\"items\":[{}]}", ADIL_STATUS_CAPABILITY, "\"/items\"");
}

/* A schema 60 levels deep (120 levels of JSON text) compiles; a document
 * of it is valid. */
static void test_deep_schema(const grammar_vocab *v) {
    static char schema[4096], doc[512];
    size_t n = 0, d = 0;
    for (int i = 0; i < 60; i++) {
        n += (size_t)snprintf(schema + n, sizeof schema - n, "{\"type\":\"object\",\"properties\":{\"a\":");
        d += (size_t)snprintf(doc + d, sizeof doc - d, "{\"a\":");
    }
    n += (size_t)snprintf(schema + n, sizeof schema - n, "{\"type\":\"integer\"}");
    d += (size_t)snprintf(doc + d, sizeof doc - d, "7");
    for (int i = 0; i < 60; i++) {
        n += (size_t)snprintf(schema + n, sizeof schema - n, "}}");
        d += (size_t)snprintf(doc + d, sizeof doc - d, "}");
    }
    adil_grammar *g = compile(v, schema);
    expect_valid(g, doc);
    grammar_free(g);
}

int main(void) {
    grammar_vocab *v = make_vocab();
    test_documents(v);
    test_forced_and_lazy(v);
    test_errors(v);
    test_deep_schema(v);
    grammar_vocab_free(v);
    return test_report("test_grammar");
}
