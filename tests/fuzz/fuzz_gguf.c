/*
 * fuzz_gguf.c — any bytes as a GGUF file, as far as the engine reads one.
 *
 * Per input:
 *  1. gguf_open_memory; on success, every key and tensor is read back the
 *     way the loader reads them: each key is found by its name, every typed
 *     getter answers (ADIL_OK or a format error), every array element is
 *     read, every tensor is found by its name and lies inside the input;
 *  2. adil_tokenizer_from_gguf on the same file; on success a fixed text is
 *     tokenized (ids in range) and every token has a piece;
 *  3. adil_model_load through the public ABI, from an in-memory file
 *     (memfd), mapped or read depending on the input's size; on success one
 *     teacher-forced forward pass over two tokens in an 8-token context.
 * Failures must carry one of the documented statuses and a message.
 * With ADIL_FUZZ_VERBOSE=1 in the environment, each stage prints its status
 * (to see how far a seed or a crash input gets).
 */
#define _GNU_SOURCE /* memfd_create */

#include "adil/adil.h"
#include "format/gguf.h"
#include "text/tokenizer_gguf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_require.h"

/* Bytes read are summed here, so that no read is optimised away. */
static volatile uint64_t g_sink;
static bool g_verbose;

static void note(const char *stage, adil_status st) {
    if (g_verbose) {
        fprintf(stderr, "fuzz_gguf: %s: %s%s%s\n", stage, adil_status_string(st), st == ADIL_OK ? "" : ": ",
                st == ADIL_OK ? "" : adil_last_error());
    }
}

static void require_format_error(adil_status st) {
    REQUIRE(st == ADIL_STATUS_MODEL_FORMAT || st == ADIL_STATUS_CAPABILITY ||
            st == ADIL_STATUS_OUT_OF_MEMORY);
    REQUIRE(adil_last_error()[0] != '\0');
}

static void touch(const void *p, uint64_t n) {
    const uint8_t *b = p;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += b[i];
    }
    g_sink += sum;
}

/* ---- 1. metadata and tensors ----------------------------------------------- */

static void walk_array(const gguf_array *a) {
    for (uint64_t j = 0; j < a->count; j++) {
        if (a->type == GGUF_TYPE_STRING) {
            gguf_str s = gguf_array_str(a, j);
            REQUIRE(s.ptr != NULL);
            touch(s.ptr, s.len);
        } else if (a->type != GGUF_TYPE_ARRAY) {
            g_sink += (uint64_t)gguf_array_i64(a, j) + gguf_array_u64(a, j);
            float x = gguf_array_f32(a, j);
            g_sink += x == x;
        }
    }
    REQUIRE(gguf_array_str(a, a->count).len == 0); /* out of range: empty */
}

/* Every getter on one key; `type` says which must succeed. */
static void walk_getters(const gguf_file *f, const char *key, uint32_t type) {
    union {
        uint32_t u32;
        uint64_t u64;
        int32_t i32;
        float f32;
        bool b;
    } v;
    gguf_str s;
    gguf_array a;
    bool found = false;
    adil_status st;
    if ((st = gguf_get_u32(f, key, &v.u32, &found)) != ADIL_OK) require_format_error(st);
    if ((st = gguf_get_u64(f, key, &v.u64, &found)) != ADIL_OK) require_format_error(st);
    if ((st = gguf_get_i32(f, key, &v.i32, &found)) != ADIL_OK) require_format_error(st);
    if ((st = gguf_get_f32(f, key, &v.f32, &found)) != ADIL_OK) require_format_error(st);
    st = gguf_get_bool(f, key, &v.b, &found);
    REQUIRE((st == ADIL_OK) == (type == GGUF_TYPE_BOOL) && found);
    st = gguf_get_str(f, key, &s, &found);
    REQUIRE((st == ADIL_OK) == (type == GGUF_TYPE_STRING) && found);
    if (st == ADIL_OK) {
        touch(s.ptr, s.len);
    }
    st = gguf_get_array(f, key, &a, &found);
    REQUIRE((st == ADIL_OK) == (type == GGUF_TYPE_ARRAY) && found);
    if (st == ADIL_OK) {
        walk_array(&a);
        gguf_array same;
        REQUIRE(gguf_get_array_of(f, key, a.type, &same, &found) == ADIL_OK);
        REQUIRE(same.count == a.count && same.data == a.data);
        st = gguf_get_array_of(f, key, (a.type + 1) % GGUF_TYPE_COUNT, &same, &found);
        REQUIRE(st == ADIL_STATUS_MODEL_FORMAT);
    }
}

static void walk_metadata(const gguf_file *f) {
    uint64_t n = gguf_n_kv(f);
    char key[512];
    for (uint64_t i = 0; i < n; i++) {
        gguf_str k = gguf_kv_key(f, i);
        uint32_t type = gguf_kv_type(f, i);
        REQUIRE(type < GGUF_TYPE_COUNT);
        if (k.len >= sizeof key || memchr(k.ptr, 0, (size_t)k.len)) {
            touch(k.ptr, k.len);
            continue;
        }
        memcpy(key, k.ptr, (size_t)k.len);
        key[k.len] = '\0';
        REQUIRE(gguf_find_key(f, key) == (int64_t)i); /* keys are unique */
        walk_getters(f, key, type);
    }
    REQUIRE(gguf_kv_key(f, n).len == 0 && gguf_kv_type(f, n) == GGUF_TYPE_COUNT);
}

static void walk_tensors(const gguf_file *f, const uint8_t *data, size_t size) {
    uint64_t n = gguf_n_tensors(f);
    for (uint64_t i = 0; i < n; i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        REQUIRE(t != NULL && t->name != NULL);
        REQUIRE(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
        const uint8_t *p = t->data;
        REQUIRE(p >= data && t->offset == (uint64_t)(p - data));
        REQUIRE(t->offset >= gguf_data_offset(f) && t->n_bytes <= size - t->offset);
        REQUIRE(gguf_find_tensor(f, t->name) == t); /* names are unique */
        touch(t->data, t->n_bytes);
    }
    REQUIRE(gguf_tensor_at(f, n) == NULL);
}

/* ---- 2. the tokenizer from metadata ---------------------------------------- */

static void check_tokenizer(const gguf_file *f) {
    adil_tokenizer *tok = NULL;
    adil_status st = adil_tokenizer_from_gguf(f, &tok);
    note("adil_tokenizer_from_gguf", st);
    if (st != ADIL_OK) {
        require_format_error(st);
        REQUIRE(tok == NULL);
        return;
    }
    adil_tokenizer_info info;
    adil_tokenizer_get_info(tok, &info);
    static const char text[] = "Hello world! <start_of_turn>user\n  caf\xc3\xa9 \xff 12345";
    int32_t ids[256];
    size_t n = 0;
    st = adil_tokenizer_tokenize(tok, text, sizeof text - 1, -1, 1, ids, 256, &n);
    REQUIRE(st == ADIL_OK || st == ADIL_STATUS_OUT_OF_MEMORY);
    for (size_t i = 0; st == ADIL_OK && i < n && i < 256; i++) {
        REQUIRE(ids[i] >= 0 && (uint32_t)ids[i] < info.n_vocab);
    }
    char piece[64];
    for (uint32_t id = 0; id < info.n_vocab; id++) {
        size_t len = 0;
        REQUIRE(adil_tokenizer_token_to_piece(tok, (int32_t)id, 1, piece, sizeof piece, &len) == ADIL_OK);
        g_sink += len + adil_tokenizer_is_eog(tok, (int32_t)id);
    }
    adil_tokenizer_free(tok);
}

/* ---- 3. the public ABI ------------------------------------------------------ */

static adil_engine *g_engine;

int LLVMFuzzerInitialize(int *argc, char ***argv);

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *verbose = getenv("ADIL_FUZZ_VERBOSE");
    g_verbose = verbose != NULL && strcmp(verbose, "0") != 0;
    adil_host_info host = {sizeof host, ADIL_HOST_MAJOR, 0, "fuzz_gguf", "0"};
    adil_engine_params p;
    adil_engine_default_params(&p);
    p.n_threads = 1;
    if (adil_engine_open(&host, &p, &g_engine) != ADIL_OK) {
        fprintf(stderr, "fuzz_gguf: adil_engine_open: %s\n", adil_last_error());
        abort();
    }
    return 0;
}

/* Two tokens through a small context: the forward pass on the file's shapes. */
static void run_model(adil_model *model) {
    adil_model_info info = {.struct_size = sizeof info};
    REQUIRE(adil_model_get_info(model, &info) == ADIL_OK);
    REQUIRE(info.n_vocab >= 1);
    int32_t prompt[2] = {info.bos_token >= 0 ? info.bos_token : 0, (int32_t)(info.n_vocab - 1)};
    adil_context_params cp;
    adil_context_default_params(&cp);
    cp.n_ctx = 8;
    cp.n_batch = 2;
    cp.n_threads = 1;
    adil_context *ctx = NULL;
    adil_status st = adil_context_new(model, &cp, &ctx);
    note("adil_context_new", st);
    if (st == ADIL_STATUS_OUT_OF_MEMORY) {
        return;
    }
    REQUIRE(st == ADIL_OK);
    size_t cap = 2 * (size_t)info.n_vocab;
    float *logits = malloc(cap * sizeof *logits);
    REQUIRE(logits != NULL);
    st = adil_context_logits(ctx, prompt, 2, logits, cap);
    note("adil_context_logits", st);
    REQUIRE(st == ADIL_OK || st == ADIL_STATUS_OUT_OF_MEMORY);
    free(logits);
    adil_context_free(ctx);
}

static void check_model_load(const uint8_t *data, size_t size) {
    int fd = memfd_create("fuzz_gguf", MFD_CLOEXEC);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, data, size) == (ssize_t)size);
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    adil_model_params mp;
    adil_model_default_params(&mp);
    mp.n_threads = 1;
    mp.use_mmap = size & 1;
    adil_model *model = NULL;
    adil_status st = adil_model_load(g_engine, path, &mp, &model);
    note(mp.use_mmap ? "adil_model_load (mapped)" : "adil_model_load (read)", st);
    if (st == ADIL_OK) {
        run_model(model);
        adil_model_free(model);
    } else {
        require_format_error(st);
        REQUIRE(model == NULL);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_file *f = NULL;
    adil_status st = gguf_open_memory(data, size, &f);
    note("gguf_open_memory", st);
    if (st != ADIL_OK) {
        REQUIRE(st == ADIL_STATUS_MODEL_FORMAT || st == ADIL_STATUS_OUT_OF_MEMORY);
        REQUIRE(f == NULL && adil_last_error()[0] != '\0');
        return 0;
    }
    REQUIRE(gguf_size(f) == size);
    REQUIRE(gguf_n_tensors(f) == 0 || gguf_data_offset(f) <= size);
    walk_metadata(f);
    walk_tensors(f, data, size);
    check_tokenizer(f);
    gguf_close(f);
    check_model_load(data, size);
    return 0;
}
