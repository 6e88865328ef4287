/*
 * gguf_open.c — opening a GGUF image from a file (memory-mapped, or read
 * into memory) or from memory, noticing that a mapped file changed, closing
 * it, and the file-level getters.
 */
#define _POSIX_C_SOURCE 200809L

#include "format/gguf_internal.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* A handle with no file yet (fd -1). */
static gguf_file *new_handle(void) {
    gguf_file *f = calloc(1, sizeof(*f));
    if (f != NULL) f->fd = -1;
    return f;
}

/* Validates the bytes already set in *f; frees f on failure. */
static adil_status finish_open(gguf_file *f, gguf_file **out) {
    adil_status st = gguf_parse(f);
    if (st != ADIL_OK) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return ADIL_OK;
}

adil_status gguf_open_memory(const void *data, size_t size, gguf_file **out) {
    if (out == NULL || (data == NULL && size > 0)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "gguf_open_memory: NULL argument");
    }
    *out = NULL;
    gguf_file *f = new_handle();
    if (f == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf_open_memory: handle");
    }
    f->base = data != NULL ? data : (const uint8_t *)"";
    f->size = size;
    return finish_open(f, out);
}

/* Maps the whole file read-only and keeps it open, so that
 * gguf_check_unchanged can notice a truncation before a read of the mapping
 * would raise SIGBUS.  An empty file is not mappable but is a (truncated)
 * GGUF, so it is read as zero bytes. */
static adil_status map_file(const char *path, gguf_file *f) {
    adil_status st = adil_open_regular_file(path, "gguf", &f->fd, &f->id);
    if (st != ADIL_OK) return st;
    f->path = strdup(path);
    if (f->path == NULL) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: '%s': path", path);
    if (f->id.size > SIZE_MAX)
        return adil_fail(ADIL_STATUS_IO, "gguf: '%s': %llu bytes do not fit in memory", path,
                         (unsigned long long)f->id.size);
    if (f->id.size == 0) {
        f->base = (const uint8_t *)"";
        return ADIL_OK;
    }
    void *m = mmap(NULL, (size_t)f->id.size, PROT_READ, MAP_PRIVATE, f->fd, 0);
    if (m == MAP_FAILED) return adil_fail(ADIL_STATUS_IO, "gguf: cannot map '%s': %s", path, strerror(errno));
    f->mapping = m;
    f->base = m;
    f->size = (size_t)f->id.size;
    return ADIL_OK;
}

adil_status gguf_open_file(const char *path, gguf_file **out) {
    if (out == NULL || path == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "gguf_open_file: NULL argument");
    }
    *out = NULL;
    gguf_file *f = new_handle();
    if (f == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf_open_file: handle");
    }
    adil_status st = map_file(path, f);
    if (st != ADIL_OK) {
        gguf_close(f);
        return st;
    }
    return finish_open(f, out);
}

adil_status gguf_read_file(const char *path, void **bytes, size_t *size) {
    if (path == NULL || bytes == NULL || size == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "gguf_read_file: NULL argument");
    }
    *bytes = NULL;
    *size = 0;
    int fd = -1;
    adil_file_id id;
    adil_status st = adil_open_regular_file(path, "gguf", &fd, &id);
    if (st != ADIL_OK) return st;
    /* whole 64-byte blocks, and one more so that an empty file allocates too */
    void *buf = NULL;
    if (id.size > SIZE_MAX - 128)
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: '%s': cannot allocate %llu bytes", path,
                       (unsigned long long)id.size);
    else if ((buf = aligned_alloc(64, ((size_t)id.size + 63) / 64 * 64 + 64)) == NULL)
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: '%s': cannot allocate %llu bytes", path,
                       (unsigned long long)id.size);
    else
        st = adil_read_fd(fd, path, "gguf", buf, (size_t)id.size);
    close(fd);
    if (st != ADIL_OK) {
        free(buf);
        return st;
    }
    *bytes = buf;
    *size = (size_t)id.size;
    return ADIL_OK;
}

adil_status gguf_check_unchanged(const gguf_file *f) {
    if (f->fd < 0) return ADIL_OK; /* opened from memory: the caller owns the bytes */
    adil_file_id now;
    adil_status st = adil_file_id_now(f->fd, f->path, &now);
    if (st == ADIL_OK && adil_file_id_equal(&now, &f->id)) return ADIL_OK;
    char change[96];
    if (st != ADIL_OK)
        snprintf(change, sizeof change, "it can no longer be stat'ed");
    else if (now.size != f->id.size)
        snprintf(change, sizeof change, "size %llu -> %llu bytes", (unsigned long long)f->id.size,
                 (unsigned long long)now.size);
    else
        snprintf(change, sizeof change, "same size, modified");
    return adil_fail(ADIL_STATUS_IO,
                     "the model file '%s' changed since it was loaded (%s); reload it, or load it "
                     "with use_mmap=0 to copy it into memory",
                     f->path, change);
}

void gguf_close(gguf_file *f) {
    if (f == NULL) {
        return;
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        free(f->kvs[i].arr_strs);
    }
    free(f->kvs);
    adil_hash_index_free(&f->kv_index);
    free(f->tensors);
    free(f->names);
    adil_hash_index_free(&f->tensor_index);
    if (f->mapping != NULL) {
        munmap(f->mapping, f->size);
    }
    if (f->fd >= 0) {
        close(f->fd);
    }
    free(f->path);
    free(f);
}

uint32_t gguf_version(const gguf_file *f) { return f->version; }

uint64_t gguf_alignment(const gguf_file *f) { return f->alignment; }

uint64_t gguf_data_offset(const gguf_file *f) { return f->data_offset; }

size_t gguf_size(const gguf_file *f) { return f->size; }
