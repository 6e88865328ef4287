/*
 * test_logprobs.c — adil_run_token_logprobs on the CPU engine, through the
 * ABI, on a tiny llama model (tiny_model.h) whose vocabulary has the 256 byte
 * tokens and a few JSON pieces:
 *   - every generated token's logprob and top alternatives are the
 *     log-softmax of the teacher-forced logits (adil_context_logits) of the
 *     run's own output at that position, within 1e-4: raw logits, whatever
 *     the temperature and repetition penalty; the alternatives come most
 *     likely first, and the token generated is among them exactly when it
 *     ranks within them;
 *   - a grammar run: tokens the grammar forced get theirs too (computed),
 *     equal to teacher forcing as well, and steps of one token give the same;
 *   - errors: an index not yet generated, a run without n_logprobs,
 *     n_logprobs over ADIL_MAX_LOGPROBS, NULL arrays with room; a small
 *     capacity writes only that much and says how many there are.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "test_util.h"
#include "text/tokenizer.h"
#include "tiny_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_CTX      256
#define N_BYTES    256
#define FIRST_BYTE 3
#define TOL        1e-4f

/* ---- the model ------------------------------------------------------------- */

static const char *const PIECES[] = {"\xe2\x96\x81", "{\"",  "\":", "\",", "\"}", "\":\"", "na",
                                     "me",           "name", "ag",  "age", "ci",  "ty",    "city"};
#define N_PIECES (sizeof PIECES / sizeof PIECES[0])
#define N_VOCAB  (FIRST_BYTE + N_BYTES + N_PIECES)

static char vocab_text[N_VOCAB][16];
static const char *vocab[N_VOCAB];
static int32_t types[N_VOCAB];

static adil_model *load(adil_engine *engine) {
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
    for (size_t i = 0; i < N_VOCAB; i++) vocab[i] = vocab_text[i];
    tiny_spec spec = tiny_default();
    spec.vocab = vocab;
    spec.token_types = types;
    spec.n_vocab = N_VOCAB;
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

static adil_context *new_context(adil_model *model) {
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = N_CTX;
    adil_context *ctx = NULL;
    CHECK(adil_context_new(model, &cp, &ctx) == ADIL_OK);
    return ctx;
}

/* ---- runs ---------------------------------------------------------------------- */

static const int32_t PROMPT[] = {1, FIRST_BYTE + 'H', FIRST_BYTE + 'i', FIRST_BYTE + ':'};
#define N_PROMPT (sizeof PROMPT / sizeof PROMPT[0])

typedef struct setup {
    uint32_t n_logprobs;
    float temperature;
    float repeat_penalty;
    const adil_grammar *grammar;
    uint32_t max_tokens;
    size_t capacity; /* tokens per step */
} setup;

/* One token's answer from adil_run_token_logprobs. */
typedef struct entry {
    float logprob;
    int32_t ids[ADIL_MAX_LOGPROBS];
    float top[ADIL_MAX_LOGPROBS];
    size_t n_top;
} entry;

typedef struct output {
    int32_t tokens[N_CTX];
    entry entries[N_CTX];
    size_t n;
    adil_run_stats stats;
} output;

/* Runs to the end, reading each step's tokens' logprobs right after it. */
static void run(adil_context *ctx, const setup *s, output *out) {
    memset(out, 0, sizeof *out);
    adil_sampling_params sp;
    adil_sampling_default_params(&sp);
    sp.temperature = s->temperature;
    sp.repeat_penalty = s->repeat_penalty > 0 ? s->repeat_penalty : 1.0f;
    sp.seed = 7;
    adil_run_params rp;
    adil_run_default_params(&rp);
    rp.sampling = &sp;
    rp.grammar = s->grammar;
    rp.max_tokens = s->max_tokens;
    rp.ignore_eos = s->grammar == NULL;
    rp.n_logprobs = s->n_logprobs;
    adil_run *r = NULL;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_OK);
    while (r != NULL) {
        size_t n = 0;
        const adil_status st = adil_run_step(r, out->tokens + out->n, s->capacity ? s->capacity : 16, &n);
        for (size_t i = out->n; i < out->n + n; i++) {
            entry *e = &out->entries[i];
            CHECK(adil_run_token_logprobs(r, i, &e->logprob, e->ids, e->top, ADIL_MAX_LOGPROBS, &e->n_top) ==
                  ADIL_OK);
        }
        out->n += n;
        if (st != ADIL_OK || n == 0) {
            CHECK(st == ADIL_OK);
            break;
        }
    }
    out->stats.struct_size = sizeof out->stats;
    CHECK(r != NULL && adil_run_get_stats(r, &out->stats) == ADIL_OK);
    CHECK(out->stats.n_generated == out->n && out->n > 0);
    adil_run_free(r);
}

/* log-softmax of one row of logits, in double. */
static void log_softmax(const float *row, double *out) {
    double max = -INFINITY, sum = 0.0;
    for (size_t t = 0; t < N_VOCAB; t++) max = row[t] > max ? row[t] : max;
    for (size_t t = 0; t < N_VOCAB; t++) sum += exp(row[t] - max);
    for (size_t t = 0; t < N_VOCAB; t++) out[t] = row[t] - max - log(sum);
}

/* Each entry against the teacher-forced logits of prompt + output. */
static void check_against_teacher_forcing(adil_model *model, const output *out, uint32_t k) {
    const size_t n_all = N_PROMPT + out->n;
    int32_t *all = malloc(n_all * sizeof *all);
    float *logits = malloc(n_all * N_VOCAB * sizeof *logits);
    double *lsm = malloc(N_VOCAB * sizeof *lsm);
    memcpy(all, PROMPT, sizeof PROMPT);
    memcpy(all + N_PROMPT, out->tokens, out->n * sizeof *all);
    adil_context *ctx = new_context(model);
    CHECK(adil_context_logits(ctx, all, n_all, logits, n_all * N_VOCAB) == ADIL_OK);
    size_t bad = 0;
    for (size_t i = 0; i < out->n; i++) {
        const entry *e = &out->entries[i];
        log_softmax(logits + (N_PROMPT + i - 1) * N_VOCAB, lsm);
        bool ok = e->n_top == k && fabs(e->logprob - lsm[out->tokens[i]]) < TOL;
        bool chosen_listed = false;
        for (size_t j = 0; ok && j < e->n_top; j++) {
            ok = e->ids[j] >= 0 && e->ids[j] < (int32_t)N_VOCAB && fabs(e->top[j] - lsm[e->ids[j]]) < TOL;
            if (j > 0)
                ok = ok &&
                     (e->top[j] < e->top[j - 1] || (e->top[j] == e->top[j - 1] && e->ids[j] > e->ids[j - 1]));
            chosen_listed |= e->ids[j] == out->tokens[i];
        }
        /* No token outside the list beats the last one listed (beyond noise). */
        for (size_t t = 0; ok && t < N_VOCAB; t++) {
            bool listed = false;
            for (size_t j = 0; j < e->n_top; j++) listed |= e->ids[j] == (int32_t)t;
            ok = listed || lsm[t] <= e->top[e->n_top - 1] + TOL;
        }
        /* The token generated is listed exactly when it ranks within the list. */
        ok = ok && (chosen_listed || e->logprob <= e->top[e->n_top - 1] + TOL);
        if (!ok && bad++ < 3)
            fprintf(stderr, "token %zu (%d): logprob %g, teacher forcing %g, n_top %zu\n", i, out->tokens[i],
                    (double)e->logprob, lsm[out->tokens[i]], e->n_top);
    }
    CHECK(bad == 0);
    adil_context_free(ctx);
    free(lsm);
    free(logits);
    free(all);
}

/* ---- cases ---------------------------------------------------------------------- */

static void test_plain_runs(adil_model *model) {
    adil_context *ctx = new_context(model);
    output *out = malloc(sizeof *out);
    static const setup setups[] = {
        {.n_logprobs = 5, .temperature = 0.0f, .max_tokens = 40},
        {.n_logprobs = 1, .temperature = 1.2f, .repeat_penalty = 1.5f, .max_tokens = 40},
        {.n_logprobs = ADIL_MAX_LOGPROBS, .temperature = 0.7f, .max_tokens = 30, .capacity = 1},
    };
    for (size_t i = 0; ctx != NULL && i < sizeof setups / sizeof setups[0]; i++) {
        run(ctx, &setups[i], out);
        CHECK(out->n == setups[i].max_tokens);
        check_against_teacher_forcing(model, out, setups[i].n_logprobs);
        if (setups[i].temperature == 0.0f) /* greedy: the token is the most likely one */
            for (size_t j = 0; j < out->n; j++)
                CHECK(out->entries[j].ids[0] == out->tokens[j] ||
                      out->entries[j].top[0] - out->entries[j].logprob < TOL);
    }
    free(out);
    adil_context_free(ctx);
}

static void test_grammar_run(adil_model *model) {
    static const char schema[] =
        "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\", "
        "\"maxLength\": 6}, \"city\": {\"enum\": [\"Oslo\", \"Rome\"]}}, \"required\": "
        "[\"name\", \"city\"], \"additionalProperties\": false}";
    adil_grammar *grammar = NULL;
    CHECK(adil_grammar_compile(model, schema, strlen(schema), &grammar) == ADIL_OK);
    adil_context *ctx = new_context(model);
    output *a = malloc(sizeof *a), *b = malloc(sizeof *b);
    if (grammar != NULL && ctx != NULL) {
        run(ctx, &(setup){.n_logprobs = 3, .temperature = 0.0f, .grammar = grammar, .max_tokens = 120}, a);
        CHECK(a->stats.n_forced_tokens > 0 && a->stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        for (size_t i = 0; i < a->n; i++) CHECK(isfinite(a->entries[i].logprob) && a->entries[i].n_top == 3);
        check_against_teacher_forcing(model, a, 3);
        /* steps of one token: forced tokens queued across steps answer the same */
        run(ctx,
            &(setup){
                .n_logprobs = 3, .temperature = 0.0f, .grammar = grammar, .max_tokens = 120, .capacity = 1},
            b);
        CHECK(a->n == b->n && memcmp(a->tokens, b->tokens, a->n * sizeof a->tokens[0]) == 0);
        for (size_t i = 0; i < a->n && i < b->n; i++)
            CHECK(fabsf(a->entries[i].logprob - b->entries[i].logprob) < TOL);
        /* a constant: every token forced, the last one never evaluated */
        static const char constant[] = "{\"const\": {\"city\": \"Oslo\", \"name\": \"Ann\"}}";
        adil_grammar *all_forced = NULL;
        CHECK(adil_grammar_compile(model, constant, strlen(constant), &all_forced) == ADIL_OK);
        run(ctx, &(setup){.n_logprobs = 2, .temperature = 1.0f, .grammar = all_forced, .max_tokens = 120}, a);
        CHECK(a->stats.n_forced_tokens == a->n);
        check_against_teacher_forcing(model, a, 2);
        adil_grammar_free(all_forced);
    }
    free(a);
    free(b);
    adil_context_free(ctx);
    adil_grammar_free(grammar);
}

static void test_errors(adil_model *model) {
    adil_context *ctx = new_context(model);
    if (ctx == NULL) return;
    adil_run_params rp;
    adil_run_default_params(&rp);
    CHECK(rp.n_logprobs == 0);
    rp.max_tokens = 4;
    rp.ignore_eos = 1;
    rp.n_logprobs = ADIL_MAX_LOGPROBS + 1;
    adil_run *r = NULL;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "n_logprobs: expected 0..20, got 21");
    CHECK(r == NULL);

    float lp = 1.0f, top[4] = {9, 9, 9, 9};
    int32_t ids[4] = {-7, -7, -7, -7};
    size_t n_top = 99;
    /* a run without n_logprobs */
    rp.n_logprobs = 0;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_OK);
    int32_t tokens[4];
    size_t n = 0;
    CHECK(adil_run_step(r, tokens, 4, &n) == ADIL_OK && n == 4);
    CHECK(adil_run_token_logprobs(r, 0, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "started with n_logprobs 0");
    CHECK(n_top == 0);
    adil_run_free(r);

    rp.n_logprobs = 3;
    CHECK(adil_run_start(ctx, PROMPT, N_PROMPT, &rp, &r) == ADIL_OK);
    /* nothing generated yet */
    CHECK(adil_run_token_logprobs(r, 0, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "index 0: expected one of the 0 tokens generated so far");
    CHECK(adil_run_step(r, tokens, 2, &n) == ADIL_OK && n == 2);
    CHECK(adil_run_token_logprobs(r, 2, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "index 2: expected one of the 2 tokens generated so far");
    CHECK(adil_run_token_logprobs(r, (size_t)-1, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    /* NULLs */
    CHECK(adil_run_token_logprobs(NULL, 0, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_run_token_logprobs(r, 0, NULL, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_run_token_logprobs(r, 0, &lp, ids, top, 4, NULL) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_run_token_logprobs(r, 0, &lp, NULL, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_run_token_logprobs(r, 0, &lp, ids, NULL, 1, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    /* capacity 0: only the count; capacity 2 of 3: two written, the rest untouched */
    CHECK(adil_run_token_logprobs(r, 1, &lp, NULL, NULL, 0, &n_top) == ADIL_OK);
    CHECK(n_top == 3 && isfinite(lp) && lp <= 0.0f);
    CHECK(adil_run_token_logprobs(r, 1, &lp, ids, top, 2, &n_top) == ADIL_OK);
    CHECK(n_top == 3 && ids[0] >= 0 && ids[1] >= 0 && ids[2] == -7 && top[2] == 9.0f);
    CHECK(top[0] >= top[1] && top[0] <= 0.0f);
    /* the rest of the run; entries stay readable after it stopped */
    CHECK(adil_run_step(r, tokens, 4, &n) == ADIL_OK && n == 2);
    CHECK(adil_run_step(r, tokens, 4, &n) == ADIL_OK && n == 0);
    CHECK(adil_run_token_logprobs(r, 3, &lp, ids, top, 4, &n_top) == ADIL_OK && n_top == 3);
    CHECK(adil_run_token_logprobs(r, 4, &lp, ids, top, 4, &n_top) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_run_free(r);
    adil_context_free(ctx);
}

int main(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 2, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    CHECK_HAS(adil_component()->capabilities, "logprobs");
    adil_model *model = engine != NULL ? load(engine) : NULL;
    if (model != NULL) {
        test_plain_runs(model);
        test_grammar_run(model);
        test_errors(model);
    }
    adil_model_free(model);
    adil_engine_close(engine);
    return test_report("test_logprobs");
}
