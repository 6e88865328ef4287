/*
 * test_grammar_dead_ends.c — "valid by construction": no prefix the grammar
 * accepts is a dead end (a state where no token may come and the output may
 * not end).  Driven on the matcher directly, over a vocabulary of the 256
 * single bytes and an end token, so nothing depends on a model or its KV
 * cache:
 *   - the run that found the first dead end (test_grammar_engine, f16 KV
 *     cache, 771 tokens into {"on": boolean}): a string value ending in "\uE";
 *     every \u escape, and every \u after a high surrogate, exhaustively: a
 *     prefix is accepted exactly when some whole escape extends it;
 *   - the depth limit (GRAMMAR_MAX_DEPTH): a schema every document of which
 *     nests deeper is refused at compile time; where the limit cuts off only
 *     a choice (an optional key, a kid of a type list, an item of an array
 *     that may be empty, any value), that choice is refused and the rest of
 *     the document stays open;
 *   - number ranges narrower than the grid of decimals a prefix can still
 *     reach (at most 15 significant digits): the prefix is refused, and a
 *     range no text reaches is refused at compile time;
 *   - random walks (seeded) under schemas of every kind, biased toward
 *     escapes, numbers and brackets: at every step some token is allowed
 *     (or the output may end), and the token drawn is accepted.
 */
#include "grammar.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_VOCAB 257 /* the 256 bytes, then the end token */
#define TOK_END 256
#define WORDS   ((N_VOCAB + 31) / 32)

static bool allowed(const uint32_t *mask, uint32_t id) { return (mask[id / 32] >> (id % 32)) & 1u; }

static grammar_vocab *byte_vocab(void) {
    static uint8_t bytes[256];
    grammar_token t[N_VOCAB];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (uint8_t)i;
        t[i] = (grammar_token){&bytes[i], 1, GRAMMAR_TOKEN_TEXT};
    }
    t[TOK_END] = (grammar_token){NULL, 0, GRAMMAR_TOKEN_END};
    grammar_vocab *v = NULL;
    CHECK(grammar_vocab_new(t, N_VOCAB, &v) == ADIL_OK);
    return v;
}

static adil_grammar *compile(const grammar_vocab *v, const char *schema) {
    adil_grammar *g = NULL;
    const adil_status st = grammar_compile(v, schema, strlen(schema), &g);
    if (st != ADIL_OK) fprintf(stderr, "compile %.120s: %s\n", schema, adil_last_error());
    CHECK(st == ADIL_OK);
    return g;
}

/* A matcher after `text` (NULL when a byte of it is refused). */
static grammar_matcher *after(const adil_grammar *g, const char *text, size_t len) {
    grammar_matcher *m = NULL;
    if (grammar_matcher_new(g, &m) != ADIL_OK) return NULL;
    if (!grammar_matcher_accept_bytes(m, (const uint8_t *)text, len, NULL)) {
        grammar_matcher_free(m);
        return NULL;
    }
    return m;
}

/* The position after `text`; false when a byte of it is refused. */
static bool takes(const adil_grammar *g, const char *text, grammar_position *pos) {
    grammar_matcher *m = after(g, text, strlen(text));
    if (m == NULL) return false;
    *pos = grammar_matcher_position(m);
    grammar_matcher_free(m);
    return true;
}

/* Some token may follow `text` (text is accepted). */
static bool continues(const adil_grammar *g, const char *text) {
    grammar_matcher *m = after(g, text, strlen(text));
    if (m == NULL) return false;
    uint32_t mask[WORDS];
    const size_t n = grammar_matcher_mask(m, mask);
    grammar_matcher_free(m);
    return n > 0;
}

/* ---- the run that found it ----------------------------------------------------------- */

/* test_grammar_engine under an f16 KV cache sampled, for {"on": boolean}, a
 * string value (of an additional key) that ended "...\uE": \uE000 .. \uFFFF
 * are characters, but the check for a lone low surrogate (\uDC00 ..
 * \uDFFF) refused every second digit at or above DC, so after "\uE" and
 * "\uF" no token was allowed. */
static void test_found_in_a_run(const grammar_vocab *v) {
    adil_grammar *g = compile(
        v,
        "{\"type\": \"object\", \"properties\": {\"on\": {\"type\": \"boolean\"}}, \"required\": [\"on\"]}");
    if (g == NULL) return;
    static const char prefix[] = "{\"on\":true,\"Aag\":\"<ci7\\uE";
    CHECK(continues(g, prefix));
    grammar_position pos = GRAMMAR_OPEN;
    CHECK(takes(g, "{\"on\":true,\"Aag\":\"<ci7\\uE000\\uFFFF\\uf8ff\\uDBFF\\uDFFF\"}", &pos) &&
          pos == GRAMMAR_DONE);
    CHECK(!takes(g, "{\"on\":true,\"Aag\":\"\\uDC00", &pos)); /* a lone low half, still refused */
    CHECK(!takes(g, "{\"on\":true,\"Aag\":\"\\uDF", &pos));
    grammar_free(g);
}

/* Accepts `"` + pre + \u + the k hex digits of v (top digits first); the
 * position after in *pos. */
static bool takes_escape(const adil_grammar *g, const char *pre, unsigned v, int k, bool lower,
                         grammar_position *pos) {
    char text[32];
    int n = snprintf(text, sizeof text, "\"%s\\u", pre);
    for (int i = 0; i < k; i++)
        text[n++] = (lower ? "0123456789abcdef" : "0123456789ABCDEF")[v >> (12 - 4 * i) & 15];
    text[n] = '\0';
    return takes(g, text, pos);
}

/* Every \u escape: accepted whole exactly when it is no lone low half (after
 * a high half: exactly when it is a low half); a prefix of 1 to 3 digits
 * exactly when some whole escape extends it; a whole one is followed by the
 * rest of the string. */
static void check_escapes(const adil_grammar *g, const char *pre, bool after_high) {
    static bool whole[0x10000];
    size_t wrong = 0;
    for (unsigned v = 0; v < 0x10000; v++) {
        const bool low = v >= 0xDC00 && v <= 0xDFFF;
        const bool expect = after_high ? low : !low;
        grammar_position pos = GRAMMAR_DONE;
        whole[v] = takes_escape(g, pre, v, 4, v & 1, &pos);
        /* a high half waits for its low half: the string is open either way */
        if (whole[v] != expect || (whole[v] && pos != GRAMMAR_OPEN)) {
            if (wrong++ < 4) fprintf(stderr, "escape \\u%04X after \"%s\": accepted %d\n", v, pre, whole[v]);
        }
    }
    for (int k = 1; k <= 3; k++) {
        const unsigned span = 1u << (4 * (4 - k));
        for (unsigned p = 0; p < 0x10000; p += span) {
            bool some = false;
            for (unsigned v = p; v < p + span && !some; v++) some = whole[v];
            grammar_position pos;
            const bool taken = takes_escape(g, pre, p, k, (p >> 4) & 1, &pos);
            if (taken != some && wrong++ < 8)
                fprintf(stderr,
                        "escape prefix of \\u%04X (%d digits) after \"%s\": accepted %d, completable %d\n", p,
                        k, pre, taken, some);
        }
    }
    CHECK(wrong == 0);
}

static void test_every_escape(const grammar_vocab *v) {
    adil_grammar *g = compile(v, "{\"type\": \"string\"}");
    if (g == NULL) return;
    check_escapes(g, "", false);
    check_escapes(g, "a\\uD83D", true);
    grammar_position pos = GRAMMAR_OPEN;
    CHECK(takes(g, "\"\\uE000\"", &pos) && pos == GRAMMAR_DONE);
    CHECK(takes(g, "\"\\uD83D\\uDE00\"", &pos) && pos == GRAMMAR_DONE);
    grammar_free(g);
}

/* ---- the depth limit ----------------------------------------------------------------- */

/* `levels` arrays of at least one item, each the item of the one outside,
 * around `inner`; or objects with one required key "a". */
static char *nested(int levels, bool objects, const char *inner) {
    static const char arr[] = "{\"type\": \"array\", \"minItems\": 1, \"items\": ";
    static const char obj[] = "{\"type\": \"object\", \"properties\": {\"a\": ",
                      obj_end[] = "}, \"required\": [\"a\"]}";
    const char *open = objects ? obj : arr, *close = objects ? obj_end : "}";
    char *out = malloc((size_t)levels * (strlen(open) + strlen(close)) + strlen(inner) + 1);
    if (out == NULL) return NULL;
    size_t n = 0;
    for (int i = 0; i < levels; i++) n += (size_t)sprintf(out + n, "%s", open);
    n += (size_t)sprintf(out + n, "%s", inner);
    for (int i = 0; i < levels; i++) n += (size_t)sprintf(out + n, "%s", close);
    return out;
}

static char *repeat(const char *piece, int times, const char *tail) {
    char *out = malloc(strlen(piece) * (size_t)times + strlen(tail) + 1);
    if (out == NULL) return NULL;
    size_t n = 0;
    for (int i = 0; i < times; i++) n += (size_t)sprintf(out + n, "%s", piece);
    sprintf(out + n, "%s", tail);
    return out;
}

/* A schema every document of which nests more than GRAMMAR_MAX_DEPTH
 * containers: before, it compiled and its run stood with no allowed token
 * after the 64th opening bracket. */
static void test_too_deep_refused(const grammar_vocab *v) {
    for (int objects = 0; objects <= 1; objects++) {
        char *schema = nested(GRAMMAR_MAX_DEPTH + 1, objects, "{\"type\": \"integer\"}");
        adil_grammar *g = NULL;
        CHECK(schema && grammar_compile(v, schema, strlen(schema), &g) == ADIL_STATUS_CAPABILITY &&
              g == NULL);
        CHECK_HAS(adil_last_error(), "nests at least 65 containers");
        free(schema);
        /* 64 fit: the document completes */
        schema = nested(GRAMMAR_MAX_DEPTH, objects, "{\"type\": \"integer\"}");
        g = schema ? compile(v, schema) : NULL;
        char *doc = repeat(objects ? "{\"a\":" : "[", GRAMMAR_MAX_DEPTH, "");
        grammar_position pos = GRAMMAR_DONE;
        CHECK(g && doc && continues(g, doc));
        char *whole = doc ? repeat(objects ? "}" : "]", GRAMMAR_MAX_DEPTH, "") : NULL;
        char *full = whole ? malloc(strlen(doc) + strlen(whole) + 2) : NULL;
        if (full) sprintf(full, "%s7%s", doc, whole);
        CHECK(g && full && takes(g, full, &pos) && pos == GRAMMAR_DONE);
        free(full);
        free(whole);
        free(doc);
        grammar_free(g);
        free(schema);
    }
    /* a tool's arguments sit inside the envelope, one level down */
    char *args = nested(GRAMMAR_MAX_DEPTH, false, "{}");
    char *tools = args ? malloc(strlen(args) + 64) : NULL;
    if (tools) sprintf(tools, "{\"x-adil-tools\": [{\"name\": \"t\", \"parameters\": %s}]}", args);
    adil_grammar *g = NULL;
    CHECK(tools && grammar_compile(v, tools, strlen(tools), &g) == ADIL_STATUS_CAPABILITY && g == NULL);
    CHECK_HAS(adil_last_error(), "/x-adil-tools/0/parameters");
    free(tools);
    free(args);
}

/* Where the limit only cuts off a choice, the choice is refused and the
 * rest stays open: a deep optional key, a deep kid of a type list, a deep
 * item of an array that may be empty, any value at the limit. */
static void test_depth_cuts_choices(const grammar_vocab *v) {
    char *deep = nested(GRAMMAR_MAX_DEPTH, false, "{\"type\": \"integer\"}");
    char schema[16384];
    grammar_position pos = GRAMMAR_OPEN;
    /* an optional key whose value needs 64 more levels: never offered */
    snprintf(schema, sizeof schema,
             "{\"type\": \"object\", \"properties\": {\"deep\": %s, \"x\": {\"type\": \"integer\"}}, "
             "\"additionalProperties\": false}",
             deep);
    adil_grammar *g = compile(v, schema);
    CHECK(g && continues(g, "{\"") && !takes(g, "{\"d", &pos) && takes(g, "{\"x\":1}", &pos));
    CHECK(g && !takes(g, "{\"x\":1,", &pos) && takes(g, "{}", &pos) && pos == GRAMMAR_DONE);
    grammar_free(g);
    /* ... nor as an additional key of the same name */
    snprintf(schema, sizeof schema, "{\"type\": \"object\", \"properties\": {\"deep\": %s}}", deep);
    g = compile(v, schema);
    CHECK(g && !takes(g, "{\"deep\"", &pos) && takes(g, "{\"deeper\":[[1]]}", &pos) && pos == GRAMMAR_DONE);
    grammar_free(g);
    /* a type list: the array kid cannot fit, the string kid can */
    snprintf(schema, sizeof schema, "{\"type\": [\"array\", \"string\"], \"minItems\": 1, \"items\": %s}",
             deep);
    g = compile(v, schema);
    CHECK(g && !takes(g, "[", &pos) && takes(g, "\"s\"", &pos) && pos == GRAMMAR_DONE);
    grammar_free(g);
    /* an array that may be empty, of items that cannot fit */
    snprintf(schema, sizeof schema, "{\"type\": \"array\", \"items\": %s}", deep);
    g = compile(v, schema);
    CHECK(g && continues(g, "[") && !takes(g, "[[", &pos) && takes(g, "[]", &pos) && pos == GRAMMAR_DONE);
    grammar_free(g);
    free(deep);
    /* any value: at the limit only opening is refused */
    g = compile(v, "{}");
    char *at_limit = repeat("[", GRAMMAR_MAX_DEPTH - 1, "{\"k\":");
    CHECK(g && at_limit && continues(g, at_limit));
    char *more = at_limit ? repeat(at_limit, 1, "[") : NULL,
         *more2 = at_limit ? repeat(at_limit, 1, "{") : NULL;
    CHECK(g && more && more2 && !takes(g, more, &pos) && !takes(g, more2, &pos));
    char *scalar = at_limit ? repeat(at_limit, 1, "\"\\uE000\"}") : NULL;
    CHECK(g && scalar && takes(g, scalar, &pos) && pos == GRAMMAR_OPEN && continues(g, scalar));
    free(scalar);
    free(more);
    free(more2);
    free(at_limit);
    grammar_free(g);
}

/* ---- number ranges -------------------------------------------------------------------- */

/* A range the prefix's interval of reals meets but its grid of decimals (at
 * most 15 significant digits, 22 after the point) misses: before, "0.1"
 * under minimum 0.1999999999999999 was taken (0.1 .. 0.2 meets the range)
 * and every completion of it, up to 0.199999999999999, fell short. */
static void test_number_grids(const grammar_vocab *v) {
    grammar_position pos = GRAMMAR_OPEN;
    adil_grammar *g = compile(v, "{\"type\": \"number\", \"minimum\": 0.1999999999999999, \"maximum\": 1}");
    CHECK(g && !takes(g, "0.1", &pos) && !takes(g, "0.199999999999999", &pos) && continues(g, "0."));
    CHECK(g && takes(g, "0.2", &pos) && pos == GRAMMAR_CAN_END && takes(g, "1", &pos) &&
          pos == GRAMMAR_CAN_END);
    grammar_free(g);
    g = compile(v, "{\"type\": \"number\", \"minimum\": -1, \"maximum\": -0.1999999999999999}");
    CHECK(g && !takes(g, "-0.1", &pos) && takes(g, "-0.2", &pos) && pos == GRAMMAR_CAN_END);
    grammar_free(g);
    g = compile(v, "{\"type\": \"number\", \"minimum\": 1e-20, \"maximum\": 1.5e-20}");
    CHECK(g && takes(g, "0.00000000000000000001", &pos) && pos == GRAMMAR_CAN_END && !takes(g, "0.1", &pos));
    grammar_free(g);
    /* no text at all: refused at compile time (reals, but no integer and no
     * decimal of at most 15 significant digits) */
    static const char *const empty[] = {
        "{\"type\": \"number\", \"minimum\": 1000000000000000.5, \"maximum\": 1000000000000000.7}",
        "{\"type\": \"number\", \"minimum\": 1e-30, \"maximum\": 2e-30}",
        "{\"type\": \"number\", \"minimum\": 123456789.12345678, \"maximum\": 123456789.1234568}"};
    for (size_t i = 0; i < sizeof empty / sizeof *empty; i++) {
        adil_grammar *none = NULL;
        CHECK(grammar_compile(v, empty[i], strlen(empty[i]), &none) == ADIL_STATUS_CAPABILITY &&
              none == NULL);
        CHECK_HAS(adil_last_error(), "lies between minimum and maximum");
    }
    /* ... and in a type list, only that kid goes */
    g = compile(v, "{\"type\": [\"number\", \"string\"], \"minimum\": 1e-30, \"maximum\": 2e-30}");
    CHECK(g && !takes(g, "0", &pos) && !takes(g, "-", &pos) && takes(g, "\"a\"", &pos) &&
          pos == GRAMMAR_DONE);
    grammar_free(g);
}

/* ---- random walks -------------------------------------------------------------------- */

static uint64_t next_random(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Bytes a walk prefers: what opens, closes and escapes, digits, literals. */
static const char LIKED[] = "\\\\\\uuu\"\"\"{{[[]]}},:0123456789-.eEfFdDcCaAbB0trunls ";

/* One walk of at most `steps` tokens: at each step the mask allows some
 * token or the output may end, and the token drawn from it is accepted.
 * Returns false at a dead end (reported with the text so far). */
static bool walk(const adil_grammar *g, const char *schema, uint64_t *rng, size_t steps) {
    grammar_matcher *m = NULL;
    if (grammar_matcher_new(g, &m) != ADIL_OK) return false;
    char text[4096];
    size_t len = 0;
    bool ok = true;
    for (size_t i = 0; ok && i < steps && len < sizeof text - 1; i++) {
        uint32_t mask[WORDS];
        const size_t n = grammar_matcher_mask(m, mask);
        const grammar_position pos = grammar_matcher_position(m);
        if (pos == GRAMMAR_DONE) break;
        if (n == 0 || (pos == GRAMMAR_OPEN) == allowed(mask, TOK_END)) {
            fprintf(stderr, "dead end (%zu allowed, position %d) under %.100s after [%.*s]\n", n, pos, schema,
                    (int)len, text);
            ok = false;
            break;
        }
        if (pos == GRAMMAR_CAN_END && next_random(rng) % 4 == 0) break;
        int32_t t = -1;
        for (int tries = 0; t < 0 && tries < 8; tries++) {
            const uint8_t b = (uint8_t)LIKED[next_random(rng) % (sizeof LIKED - 1)];
            if (allowed(mask, b)) t = b;
        }
        for (uint32_t k = (uint32_t)(next_random(rng) % N_VOCAB), j = 0; t < 0 && j < N_VOCAB; j++)
            if (allowed(mask, (k + j) % N_VOCAB) && (k + j) % N_VOCAB != TOK_END)
                t = (int32_t)((k + j) % N_VOCAB);
        if (t < 0) break; /* only the end token: the output may end here */
        if (!grammar_matcher_accept_token(m, t, NULL)) {
            fprintf(stderr, "token %d allowed by the mask but refused, under %.100s after [%.*s]\n", t,
                    schema, (int)len, text);
            ok = false;
        }
        text[len++] = (char)t;
    }
    grammar_matcher_free(m);
    return ok;
}

static const char *const WALK_SCHEMAS[] = {
    "{\"type\": \"object\", \"properties\": {\"on\": {\"type\": \"boolean\"}}, \"required\": [\"on\"]}",
    "{}",
    "{\"type\": \"string\"}",
    "{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 5}",
    "{\"type\": \"array\", \"items\": {\"type\": \"array\", \"items\": "
    "{\"type\": \"string\", \"maxLength\": 3}}}",
    "{\"type\": \"array\", \"items\": {\"type\": \"array\", \"items\": {\"type\": \"integer\"}, "
    "\"minItems\": 1, \"maxItems\": 2}, \"minItems\": 2}",
    "{\"type\": \"integer\", \"minimum\": -5, \"maximum\": 120}",
    "{\"type\": \"number\", \"minimum\": -10.5, \"maximum\": 1000.25}",
    "{\"type\": \"number\", \"minimum\": 0.001, \"maximum\": 0.002}",
    "{\"type\": \"number\", \"minimum\": 0.1999999999999999, \"maximum\": 1}",
    "{\"type\": \"number\", \"minimum\": -1, \"maximum\": -0.1999999999999999}",
    "{\"type\": \"number\", \"minimum\": 1.0000000000000002, \"maximum\": 1.5}",
    "{\"type\": \"number\", \"minimum\": 1e-20, \"maximum\": 1.5e-20}",
    "{\"type\": \"number\", \"minimum\": 0.5, \"maximum\": 0.7}",
    "{\"type\": [\"number\", \"string\", \"null\"], \"maximum\": 3}",
    "{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"array\", \"items\": {\"type\": \"number\"}, "
    "\"minItems\": 1, \"maxItems\": 3}, \"b\": {\"enum\": [\"x\", \"xy\", 1, null]}, \"ab\": {\"type\": "
    "\"string\"}}, \"required\": [\"a\"], \"additionalProperties\": false}",
    "{\"x-adil-tools\": [{\"name\": \"get\", \"parameters\": {\"type\": \"object\", \"properties\": {\"q\": "
    "{\"type\": \"string\"}}, \"required\": [\"q\"]}}, {\"name\": \"go\", \"parameters\": {}}]}",
};

static void test_walks(const grammar_vocab *v) {
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (size_t s = 0; s < sizeof WALK_SCHEMAS / sizeof *WALK_SCHEMAS; s++) {
        adil_grammar *g = compile(v, WALK_SCHEMAS[s]);
        size_t failed = 0;
        for (int w = 0; g != NULL && w < 300 && failed < 3; w++)
            failed += !walk(g, WALK_SCHEMAS[s], &rng, 400);
        CHECK(failed == 0);
        grammar_free(g);
    }
}

/* Number ranges at random magnitudes and widths (down to a few units of the
 * last place, below and above the grid of 15 digits): every range either is
 * refused at compile time or has no dead end on a walk. */
static void test_random_ranges(const grammar_vocab *v) {
    uint64_t rng = 0xD1B54A32D192ED03ull;
    size_t compiled = 0, failed = 0;
    for (int r = 0; r < 300 && failed < 3; r++) {
        const int e = (int)(next_random(&rng) % 40) - 24;
        double min = (double)(next_random(&rng) % 1000000007ull) / 1000000007.0 * pow(10.0, e);
        if (next_random(&rng) % 3 == 0) min = -min;
        const int w = (int)(next_random(&rng) % 20);
        double max = w < 4 ? min : min + fabs(min) * pow(10.0, -(double)w);
        for (int u = 0; w < 4 && u < w * 3; u++) max = nextafter(max, INFINITY);
        char schema[160];
        snprintf(schema, sizeof schema, "{\"type\": \"number\", \"minimum\": %.17g, \"maximum\": %.17g}", min,
                 max);
        adil_grammar *g = NULL;
        if (grammar_compile(v, schema, strlen(schema), &g) != ADIL_OK) continue;
        compiled++;
        for (int k = 0; k < 40; k++) failed += !walk(g, schema, &rng, 64);
        grammar_free(g);
    }
    CHECK(failed == 0 && compiled > 100);
}

int main(void) {
    grammar_vocab *v = byte_vocab();
    if (v != NULL) {
        test_found_in_a_run(v);
        test_every_escape(v);
        test_too_deep_refused(v);
        test_depth_cuts_choices(v);
        test_number_grids(v);
        test_walks(v);
        test_random_ranges(v);
    }
    grammar_vocab_free(v);
    return test_report("test_grammar_dead_ends");
}
