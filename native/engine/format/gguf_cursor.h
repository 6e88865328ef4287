/*
 * gguf_cursor.h — bounds-checked reading of little-endian fields.  Every read
 * first checks that the bytes exist; a failure names the field, its offset,
 * the bytes it needed and the bytes that remained.
 */
#ifndef ADIL_GGUF_CURSOR_H
#define ADIL_GGUF_CURSOR_H

#include "adil_common.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct gguf_cursor {
    const uint8_t *base;
    size_t size;
    size_t pos; /* invariant: pos <= size */
} gguf_cursor;

static inline size_t gguf_remaining(const gguf_cursor *c) { return c->size - c->pos; }

static inline adil_status gguf_need(const gguf_cursor *c, uint64_t n, const char *field) {
    if (n > gguf_remaining(c)) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "gguf: %s at offset %zu: expected %llu bytes, got %zu (end of file)", field, c->pos,
                         (unsigned long long)n, gguf_remaining(c));
    }
    return ADIL_OK;
}

/* GGUF is little-endian; assemble values byte by byte so the reader works on
 * any host and at any alignment. */
static inline uint32_t gguf_le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t gguf_le64(const uint8_t *p) {
    return (uint64_t)gguf_le32(p) | (uint64_t)gguf_le32(p + 4) << 32;
}

static inline adil_status gguf_read_u32(gguf_cursor *c, const char *field, uint32_t *out) {
    adil_status st = gguf_need(c, 4, field);
    if (st != ADIL_OK) {
        return st;
    }
    *out = gguf_le32(c->base + c->pos);
    c->pos += 4;
    return ADIL_OK;
}

static inline adil_status gguf_read_u64(gguf_cursor *c, const char *field, uint64_t *out) {
    adil_status st = gguf_need(c, 8, field);
    if (st != ADIL_OK) {
        return st;
    }
    *out = gguf_le64(c->base + c->pos);
    c->pos += 8;
    return ADIL_OK;
}

static inline void gguf_skip(gguf_cursor *c, uint64_t n) {
    c->pos += (size_t)n; /* callers checked with gguf_need */
}

#endif /* ADIL_GGUF_CURSOR_H */
