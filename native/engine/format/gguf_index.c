/*
 * gguf_index.c — where a key or a tensor name sits in a GGUF file's hash
 * indexes (native/common's adil_hash_index over f->kvs and f->tensors; a
 * model has ~40 keys but hundreds of tensors, looked up by name at load).
 */
#include "format/gguf_internal.h"

#include <string.h>

typedef struct name_key {
    const char *name;
    size_t len;
} name_key;

static bool kv_eq(const void *ctx, uint64_t pos, const void *key) {
    const gguf_kv *kv = &((const gguf_file *)ctx)->kvs[pos];
    const name_key *k = key;
    return kv->key.len == k->len && memcmp(kv->key.ptr, k->name, k->len) == 0;
}

static bool tensor_eq(const void *ctx, uint64_t pos, const void *key) {
    const char *t = ((const gguf_file *)ctx)->tensors[pos].name;
    const name_key *k = key;
    return strncmp(t, k->name, k->len) == 0 && t[k->len] == '\0';
}

uint32_t *gguf_kv_slot(const gguf_file *f, const char *name, size_t len) {
    const name_key key = {name, len};
    return adil_hash_index_slot(&f->kv_index, adil_hash_bytes(ADIL_HASH_SEED, name, len), kv_eq, f, &key);
}

uint32_t *gguf_tensor_slot(const gguf_file *f, const char *name, size_t len) {
    const name_key key = {name, len};
    return adil_hash_index_slot(&f->tensor_index, adil_hash_bytes(ADIL_HASH_SEED, name, len), tensor_eq, f,
                                &key);
}
