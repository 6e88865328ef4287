/*
 * test_model_file.c — what adil_model_load does with the file behind a model
 * (the CPU engine, through the ABI, on a tiny model from tiny_model.h):
 *   - a directory, a named pipe and a character device are refused with
 *     ADIL_STATUS_IO naming the path and what it is, mapped or copied (a
 *     FIFO used to block open() for ever, a directory "had" 2^63 - 1 bytes);
 *   - a mapped model whose file is truncated in place is refused with
 *     ADIL_STATUS_IO by adil_run_start, adil_context_logits and the next
 *     adil_run_step (it used to die of SIGBUS), while a copied model
 *     (use_mmap = 0) and a mapped one whose file was replaced by rename go
 *     on working.
 * A watchdog turns a blocking open into a failure.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil/adil.h"
#include "test_util.h"
#include "tiny_model.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static adil_engine *open_engine(void) {
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "adil-test", "0.0.0"};
    adil_engine *engine = NULL;
    CHECK(adil_engine_open(&host, NULL, &engine) == ADIL_OK);
    return engine;
}

static adil_status load(adil_engine *engine, const char *path, uint32_t use_mmap, adil_model **model) {
    adil_model_params p;
    adil_model_default_params(&p);
    p.use_mmap = use_mmap;
    p.n_threads = 1;
    *model = NULL;
    return adil_model_load(engine, path, &p, model);
}

static adil_context *new_context(adil_model *model) {
    adil_context_params p;
    adil_context_default_params(&p);
    p.n_ctx = 64;
    adil_context *ctx = NULL;
    CHECK(adil_context_new(model, &p, &ctx) == ADIL_OK);
    return ctx;
}

static const int32_t PROMPT[] = {1, 5, 6, 7};

/* Starts a run of `max_tokens` (EOS ignored) and returns its status. */
static adil_status start(adil_context *ctx, uint32_t max_tokens, adil_run **run) {
    adil_run_params p;
    adil_run_default_params(&p);
    p.max_tokens = max_tokens;
    p.ignore_eos = 1;
    *run = NULL;
    return adil_run_start(ctx, PROMPT, 4, &p, run);
}

/* A whole run of 4 tokens on `model`: ADIL_OK and 4 tokens, or the status. */
static adil_status generate(adil_model *model) {
    adil_context *ctx = new_context(model);
    adil_run *run = NULL;
    adil_status st = start(ctx, 4, &run);
    size_t total = 0;
    while (st == ADIL_OK) {
        int32_t tokens[8];
        size_t n = 0;
        st = adil_run_step(run, tokens, 8, &n);
        total += n;
        if (n == 0) break;
    }
    if (st == ADIL_OK) CHECK(total == 4);
    adil_run_free(run);
    adil_context_free(ctx);
    return st;
}

/* ---- not a regular file --------------------------------------------------- */

static void expect_refused(adil_engine *engine, const char *path, const char *kind) {
    for (uint32_t use_mmap = 0; use_mmap <= 1; use_mmap++) {
        adil_model *model = NULL;
        CHECK(load(engine, path, use_mmap, &model) == ADIL_STATUS_IO && model == NULL);
        CHECK_HAS(adil_last_error(), path);
        CHECK_HAS(adil_last_error(), kind);
    }
}

static void test_not_regular_files(adil_engine *engine) {
    char dir[] = "/tmp/adil_test_dir_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/pipe.gguf", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    expect_refused(engine, dir, "expected a regular file, got a directory");
    expect_refused(engine, fifo, "expected a regular file, got a named pipe (FIFO)");
    expect_refused(engine, "/dev/null", "expected a regular file, got a character device");
    unlink(fifo);
    rmdir(dir);
}

/* ---- a mapped file that changes -------------------------------------------- */

static void test_truncated_while_mapped(adil_engine *engine) {
    tiny_spec spec = tiny_default();
    char path[64];
    if (!tiny_write(&spec, path)) {
        test_failures++;
        return;
    }
    struct stat sb;
    CHECK(stat(path, &sb) == 0);
    adil_model *mapped = NULL, *copied = NULL;
    CHECK(load(engine, path, 1, &mapped) == ADIL_OK);
    CHECK(load(engine, path, 0, &copied) == ADIL_OK);
    if (mapped == NULL || copied == NULL) {
        fprintf(stderr, "load: %s\n", adil_last_error());
        test_failures++;
        return;
    }
    CHECK(generate(mapped) == ADIL_OK);

    /* a run already going when the file is cut: its next step refuses */
    adil_context *ctx = new_context(mapped);
    adil_run *run = NULL;
    CHECK(start(ctx, 8, &run) == ADIL_OK);
    int32_t tokens[8];
    size_t n = 0;
    CHECK(adil_run_step(run, tokens, 1, &n) == ADIL_OK && n == 1);
    CHECK(truncate(path, sb.st_size / 2) == 0);
    CHECK(adil_run_step(run, tokens, 8, &n) == ADIL_STATUS_IO && n == 0);
    CHECK_HAS(adil_last_error(), "changed since it was loaded");
    adil_run_stats stats = {.struct_size = sizeof stats};
    CHECK(adil_run_get_stats(run, &stats) == ADIL_OK && stats.stop_reason == ADIL_STOP_ERROR);
    adil_run_free(run);

    /* new runs and logits refuse, naming the file and both sizes */
    char sizes[64];
    snprintf(sizes, sizeof sizes, "size %lld -> %lld bytes", (long long)sb.st_size,
             (long long)sb.st_size / 2);
    CHECK(start(ctx, 4, &run) == ADIL_STATUS_IO && run == NULL);
    CHECK_HAS(adil_last_error(), path);
    CHECK_HAS(adil_last_error(), sizes);
    CHECK_HAS(adil_last_error(), "use_mmap=0");
    float logits[4 * TINY_N_VOCAB];
    CHECK(adil_context_logits(ctx, PROMPT, 4, logits, 4 * TINY_N_VOCAB) == ADIL_STATUS_IO);
    CHECK_HAS(adil_last_error(), "changed since it was loaded");
    adil_context_free(ctx);

    /* the copy does not depend on the file */
    CHECK(generate(copied) == ADIL_OK);
    adil_model_free(mapped);
    adil_model_free(copied);
    unlink(path);
}

static void test_replaced_by_rename(adil_engine *engine) {
    tiny_spec spec = tiny_default();
    char path[64], other[64];
    if (!tiny_write(&spec, path) || !tiny_write(&spec, other)) {
        test_failures++;
        return;
    }
    adil_model *model = NULL;
    CHECK(load(engine, path, 1, &model) == ADIL_OK);
    /* the mapping keeps the old file alive: nothing changed for the model */
    CHECK(rename(other, path) == 0);
    if (model != NULL) CHECK(generate(model) == ADIL_OK);
    adil_model_free(model);
    unlink(path);
}

int main(void) {
    alarm(120); /* a blocking open fails the test (SIGALRM) instead of hanging */
    adil_engine *engine = open_engine();
    test_not_regular_files(engine);
    test_truncated_while_mapped(engine);
    test_replaced_by_rename(engine);
    adil_engine_close(engine);
    return test_report("test_model_file");
}
