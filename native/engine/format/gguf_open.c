/*
 * gguf_open.c — opening a GGUF image from a file (memory-mapped) or from
 * memory, closing it, and the file-level getters.
 */
#define _POSIX_C_SOURCE 200809L

#include "format/gguf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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
    gguf_file *f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf_open_memory: handle");
    }
    f->base = data != NULL ? data : (const uint8_t *)"";
    f->size = size;
    return finish_open(f, out);
}

/* Maps the whole file read-only.  An empty file is not mappable but is a
 * (truncated) GGUF, so it is read as zero bytes. */
static adil_status map_file(const char *path, gguf_file *f) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return adil_fail(ADIL_STATUS_IO, "gguf: cannot open '%s': %s", path, strerror(errno));
    }
    struct stat sb;
    adil_status st = ADIL_OK;
    if (fstat(fd, &sb) != 0) {
        st = adil_fail(ADIL_STATUS_IO, "gguf: cannot stat '%s': %s", path, strerror(errno));
    } else if (!S_ISREG(sb.st_mode)) {
        st = adil_fail(ADIL_STATUS_IO, "gguf: '%s': expected a regular file", path);
    } else if (sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            st = adil_fail(ADIL_STATUS_IO, "gguf: cannot map '%s': %s", path, strerror(errno));
        } else {
            f->mapping = m;
            f->base = m;
            f->size = (size_t)sb.st_size;
        }
    } else {
        f->base = (const uint8_t *)"";
    }
    close(fd);
    return st;
}

adil_status gguf_open_file(const char *path, gguf_file **out) {
    if (out == NULL || path == NULL) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "gguf_open_file: NULL argument");
    }
    *out = NULL;
    gguf_file *f = calloc(1, sizeof(*f));
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

void gguf_close(gguf_file *f) {
    if (f == NULL) {
        return;
    }
    for (uint64_t i = 0; i < f->n_kv; i++) {
        free(f->kvs[i].arr_strs);
    }
    free(f->kvs);
    gguf_index_free(&f->kv_index);
    free(f->tensors);
    free(f->names);
    gguf_index_free(&f->tensor_index);
    if (f->mapping != NULL) {
        munmap(f->mapping, f->size);
    }
    free(f);
}

uint32_t gguf_version(const gguf_file *f) {
    return f->version;
}

uint64_t gguf_alignment(const gguf_file *f) {
    return f->alignment;
}

uint64_t gguf_data_offset(const gguf_file *f) {
    return f->data_offset;
}

size_t gguf_size(const gguf_file *f) {
    return f->size;
}
