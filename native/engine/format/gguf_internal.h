/*
 * gguf_internal.h — the reader's private structures, shared by the files of
 * format/ (open, parse, metadata getters, hash index).  Not for other areas:
 * they use gguf.h.
 */
#ifndef ADIL_GGUF_INTERNAL_H
#define ADIL_GGUF_INTERNAL_H

#include "adil_containers.h"
#include "format/gguf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Maximum nesting of arrays inside arrays (GGUF files in the wild use 1). */
#define GGUF_MAX_ARRAY_DEPTH 8

/* One key/value pair.  Offsets are absolute positions in the file. */
typedef struct gguf_kv {
    gguf_str key;
    uint64_t key_offset;   /* where the key's length field starts (for messages) */
    uint32_t type;         /* gguf_value_type */
    uint64_t value_offset; /* scalar: the value; string: its length field;
                              array: its first element */
    uint32_t arr_type;     /* arrays: element type */
    uint64_t arr_count;    /* arrays: element count */
    gguf_str *arr_strs;    /* string arrays: every element, owned */
} gguf_kv;

struct gguf_file {
    const uint8_t *base; /* the file's bytes */
    size_t size;
    void *mapping;   /* non-NULL when we mmap'ed base (munmap on close) */
    int fd;          /* the mapped file, kept open to notice changes; -1 otherwise */
    char *path;      /* the mapped file's path, for messages; NULL otherwise */
    adil_file_id id; /* the mapped file as it was when mapped */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    gguf_kv *kvs;
    adil_hash_index kv_index; /* key -> position in kvs */
    uint64_t n_tensors;
    gguf_tensor *tensors;
    char *names;                  /* all tensor names, NUL-terminated, one allocation */
    adil_hash_index tensor_index; /* name -> position in tensors */
};

/* Parses and validates f->base[0 .. f->size) into the rest of *f.  On
 * failure the partially filled *f is released by gguf_close. */
adil_status gguf_parse(gguf_file *f);

/* The slot of key name[0 .. len) in f->kv_index, and of the tensor `name`
 * in f->tensor_index (gguf_index.c): the stored position + 1 of the entry
 * with that name, else the empty slot where it belongs; NULL before the
 * index is built (adil_hash_index_slot). */
uint32_t *gguf_kv_slot(const gguf_file *f, const char *name, size_t len);
uint32_t *gguf_tensor_slot(const gguf_file *f, const char *name, size_t len);

/* Size in bytes of one scalar value of `type` (0 for STRING/ARRAY/unknown). */
size_t gguf_scalar_size(uint32_t type);
/* Name of a value type for messages ("uint32", ..., "type 77"); `buf` holds
 * the text for unknown types. */
const char *gguf_type_name(uint32_t type, char buf[24]);

#endif /* ADIL_GGUF_INTERNAL_H */
