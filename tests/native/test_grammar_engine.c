/*
 * test_grammar_engine.c — constrained runs of the CPU engine, through the ABI,
 * on a tiny llama model (tiny_model.h) whose SentencePiece vocabulary has the
 * 256 byte tokens, a few multi-byte JSON pieces ("{\"", "\":\"", "name", ...)
 * and a control token, and adds a space prefix (so forced text is tokenized
 * as a continuation, without it):
 *   - greedy and sampled runs (temperature up to 1.5, several seeds) under
 *     several schemas end with ADIL_OK and write text that parses, is of the
 *     schema's type and passes the checks below; replayed through a fresh
 *     matcher, every token is allowed and the document is complete;
 *   - a greedy constrained run picks, wherever it sampled, the best allowed
 *     token of the teacher-forced logits of its own output: forced tokens
 *     are evaluated in one batch and the positions stay right;
 *   - forced tokens are counted (a const schema is written without any
 *     sampling); steps of one token give the same output as steps of 64;
 *   - max_tokens inside the document: ADIL_STATUS_OUTPUT_VALIDATION,
 *     "truncated", the tokens delivered;
 *   - a grammar compiled for another model is refused at start;
 *   - the mask of the matcher equals accept_token tried on every token;
 *   - compiles on one model from several threads at once share the one
 *     vocabulary the first of them built (run under TSan for races).
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "adil_json.h"
#include "grammar.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "tiny_model.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_CTX      1024
#define MAX_TOKENS 900
#define N_BYTES    256
#define FIRST_BYTE 3

/* ---- the model ------------------------------------------------------------- */

static const char *const PIECES[] = {"\xe2\x96\x81", "{\"",  "\":",  "\",", "\"}", "\":\"",
                                     "na",           "me",   "name", "ag",  "age", "ci",
                                     "ty",           "city", "Os",   "lo",  "Oslo"};
#define N_PIECES   (sizeof PIECES / sizeof PIECES[0])
#define N_VOCAB    (FIRST_BYTE + N_BYTES + N_PIECES + 1)
#define CONTROL_ID (N_VOCAB - 1)

static char vocab_text[N_VOCAB][16];
static const char *vocab[N_VOCAB];
static int32_t types[N_VOCAB];

static tiny_spec json_spec(void) {
    static const char *const specials[] = {"<unk>", "<s>", "</s>"};
    for (int i = 0; i < FIRST_BYTE; i++) {
        snprintf(vocab_text[i], sizeof vocab_text[i], "%s", specials[i]);
        types[i] = i == 0 ? ADIL_TOKEN_TYPE_UNKNOWN : ADIL_TOKEN_TYPE_CONTROL;
    }
    for (int b = 0; b < N_BYTES; b++) {
        snprintf(vocab_text[FIRST_BYTE + b], sizeof vocab_text[0], "<0x%02X>", b);
        types[FIRST_BYTE + b] = ADIL_TOKEN_TYPE_BYTE;
    }
    for (size_t i = 0; i < N_PIECES; i++) {
        snprintf(vocab_text[FIRST_BYTE + N_BYTES + i], sizeof vocab_text[0], "%s", PIECES[i]);
        types[FIRST_BYTE + N_BYTES + i] = ADIL_TOKEN_TYPE_NORMAL;
    }
    snprintf(vocab_text[CONTROL_ID], sizeof vocab_text[0], "<ctl>");
    types[CONTROL_ID] = ADIL_TOKEN_TYPE_CONTROL;
    for (size_t i = 0; i < N_VOCAB; i++) vocab[i] = vocab_text[i];
    tiny_spec spec = tiny_default();
    spec.vocab = vocab;
    spec.token_types = types;
    spec.n_vocab = N_VOCAB;
    return spec;
}

static adil_model *load(adil_engine *engine) {
    tiny_spec spec = json_spec();
    char path[64];
    if (!tiny_write(&spec, path)) {
        test_failures++;
        return NULL;
    }
    adil_model_params p;
    adil_model_default_params(&p);
    p.n_threads = 1;
    adil_model *model = NULL;
    if (adil_model_load(engine, path, &p, &model) != ADIL_OK) {
        fprintf(stderr, "load: %s\n", adil_last_error());
        test_failures++;
    }
    unlink(path);
    return model;
}

static adil_grammar *compile(adil_model *model, const char *schema) {
    adil_grammar *grammar = NULL;
    if (adil_grammar_compile(model, schema, strlen(schema), &grammar) != ADIL_OK) {
        fprintf(stderr, "compile %s: %s\n", schema, adil_last_error());
        test_failures++;
    }
    return grammar;
}

/* ---- runs -------------------------------------------------------------------- */

typedef struct run_out {
    int32_t tokens[N_CTX];
    size_t n;
    char text[8 * N_CTX];
    size_t len;
    adil_status status;
    char error[256];
    adil_run_stats stats;
} run_out;

static const int32_t PROMPT[] = {1, FIRST_BYTE + 'H', FIRST_BYTE + 'i', FIRST_BYTE + ':'};
#define N_PROMPT (sizeof PROMPT / sizeof PROMPT[0])

typedef struct run_setup {
    const adil_grammar *grammar;
    float temperature; /* < 0: the sampling defaults */
    uint64_t seed;
    uint32_t max_tokens;
    size_t capacity; /* tokens per step */
    uint32_t ignore_eos;
} run_setup;

static void run(adil_model *model, const run_setup *setup, run_out *out) {
    memset(out, 0, sizeof *out);
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = N_CTX;
    adil_context *ctx = NULL;
    CHECK(adil_context_new(model, &cp, &ctx) == ADIL_OK);
    adil_sampling_params sp;
    adil_sampling_default_params(&sp);
    if (setup->temperature >= 0) {
        sp.temperature = setup->temperature;
        sp.top_k = 0;
        sp.top_p = 1.0f;
        sp.min_p = 0.0f;
    }
    sp.seed = setup->seed;
    adil_run_params rp;
    adil_run_default_params(&rp);
    rp.sampling = &sp;
    rp.grammar = setup->grammar;
    rp.max_tokens = setup->max_tokens ? setup->max_tokens : MAX_TOKENS;
    rp.ignore_eos = setup->ignore_eos;
    adil_run *r = NULL;
    out->status = adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r);
    CHECK(out->status == ADIL_OK);
    const size_t capacity = setup->capacity ? setup->capacity : 64;
    while (r != NULL) {
        size_t n = 0;
        out->status = adil_run_step(r, out->tokens + out->n, capacity, &n);
        snprintf(out->error, sizeof out->error, "%s", adil_last_error());
        out->n += n;
        if (out->status != ADIL_OK || n == 0) break;
    }
    for (size_t i = 0; i < out->n; i++) {
        size_t k = 0;
        CHECK(adil_token_to_piece(model, out->tokens[i], 0, out->text + out->len, sizeof out->text - out->len,
                                  &k) == ADIL_OK);
        out->len += k;
    }
    out->stats.struct_size = sizeof out->stats;
    if (r != NULL) CHECK(adil_run_get_stats(r, &out->stats) == ADIL_OK);
    CHECK(out->stats.n_generated == out->n);
    adil_run_free(r);
    adil_context_free(ctx);
}

/* Replays tokens[0..n) through a fresh matcher: every one allowed (by the
 * mask and by accept_token), and the document complete at the end. */
static bool replays(const adil_grammar *grammar, const int32_t *tokens, size_t n) {
    const uint32_t n_vocab = grammar_vocab_size(grammar_vocab_of(grammar));
    uint32_t *mask = calloc((n_vocab + 31) / 32, sizeof *mask);
    grammar_matcher *m = NULL;
    bool ok = mask != NULL && grammar_matcher_new(grammar, &m) == ADIL_OK;
    for (size_t i = 0; ok && i < n; i++) {
        grammar_matcher_mask(m, mask);
        const uint32_t t = (uint32_t)tokens[i];
        ok = t < n_vocab && (mask[t / 32] >> (t % 32) & 1u) &&
             grammar_matcher_accept_token(m, tokens[i], NULL);
        if (!ok) fprintf(stderr, "replay: token %d at %zu refused\n", tokens[i], i);
    }
    if (ok && grammar_matcher_position(m) == GRAMMAR_OPEN) {
        fprintf(stderr, "replay: the document is not complete after %zu tokens\n", n);
        ok = false;
    }
    if (m != NULL) grammar_matcher_free(m);
    free(mask);
    return ok;
}

/* ---- schemas and their checks ---------------------------------------------------- */

typedef bool (*doc_check)(const adil_json *doc);

static bool is_person(const adil_json *doc) {
    const adil_json *name = adil_json_get(doc, "name"), *age = adil_json_get(doc, "age");
    return doc->kind == ADIL_JSON_OBJECT && doc->n_members == 2 && name && name->kind == ADIL_JSON_STRING &&
           age && age->kind == ADIL_JSON_NUMBER && age->is_integer && age->integer >= 0 &&
           age->integer <= 150;
}

static bool is_small_int_list(const adil_json *doc) {
    if (doc->kind != ADIL_JSON_ARRAY || doc->n_items < 1 || doc->n_items > 3) return false;
    for (size_t i = 0; i < doc->n_items; i++)
        if (doc->items[i].kind != ADIL_JSON_NUMBER || !doc->items[i].is_integer ||
            doc->items[i].integer < -5 || doc->items[i].integer > 5)
            return false;
    return true;
}

static bool is_short_string(const adil_json *doc) {
    if (doc->kind != ADIL_JSON_STRING) return false;
    size_t code_points = 0;
    for (size_t i = 0; i < doc->str_len; i++) code_points += ((unsigned char)doc->str[i] & 0xC0) != 0x80;
    return code_points >= 2 && code_points <= 6;
}

static bool is_enum(const adil_json *doc) {
    return (doc->kind == ADIL_JSON_STRING &&
            (strcmp(doc->str, "Oslo") == 0 || strcmp(doc->str, "Rome") == 0)) ||
           doc->kind == ADIL_JSON_NULL ||
           (doc->kind == ADIL_JSON_NUMBER && doc->is_integer && doc->integer == 7);
}

static bool is_number(const adil_json *doc) { return doc->kind == ADIL_JSON_NUMBER; }

static bool is_flags(const adil_json *doc) {
    const adil_json *on = adil_json_get(doc, "on");
    return doc->kind == ADIL_JSON_OBJECT && on && on->kind == ADIL_JSON_BOOL;
}

static bool is_anything(const adil_json *doc) {
    (void)doc;
    return true;
}

typedef struct schema_case {
    const char *schema;
    doc_check check;
    bool may_truncate; /* unbounded documents: a cut by max_tokens is no failure */
} schema_case;

static const schema_case SCHEMAS[] = {
    {"{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", \"maxLength\": 8}, \"age\": "
     "{\"type\": \"integer\", \"minimum\": 0, \"maximum\": 150}}, \"required\": [\"name\", \"age\"], "
     "\"additionalProperties\": false}",
     is_person, false},
    {"{\"type\": \"array\", \"items\": {\"type\": \"integer\", \"minimum\": -5, \"maximum\": 5}, "
     "\"minItems\": "
     "1, \"maxItems\": 3}",
     is_small_int_list, false},
    {"{\"type\": \"string\", \"minLength\": 2, \"maxLength\": 6}", is_short_string, false},
    {"{\"enum\": [\"Oslo\", \"Rome\", null, 7]}", is_enum, false},
    {"{\"type\": \"number\", \"minimum\": -10, \"maximum\": 10}", is_number, false},
    {"{\"type\": \"object\", \"properties\": {\"on\": {\"type\": \"boolean\"}}, \"required\": [\"on\"]}",
     is_flags, true},
    {"{}", is_anything, true},
};
#define N_SCHEMAS (sizeof SCHEMAS / sizeof SCHEMAS[0])

/* The run ended well and wrote a document of its schema. */
static void check_document(const schema_case *c, const adil_grammar *grammar, const run_out *out) {
    if (c->may_truncate && out->status == ADIL_STATUS_OUTPUT_VALIDATION &&
        out->stats.stop_reason == ADIL_STOP_MAX_TOKENS)
        return;
    CHECK(out->status == ADIL_OK);
    CHECK(out->stats.stop_reason == ADIL_STOP_END_OF_TEXT);
    adil_json doc;
    const bool parsed =
        adil_json_parse(out->text, out->len, ADIL_STATUS_OUTPUT_VALIDATION, "output", &doc) == ADIL_OK;
    CHECK(parsed && c->check(&doc));
    CHECK(replays(grammar, out->tokens, out->n));
    if (getenv("ADIL_TEST_VERBOSE") != NULL)
        printf("%u forced of %zu: %.*s\n", out->stats.n_forced_tokens, out->n, (int)out->len, out->text);
    if (!parsed || !c->check(&doc) || out->status != ADIL_OK)
        fprintf(stderr, "  schema %s\n  output [%.*s] status %d: %s\n", c->schema, (int)out->len, out->text,
                out->status, out->error);
    if (parsed) adil_json_free(&doc);
}

static void test_documents(adil_model *model) {
    for (size_t s = 0; s < N_SCHEMAS; s++) {
        adil_grammar *grammar = compile(model, SCHEMAS[s].schema);
        if (grammar == NULL) continue;
        run_out *out = malloc(sizeof *out);
        run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f}, out);
        check_document(&SCHEMAS[s], grammar, out);
        static const float temps[] = {0.7f, 1.0f, 1.5f, -1.0f};
        for (size_t t = 0; t < sizeof temps / sizeof temps[0]; t++)
            for (uint64_t seed = 1; seed <= 6; seed++) {
                run(model, &(run_setup){.grammar = grammar, .temperature = temps[t], .seed = seed}, out);
                check_document(&SCHEMAS[s], grammar, out);
            }
        free(out);
        adil_grammar_free(grammar);
    }
}

/* ---- forced tokens and batches -------------------------------------------------- */

/* Wherever a greedy constrained run sampled, it took the best allowed token
 * of the teacher-forced logits of prompt + output (each token not the best
 * must be a forced one). */
static void test_greedy_matches_teacher_forcing(adil_model *model) {
    adil_grammar *grammar = compile(model, SCHEMAS[0].schema);
    if (grammar == NULL) return;
    run_out *out = malloc(sizeof *out);
    run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f}, out);
    CHECK(out->status == ADIL_OK && out->stats.n_forced_tokens > 0);
    const size_t n_all = N_PROMPT + out->n;
    int32_t *all = malloc(n_all * sizeof *all);
    float *logits = malloc(n_all * N_VOCAB * sizeof *logits);
    memcpy(all, PROMPT, sizeof PROMPT);
    memcpy(all + N_PROMPT, out->tokens, out->n * sizeof *all);
    adil_context *ctx = NULL;
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = N_CTX;
    CHECK(adil_context_new(model, &cp, &ctx) == ADIL_OK);
    CHECK(adil_context_logits(ctx, all, n_all, logits, n_all * N_VOCAB) == ADIL_OK);
    uint32_t mask[(N_VOCAB + 31) / 32];
    grammar_matcher *m = NULL;
    CHECK(grammar_matcher_new(grammar, &m) == ADIL_OK);
    size_t not_best = 0;
    for (size_t i = 0; m != NULL && i < out->n; i++) {
        grammar_matcher_mask(m, mask);
        const float *row = logits + (N_PROMPT + i - 1) * N_VOCAB;
        int32_t best = -1;
        for (int32_t t = 0; t < (int32_t)N_VOCAB; t++)
            if ((mask[t / 32] >> (t % 32) & 1u) && (best < 0 || row[t] > row[best])) best = t;
        /* a near tie may go either way between a batch and a single token */
        if (best != out->tokens[i] && row[best] - row[out->tokens[i]] > 1e-4f) not_best++;
        CHECK(grammar_matcher_accept_token(m, out->tokens[i], NULL));
    }
    CHECK(not_best <= out->stats.n_forced_tokens);
    if (m != NULL) grammar_matcher_free(m);
    adil_context_free(ctx);
    free(logits);
    free(all);
    free(out);
    adil_grammar_free(grammar);
}

static void test_forced_tokens(adil_model *model) {
    /* A constant: every token forced, none sampled (nothing is evaluated). */
    static const char *const constants[][2] = {
        {"{\"const\": {\"city\": \"Oslo\", \"name\": \"Ann\"}}", "{\"city\":\"Oslo\",\"name\":\"Ann\"}"},
        {"{\"const\": \"Ann and me\"}", "\"Ann and me\""}};
    run_out *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    for (size_t i = 0; i < 2; i++) {
        adil_grammar *grammar = compile(model, constants[i][0]);
        if (grammar == NULL) continue;
        run(model, &(run_setup){.grammar = grammar, .temperature = 1.5f, .seed = 3}, a);
        CHECK(a->status == ADIL_OK && a->stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        CHECK(a->len == strlen(constants[i][1]) && memcmp(a->text, constants[i][1], a->len) == 0);
        CHECK(a->stats.n_forced_tokens > 0 && a->stats.grammar_ms >= 0.0);
        if (i == 0) CHECK(a->stats.n_forced_tokens == a->n && a->stats.prefill_ms == 0.0);
        adil_grammar_free(grammar);
    }
    /* Steps of one token: the same output as steps of 64 (queued forced
     * tokens are handed out across steps). */
    adil_grammar *grammar = compile(model, SCHEMAS[0].schema);
    if (grammar != NULL) {
        run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f}, a);
        run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f, .capacity = 1}, b);
        CHECK(a->status == ADIL_OK && b->status == ADIL_OK);
        CHECK(a->n == b->n && memcmp(a->tokens, b->tokens, a->n * sizeof a->tokens[0]) == 0);
        CHECK(a->stats.n_forced_tokens == b->stats.n_forced_tokens && a->stats.n_forced_tokens > 0);
        /* ignore_eos: the grammar still ends the run */
        run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f, .ignore_eos = 1}, b);
        CHECK(b->status == ADIL_OK && b->stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        adil_grammar_free(grammar);
    }
    free(a);
    free(b);
}

static void test_truncation(adil_model *model) {
    adil_grammar *grammar = compile(model, SCHEMAS[0].schema);
    if (grammar == NULL) return;
    run_out *out = malloc(sizeof *out);
    for (uint32_t max = 1; max <= 4; max++) {
        run(model, &(run_setup){.grammar = grammar, .temperature = 0.0f, .max_tokens = max}, out);
        CHECK(out->status == ADIL_STATUS_OUTPUT_VALIDATION);
        CHECK(out->stats.stop_reason == ADIL_STOP_MAX_TOKENS);
        CHECK(out->n == max);
        CHECK_HAS(out->error, "truncated inside the document");
    }
    free(out);
    adil_grammar_free(grammar);
}

static void test_grammar_of_another_model(adil_engine *engine, adil_model *model) {
    adil_model *other = load(engine);
    adil_grammar *grammar = other != NULL ? compile(other, "{}") : NULL;
    adil_context *ctx = NULL;
    CHECK(adil_context_new(model, NULL, &ctx) == ADIL_OK);
    adil_run_params rp;
    adil_run_default_params(&rp);
    rp.grammar = grammar;
    adil_run *r = NULL;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_STATUS_INVALID_ARGUMENT && r == NULL);
    CHECK_HAS(adil_last_error(), "compiled for another model");
    /* the refused start left the model free */
    rp.grammar = NULL;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_OK);
    adil_run_free(r);
    adil_context_free(ctx);
    adil_grammar_free(grammar);
    adil_model_free(other);
}

/* The mask equals accept_token tried on every token, at each position of a
 * document (a fresh matcher replayed to the position for each try). */
static void test_mask_equals_accept(adil_model *model) {
    static const char doc[] = "{\"name\":\"Os\\u00e9\",\"age\":12}";
    adil_grammar *grammar = compile(model, SCHEMAS[0].schema);
    int32_t tokens[64];
    size_t n = 0;
    CHECK(adil_tokenize(model, doc, strlen(doc), 0, 0, tokens, 64, &n) == ADIL_OK && n <= 64);
    char space[4];
    size_t k = 0;
    CHECK(adil_token_to_piece(model, tokens[0], 0, space, sizeof space, &k) == ADIL_OK && k == 1 &&
          space[0] == ' ');
    for (size_t step = 0; grammar != NULL && step <= n; step++) {
        grammar_matcher *m = NULL;
        CHECK(grammar_matcher_new(grammar, &m) == ADIL_OK);
        /* adil_tokenize added the space prefix: replay from its second token */
        for (size_t i = 1; i < step; i++) CHECK(grammar_matcher_accept_token(m, tokens[i], NULL));
        uint32_t mask[(N_VOCAB + 31) / 32];
        const size_t allowed = grammar_matcher_mask(m, mask);
        size_t counted = 0;
        for (int32_t t = 0; t < (int32_t)N_VOCAB; t++) {
            grammar_matcher *probe = NULL;
            CHECK(grammar_matcher_new(grammar, &probe) == ADIL_OK);
            for (size_t i = 1; i < step; i++) grammar_matcher_accept_token(probe, tokens[i], NULL);
            const bool accepted = grammar_matcher_accept_token(probe, t, NULL);
            CHECK(accepted == ((mask[t / 32] >> (t % 32) & 1u) != 0));
            counted += accepted;
            grammar_matcher_free(probe);
        }
        CHECK(counted == allowed);
        CHECK(!(mask[CONTROL_ID / 32] >> (CONTROL_ID % 32) & 1u)); /* never a control token */
        grammar_matcher_free(m);
    }
    adil_grammar_free(grammar);
}

typedef struct compile_job {
    adil_model *model;
    adil_grammar *grammar;
    adil_status status;
} compile_job;

static void *compile_thread(void *arg) {
    compile_job *job = arg;
    static const char schema[] = "{\"type\": \"array\"}";
    job->status = adil_grammar_compile(job->model, schema, strlen(schema), &job->grammar);
    return NULL;
}

static void test_concurrent_first_compiles(adil_engine *engine) {
    adil_model *model = load(engine); /* no grammar compiled for it yet */
    compile_job jobs[4];
    pthread_t threads[4];
    for (int i = 0; model != NULL && i < 4; i++) {
        jobs[i] = (compile_job){.model = model};
        CHECK(pthread_create(&threads[i], NULL, compile_thread, &jobs[i]) == 0);
    }
    for (int i = 0; model != NULL && i < 4; i++) {
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].status == ADIL_OK && jobs[i].grammar != NULL);
        CHECK(grammar_vocab_of(jobs[i].grammar) == grammar_vocab_of(jobs[0].grammar));
    }
    for (int i = 0; model != NULL && i < 4; i++) adil_grammar_free(jobs[i].grammar);
    adil_model_free(model);
}

int main(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 1, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    adil_model *model = load(engine);
    if (model != NULL) {
        test_documents(model);
        test_greedy_matches_teacher_forcing(model);
        test_forced_tokens(model);
        test_truncation(model);
        test_grammar_of_another_model(engine, model);
        test_mask_equals_accept(model);
        test_concurrent_first_compiles(engine);
    }
    adil_model_free(model);
    adil_engine_close(engine);
    return test_report("test_grammar_engine");
}
