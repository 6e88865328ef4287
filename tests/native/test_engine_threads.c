/*
 * test_engine_threads.c — the concurrency the ABI allows, on the CPU engine
 * with tiny models (tiny_model.h); run it under -DADIL_TSAN=ON for races:
 *   - adil_run_cancel and adil_cancel_flag_set from another thread while one
 *     adil_run_step call is generating thousands of tokens (pool workers
 *     busy): the step returns ADIL_STATUS_CANCELLED early, and the other
 *     thread may poll adil_run_cancelled all along;
 *   - several models, each on its own thread (their own engines, contexts
 *     and 2-thread pools), generating at once: every thread gets the tokens
 *     a lone greedy run gets;
 *   - teacher-forced logits on a second context of a model while a run of
 *     the same model steps on another thread (the model's pool shared under
 *     its compute lock, or a context pool of its own): the same logits as
 *     when nothing else runs.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "test_util.h"
#include "tiny_model.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define N_CTX         4096
#define GREEDY_TOKENS 48

static char model_path[64];
static const int32_t PROMPT[] = {1, 5, 6, 7, 8};

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static adil_engine *open_engine(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    return engine;
}

static adil_model *load(adil_engine *engine, uint32_t n_threads) {
    adil_model_params p;
    adil_model_default_params(&p);
    p.n_threads = n_threads;
    adil_model *model = NULL;
    if (adil_model_load(engine, model_path, &p, &model) != ADIL_OK) {
        fprintf(stderr, "load: %s\n", adil_last_error());
        test_failures++;
    }
    return model;
}

static adil_context *new_context(adil_model *model, uint32_t n_ctx, uint32_t n_threads) {
    adil_context_params p;
    adil_context_default_params(&p);
    p.n_ctx = n_ctx;
    p.n_threads = n_threads;
    adil_context *ctx = NULL;
    if (adil_context_new(model, &p, &ctx) != ADIL_OK) {
        fprintf(stderr, "context: %s\n", adil_last_error());
        test_failures++;
    }
    return ctx;
}

/* Greedy tokens of a whole run of max_tokens (EOS ignored) into out[];
 * returns how many, or 0 after a failed check. */
static size_t greedy(adil_context *ctx, uint32_t max_tokens, int32_t *out) {
    adil_sampling_params s;
    adil_sampling_default_params(&s);
    s.temperature = 0.0f;
    adil_run_params p;
    adil_run_default_params(&p);
    p.sampling = &s;
    p.max_tokens = max_tokens;
    p.ignore_eos = 1;
    adil_run *run = NULL;
    if (adil_run_start(ctx, PROMPT, 5, &p, &run) != ADIL_OK) {
        fprintf(stderr, "run: %s\n", adil_last_error());
        test_failures++;
        return 0;
    }
    size_t total = 0;
    for (;;) {
        size_t n = 0;
        adil_status st = adil_run_step(run, out + total, max_tokens - total, &n);
        total += n;
        if (st != ADIL_OK || n == 0 || total == max_tokens) {
            CHECK(st == ADIL_OK);
            break;
        }
    }
    adil_run_free(run);
    return total;
}

/* ---- cancel from another thread -------------------------------------------- */

typedef struct canceller {
    adil_run *run;          /* cancel this run, or */
    adil_cancel_flag *flag; /* set this flag */
    atomic_int *stepping;   /* set by the stepping thread just before its step */
    int polls_before;       /* adil_run_cancelled answers before the cancel */
} canceller;

static void *cancel_during_step(void *arg) {
    canceller *c = arg;
    while (!atomic_load(c->stepping)) sleep_ms(1);
    for (int i = 0; i < 5; i++) { /* "any thread": polled while the step runs */
        c->polls_before += adil_run_cancelled(c->run);
        sleep_ms(1);
    }
    if (c->flag != NULL)
        adil_cancel_flag_set(c->flag);
    else
        adil_run_cancel(c->run);
    return NULL;
}

static void cancel_from_thread(adil_model *model, bool use_flag) {
    adil_context *ctx = new_context(model, N_CTX, 0);
    adil_cancel_flag *flag = NULL;
    CHECK(adil_cancel_flag_new(&flag) == ADIL_OK);
    adil_run_params p;
    adil_run_default_params(&p);
    p.max_tokens = N_CTX - 5; /* seconds of work: the cancel comes long before */
    p.ignore_eos = 1;
    p.cancel_flag = flag;
    p.step_budget_ms = 600000; /* one step: the cancel lands inside it */
    adil_run *run = NULL;
    if (ctx == NULL || adil_run_start(ctx, PROMPT, 5, &p, &run) != ADIL_OK) {
        fprintf(stderr, "run: %s\n", adil_last_error());
        test_failures++;
        return;
    }
    atomic_int stepping = 0;
    canceller c = {run, use_flag ? flag : NULL, &stepping, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cancel_during_step, &c) == 0);
    int32_t *tokens = malloc(N_CTX * sizeof *tokens);
    size_t n = 0;
    atomic_store(&stepping, 1);
    adil_status st = adil_run_step(run, tokens, N_CTX, &n);
    pthread_join(thread, NULL);
    CHECK(st == ADIL_STATUS_CANCELLED);
    CHECK_HAS(adil_last_error(), "cancelled");
    CHECK(n < N_CTX - 5); /* stopped early, keeping what it wrote */
    adil_run_stats stats = {.struct_size = sizeof stats};
    CHECK(adil_run_get_stats(run, &stats) == ADIL_OK);
    CHECK(stats.stop_reason == ADIL_STOP_CANCELLED && stats.cancel_acknowledged == 1);
    CHECK(stats.n_generated == n);
    CHECK(c.polls_before == 0 && adil_run_cancelled(run) == 1);
    CHECK(adil_cancel_flag_is_set(flag) == use_flag);
    free(tokens);
    adil_run_free(run);
    adil_cancel_flag_free(flag);
    adil_context_free(ctx);
}

static void test_cancel_from_another_thread(adil_engine *engine) {
    adil_model *model = load(engine, 2);
    if (model == NULL) return;
    cancel_from_thread(model, false);
    cancel_from_thread(model, true);
    /* the model serves the next run as usual */
    adil_context *ctx = new_context(model, 64, 0);
    int32_t out[8];
    CHECK(ctx != NULL && greedy(ctx, 8, out) == 8);
    adil_context_free(ctx);
    adil_model_free(model);
}

/* ---- several models at once ---------------------------------------------- */

typedef struct model_job {
    int32_t tokens[GREEDY_TOKENS];
    size_t n;
} model_job;

static void *run_own_model(void *arg) {
    model_job *job = arg;
    adil_engine *engine = open_engine();
    adil_model *model = engine != NULL ? load(engine, 2) : NULL;
    adil_context *ctx = model != NULL ? new_context(model, 256, 0) : NULL;
    for (int round = 0; ctx != NULL && round < 3; round++) job->n = greedy(ctx, GREEDY_TOKENS, job->tokens);
    adil_context_free(ctx);
    adil_model_free(model);
    adil_engine_close(engine);
    return NULL;
}

static void test_models_on_threads(adil_engine *engine) {
    model_job reference = {0};
    adil_model *model = load(engine, 1);
    adil_context *ctx = model != NULL ? new_context(model, 256, 0) : NULL;
    if (ctx != NULL) reference.n = greedy(ctx, GREEDY_TOKENS, reference.tokens);
    adil_context_free(ctx);
    adil_model_free(model);
    CHECK(reference.n == GREEDY_TOKENS);

    enum { N = 4 };
    model_job jobs[N];
    pthread_t threads[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++) CHECK(pthread_create(&threads[i], NULL, run_own_model, &jobs[i]) == 0);
    for (int i = 0; i < N; i++) {
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].n == reference.n);
        CHECK(memcmp(jobs[i].tokens, reference.tokens, sizeof reference.tokens) == 0);
    }
}

/* ---- logits on one context while another context of the model runs ---------- */

typedef struct runner {
    adil_context *ctx;
    atomic_int done; /* set by the main thread: stop */
    atomic_int runs; /* whole runs made so far */
} runner;

static void *run_until_done(void *arg) {
    runner *r = arg;
    int32_t out[GREEDY_TOKENS];
    while (!atomic_load(&r->done)) {
        CHECK(greedy(r->ctx, GREEDY_TOKENS, out) == GREEDY_TOKENS);
        atomic_fetch_add(&r->runs, 1);
    }
    return NULL;
}

static void logits_beside_a_run(adil_model *model, uint32_t logits_threads) {
    enum { T = 5 };
    float want[T * TINY_N_VOCAB], got[T * TINY_N_VOCAB];
    adil_context *quiet = new_context(model, 64, logits_threads);
    adil_context *busy = new_context(model, 256, 0);
    if (quiet == NULL || busy == NULL) return;
    CHECK(adil_context_logits(quiet, PROMPT, T, want, T * TINY_N_VOCAB) == ADIL_OK);
    runner r = {.ctx = busy};
    atomic_init(&r.done, 0);
    atomic_init(&r.runs, 0);
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, run_until_done, &r) == 0);
    /* at least 20 logits, and until the other thread made 3 whole runs */
    int mismatches = 0, i = 0;
    for (; i < 20 || (atomic_load(&r.runs) < 3 && i < 100000); i++) {
        CHECK(adil_context_logits(quiet, PROMPT, T, got, T * TINY_N_VOCAB) == ADIL_OK);
        mismatches += memcmp(got, want, sizeof want) != 0;
    }
    atomic_store(&r.done, 1);
    pthread_join(thread, NULL);
    CHECK(mismatches == 0);
    CHECK(atomic_load(&r.runs) >= 3);
    adil_context_free(busy);
    adil_context_free(quiet);
}

static void test_logits_beside_a_run(adil_engine *engine) {
    adil_model *model = load(engine, 2);
    if (model == NULL) return;
    logits_beside_a_run(model, 0); /* the model's pool, taken in turns */
    logits_beside_a_run(model, 3); /* a pool of the context's own */
    adil_model_free(model);
}

int main(void) {
    alarm(240); /* a hang fails the test (SIGALRM) */
    tiny_spec spec = tiny_default();
    if (!tiny_write(&spec, model_path)) return 1;
    adil_engine *engine = open_engine();
    test_cancel_from_another_thread(engine);
    test_models_on_threads(engine);
    test_logits_beside_a_run(engine);
    adil_engine_close(engine);
    unlink(model_path);
    return test_report("test_engine_threads");
}
