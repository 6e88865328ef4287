/*
 * decode_loop.c — the engine's own C generation loop, for measuring what the
 * Python binding costs on top of it (bench/binding_overhead).
 *
 *   adil_decode_loop MODEL THREADS GEN_TOKENS REPETITIONS
 *
 * Each repetition: a one-token prompt (BOS), greedy, ignore_eos, GEN_TOKENS
 * tokens stepped in batches of 64 exactly as the binding does; prints one
 * JSON line per repetition with the wall-clock time of the step loop.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "adil/adil.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int fail(const char *what, adil_status st) {
    fprintf(stderr, "%s: %s: %s\n", what, adil_status_string(st), adil_last_error());
    return 1;
}

static int run_once(adil_context *ctx, int32_t bos, uint32_t gen_tokens) {
    adil_sampling_params sampling;
    adil_sampling_default_params(&sampling);
    sampling.temperature = 0.0f;
    adil_run_params params;
    adil_run_default_params(&params);
    params.max_tokens = gen_tokens;
    params.sampling = &sampling;
    params.ignore_eos = 1;
    adil_run *run = NULL;
    const double t0 = now_ms();
    adil_status st = adil_run_start(ctx, &bos, 1, &params, &run);
    if (st != ADIL_OK) return fail("adil_run_start", st);
    int32_t tokens[64];
    size_t n = 0, total = 0;
    do {
        st = adil_run_step(run, tokens, 64, &n);
        total += n;
    } while (st == ADIL_OK && n > 0);
    const double wall = now_ms() - t0;
    adil_run_stats stats = {.struct_size = sizeof stats};
    adil_run_get_stats(run, &stats);
    adil_run_free(run);
    if (st != ADIL_OK) return fail("adil_run_step", st);
    printf("{\"tokens\": %zu, \"wall_ms\": %.3f, \"prefill_ms\": %.3f, \"decode_ms\": %.3f}\n", total, wall,
           stats.prefill_ms, stats.decode_ms);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: %s MODEL THREADS GEN_TOKENS REPETITIONS\n", argv[0]);
        return 2;
    }
    const uint32_t threads = (uint32_t)atoi(argv[2]);
    const uint32_t gen_tokens = (uint32_t)atoi(argv[3]);
    const int repetitions = atoi(argv[4]);
    adil_host_info host = {.struct_size = sizeof host,
                           .host_major = ADIL_HOST_MAJOR,
                           .host_name = "adil-decode-loop",
                           .host_version = "0"};
    adil_engine *engine = NULL;
    adil_model *model = NULL;
    adil_context *ctx = NULL;
    adil_status st = adil_engine_open(&host, NULL, &engine);
    if (st != ADIL_OK) return fail("adil_engine_open", st);
    adil_model_params mp;
    adil_model_default_params(&mp);
    mp.n_threads = threads;
    st = adil_model_load(engine, argv[1], &mp, &model);
    if (st != ADIL_OK) return fail("adil_model_load", st);
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = gen_tokens + 16;
    cp.n_threads = threads;
    st = adil_context_new(model, &cp, &ctx);
    if (st != ADIL_OK) return fail("adil_context_new", st);
    adil_model_info info = {.struct_size = sizeof info};
    adil_model_get_info(model, &info);
    int rc = 0;
    for (int i = 0; i < repetitions && rc == 0; i++)
        rc = run_once(ctx, info.bos_token >= 0 ? info.bos_token : 0, gen_tokens);
    adil_context_free(ctx);
    adil_model_free(model);
    adil_engine_close(engine);
    return rc;
}
