/*
 * test_model_checks.c — what the CPU engine refuses up front, through the
 * ABI, on tiny models from tiny_model.h:
 *   - a metadata string that becomes a C string (general.architecture,
 *     general.name, tokenizer.chat_template) holding a NUL byte: refused at
 *     load with ADIL_STATUS_MODEL_FORMAT naming the key (it was shown cut);
 *   - a context window over ADIL_MAX_CTX (2^20) up to 2^32 - 1: refused by
 *     adil_context_new with ADIL_STATUS_INVALID_ARGUMENT; 2^20 itself works;
 *   - a context whose KV cache needs more memory than the machine has:
 *     refused by adil_context_new with ADIL_STATUS_OUT_OF_MEMORY naming the
 *     bytes (malloc used to hand out the untouched pages, and the process
 *     would have been killed once a long generation filled them);
 *   - size arithmetic that overflows gives "does not fit", never a wrap.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "models/kv_cache.h"
#include "test_util.h"
#include "tiny_model.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static adil_status load_spec(adil_engine *engine, const tiny_spec *spec, adil_model **model) {
    char path[64];
    *model = NULL;
    if (!tiny_write(spec, path)) {
        test_failures++;
        return ADIL_STATUS_IO;
    }
    adil_model_params p;
    adil_model_default_params(&p);
    p.n_threads = 1;
    adil_status st = adil_model_load(engine, path, &p, model);
    unlink(path);
    return st;
}

static adil_status new_context(adil_model *model, uint32_t n_ctx, adil_context **ctx) {
    adil_context_params p;
    adil_context_default_params(&p);
    p.n_ctx = n_ctx;
    *ctx = NULL;
    return adil_context_new(model, &p, ctx);
}

/* ---- NUL bytes in strings that become C strings ------------------------------ */

static void expect_nul_refused(adil_engine *engine, const tiny_spec *spec, const char *key) {
    adil_model *model = NULL;
    CHECK(load_spec(engine, spec, &model) == ADIL_STATUS_MODEL_FORMAT && model == NULL);
    CHECK_HAS(adil_last_error(), key);
    CHECK_HAS(adil_last_error(), "without NUL bytes");
    adil_model_free(model);
}

static void test_nul_in_c_strings(adil_engine *engine) {
    tiny_spec spec = tiny_default();
    spec.arch = "llama\0x";
    spec.arch_len = 7;
    expect_nul_refused(engine, &spec, "'general.architecture'");
    spec = tiny_default();
    spec.name = "tiny\0 and more";
    spec.name_len = 14;
    expect_nul_refused(engine, &spec, "'general.name'");
    spec = tiny_default();
    spec.chat_template = "{{ messages }}\0{{ hidden }}";
    spec.chat_template_len = 27;
    expect_nul_refused(engine, &spec, "'tokenizer.chat_template'");

    /* the same strings without the NUL load and read back whole */
    spec = tiny_default();
    spec.chat_template = "{{ messages }}";
    spec.chat_template_len = 14;
    adil_model *model = NULL;
    CHECK(load_spec(engine, &spec, &model) == ADIL_OK);
    adil_model_info info = {.struct_size = sizeof info};
    if (model != NULL && adil_model_get_info(model, &info) == ADIL_OK) {
        CHECK(strcmp(info.architecture, "llama") == 0 && strcmp(info.name, "tiny") == 0);
        CHECK(info.chat_template != NULL && strcmp(info.chat_template, "{{ messages }}") == 0);
    }
    adil_model_free(model);
}

/* ---- context windows -------------------------------------------------------- */

static void test_window_limits(adil_engine *engine) {
    tiny_spec spec = tiny_default();
    adil_model *model = NULL;
    CHECK(load_spec(engine, &spec, &model) == ADIL_OK);
    if (model == NULL) return;
    const uint32_t too_large[] = {(1u << 20) + 1, 1u << 31, UINT32_MAX};
    for (size_t i = 0; i < sizeof too_large / sizeof too_large[0]; i++) {
        adil_context *ctx = NULL;
        CHECK(new_context(model, too_large[i], &ctx) == ADIL_STATUS_INVALID_ARGUMENT && ctx == NULL);
        CHECK_HAS(adil_last_error(), "n_ctx: expected 1..1048576");
    }
    /* the largest window: 512 MiB of KV cache, allocated but not touched */
    adil_context *ctx = NULL;
    CHECK(new_context(model, 1u << 20, &ctx) == ADIL_OK && adil_context_size(ctx) == 1u << 20);
    adil_context_free(ctx);
    adil_model_free(model);
}

/* A model whose KV cache at 2^20 positions is about 1.5 times the machine's
 * memory, in halves (K, V) that each fit: each malloc alone would succeed. */
static void test_window_larger_than_memory(adil_engine *engine) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    const double memory = (double)pages * (double)page;
    const double per_layer = 2.0 * (double)(1 << 20) * 256 * 2; /* K and V as halves: 1 GiB */
    const double layers = memory * 1.5 / per_layer + 1;
    if (pages <= 0 || page <= 0 || layers > 1024) {
        printf("test_model_checks: memory size unknown or over 1 TiB: larger-than-memory case skipped\n");
        return;
    }
    tiny_spec spec = tiny_default();
    spec.n_layer = (int64_t)layers;
    spec.n_embd = 32;
    spec.n_head = 1;
    spec.n_head_kv = 1;
    spec.head_dim = 256;
    spec.n_ff = 32;
    spec.zero_weights = true;
    adil_model *model = NULL;
    CHECK(load_spec(engine, &spec, &model) == ADIL_OK);
    if (model == NULL) {
        fprintf(stderr, "wide model: %s\n", adil_last_error());
        return;
    }
    adil_context *ctx = NULL;
    CHECK(new_context(model, 1u << 20, &ctx) == ADIL_STATUS_OUT_OF_MEMORY && ctx == NULL);
    CHECK_HAS(adil_last_error(), "n_ctx 1048576 needs ");
    CHECK_HAS(adil_last_error(), "of memory of this machine");
    adil_context_free(ctx);
    /* a window that fits is still fine */
    CHECK(new_context(model, 64, &ctx) == ADIL_OK);
    adil_context_free(ctx);
    adil_model_free(model);
}

/* A cache shape of n_layer layers with `window` on the local ones. */
static adil_kv_shape shape_of(adil_kv_type type, int64_t n_layer, int64_t n_ctx, int64_t k_width,
                              int64_t v_width, const int64_t *window) {
    adil_kv_shape s = {.type = type,
                       .n_layer = n_layer,
                       .n_ctx = n_ctx,
                       .n_batch = 8,
                       .k_width = k_width,
                       .v_width = v_width,
                       .window = window,
                       .ring = true};
    return s;
}

static void test_size_arithmetic(void) {
    static const int64_t none[1024] = {0};
    adil_kv_shape s = shape_of(ADIL_KV_F32, 2, 64, 32, 32, none);
    CHECK(adil_kv_cache_bytes(&s) == 2u * 64 * 64 * sizeof(float));
    s.type = ADIL_KV_F16;
    CHECK(adil_kv_cache_bytes(&s) == 2u * 64 * 64 * 2);
    for (int f16 = 0; f16 < 2; f16++) {
        const adil_kv_type type = f16 ? ADIL_KV_F16 : ADIL_KV_F32;
        s = shape_of(type, INT64_MAX, 2, 2, 2, none);
        CHECK(adil_kv_cache_bytes(&s) == UINT64_MAX);
        s = shape_of(type, 1024, 1 << 20, INT64_MAX / 4, 1, none);
        CHECK(adil_kv_cache_bytes(&s) == UINT64_MAX);
        s = shape_of(type, 1, 1, 0, 1, none);
        CHECK(adil_kv_cache_bytes(&s) == UINT64_MAX);
        s = shape_of(type, 1, INT64_MAX, 1, 1, none);
        CHECK(adil_kv_cache_bytes(&s) == UINT64_MAX);
    }
}

/* Sliding-window layers keep window + n_batch rows (kv_cache.h): gemma3's
 * pattern of 5 local layers and a global one. */
static void test_ring_sizes(void) {
    const int64_t window[6] = {12, 12, 12, 12, 12, 0};
    adil_kv_shape s = shape_of(ADIL_KV_F16, 6, 1000, 16, 16, window);
    CHECK(adil_kv_cache_bytes(&s) == (5u * (12 + 8) + 1000) * 32 * 2);
    s.ring = false; /* ADIL_KV_RING=0: every layer full */
    CHECK(adil_kv_cache_bytes(&s) == 6u * 1000 * 32 * 2);
    s.ring = true;
    s.n_ctx = 20; /* a window + batch that covers the context: no ring */
    CHECK(adil_kv_cache_bytes(&s) == 6u * 20 * 32 * 2);
    s.n_ctx = 21;
    CHECK(adil_kv_cache_bytes(&s) == (5u * 20 + 21) * 32 * 2);

    /* what a cut back keeps: ring 20, window 12 */
    s.n_ctx = 1000;
    adil_kv_cache kv;
    CHECK(adil_kv_cache_init(&kv, &s) == ADIL_OK);
    CHECK(kv.ring == 20 && kv.window == 12 && kv.rows[0] == 20 && kv.rows[5] == 1000);
    CHECK(kv.start[1] == 20 && kv.start[5] == 100);
    CHECK(adil_kv_cache_keeps(&kv, 0, 900));
    CHECK(adil_kv_cache_keeps(&kv, 20, 20));  /* nothing overwritten yet */
    CHECK(adil_kv_cache_keeps(&kv, 92, 100)); /* a cut inside the last batch: 81.. kept */
    CHECK(adil_kv_cache_keeps(&kv, 91, 100)); /* needs 80.., the oldest row left */
    CHECK(!adil_kv_cache_keeps(&kv, 90, 100));
    CHECK(!adil_kv_cache_keeps(&kv, 50, 100));
    /* positions wrap into the layer's rows; a global layer's do not */
    CHECK(adil_kv_row(&kv, 0, 45) == 5 && adil_kv_row(&kv, 1, 45) == 25 && adil_kv_row(&kv, 5, 45) == 145);
    adil_kv_cache_free(&kv);
    s.ring = false;
    CHECK(adil_kv_cache_init(&kv, &s) == ADIL_OK);
    CHECK(kv.ring == 1000 && adil_kv_cache_keeps(&kv, 50, 900));
    adil_kv_cache_free(&kv);
}

int main(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    test_nul_in_c_strings(engine);
    test_window_limits(engine);
    test_window_larger_than_memory(engine);
    test_size_arithmetic();
    test_ring_sizes();
    adil_engine_close(engine);
    return test_report("test_model_checks");
}
