/*
 * struct_size_checks.h — adil.h's struct_size rule, checked on one engine
 * through its ABI (a stub_api: dlopened, or filled from linked symbols):
 *   - every struct a host hands in (host info, engine, model, context,
 *     sampling and run params) is refused one byte short of its 2.0 size
 *     with ADIL_STATUS_INVALID_ARGUMENT naming struct_size; at exactly its
 *     2.0 size it is accepted from the last bytes before an unreadable page,
 *     so reading past struct_size would crash the test; a larger struct (a
 *     later minor's, 32 appended bytes of 0xFF) is accepted too;
 *   - into an out struct (model info, run stats) the engine writes nothing
 *     past struct_size (a canary after the 2.0 size stays) and past its own
 *     struct (a canary after a larger caller's struct stays), the first
 *     bytes agree with a plain call, and struct_size stays the caller's;
 *   - the handshake (check_component): the engine is of adil.h's minor and
 *     reports structs that hold every field of that minor, and the 2.1, 2.2
 *     and 2.3 size macros are the size through the field that minor appended last.
 * Uses test_stub_api.h's CHECK_STATUS; include that first, after defining
 * _DEFAULT_SOURCE (for MAP_ANONYMOUS).
 */
#ifndef STRUCT_SIZE_CHECKS_H
#define STRUCT_SIZE_CHECKS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- memory that ends at an unreadable page ----------------------------- */

typedef struct guarded {
    unsigned char *base; /* two pages: read-write, then no access */
    size_t page;
} guarded;

static inline bool guarded_init(guarded *g) {
    g->page = (size_t)sysconf(_SC_PAGESIZE);
    void *p = mmap(NULL, 2 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    g->base = p;
    return mprotect(g->base + g->page, g->page, PROT_NONE) == 0;
}

static inline void guarded_free(guarded *g) { munmap(g->base, 2 * g->page); }

/* A copy of the first `size` bytes of `src` that ends where the unreadable
 * page starts, with struct_size set to `size`.  `size` must be a multiple of
 * the struct's alignment (true of every 2.0 params struct). */
static inline void *guarded_copy(const guarded *g, const void *src, size_t size) {
    unsigned char *dst = g->base + g->page - size;
    memcpy(dst, src, size);
    const uint32_t struct_size = (uint32_t)size;
    memcpy(dst, &struct_size, sizeof struct_size);
    return dst;
}

/* ---- params in ------------------------------------------------------------ */

/* The three forms of one params struct: 2.0 size - 1 (refused), exactly the
 * 2.0 size at the end of readable memory, and a larger struct of a later
 * minor (struct_size = sizeof + 32, the appended bytes 0xFF). */
typedef struct params_forms {
    unsigned char short_form[128] __attribute__((aligned(16)));
    void *exact;
    unsigned char larger[128] __attribute__((aligned(16)));
} params_forms;

static inline void params_forms_make(params_forms *f, const guarded *g, const void *defaults, size_t size,
                                     size_t size_2_0) {
    if (size + 32 > sizeof f->larger) {
        fprintf(stderr, "params_forms: a struct of %zu bytes does not fit\n", size);
        abort(); /* a bug in the test itself */
    }
    memcpy(f->short_form, defaults, size_2_0);
    const uint32_t short_size = (uint32_t)size_2_0 - 1;
    memcpy(f->short_form, &short_size, sizeof short_size);
    f->exact = guarded_copy(g, defaults, size_2_0);
    memset(f->larger, 0xFF, sizeof f->larger);
    memcpy(f->larger, defaults, size);
    const uint32_t larger_size = (uint32_t)size + 32;
    memcpy(f->larger, &larger_size, sizeof larger_size);
}

static void check_engine_params(const stub_api *api, const guarded *g) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine_params defaults;
    api->engine_default_params(&defaults);
    params_forms f;
    params_forms_make(&f, g, &defaults, sizeof defaults, ADIL_SIZE_2_0_ENGINE_PARAMS);
    adil_engine *engine = NULL;
    CHECK_STATUS(api, api->engine_open(&host, (const void *)f.short_form, &engine),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    CHECK(engine == NULL);
    const void *accepted[] = {f.exact, f.larger};
    for (size_t i = 0; i < 2; i++) {
        CHECK_STATUS(api, api->engine_open(&host, accepted[i], &engine), ADIL_OK);
        api->engine_close(engine);
        engine = NULL;
    }
    /* the host info itself */
    adil_host_info *exact_host = guarded_copy(g, &host, ADIL_SIZE_2_0_HOST_INFO);
    CHECK_STATUS(api, api->engine_open(exact_host, NULL, &engine), ADIL_OK);
    api->engine_close(engine);
    engine = NULL;
    host.struct_size = ADIL_SIZE_2_0_HOST_INFO - 1;
    CHECK_STATUS(api, api->engine_open(&host, NULL, &engine), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
}

static void check_model_params(const stub_api *api, const guarded *g, adil_engine *engine, const char *path) {
    adil_model_params defaults;
    api->model_default_params(&defaults);
    defaults.n_threads = 1;
    params_forms f;
    params_forms_make(&f, g, &defaults, sizeof defaults, ADIL_SIZE_2_0_MODEL_PARAMS);
    adil_model *model = NULL;
    CHECK_STATUS(api, api->model_load(engine, path, (const void *)f.short_form, &model),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    const void *accepted[] = {f.exact, f.larger};
    for (size_t i = 0; i < 2; i++) {
        CHECK_STATUS(api, api->model_load(engine, path, accepted[i], &model), ADIL_OK);
        api->model_free(model);
        model = NULL;
    }
}

static void check_context_params(const stub_api *api, const guarded *g, adil_model *model) {
    adil_context_params defaults;
    api->context_default_params(&defaults);
    params_forms f;
    params_forms_make(&f, g, &defaults, sizeof defaults, ADIL_SIZE_2_0_CONTEXT_PARAMS);
    adil_context *ctx = NULL;
    CHECK_STATUS(api, api->context_new(model, (const void *)f.short_form, &ctx),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    const void *accepted[] = {f.exact, f.larger};
    for (size_t i = 0; i < 2; i++) {
        CHECK_STATUS(api, api->context_new(model, accepted[i], &ctx), ADIL_OK);
        api->context_free(ctx);
        ctx = NULL;
    }
}

static const int32_t check_prompt[] = {1, 2};

/* Starts a run with `params`, steps it once and frees it. */
static adil_status check_one_run(const stub_api *api, adil_context *ctx, const adil_run_params *params) {
    adil_run *run = NULL;
    adil_status st = api->run_start(ctx, check_prompt, 2, params, &run);
    if (st != ADIL_OK) return st;
    int32_t tokens[4];
    size_t n = 0;
    CHECK_STATUS(api, api->run_step(run, tokens, 4, &n), ADIL_OK);
    api->run_free(run);
    return ADIL_OK;
}

static void check_run_params(const stub_api *api, const guarded *g, adil_context *ctx) {
    adil_run_params defaults;
    api->run_default_params(&defaults);
    defaults.max_tokens = 4;
    params_forms f;
    params_forms_make(&f, g, &defaults, sizeof defaults, ADIL_SIZE_2_0_RUN_PARAMS);
    CHECK_STATUS(api, check_one_run(api, ctx, (const void *)f.short_form), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    CHECK_STATUS(api, check_one_run(api, ctx, f.exact), ADIL_OK);
    CHECK_STATUS(api, check_one_run(api, ctx, (const void *)f.larger), ADIL_OK);

    /* sampling params, behind a run's params */
    adil_sampling_params sampling;
    api->sampling_default_params(&sampling);
    params_forms s;
    params_forms_make(&s, g, &sampling, sizeof sampling, ADIL_SIZE_2_0_SAMPLING_PARAMS);
    adil_run_params p = defaults;
    p.sampling = (const void *)s.short_form;
    CHECK_STATUS(api, check_one_run(api, ctx, &p), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    p.sampling = s.exact;
    CHECK_STATUS(api, check_one_run(api, ctx, &p), ADIL_OK);
    p.sampling = (const void *)s.larger;
    CHECK_STATUS(api, check_one_run(api, ctx, &p), ADIL_OK);
}

/* ---- out structs ------------------------------------------------------------ */

/* An out struct in a buffer filled with a canary byte. */
typedef struct out_buffer {
    unsigned char bytes[256] __attribute__((aligned(16)));
} out_buffer;

#define CHECK_CANARY 0xA5

static inline void *out_prepare(out_buffer *b, size_t struct_size) {
    memset(b->bytes, CHECK_CANARY, sizeof b->bytes);
    const uint32_t size = (uint32_t)struct_size;
    memcpy(b->bytes, &size, sizeof size);
    return b->bytes;
}

/* After a call that filled `b` with struct_size `size`: struct_size is kept,
 * nothing from `written` on was touched, and the field bytes [from, to) agree
 * with `plain` (a full struct filled by a plain call).  Padding is left out
 * of [from, to): C leaves its value unspecified, and an engine copies its
 * own struct's. */
static inline void out_check_fields(const out_buffer *b, size_t size, size_t written, const void *plain,
                                    size_t from, size_t to) {
    uint32_t kept;
    memcpy(&kept, b->bytes, sizeof kept);
    CHECK(kept == size);
    CHECK(memcmp(b->bytes + from, (const unsigned char *)plain + from, to - from) == 0);
    size_t touched = 0;
    for (size_t i = written; i < sizeof b->bytes; i++) touched += b->bytes[i] != CHECK_CANARY;
    CHECK(touched == 0);
}

static inline void out_check(const out_buffer *b, size_t size, size_t written, const void *plain) {
    out_check_fields(b, size, written, plain, sizeof(uint32_t), written);
}

static void check_model_info(const stub_api *api, const adil_model *model) {
    adil_model_info plain = {.struct_size = sizeof plain};
    CHECK_STATUS(api, api->model_get_info(model, &plain), ADIL_OK);
    out_buffer b;
    CHECK_STATUS(api, api->model_get_info(model, out_prepare(&b, ADIL_SIZE_2_0_MODEL_INFO - 1)),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    CHECK_STATUS(api, api->model_get_info(model, out_prepare(&b, ADIL_SIZE_2_0_MODEL_INFO)), ADIL_OK);
    /* model_info has padding after struct_size (up to the first pointer)
     * and after its 2.0 fields */
    const size_t first = offsetof(adil_model_info, architecture);
    out_check_fields(&b, ADIL_SIZE_2_0_MODEL_INFO, ADIL_SIZE_2_0_MODEL_INFO, &plain, first,
                     ADIL_SIZE_2_0_MODEL_INFO);
    CHECK_STATUS(api, api->model_get_info(model, out_prepare(&b, sizeof plain + 32)), ADIL_OK);
    out_check_fields(&b, sizeof plain + 32, sizeof plain, &plain, first, ADIL_SIZE_2_0_MODEL_INFO);
}

static void check_run_stats(const stub_api *api, adil_context *ctx) {
    adil_run *run = NULL;
    CHECK_STATUS(api, api->run_start(ctx, check_prompt, 2, NULL, &run), ADIL_OK);
    if (run == NULL) return;
    int32_t tokens[4];
    size_t n = 0;
    CHECK_STATUS(api, api->run_step(run, tokens, 4, &n), ADIL_OK);
    adil_run_stats plain = {.struct_size = sizeof plain};
    CHECK_STATUS(api, api->run_get_stats(run, &plain), ADIL_OK);
    CHECK(plain.n_prompt_tokens == 2);
    out_buffer b;
    CHECK_STATUS(api, api->run_get_stats(run, out_prepare(&b, ADIL_SIZE_2_0_RUN_STATS - 1)),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
    CHECK_STATUS(api, api->run_get_stats(run, out_prepare(&b, ADIL_SIZE_2_0_RUN_STATS)), ADIL_OK);
    out_check(&b, ADIL_SIZE_2_0_RUN_STATS, ADIL_SIZE_2_0_RUN_STATS, &plain);
    /* a 2.1 caller's struct: the 2.1 fields are written, nothing past them */
    CHECK_STATUS(api, api->run_get_stats(run, out_prepare(&b, ADIL_SIZE_2_1_RUN_STATS)), ADIL_OK);
    out_check(&b, ADIL_SIZE_2_1_RUN_STATS, ADIL_SIZE_2_1_RUN_STATS, &plain);
    CHECK_STATUS(api, api->run_get_stats(run, out_prepare(&b, sizeof plain + 32)), ADIL_OK);
    out_check(&b, sizeof plain + 32, sizeof plain, &plain);
    api->run_free(run);
}

/* ---- the handshake ------------------------------------------------------- */

_Static_assert(ADIL_SIZE_2_1_COMPONENT_INFO ==
                   offsetof(adil_component_info, capabilities) + sizeof(const char *),
               "ADIL_SIZE_2_1_COMPONENT_INFO ends at capabilities");
_Static_assert(ADIL_SIZE_2_1_RUN_STATS == offsetof(adil_run_stats, grammar_ms) + sizeof(double),
               "ADIL_SIZE_2_1_RUN_STATS ends at grammar_ms");
_Static_assert(ADIL_SIZE_2_0_COMPONENT_INFO <= offsetof(adil_component_info, capabilities),
               "2.1 appends capabilities after every 2.0 field");
_Static_assert(ADIL_SIZE_2_0_RUN_STATS <= offsetof(adil_run_stats, n_forced_tokens),
               "2.1 appends n_forced_tokens after every 2.0 field");
_Static_assert(ADIL_SIZE_2_2_RUN_PARAMS == offsetof(adil_run_params, n_logprobs) + sizeof(uint32_t),
               "ADIL_SIZE_2_2_RUN_PARAMS ends at n_logprobs");
_Static_assert(ADIL_SIZE_2_0_RUN_PARAMS <= offsetof(adil_run_params, n_logprobs),
               "2.2 appends n_logprobs after every 2.0 field");
_Static_assert(ADIL_SIZE_2_3_RUN_PARAMS == offsetof(adil_run_params, speculative) + sizeof(uint32_t),
               "ADIL_SIZE_2_3_RUN_PARAMS ends at speculative");
_Static_assert(ADIL_SIZE_2_2_RUN_PARAMS <= offsetof(adil_run_params, speculative),
               "2.3 appends speculative after every 2.2 field");
_Static_assert(ADIL_SIZE_2_3_RUN_STATS == offsetof(adil_run_stats, n_draft_accepted) + sizeof(uint32_t),
               "ADIL_SIZE_2_3_RUN_STATS ends at n_draft_accepted");
_Static_assert(ADIL_SIZE_2_1_RUN_STATS <= offsetof(adil_run_stats, n_drafted),
               "2.3 appends n_drafted after every 2.1 field");

/* The engine is of this header's minor; its structs hold the 2.1, 2.2 and 2.3
 * fields and its capabilities are `capabilities`. */
static inline void check_component(const stub_api *api, const char *capabilities) {
    CHECK(api->abi_version() == ADIL_ABI_VERSION);
    const adil_component_info *info = api->component();
    if (info == NULL) {
        test_failures++;
        return;
    }
    CHECK(info->abi_major == ADIL_ABI_MAJOR && info->abi_minor == ADIL_ABI_MINOR);
    CHECK(info->struct_size >= ADIL_SIZE_2_1_COMPONENT_INFO);
    CHECK(info->size_run_stats >= ADIL_SIZE_2_1_RUN_STATS);
    CHECK(info->size_run_params >= ADIL_SIZE_2_3_RUN_PARAMS);
    CHECK(info->size_run_stats >= ADIL_SIZE_2_3_RUN_STATS);
    CHECK(info->capabilities != NULL && strcmp(info->capabilities, capabilities) == 0);
}

/* ---- all of it, on one engine and one model file -------------------------- */

static inline void check_struct_sizes(const stub_api *api, const char *model_path) {
    guarded g;
    if (!guarded_init(&g)) {
        fprintf(stderr, "cannot map a guard page\n");
        test_failures++;
        return;
    }
    check_engine_params(api, &g);
    adil_engine *engine = test_open_engine(api);
    check_model_params(api, &g, engine, model_path);
    adil_model *model = NULL;
    CHECK_STATUS(api, api->model_load(engine, model_path, NULL, &model), ADIL_OK);
    if (model != NULL) {
        check_model_info(api, model);
        check_context_params(api, &g, model);
        adil_context *ctx = test_new_context(api, model, 0);
        check_run_params(api, &g, ctx);
        check_run_stats(api, ctx);
        api->context_free(ctx);
        api->model_free(model);
    }
    api->engine_close(engine);
    guarded_free(&g);
}

#endif /* STRUCT_SIZE_CHECKS_H */
