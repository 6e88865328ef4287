/*
 * test_lookup.c — lookup (prompt n-gram) decoding (api/run_lookup.h and the
 * run's speculative = ADIL_SPECULATIVE_LOOKUP):
 *   - run_lookup_draft: the longest n-gram that occurs earlier wins, its latest
 *     occurrence wins, the draft is its continuation cut at `max` and at the
 *     end of the history, n-grams shorter than 3 are never matched, and an occurrence
 *     must be followed by a token;
 *   - run_lookup_adapt: doubles on a full draft (up to RUN_LOOKUP_MAX_DRAFT),
 *     halves on a refused one (down to 1), keeps it otherwise;
 *   - the match length run_lookup_draft reports (the n-gram and the tokens
 *     before it that agree, up to its limit), and run_lookup_next: a draft at
 *     most RUN_LOOKUP_MATCH_SLACK shorter than its match, within the budget
 *     and the room;
 *   - through the ABI on a tiny llama model (tiny_model.h): a run with lookup
 *     gives the plain run's tokens (greedy, and sampled with the same seed)
 *     with one token per step and many, at every max_tokens, counts what it
 *     drafted and kept, and refuses a speculative value past
 *     ADIL_SPECULATIVE_LOOKUP.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "api/run_lookup.h"
#include "test_util.h"
#include "tiny_model.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N_CTX 128

/* ---- drafting ------------------------------------------------------------------ */

static size_t draft_of(const int32_t *hist, size_t n, size_t max, int32_t *out) {
    return run_lookup_draft(hist, n, max, out, NULL);
}

static void test_draft(void) {
    int32_t d[RUN_LOOKUP_MAX_DRAFT];
    /* "1 2 3 4 5 | 9 2 3 7 | 1 2 3": the 3-gram 1 2 3 occurs at 0 -> 4 5 9 ... */
    const int32_t h1[] = {1, 2, 3, 4, 5, 9, 2, 3, 7, 1, 2, 3};
    size_t n = draft_of(h1, 12, 4, d);
    CHECK(n == 4 && d[0] == 4 && d[1] == 5 && d[2] == 9 && d[3] == 2);
    CHECK(draft_of(h1, 12, 1, d) == 1 && d[0] == 4);
    CHECK(draft_of(h1, 12, 0, d) == 0);
    /* the key 1 2 3 of "... 1 2 3" (no 4-gram match): its latest occurrence, 1 2 3 7 */
    const int32_t h2[] = {1, 2, 3, 4, 8, 1, 2, 3, 7, 6, 1, 2, 3};
    n = draft_of(h2, 13, 8, d);
    CHECK(n == 5 && d[0] == 7 && d[1] == 6 && d[2] == 1 && d[3] == 2 && d[4] == 3);
    /* n-grams shorter than RUN_LOOKUP_NGRAM_MIN never match */
    const int32_t h3[] = {5, 6, 7, 8, 5, 6};
    CHECK(RUN_LOOKUP_NGRAM_MIN > 2 && draft_of(h3, 6, 8, d) == 0);
    /* a longest n-gram that occurs only as the key itself does not count */
    const int32_t h4[] = {1, 2};
    CHECK(draft_of(h4, 2, 8, d) == 0);
    /* a run of one token: the occurrence just before the key, one token follows */
    const int32_t h5[] = {4, 4, 4, 4, 4, 4};
    CHECK(draft_of(h5, 6, 8, d) == 1 && d[0] == 4);
    /* 4-grams win over 3-grams that occur later */
    const int32_t h6[] = {1, 2, 3, 4, 10, 11, 2, 3, 4, 12, 1, 2, 3, 4};
    CHECK(draft_of(h6, 14, 2, d) == 2 && d[0] == 10 && d[1] == 11);
}

static void test_adapt(void) {
    run_lookup lk;
    memset(&lk, 0, sizeof lk);
    lk.budget = 4;
    run_lookup_adapt(&lk, 4, 4);
    CHECK(lk.budget == 8);
    run_lookup_adapt(&lk, 8, 8);
    run_lookup_adapt(&lk, 16, 16);
    CHECK(lk.budget == RUN_LOOKUP_MAX_DRAFT);
    run_lookup_adapt(&lk, 3, 3); /* a short draft kept whole: the budget was not the limit */
    CHECK(lk.budget == RUN_LOOKUP_MAX_DRAFT);
    run_lookup_adapt(&lk, 16, 5);
    CHECK(lk.budget == RUN_LOOKUP_MAX_DRAFT);
    for (int i = 0; i < 8; i++) run_lookup_adapt(&lk, 2, 0);
    CHECK(lk.budget == 1);
    run_lookup_adapt(&lk, 0, 0);
    CHECK(lk.budget == 1);
}

static void test_match_length(void) {
    int32_t d[RUN_LOOKUP_MAX_DRAFT];
    size_t matched = 99;
    /* the 3-gram 1 2 3 at the very start: nothing before it to agree */
    const int32_t h1[] = {1, 2, 3, 4, 5, 9, 2, 3, 7, 1, 2, 3};
    CHECK(run_lookup_draft(h1, 12, 8, d, &matched) == 8 && matched == 3);
    /* the 4-gram 8 1 2 3, and the 7 before both */
    const int32_t h2[] = {7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3};
    CHECK(run_lookup_draft(h2, 13, 8, d, &matched) == 8 && matched == 5);
    /* 0 where nothing occurs, and where nothing may be drafted */
    const int32_t h3[] = {5, 6, 7, 8, 5, 6};
    CHECK(run_lookup_draft(h3, 6, 8, d, &matched) == 0 && matched == 0);
    matched = 99;
    CHECK(run_lookup_draft(h2, 13, 0, d, &matched) == 0 && matched == 0);
    /* a long repeat: counted up to the longest match a draft can use */
    int32_t h4[60];
    for (int i = 0; i < 60; i++) h4[i] = i % 25;
    CHECK(run_lookup_draft(h4, 60, 8, d, &matched) == 8 && matched == RUN_LOOKUP_MATCH_MAX);
}

/* run_lookup_next on a history `hist` with the budget `budget`, room `room`. */
static size_t next_of(const int32_t *hist, size_t n, uint32_t budget, size_t room, int32_t *first) {
    run_lookup lk;
    if (run_lookup_init(&lk, true, hist, n, n + 4, 32) != ADIL_OK) {
        test_failures++;
        return 0;
    }
    lk.budget = budget;
    const size_t got = run_lookup_next(&lk, room);
    *first = got ? lk.batch[1] : -1;
    run_lookup_free(&lk);
    return got;
}

static void test_next(void) {
    int32_t first;
    /* a match of 3 drafts one token, of 5 three, whatever the budget */
    const int32_t h1[] = {1, 2, 3, 4, 5, 9, 2, 3, 7, 1, 2, 3};
    CHECK(next_of(h1, 12, 8, 16, &first) == 3 - RUN_LOOKUP_MATCH_SLACK && first == 4);
    const int32_t h2[] = {7, 8, 1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3};
    CHECK(next_of(h2, 13, 16, 16, &first) == 5 - RUN_LOOKUP_MATCH_SLACK && first == 4);
    /* the budget and the room cut it further */
    CHECK(next_of(h2, 13, 2, 16, &first) == 2 && first == 4);
    CHECK(next_of(h2, 13, 16, 1, &first) == 1 && first == 4);
    CHECK(next_of(h2, 13, 16, 0, &first) == 0);
    /* a long copy drafts the whole budget */
    int32_t h4[60];
    for (int i = 0; i < 60; i++) h4[i] = i % 25;
    CHECK(next_of(h4, 60, RUN_LOOKUP_MAX_DRAFT, 64, &first) == RUN_LOOKUP_MAX_DRAFT && first == 10);
    /* no occurrence: no draft */
    const int32_t h3[] = {5, 6, 7, 8, 5, 6};
    CHECK(next_of(h3, 6, 8, 16, &first) == 0);
}

/* ---- runs through the ABI ---------------------------------------------------------- */

typedef struct output {
    int32_t tokens[N_CTX];
    size_t n;
    adil_run_stats stats;
    adil_status status;
} output;

static void generate(adil_context *ctx, const int32_t *prompt, size_t n_prompt, uint32_t speculative,
                     float temperature, uint32_t max_tokens, size_t capacity, output *out) {
    memset(out, 0, sizeof *out);
    adil_sampling_params sp;
    adil_sampling_default_params(&sp);
    sp.temperature = temperature;
    sp.top_k = 0;
    sp.seed = 7;
    adil_run_params p;
    adil_run_default_params(&p);
    p.sampling = &sp;
    p.max_tokens = max_tokens;
    p.ignore_eos = 1;
    p.speculative = speculative;
    adil_run *run = NULL;
    out->status = adil_run_start(ctx, prompt, n_prompt, &p, &run);
    if (out->status != ADIL_OK) return;
    size_t got = 0;
    while (out->n < N_CTX) {
        const size_t room = N_CTX - out->n < capacity ? N_CTX - out->n : capacity;
        CHECK(adil_run_step(run, out->tokens + out->n, room, &got) == ADIL_OK);
        if (got == 0) break;
        out->n += got;
    }
    out->stats.struct_size = sizeof out->stats;
    CHECK(adil_run_get_stats(run, &out->stats) == ADIL_OK);
    adil_run_free(run);
}

static bool same(const output *a, const output *b) {
    return a->n == b->n && memcmp(a->tokens, b->tokens, a->n * sizeof a->tokens[0]) == 0;
}

static void test_runs(adil_model *model) {
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = N_CTX;
    adil_context *ctx = NULL;
    CHECK(adil_context_new(model, &cp, &ctx) == ADIL_OK);
    if (ctx == NULL) return;
    /* a prompt that repeats: drafts from the first step */
    int32_t prompt[30];
    for (int i = 0; i < 30; i++) prompt[i] = 3 + (i * 7) % 11;
    uint32_t drafted = 0;
    static output plain, lookup;
    for (int t = 0; t < 2; t++) {
        const float temperature = t ? 0.9f : 0.0f;
        for (uint32_t max = 1; max <= 40; max += 13) {
            for (size_t capacity = 1; capacity <= 64; capacity *= 64) {
                generate(ctx, prompt, 30, ADIL_SPECULATIVE_NONE, temperature, max, capacity, &plain);
                generate(ctx, prompt, 30, ADIL_SPECULATIVE_LOOKUP, temperature, max, capacity, &lookup);
                CHECK(plain.status == ADIL_OK && lookup.status == ADIL_OK);
                CHECK(same(&plain, &lookup) && plain.n == max);
                CHECK(plain.stats.n_drafted == 0);
                CHECK(lookup.stats.n_draft_accepted <= lookup.stats.n_drafted);
                drafted += lookup.stats.n_drafted;
            }
        }
    }
    CHECK(drafted > 0);
    generate(ctx, prompt, 30, ADIL_SPECULATIVE_LOOKUP + 1, 0.0f, 4, 4, &lookup);
    CHECK(lookup.status == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "speculative");
    adil_context_free(ctx);
}

static adil_model *load(adil_engine *engine) {
    tiny_spec spec = tiny_default();
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

int main(void) {
    test_draft();
    test_adapt();
    test_match_length();
    test_next();
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 3, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    CHECK_HAS(adil_component()->capabilities, "lookup");
    adil_model *model = engine != NULL ? load(engine) : NULL;
    if (model != NULL) test_runs(model);
    adil_model_free(model);
    adil_engine_close(engine);
    return test_report("test_lookup");
}
