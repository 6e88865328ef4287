/*
 * gguf_meta.c — metadata and tensor lookups on a validated gguf_file.
 *
 * Values were bounds-checked at open, so the getters only check types and
 * ranges.  Values are read byte by byte (little-endian, any alignment).
 */
#include "format/gguf_cursor.h"
#include "format/gguf_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define MF ADIL_STATUS_MODEL_FORMAT

size_t gguf_scalar_size(uint32_t type) {
    switch (type) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

const char *gguf_type_name(uint32_t type, char buf[24]) {
    static const char *const names[GGUF_TYPE_COUNT] = {"uint8",  "int8",    "uint16", "int16",  "uint32",
                                                       "int32",  "float32", "bool",   "string", "array",
                                                       "uint64", "int64",   "float64"};
    if (type < GGUF_TYPE_COUNT) {
        return names[type];
    }
    snprintf(buf, 24, "type %" PRIu32, type);
    return buf;
}

/* ---- raw scalar access ---------------------------------------------------- */

static bool is_integer(uint32_t t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_INT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_INT16 ||
           t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT64 || t == GGUF_TYPE_INT64;
}

static bool is_signed(uint32_t t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}

/* Reads an integer of type t at p into (negative, magnitude-as-two's-complement)
 * form: *neg tells the sign, *u the value when non-negative, *s when signed. */
static void read_int(const uint8_t *p, uint32_t t, uint64_t *u, int64_t *s) {
    uint64_t raw;
    switch (gguf_scalar_size(t)) {
    case 1:
        raw = p[0];
        break;
    case 2:
        raw = (uint64_t)p[0] | (uint64_t)p[1] << 8;
        break;
    case 4:
        raw = gguf_le32(p);
        break;
    default:
        raw = gguf_le64(p);
        break;
    }
    *u = raw;
    if (!is_signed(t)) {
        *s = raw > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)raw;
        return;
    }
    unsigned bits = (unsigned)gguf_scalar_size(t) * 8;
    if (bits < 64 && (raw >> (bits - 1)) & 1) {
        raw |= ~0ull << bits; /* sign-extend */
    }
    memcpy(s, &raw, sizeof(*s));
}

static double read_float(const uint8_t *p, uint32_t t) {
    if (t == GGUF_TYPE_FLOAT32) {
        uint32_t bits = gguf_le32(p);
        float v;
        memcpy(&v, &bits, sizeof(v));
        return v;
    }
    uint64_t bits = gguf_le64(p);
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

/* ---- keys ------------------------------------------------------------------- */

uint64_t gguf_n_kv(const gguf_file *f) { return f->n_kv; }

gguf_str gguf_kv_key(const gguf_file *f, uint64_t i) {
    if (i >= f->n_kv) {
        return (gguf_str){"", 0};
    }
    return f->kvs[i].key;
}

uint32_t gguf_kv_type(const gguf_file *f, uint64_t i) {
    return i < f->n_kv ? f->kvs[i].type : GGUF_TYPE_COUNT;
}

int64_t gguf_find_key(const gguf_file *f, const char *key) {
    if (f == NULL || key == NULL) {
        return -1;
    }
    const uint32_t *slot = gguf_kv_slot(f, key, strlen(key));
    return slot != NULL && *slot != 0 ? (int64_t)*slot - 1 : -1;
}

bool gguf_str_eq(gguf_str s, const char *cstr) {
    size_t n = strlen(cstr);
    return s.len == n && memcmp(s.ptr, cstr, n) == 0;
}

/* Finds `key` for a getter: the entry, or NULL with the getter's status in *st
 * (ADIL_OK for an optional absent key, MODEL_FORMAT for a required one). */
static const gguf_kv *lookup(const gguf_file *f, const char *key, bool *found, adil_status *st) {
    *st = ADIL_OK;
    int64_t i = gguf_find_key(f, key);
    if (found != NULL) {
        *found = i >= 0;
    }
    if (i < 0) {
        if (found == NULL) {
            *st = adil_fail(MF, "gguf: key '%s': expected present, got missing", key);
        }
        return NULL;
    }
    return &f->kvs[i];
}

static adil_status type_mismatch(const gguf_kv *kv, const char *key, const char *expected) {
    char buf[24];
    return adil_fail(MF, "gguf: key '%s' at offset %" PRIu64 ": expected %s, got %s", key, kv->key_offset,
                     expected, gguf_type_name(kv->type, buf));
}

/* Reads an integer key and checks it lies in [lo, hi]. */
static adil_status get_int(const gguf_file *f, const char *key, bool *found, int64_t lo, uint64_t hi,
                           const char *what, uint64_t *u, int64_t *s) {
    adil_status st;
    const gguf_kv *kv = lookup(f, key, found, &st);
    if (kv == NULL) {
        return st;
    }
    if (!is_integer(kv->type)) {
        return type_mismatch(kv, key, what);
    }
    read_int(f->base + kv->value_offset, kv->type, u, s);
    bool negative = is_signed(kv->type) && *s < 0;
    bool ok = negative ? *s >= lo : *u <= hi;
    if (!ok) {
        if (found != NULL) {
            *found = false;
        }
        return adil_fail(MF, "gguf: key '%s' at offset %" PRIu64 ": expected %s, got %s%" PRIu64, key,
                         kv->key_offset, what, negative ? "-" : "",
                         negative ? (uint64_t)0 - (uint64_t)*s : *u);
    }
    return ADIL_OK;
}

adil_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, bool *found) {
    uint64_t u;
    int64_t s;
    adil_status st = get_int(f, key, found, 0, UINT32_MAX, "an integer in 0..2^32-1", &u, &s);
    if (st == ADIL_OK && (found == NULL || *found)) {
        *out = (uint32_t)u;
    }
    return st;
}

adil_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, bool *found) {
    uint64_t u;
    int64_t s;
    adil_status st = get_int(f, key, found, 0, UINT64_MAX, "a non-negative integer", &u, &s);
    if (st == ADIL_OK && (found == NULL || *found)) {
        *out = u;
    }
    return st;
}

adil_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, bool *found) {
    uint64_t u;
    int64_t s;
    adil_status st = get_int(f, key, found, INT32_MIN, INT32_MAX, "an integer in int32", &u, &s);
    if (st == ADIL_OK && (found == NULL || *found)) {
        *out = (int32_t)s;
    }
    return st;
}

adil_status gguf_get_f32(const gguf_file *f, const char *key, float *out, bool *found) {
    adil_status st;
    const gguf_kv *kv = lookup(f, key, found, &st);
    if (kv == NULL) {
        return st;
    }
    if (kv->type != GGUF_TYPE_FLOAT32 && kv->type != GGUF_TYPE_FLOAT64) {
        return type_mismatch(kv, key, "float32 or float64");
    }
    *out = (float)read_float(f->base + kv->value_offset, kv->type);
    return ADIL_OK;
}

adil_status gguf_get_bool(const gguf_file *f, const char *key, bool *out, bool *found) {
    adil_status st;
    const gguf_kv *kv = lookup(f, key, found, &st);
    if (kv == NULL) {
        return st;
    }
    if (kv->type != GGUF_TYPE_BOOL) {
        return type_mismatch(kv, key, "bool");
    }
    *out = f->base[kv->value_offset] != 0;
    return ADIL_OK;
}

adil_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, bool *found) {
    adil_status st;
    const gguf_kv *kv = lookup(f, key, found, &st);
    if (kv == NULL) {
        return st;
    }
    if (kv->type != GGUF_TYPE_STRING) {
        return type_mismatch(kv, key, "string");
    }
    const uint8_t *p = f->base + kv->value_offset;
    out->len = gguf_le64(p);
    out->ptr = (const char *)p + 8;
    return ADIL_OK;
}

adil_status gguf_get_cstr(const gguf_file *f, const char *key, gguf_str *out, bool *found) {
    gguf_str s;
    adil_status st = gguf_get_str(f, key, &s, found);
    if (st != ADIL_OK || (found != NULL && !*found)) {
        return st;
    }
    const char *nul = memchr(s.ptr, '\0', (size_t)s.len);
    if (nul != NULL) {
        return adil_fail(MF,
                         "gguf: key '%s' at offset %" PRIu64 ": expected a string without NUL "
                         "bytes (it is used as a C string), got a NUL at byte %zu of %" PRIu64,
                         key, f->kvs[gguf_find_key(f, key)].key_offset, (size_t)(nul - s.ptr), s.len);
    }
    *out = s;
    return ADIL_OK;
}

adil_status gguf_get_array(const gguf_file *f, const char *key, gguf_array *out, bool *found) {
    adil_status st;
    const gguf_kv *kv = lookup(f, key, found, &st);
    if (kv == NULL) {
        return st;
    }
    if (kv->type != GGUF_TYPE_ARRAY) {
        return type_mismatch(kv, key, "array");
    }
    out->type = kv->arr_type;
    out->count = kv->arr_count;
    out->data = f->base + kv->value_offset;
    out->priv = kv->arr_strs;
    return ADIL_OK;
}

adil_status gguf_get_array_of(const gguf_file *f, const char *key, uint32_t elem_type, gguf_array *out,
                              bool *found) {
    gguf_array a;
    bool here = false;
    adil_status st = gguf_get_array(f, key, &a, found != NULL ? &here : NULL);
    if (found != NULL) {
        *found = here;
    }
    if (st != ADIL_OK || (found != NULL && !here)) {
        return st;
    }
    if (a.type != elem_type) {
        char b1[24], b2[24];
        if (found != NULL) {
            *found = false;
        }
        return adil_fail(MF,
                         "gguf: key '%s' at offset %" PRIu64 ": expected an array of %s, got "
                         "an array of %s",
                         key, f->kvs[gguf_find_key(f, key)].key_offset, gguf_type_name(elem_type, b1),
                         gguf_type_name(a.type, b2));
    }
    *out = a;
    return ADIL_OK;
}

/* ---- array elements ---------------------------------------------------------- */

gguf_str gguf_array_str(const gguf_array *a, uint64_t i) {
    if (a->type != GGUF_TYPE_STRING || i >= a->count || a->priv == NULL) {
        return (gguf_str){"", 0};
    }
    return ((const gguf_str *)a->priv)[i];
}

static const uint8_t *scalar_at(const gguf_array *a, uint64_t i) {
    size_t size = gguf_scalar_size(a->type);
    if (size == 0 || i >= a->count) {
        return NULL;
    }
    return (const uint8_t *)a->data + i * size;
}

/* Element i of an integer (or bool, read as uint8) array, as read_int gives
 * it; false for another element type or an index out of range. */
static bool array_int_at(const gguf_array *a, uint64_t i, uint64_t *u, int64_t *s) {
    const uint8_t *p = scalar_at(a, i);
    if (p == NULL || !(is_integer(a->type) || a->type == GGUF_TYPE_BOOL)) {
        return false;
    }
    read_int(p, a->type == GGUF_TYPE_BOOL ? GGUF_TYPE_UINT8 : a->type, u, s);
    return true;
}

int64_t gguf_array_i64(const gguf_array *a, uint64_t i) {
    uint64_t u;
    int64_t s;
    return array_int_at(a, i, &u, &s) ? s : 0;
}

uint64_t gguf_array_u64(const gguf_array *a, uint64_t i) {
    uint64_t u;
    int64_t s;
    if (!array_int_at(a, i, &u, &s)) {
        return 0;
    }
    return is_signed(a->type) && s < 0 ? 0 : u;
}

float gguf_array_f32(const gguf_array *a, uint64_t i) {
    const uint8_t *p = scalar_at(a, i);
    if (p == NULL) {
        return 0.0f;
    }
    if (a->type == GGUF_TYPE_FLOAT32 || a->type == GGUF_TYPE_FLOAT64) {
        return (float)read_float(p, a->type);
    }
    return (float)gguf_array_i64(a, i);
}

/* ---- tensors ------------------------------------------------------------------- */

uint64_t gguf_n_tensors(const gguf_file *f) { return f->n_tensors; }

const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i) {
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name) {
    if (f == NULL || name == NULL) {
        return NULL;
    }
    const uint32_t *slot = gguf_tensor_slot(f, name, strlen(name));
    return slot != NULL && *slot != 0 ? &f->tensors[*slot - 1] : NULL;
}
