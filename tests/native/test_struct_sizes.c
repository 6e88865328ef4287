/*
 * test_struct_sizes.c — adil.h's struct_size rule in the common helpers and
 * in the CPU engine (test_stub_struct_sizes.c checks the stub):
 *   - adil_copy_params between a caller and an engine of different minors:
 *     a 2.2 engine reads only a 2.0 caller's struct_size bytes (the appended
 *     field keeps its default), a 2.0 engine reads only its own fields of a
 *     2.2 caller's struct, and both refuse a struct_size under the 2.0 size;
 *   - adil_copy_out: a 2.2 engine writes only a 2.0 caller's struct_size
 *     bytes, and a 2.0 engine only its own struct into a 2.2 caller's, both
 *     keeping the caller's struct_size;
 *   - the CPU engine's ABI and handshake, on a tiny model (struct_size_checks.h).
 * "Reads only" and "writes only" are checked with the struct placed at the
 * end of readable memory: one byte more would crash the test.
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, for struct_size_checks.h */
#define _POSIX_C_SOURCE 200809L

#include "adil_common.h"
#include "test_stub_api.h"
#include "struct_size_checks.h"
#include "tiny_model.h"

/* A run params struct as a later minor's engine (2.2) would have it: one field appended. */
typedef struct run_params_2_2 {
    adil_run_params v2_0;
    uint32_t appended;
} run_params_2_2;

static void test_copy_params(const guarded *g) {
    adil_run_params caller;
    adil_run_default_params(&caller);
    caller.max_tokens = 7;
    /* a 2.2 engine, a 2.0 caller: the appended field keeps its default */
    run_params_2_2 engine_2_2 = {.appended = 42};
    adil_run_default_params(&engine_2_2.v2_0);
    const void *src = guarded_copy(g, &caller, ADIL_SIZE_2_0_RUN_PARAMS);
    CHECK(adil_copy_params(&engine_2_2, sizeof engine_2_2, src, ADIL_SIZE_2_0_RUN_PARAMS, "p") == ADIL_OK);
    CHECK(engine_2_2.v2_0.max_tokens == 7 && engine_2_2.appended == 42);
    CHECK(engine_2_2.v2_0.struct_size == sizeof engine_2_2);

    /* a 2.0 engine, a 2.2 caller: only the 2.0 fields are read, into a 2.0
     * struct that ends at the unreadable page */
    run_params_2_2 caller_2_2 = {.v2_0 = caller, .appended = 99};
    caller_2_2.v2_0.struct_size = sizeof caller_2_2;
    adil_run_params *engine_2_0 = (adil_run_params *)(void *)(g->base + g->page - sizeof *engine_2_0);
    adil_run_default_params(engine_2_0);
    CHECK(adil_copy_params(engine_2_0, sizeof *engine_2_0, &caller_2_2, ADIL_SIZE_2_0_RUN_PARAMS, "p") ==
          ADIL_OK);
    CHECK(engine_2_0->max_tokens == 7 && engine_2_0->struct_size == sizeof *engine_2_0);

    /* under 2.0: refused, naming the least size */
    caller.struct_size = ADIL_SIZE_2_0_RUN_PARAMS - 1;
    CHECK(adil_copy_params(&engine_2_2, sizeof engine_2_2, &caller, ADIL_SIZE_2_0_RUN_PARAMS,
                           "adil_run_params") == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "adil_run_params: struct_size expected at least 64");
    CHECK(adil_copy_params(&engine_2_2, sizeof engine_2_2, NULL, ADIL_SIZE_2_0_RUN_PARAMS, "p") == ADIL_OK);
}

/* Run stats as a later minor's engine (2.2) would have them. */
typedef struct run_stats_2_2 {
    adil_run_stats v2_0;
    uint64_t appended;
} run_stats_2_2;

static void test_copy_out(const guarded *g) {
    run_stats_2_2 engine_2_2 = {.v2_0 = {.struct_size = sizeof engine_2_2, .n_generated = 5}, .appended = 77};
    /* a 2.0 caller's struct ends at the unreadable page */
    adil_run_stats *caller = (adil_run_stats *)(void *)(g->base + g->page - sizeof *caller);
    memset(caller, 0, sizeof *caller);
    caller->struct_size = ADIL_SIZE_2_0_RUN_STATS;
    CHECK(adil_copy_out(caller, &engine_2_2, sizeof engine_2_2, ADIL_SIZE_2_0_RUN_STATS, "s") == ADIL_OK);
    CHECK(caller->n_generated == 5 && caller->struct_size == ADIL_SIZE_2_0_RUN_STATS);

    /* a 2.2 caller, a 2.0 engine: the appended field is not written */
    run_stats_2_2 caller_2_2 = {.v2_0 = {.struct_size = sizeof caller_2_2}, .appended = 13};
    adil_run_stats engine_2_0 = {.struct_size = sizeof engine_2_0, .n_generated = 6};
    CHECK(adil_copy_out(&caller_2_2, &engine_2_0, sizeof engine_2_0, ADIL_SIZE_2_0_RUN_STATS, "s") ==
          ADIL_OK);
    CHECK(caller_2_2.v2_0.n_generated == 6 && caller_2_2.appended == 13);
    CHECK(caller_2_2.v2_0.struct_size == sizeof caller_2_2);

    caller->struct_size = ADIL_SIZE_2_0_RUN_STATS - 1;
    CHECK(adil_copy_out(caller, &engine_2_0, sizeof engine_2_0, ADIL_SIZE_2_0_RUN_STATS,
                        "adil_run_get_stats") == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_HAS(adil_last_error(), "adil_run_get_stats: struct_size expected at least 40");
    CHECK(adil_copy_out(NULL, &engine_2_0, sizeof engine_2_0, ADIL_SIZE_2_0_RUN_STATS, "s") ==
          ADIL_STATUS_INVALID_ARGUMENT);
}

/* The CPU engine's ABI, called through the linked symbols. */
static void test_cpu_engine(void) {
    stub_api api;
    memset(&api, 0, sizeof api);
#define LINKED(name) api.name = adil_##name;
    STUB_API_FUNCTIONS(LINKED)
#undef LINKED
    tiny_spec spec = tiny_default();
    char path[64];
    if (!tiny_write(&spec, path)) {
        test_failures++;
        return;
    }
    check_component(&api, "grammar,logits,logprobs,lookup");
    check_struct_sizes(&api, path);
    unlink(path);
}

int main(void) {
    guarded g;
    if (!guarded_init(&g)) {
        fprintf(stderr, "cannot map a guard page\n");
        return 1;
    }
    test_copy_params(&g);
    test_copy_out(&g);
    guarded_free(&g);
    test_cpu_engine();
    return test_report("test_struct_sizes");
}
