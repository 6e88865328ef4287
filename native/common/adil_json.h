/*
 * adil_json.h — a small strict JSON reader (RFC 8259) for stub scripts, grammar schemas and
 * the arguments of the stub's test tool.
 *
 * Every value keeps its byte range [start, end) in the source, so a caller
 * can copy a value verbatim (the stub writes a tool call's `arguments` exactly
 * as the script spells them).  Strings are decoded into UTF-8 (NUL-terminated
 * for convenience; they may contain NUL bytes, so use their length).
 * Numbers are checked against the JSON grammar; integers without fraction or
 * exponent that fit in int64 are also given as such, which is all the stub
 * needs.  Invalid UTF-8, lone surrogates, control characters in strings,
 * nesting deeper than ADIL_JSON_MAX_DEPTH and trailing bytes are errors.
 */
#ifndef ADIL_JSON_H
#define ADIL_JSON_H

#include "adil_common.h"

#define ADIL_JSON_MAX_DEPTH 64

typedef enum adil_json_kind {
    ADIL_JSON_NULL,
    ADIL_JSON_BOOL,
    ADIL_JSON_NUMBER,
    ADIL_JSON_STRING,
    ADIL_JSON_ARRAY,
    ADIL_JSON_OBJECT
} adil_json_kind;

typedef struct adil_json_member adil_json_member;

typedef struct adil_json {
    adil_json_kind kind;
    size_t start, end; /* byte range of the value in the source */
    bool boolean;      /* BOOL */
    bool is_integer;   /* NUMBER: no fraction/exponent and fits int64 */
    int64_t integer;   /* NUMBER when is_integer */
    char *str;         /* STRING: decoded bytes, NUL-terminated */
    size_t str_len;
    struct adil_json *items; /* ARRAY: n_items values */
    size_t n_items;
    adil_json_member *members; /* OBJECT: n_members members in source order */
    size_t n_members;
} adil_json;

struct adil_json_member {
    char *key; /* decoded, NUL-terminated */
    size_t key_len;
    size_t key_offset; /* offset of the key's opening quote */
    adil_json value;
};

/* Parses src[0 .. len) into *out.  On failure returns `on_error` (or
 * ADIL_STATUS_OUT_OF_MEMORY) with a message "<what>: invalid JSON: expected
 * X, got Y at offset N", and *out holds nothing to free. */
adil_status adil_json_parse(const char *src, size_t len, adil_status on_error, const char *what,
                            adil_json *out);

/* adil_json_parse with another nesting limit (a JSON schema nests two levels
 * of JSON per level of schema: {"properties": {"a": {...}}}). */
adil_status adil_json_parse_deep(const char *src, size_t len, adil_status on_error, const char *what,
                                 int max_depth, adil_json *out);

/* Frees what a successful adil_json_parse allocated.  Idempotent. */
void adil_json_free(adil_json *value);

/* The member of an object named `key`, or NULL (also for non-objects). */
const adil_json *adil_json_get(const adil_json *object, const char *key);

/* "null", "boolean", "number", "string", "array" or "object". */
const char *adil_json_kind_name(adil_json_kind kind);

#endif /* ADIL_JSON_H */
