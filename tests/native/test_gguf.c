/*
 * test_gguf.c — the GGUF reader on small images built in memory: a valid v3
 * and v2 image parse and every getter answers; each malformed variant (one
 * field patched) fails with ADIL_STATUS_MODEL_FORMAT and a message naming the
 * field; truncation at every length fails cleanly.  Files: only regular
 * files open (a FIFO without blocking), read or mapped; a mapped file that is
 * truncated afterwards is noticed by gguf_check_unchanged.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil_common.h"
#include "compute/weight_types.h"
#include "format/gguf.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- an image builder that remembers where named fields are ---------------- */

#define MAX_MARKS  64
#define DATA_BYTES 224 /* the data section: w at 0 (136 bytes), b at 192 (32) */

typedef struct image {
    uint8_t buf[4096];
    size_t n;
    struct {
        const char *name;
        size_t at;
    } marks[MAX_MARKS];
    int n_marks;
} image;

static void mark(image *m, const char *name) {
    m->marks[m->n_marks].name = name;
    m->marks[m->n_marks].at = m->n;
    m->n_marks++;
}

static size_t where(const image *m, const char *name) {
    for (int i = 0; i < m->n_marks; i++) {
        if (strcmp(m->marks[i].name, name) == 0) {
            return m->marks[i].at;
        }
    }
    fprintf(stderr, "no mark %s\n", name);
    abort(); /* a bug in this test, not in the reader */
}

static void put_le(image *m, uint64_t v, int bytes) {
    for (int i = 0; i < bytes; i++) {
        m->buf[m->n++] = (uint8_t)(v >> (8 * i));
    }
}

static void put_str(image *m, const char *s) {
    put_le(m, strlen(s), 8);
    memcpy(m->buf + m->n, s, strlen(s));
    m->n += strlen(s);
}

static void patch_le(image *m, const char *name, uint64_t v, int bytes) {
    size_t at = where(m, name);
    for (int i = 0; i < bytes; i++) {
        m->buf[at + i] = (uint8_t)(v >> (8 * i));
    }
}

static void kv_header(image *m, const char *key, uint32_t type) {
    put_str(m, key);
    put_le(m, type, 4);
}

/* Two tensors: "w" Q8_0 [64 x 2] (136 bytes) at 0 and "b" F32 [8] at 192. */
static void tensor_infos(image *m) {
    mark(m, "w.name");
    put_str(m, "w");
    mark(m, "w.n_dims");
    put_le(m, 2, 4);
    mark(m, "w.ne0");
    put_le(m, 64, 8);
    mark(m, "w.ne1");
    put_le(m, 2, 8);
    mark(m, "w.type");
    put_le(m, ADIL_WT_Q8_0, 4);
    mark(m, "w.offset");
    put_le(m, 0, 8);
    mark(m, "b.name");
    put_str(m, "b");
    put_le(m, 1, 4);
    mark(m, "b.ne0");
    put_le(m, 8, 8);
    mark(m, "b.type");
    put_le(m, ADIL_WT_F32, 4);
    mark(m, "b.offset");
    put_le(m, 192, 8);
}

static void build(image *m, uint32_t version, uint32_t alignment) {
    memset(m, 0, sizeof(*m));
    mark(m, "magic");
    memcpy(m->buf, "GGUF", 4);
    m->n = 4;
    mark(m, "version");
    put_le(m, version, 4);
    mark(m, "n_tensors");
    put_le(m, 2, 8);
    mark(m, "n_kv");
    put_le(m, alignment ? 11 : 10, 8);
    mark(m, "key0");
    kv_header(m, "general.architecture", GGUF_TYPE_STRING);
    mark(m, "arch.value");
    put_str(m, "llama");
    kv_header(m, "test.u8", GGUF_TYPE_UINT8);
    put_le(m, 200, 1);
    kv_header(m, "test.i32", GGUF_TYPE_INT32);
    put_le(m, (uint32_t)-5, 4);
    kv_header(m, "test.u64", GGUF_TYPE_UINT64);
    put_le(m, 1ull << 40, 8);
    uint32_t f;
    float one_five = 1.5f;
    memcpy(&f, &one_five, 4);
    kv_header(m, "test.f32", GGUF_TYPE_FLOAT32);
    put_le(m, f, 4);
    double quarter = 0.25;
    uint64_t d;
    memcpy(&d, &quarter, 8);
    kv_header(m, "test.f64", GGUF_TYPE_FLOAT64);
    put_le(m, d, 8);
    mark(m, "bool");
    kv_header(m, "test.bool", GGUF_TYPE_BOOL);
    mark(m, "bool.value");
    put_le(m, 1, 1);
    mark(m, "strs");
    kv_header(m, "test.strs", GGUF_TYPE_ARRAY);
    mark(m, "strs.type");
    put_le(m, GGUF_TYPE_STRING, 4);
    mark(m, "strs.count");
    put_le(m, 2, 8);
    put_str(m, "a");
    put_str(m, "bcd");
    kv_header(m, "test.i16s", GGUF_TYPE_ARRAY);
    put_le(m, GGUF_TYPE_INT16, 4);
    put_le(m, 2, 8);
    put_le(m, (uint16_t)-3, 2);
    put_le(m, 4, 2);
    mark(m, "nested");
    kv_header(m, "test.nested", GGUF_TYPE_ARRAY);
    put_le(m, GGUF_TYPE_ARRAY, 4);
    put_le(m, 1, 8);
    mark(m, "nested.inner_type");
    put_le(m, GGUF_TYPE_FLOAT32, 4);
    put_le(m, 2, 8);
    put_le(m, f, 4);
    put_le(m, f, 4);
    if (alignment) {
        kv_header(m, "general.alignment", GGUF_TYPE_UINT32);
        mark(m, "alignment.value");
        put_le(m, alignment, 4);
    }
    tensor_infos(m);
    uint32_t a = alignment ? alignment : 32;
    m->n = (m->n + a - 1) / a * a;
    mark(m, "data");
    for (int i = 0; i < DATA_BYTES; i++) {
        m->buf[m->n++] = (uint8_t)i;
    }
}

/* Opens the image; returns the status and closes the handle. */
static adil_status check_image(const image *m, size_t size) {
    gguf_file *f = NULL;
    adil_status st = gguf_open_memory(m->buf, size, &f);
    CHECK((st == ADIL_OK) == (f != NULL));
    gguf_close(f);
    return st;
}

static void expect_format_error(const image *m, const char *needle, const char *what) {
    adil_status st = check_image(m, m->n);
    const char *msg = adil_last_error();
    if (st != ADIL_STATUS_MODEL_FORMAT || strstr(msg, needle) == NULL || strncmp(msg, "gguf: ", 6) != 0) {
        fprintf(stderr, "%s: status %d, message '%s', wanted '%s'\n", what, (int)st, msg, needle);
        test_failures++;
    }
}

/* ---- the valid image ---------------------------------------------------------- */

static void test_metadata(const gguf_file *f) {
    gguf_str s;
    CHECK(gguf_get_str(f, "general.architecture", &s, NULL) == ADIL_OK);
    CHECK(gguf_str_eq(s, "llama") && !gguf_str_eq(s, "llam"));
    uint32_t u = 0;
    int32_t i = 0;
    uint64_t u64 = 0;
    CHECK(gguf_get_u32(f, "test.u8", &u, NULL) == ADIL_OK && u == 200);
    CHECK(gguf_get_i32(f, "test.u8", &i, NULL) == ADIL_OK && i == 200);
    CHECK(gguf_get_i32(f, "test.i32", &i, NULL) == ADIL_OK && i == -5);
    CHECK(gguf_get_u32(f, "test.i32", &u, NULL) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(strstr(adil_last_error(), "got -5") != NULL);
    CHECK(gguf_get_u32(f, "test.u64", &u, NULL) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(gguf_get_u64(f, "test.u64", &u64, NULL) == ADIL_OK && u64 == 1ull << 40);
    float x = 0;
    CHECK(gguf_get_f32(f, "test.f32", &x, NULL) == ADIL_OK && x == 1.5f);
    CHECK(gguf_get_f32(f, "test.f64", &x, NULL) == ADIL_OK && x == 0.25f);
    CHECK(gguf_get_u32(f, "test.f32", &u, NULL) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(strstr(adil_last_error(), "got float32") != NULL);
    bool b = false;
    CHECK(gguf_get_bool(f, "test.bool", &b, NULL) == ADIL_OK && b);

    /* missing keys: required vs optional */
    CHECK(gguf_get_u32(f, "test.absent", &u, NULL) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(strstr(adil_last_error(), "'test.absent': expected present") != NULL);
    bool found = true;
    u = 77;
    CHECK(gguf_get_u32(f, "test.absent", &u, &found) == ADIL_OK && !found && u == 77);
    CHECK(gguf_get_u32(f, "test.u8", &u, &found) == ADIL_OK && found && u == 200);
    CHECK(gguf_find_key(f, "test.bool") >= 0 && gguf_find_key(f, "test.boo") == -1);
}

static void test_arrays(const gguf_file *f) {
    gguf_array a;
    CHECK(gguf_get_array_of(f, "test.strs", GGUF_TYPE_STRING, &a, NULL) == ADIL_OK);
    CHECK(a.count == 2 && gguf_str_eq(gguf_array_str(&a, 1), "bcd"));
    CHECK(gguf_array_str(&a, 2).len == 0); /* out of range */
    CHECK(gguf_get_array_of(f, "test.strs", GGUF_TYPE_INT32, &a, NULL) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(strstr(adil_last_error(), "expected an array of int32, got an array of string"));
    CHECK(gguf_get_array(f, "test.i16s", &a, NULL) == ADIL_OK && a.type == GGUF_TYPE_INT16);
    CHECK(gguf_array_i64(&a, 0) == -3 && gguf_array_i64(&a, 1) == 4);
    CHECK(gguf_array_u64(&a, 0) == 0 && gguf_array_f32(&a, 1) == 4.0f);
    CHECK(gguf_get_array(f, "test.nested", &a, NULL) == ADIL_OK && a.type == GGUF_TYPE_ARRAY);
    CHECK(gguf_get_array(f, "test.u8", &a, NULL) == ADIL_STATUS_MODEL_FORMAT);
}

static void test_tensors(const gguf_file *f, const image *m) {
    CHECK(gguf_n_tensors(f) == 2 && gguf_tensor_at(f, 2) == NULL);
    const gguf_tensor *w = gguf_find_tensor(f, "w"), *b = gguf_find_tensor(f, "b");
    CHECK(w != NULL && b != NULL && gguf_find_tensor(f, "x") == NULL);
    CHECK(w == gguf_tensor_at(f, 0) && strcmp(w->name, "w") == 0);
    CHECK(w->type == ADIL_WT_Q8_0 && w->n_dims == 2 && w->ne[0] == 64 && w->ne[1] == 2);
    CHECK(w->ne[2] == 1 && w->ne[3] == 1 && w->n_bytes == 136);
    size_t data = where(m, "data");
    CHECK(w->data == m->buf + data && w->offset == data);
    CHECK(b->data == m->buf + data + 192 && b->n_bytes == 32);
    CHECK(gguf_data_offset(f) == data);
}

static void test_valid(uint32_t version, uint32_t alignment) {
    image m;
    build(&m, version, alignment);
    gguf_file *f = NULL;
    adil_status st = gguf_open_memory(m.buf, m.n, &f);
    if (st != ADIL_OK) {
        fprintf(stderr, "valid v%u image refused: %s\n", version, adil_last_error());
        test_failures++;
        return;
    }
    CHECK(gguf_version(f) == version && gguf_size(f) == m.n);
    CHECK(gguf_alignment(f) == (alignment ? alignment : 32));
    CHECK(gguf_n_kv(f) == (alignment ? 11u : 10u));
    CHECK(gguf_str_eq(gguf_kv_key(f, 1), "test.u8") && gguf_kv_type(f, 1) == GGUF_TYPE_UINT8);
    CHECK(gguf_kv_type(f, 99) == GGUF_TYPE_COUNT);
    test_metadata(f);
    test_arrays(f);
    test_tensors(f, &m);
    gguf_close(f);
}

/* ---- malformed images ---------------------------------------------------------- */

typedef struct mutation {
    const char *mark;
    uint64_t value;
    int bytes;
    const char *needle; /* expected in the message */
} mutation;

static const mutation MUTATIONS[] = {
    {"magic", 0x58554747, 4, "magic at offset 0"},
    {"version", 1, 4, "version at offset 4: expected 2 or 3, got 1"},
    {"version", 0x03000000, 4, "big-endian"},
    {"n_tensors", 1ull << 40, 8, "n_tensors at offset 8: expected at most"},
    {"n_kv", ~0ull, 8, "n_kv at offset 16"},
    {"n_kv", 12, 8, "key of kv 11"}, /* two kvs too many: tensor infos read as kvs */
    {"key0", 1ull << 62, 8, "key of kv 0 length at offset 24"},
    {"arch.value", 4096, 8, "kv 'general.architecture' value length"},
    {"bool.value", 2, 1, "expected a bool (0 or 1), got 2"},
    {"strs.type", 13, 4, "expected a value type 0..12, got 13"},
    {"strs.count", 1ull << 60, 8, "kv 'test.strs' value count"},
    {"nested.inner_type", 99, 4, "got 99"},
    {"w.n_dims", 0, 4, "tensor 'w' n_dims"},
    {"w.n_dims", 5, 4, "expected 1..4, got 5"},
    {"w.ne0", 0, 8, "tensor 'w' ne[0]"},
    {"w.ne0", 1ull << 40, 8, "inside the data section"},
    {"w.ne1", 1ull << 62, 8, "tensor 'w' ne[1]"},
    {"w.ne0", 48, 8, "multiple of Q8_0's block size 32, got 48"},
    {"w.type", 99, 4, "known ggml type id, got 99"},
    {"w.type", 4, 4, "known ggml type id, got 4"},
    {"w.offset", 16, 8, "multiple of the alignment 32, got 16"},
    {"b.offset", 1ull << 63, 8, "inside the data section"},
    {"b.offset", 128, 8, "overlap"},
    {"b.offset", 96, 8, "overlap"},
    {"b.name", 0x10000, 8, "name of tensor 1 length"},
};

static void test_mutations(void) {
    for (size_t i = 0; i < sizeof(MUTATIONS) / sizeof(MUTATIONS[0]); i++) {
        const mutation *mu = &MUTATIONS[i];
        image m;
        build(&m, 3, 0);
        patch_le(&m, mu->mark, mu->value, mu->bytes);
        expect_format_error(&m, mu->needle, mu->mark);
    }
}

static void test_duplicates_and_alignment(void) {
    image m;
    build(&m, 3, 0);
    memcpy(m.buf + where(&m, "b.name") + 8, "w", 1);
    expect_format_error(&m, "second 'w'", "duplicate tensor");
    build(&m, 3, 0); /* a key may hold a NUL byte: it is just never found by name */
    memcpy(m.buf + where(&m, "bool") + 8, "test.f32\0", 9);
    CHECK(check_image(&m, m.n) == ADIL_OK);
    build(&m, 3, 64);
    patch_le(&m, "alignment.value", 48, 4);
    expect_format_error(&m, "general.alignment at offset", "alignment 48");
    patch_le(&m, "alignment.value", 0, 4);
    expect_format_error(&m, "power of two, got 0", "alignment 0");
}

static void test_duplicate_key(void) {
    /* A minimal image with the same key twice. */
    image m;
    memset(&m, 0, sizeof(m));
    memcpy(m.buf, "GGUF", 4);
    m.n = 4;
    put_le(&m, 3, 4);
    put_le(&m, 0, 8);
    put_le(&m, 2, 8);
    kv_header(&m, "k", GGUF_TYPE_UINT8);
    put_le(&m, 1, 1);
    kv_header(&m, "k", GGUF_TYPE_UINT8);
    put_le(&m, 2, 1);
    expect_format_error(&m, "key 'k' at offset 38: expected unique keys, got a repeat (first at offset 24)",
                        "duplicate key");
}

static void test_truncations(void) {
    image m;
    build(&m, 3, 0);
    size_t needed = where(&m, "data") + DATA_BYTES;
    for (size_t n = 0; n < needed; n++) {
        CHECK(check_image(&m, n) == ADIL_STATUS_MODEL_FORMAT);
    }
    CHECK(check_image(&m, needed) == ADIL_OK);
}

static void test_files(void) {
    image m;
    build(&m, 3, 0);
    char path[] = "/tmp/adil_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    CHECK(write(fd, m.buf, m.n) == (ssize_t)m.n);
    close(fd);
    gguf_file *f = NULL;
    CHECK(gguf_open_file(path, &f) == ADIL_OK);
    if (f != NULL) {
        const gguf_tensor *b = gguf_find_tensor(f, "b");
        CHECK(b != NULL && memcmp(b->data, m.buf + where(&m, "data") + 192, 32) == 0);
        gguf_close(f);
    }
    unlink(path);
    CHECK(gguf_open_file(path, &f) == ADIL_STATUS_IO && f == NULL);
    CHECK(strstr(adil_last_error(), path) != NULL);
    CHECK(gguf_open_memory(NULL, 4, &f) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(gguf_open_memory(m.buf, 0, &f) == ADIL_STATUS_MODEL_FORMAT);
    CHECK(gguf_open_memory(m.buf, m.n, &f) == ADIL_OK);
    if (f != NULL) {
        CHECK(gguf_check_unchanged(f) == ADIL_OK); /* memory: nothing to watch */
        gguf_close(f);
    }
}

/* Mapped or read, only a regular file is opened: a FIFO is refused without
 * waiting for a writer, a directory without "allocating" 2^63 - 1 bytes. */
static void expect_not_regular(const char *path, const char *kind) {
    gguf_file *f = NULL;
    void *bytes = NULL;
    size_t size = 0;
    CHECK(gguf_open_file(path, &f) == ADIL_STATUS_IO && f == NULL);
    CHECK_HAS(adil_last_error(), kind);
    CHECK_HAS(adil_last_error(), path);
    CHECK(gguf_read_file(path, &bytes, &size) == ADIL_STATUS_IO && bytes == NULL);
    CHECK_HAS(adil_last_error(), kind);
}

static void test_not_regular_files(void) {
    char dir[] = "/tmp/adil_test_gguf_dir_XXXXXX";
    if (mkdtemp(dir) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/fifo", dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    expect_not_regular(dir, "got a directory");
    expect_not_regular(fifo, "got a named pipe (FIFO)");
    expect_not_regular("/dev/null", "got a character device");
    unlink(fifo);
    rmdir(dir);
}

/* A mapped file keeps its size and time; a truncation or a write is seen. */
static void test_changed_files(void) {
    image m;
    build(&m, 3, 0);
    char path[] = "/tmp/adil_test_gguf_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && write(fd, m.buf, m.n) == (ssize_t)m.n);
    close(fd);
    void *bytes = NULL;
    size_t size = 0;
    CHECK(gguf_read_file(path, &bytes, &size) == ADIL_OK && size == m.n);
    CHECK(bytes != NULL && memcmp(bytes, m.buf, m.n) == 0 && (uintptr_t)bytes % 64 == 0);
    free(bytes);
    gguf_file *f = NULL;
    CHECK(gguf_open_file(path, &f) == ADIL_OK);
    if (f == NULL) return;
    CHECK(gguf_check_unchanged(f) == ADIL_OK);
    CHECK(truncate(path, (off_t)m.n - 100) == 0);
    CHECK(gguf_check_unchanged(f) == ADIL_STATUS_IO);
    char sizes[64];
    snprintf(sizes, sizeof sizes, "size %zu -> %zu bytes", m.n, m.n - 100);
    CHECK_HAS(adil_last_error(), sizes);
    CHECK_HAS(adil_last_error(), path);
    gguf_close(f);
    unlink(path);
}

int main(void) {
    test_valid(3, 0);
    test_valid(2, 0);
    test_valid(3, 64);
    test_mutations();
    test_duplicates_and_alignment();
    test_duplicate_key();
    test_truncations();
    test_files();
    test_not_regular_files();
    test_changed_files();
    return test_report("test_gguf");
}
