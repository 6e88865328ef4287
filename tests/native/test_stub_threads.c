/*
 * test_stub_threads.c — the concurrency the ABI allows, on the stub (run it
 * under -DADIL_TSAN=ON for races; test_stub_cancel.c measures how soon a
 * cancel is seen in a paced run):
 *   - adil_run_cancel and adil_cancel_flag_set from another thread while one
 *     adil_run_step call writes an unpaced 1 MB turn, with adil_run_cancelled
 *     polled from that thread meanwhile: the step stops early, CANCELLED;
 *   - several models, each stepped on its own thread at once, from one
 *     engine: each thread gets its own model's turns, in order.
 */
#include "test_stub_api.h"

#include <pthread.h>
#include <stdatomic.h>

enum { LONG_TURN = 1000000 };

/* A script with one unpaced turn of LONG_TURN bytes. */
static char *long_script(void) {
    static const char head[] = "{\"context_length\": 2000000, \"turns\": [{\"text\": \"";
    static const char tail[] = "\"}]}";
    char *json = malloc(sizeof head + LONG_TURN + sizeof tail);
    if (json == NULL) return NULL;
    memcpy(json, head, sizeof head - 1);
    memset(json + sizeof head - 1, 'x', LONG_TURN);
    memcpy(json + sizeof head - 1 + LONG_TURN, tail, sizeof tail);
    return json;
}

typedef struct canceller {
    const stub_api *api;
    adil_run *run;          /* cancel this run, or */
    adil_cancel_flag *flag; /* set this flag */
    atomic_int *stepping;   /* set by the stepping thread just before its step */
    int polls_before;       /* adil_run_cancelled answers before the cancel */
} canceller;

static void *cancel_during_step(void *arg) {
    canceller *c = arg;
    while (!atomic_load(c->stepping)) test_sleep_ms(1);
    for (int i = 0; i < 3; i++) /* "any thread": polled while the step runs */
        c->polls_before += c->api->run_cancelled(c->run);
    if (c->flag != NULL)
        c->api->cancel_flag_set(c->flag);
    else
        c->api->run_cancel(c->run);
    return NULL;
}

static void cancel_from_thread(const stub_api *api, adil_model *model, bool use_flag) {
    adil_context *ctx = test_new_context(api, model, 2000000);
    adil_cancel_flag *flag = NULL;
    CHECK_STATUS(api, api->cancel_flag_new(&flag), ADIL_OK);
    adil_run_params params;
    api->run_default_params(&params);
    params.cancel_flag = flag;
    params.step_budget_ms = 600000; /* one step: the cancel lands inside it */
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    int32_t *tokens = malloc(LONG_TURN * sizeof *tokens);
    if (run == NULL || tokens == NULL) {
        free(tokens);
        return;
    }
    atomic_int stepping = 0;
    canceller c = {api, run, use_flag ? flag : NULL, &stepping, 0};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, cancel_during_step, &c) == 0);
    size_t n = 0;
    atomic_store(&stepping, 1);
    adil_status st = api->run_step(run, tokens, LONG_TURN, &n);
    pthread_join(thread, NULL);
    CHECK_STATUS(api, st, ADIL_STATUS_CANCELLED);
    adil_run_stats stats = {.struct_size = sizeof stats};
    CHECK_STATUS(api, api->run_get_stats(run, &stats), ADIL_OK);
    CHECK(stats.stop_reason == ADIL_STOP_CANCELLED && stats.cancel_acknowledged == 1);
    CHECK(stats.n_generated == n && n < LONG_TURN);
    CHECK(c.polls_before == 0 && api->run_cancelled(run) == 1);
    free(tokens);
    api->run_free(run);
    api->cancel_flag_free(flag);
    api->context_free(ctx);
}

/* Each call of the script gets the next turn, so the model is loaded again
 * for each of the two cancels. */
static void test_cancel_during_a_long_step(const stub_api *api, adil_engine *engine) {
    char *json = long_script();
    for (int use_flag = 0; json != NULL && use_flag <= 1; use_flag++) {
        adil_model *model = NULL;
        CHECK_STATUS(api, test_load_text(api, engine, json, &model), ADIL_OK);
        if (model != NULL) cancel_from_thread(api, model, use_flag);
        api->model_free(model);
    }
    free(json);
}

/* ---- several models at once ------------------------------------------------ */

typedef struct model_job {
    const stub_api *api;
    adil_model *model;
    char expected[3][16]; /* the model's three turns */
    int wrong;
} model_job;

static void *run_turns(void *arg) {
    model_job *job = arg;
    for (int turn = 0; turn < 3; turn++) {
        test_output out;
        if (test_call(job->api, job->model, &out) != ADIL_OK || out.len != strlen(job->expected[turn]) ||
            memcmp(out.text, job->expected[turn], out.len) != 0)
            job->wrong++;
    }
    return NULL;
}

static void test_models_on_threads(const stub_api *api, adil_engine *engine) {
    enum { N = 4 };
    model_job jobs[N];
    pthread_t threads[N];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N; i++) {
        char json[256];
        for (int t = 0; t < 3; t++)
            snprintf(jobs[i].expected[t], sizeof jobs[i].expected[t], "model %d turn %d", i, t);
        snprintf(json, sizeof json,
                 "{\"turns\": [{\"text\": \"%s\"}, {\"text\": \"%s\"}, {\"text\": \"%s\"}], "
                 "\"token_delay_ms\": 1}",
                 jobs[i].expected[0], jobs[i].expected[1], jobs[i].expected[2]);
        jobs[i].api = api;
        CHECK_STATUS(api, test_load_text(api, engine, json, &jobs[i].model), ADIL_OK);
    }
    for (int i = 0; i < N; i++)
        CHECK(jobs[i].model != NULL && pthread_create(&threads[i], NULL, run_turns, &jobs[i]) == 0);
    for (int i = 0; i < N; i++) {
        if (jobs[i].model == NULL) continue;
        pthread_join(threads[i], NULL);
        CHECK(jobs[i].wrong == 0);
        api->model_free(jobs[i].model);
    }
}

int main(void) {
    alarm(240); /* a hang fails the test (SIGALRM) */
    static const test_engine_case cases[] = {test_cancel_during_a_long_step, test_models_on_threads};
    return test_stub_main("test_stub_threads", cases, sizeof cases / sizeof cases[0]);
}
