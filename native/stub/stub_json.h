/*
 * stub_json.h — a small strict JSON reader (RFC 8259) for stub scripts and
 * the arguments of the stub's test tool.
 *
 * Every value keeps its byte range [start, end) in the source, so a caller
 * can copy a value verbatim (the stub writes a tool call's `arguments` exactly
 * as the script spells them).  Strings are decoded into UTF-8 (NUL-terminated
 * for convenience; they may contain NUL bytes, so use their length).
 * Numbers are checked against the JSON grammar; integers without fraction or
 * exponent that fit in int64 are also given as such, which is all the stub
 * needs.  Invalid UTF-8, lone surrogates, control characters in strings,
 * nesting deeper than STUB_JSON_MAX_DEPTH and trailing bytes are errors.
 */
#ifndef STUB_JSON_H
#define STUB_JSON_H

#include "adil_common.h"

#define STUB_JSON_MAX_DEPTH 64

typedef enum stub_json_kind {
    STUB_JSON_NULL,
    STUB_JSON_BOOL,
    STUB_JSON_NUMBER,
    STUB_JSON_STRING,
    STUB_JSON_ARRAY,
    STUB_JSON_OBJECT
} stub_json_kind;

typedef struct stub_json_member stub_json_member;

typedef struct stub_json {
    stub_json_kind kind;
    size_t start, end; /* byte range of the value in the source */
    bool boolean;      /* BOOL */
    bool is_integer;   /* NUMBER: no fraction/exponent and fits int64 */
    int64_t integer;   /* NUMBER when is_integer */
    char *str;         /* STRING: decoded bytes, NUL-terminated */
    size_t str_len;
    struct stub_json *items; /* ARRAY: n_items values */
    size_t n_items;
    stub_json_member *members; /* OBJECT: n_members members in source order */
    size_t n_members;
} stub_json;

struct stub_json_member {
    char *key; /* decoded, NUL-terminated */
    size_t key_len;
    size_t key_offset; /* offset of the key's opening quote */
    stub_json value;
};

/* Parses src[0 .. len) into *out.  On failure returns `on_error` (or
 * ADIL_STATUS_OUT_OF_MEMORY) with a message "<what>: invalid JSON: expected
 * X, got Y at offset N", and *out holds nothing to free. */
adil_status stub_json_parse(const char *src, size_t len, adil_status on_error, const char *what,
                            stub_json *out);

/* Frees what a successful stub_json_parse allocated.  Idempotent. */
void stub_json_free(stub_json *value);

/* The member of an object named `key`, or NULL (also for non-objects). */
const stub_json *stub_json_get(const stub_json *object, const char *key);

/* "null", "boolean", "number", "string", "array" or "object". */
const char *stub_json_kind_name(stub_json_kind kind);

#endif /* STUB_JSON_H */
