/*
 * gguf_internal.h — the reader's private structures, shared by the files of
 * format/ (open, parse, metadata getters, hash index).  Not for other areas:
 * they use gguf.h.
 */
#ifndef ADIL_GGUF_INTERNAL_H
#define ADIL_GGUF_INTERNAL_H

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

/* An open-addressing hash index from names to positions in an array. */
typedef struct gguf_index {
    uint64_t *slots; /* position + 1; 0 = empty */
    uint64_t mask;   /* capacity - 1 (capacity a power of two) */
} gguf_index;

struct gguf_file {
    const uint8_t *base; /* the file's bytes */
    size_t size;
    void *mapping;       /* non-NULL when we mmap'ed base (munmap on close) */
    int fd;              /* the mapped file, kept open to notice changes; -1 otherwise */
    char *path;          /* the mapped file's path, for messages; NULL otherwise */
    adil_file_id id;     /* the mapped file as it was when mapped */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;
    uint64_t n_kv;
    gguf_kv *kvs;
    gguf_index kv_index;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    char *names;         /* all tensor names, NUL-terminated, one allocation */
    gguf_index tensor_index;
};

/* Parses and validates f->base[0 .. f->size) into the rest of *f.  On
 * failure the partially filled *f is released by gguf_close. */
adil_status gguf_parse(gguf_file *f);

/* FNV-1a of len bytes. */
uint64_t gguf_hash_bytes(const void *data, size_t len);

/* Allocates an index for n entries. */
adil_status gguf_index_init(gguf_index *ix, uint64_t n);
void gguf_index_free(gguf_index *ix);
/* Slot for a name: the stored position + 1 of an equal name (found), or the
 * empty slot where it belongs.  `eq(ctx, pos, name, len)` compares. */
typedef bool (*gguf_name_eq_fn)(const void *ctx, uint64_t pos, const char *name, size_t len);
uint64_t *gguf_index_slot(const gguf_index *ix, const char *name, size_t len, gguf_name_eq_fn eq,
                          const void *ctx);

/* Size in bytes of one scalar value of `type` (0 for STRING/ARRAY/unknown). */
size_t gguf_scalar_size(uint32_t type);
/* Name of a value type for messages ("uint32", ..., "type 77"); `buf` holds
 * the text for unknown types. */
const char *gguf_type_name(uint32_t type, char buf[24]);

#endif /* ADIL_GGUF_INTERNAL_H */
