/*
 * gguf_parse.c — validation of a whole GGUF image: header, key/value pairs,
 * tensor infos, then the data section (alignment, extents, overlaps).
 *
 * The order follows the file (see the byte layout in gguf.h).  Every count
 * is bounded by the bytes that remain before anything is allocated for it,
 * and tables grow only as entries are actually parsed, so a hostile count
 * cannot make the reader allocate more than a small multiple of the file.
 */
#include "format/gguf_cursor.h"
#include "format/gguf_internal.h"
#include "compute/weight_types.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MF ADIL_STATUS_MODEL_FORMAT

/* Smallest encodings, used to bound counts by the bytes that remain. */
#define MIN_KV_BYTES     13 /* key length (8) + value type (4) + a 1-byte value */
#define MIN_TENSOR_BYTES 32 /* name length 8 + n_dims 4 + one dim 8 + type 4 + offset 8 */
#define MIN_ARRAY_BYTES  12 /* element type 4 + count 8 */

/* ---- message helpers -------------------------------------------------- */

/* Copies a file string into `out` for an error message: at most 48 bytes,
 * anything that is not printable ASCII replaced by '?', so a message stays
 * valid text whatever the file holds. */
static const char *printable(gguf_str s, char out[64]) {
    size_t n = s.len < 48 ? (size_t)s.len : 48;
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s.ptr[i];
        out[i] = (ch >= 0x20 && ch < 0x7f && ch != '\'') ? (char)ch : '?';
    }
    if (s.len > n) {
        memcpy(out + n, "...", 3);
        n += 3;
    }
    out[n] = '\0';
    return out;
}

/* ---- strings ----------------------------------------------------------- */

static adil_status read_str(gguf_cursor *c, const char *field, gguf_str *out) {
    uint64_t len;
    size_t at = c->pos;
    adil_status st = gguf_read_u64(c, field, &len);
    if (st != ADIL_OK) {
        return st;
    }
    if (len > gguf_remaining(c)) {
        return adil_fail(MF,
                         "gguf: %s length at offset %zu: expected at most %zu (bytes left), "
                         "got %" PRIu64,
                         field, at, gguf_remaining(c), len);
    }
    out->ptr = (const char *)(c->base + c->pos);
    out->len = len;
    gguf_skip(c, len);
    return ADIL_OK;
}

/* ---- header ------------------------------------------------------------ */

static adil_status parse_header(gguf_cursor *c, gguf_file *f, uint64_t *n_tensors, uint64_t *n_kv) {
    adil_status st = gguf_need(c, 4, "magic");
    if (st != ADIL_OK) {
        return st;
    }
    const uint8_t *m = c->base;
    if (memcmp(m, "GGUF", 4) != 0) {
        return adil_fail(MF,
                         "gguf: magic at offset 0: expected \"GGUF\" (47 47 55 46), "
                         "got %02x %02x %02x %02x",
                         m[0], m[1], m[2], m[3]);
    }
    gguf_skip(c, 4);
    if ((st = gguf_read_u32(c, "version", &f->version)) != ADIL_OK) {
        return st;
    }
    if (f->version != 2 && f->version != 3) {
        bool swapped = f->version != 0 && (f->version & 0xFFFF) == 0;
        return adil_fail(MF, "gguf: version at offset 4: expected 2 or 3, got %" PRIu32 "%s", f->version,
                         swapped ? " (a big-endian file?)" : "");
    }
    if ((st = gguf_read_u64(c, "n_tensors", n_tensors)) != ADIL_OK) {
        return st;
    }
    if ((st = gguf_read_u64(c, "n_kv", n_kv)) != ADIL_OK) {
        return st;
    }
    /* Both tables follow; each entry takes at least its minimum bytes. */
    uint64_t left = gguf_remaining(c);
    if (*n_tensors > left / MIN_TENSOR_BYTES) {
        return adil_fail(MF,
                         "gguf: n_tensors at offset 8: expected at most %" PRIu64
                         " (%d bytes each in %" PRIu64 " bytes left), got %" PRIu64,
                         left / MIN_TENSOR_BYTES, MIN_TENSOR_BYTES, left, *n_tensors);
    }
    if (*n_kv > left / MIN_KV_BYTES) {
        return adil_fail(MF,
                         "gguf: n_kv at offset 16: expected at most %" PRIu64 " (%d bytes each in %" PRIu64
                         " bytes left), got %" PRIu64,
                         left / MIN_KV_BYTES, MIN_KV_BYTES, left, *n_kv);
    }
    return ADIL_OK;
}

/* ---- values -------------------------------------------------------------- */

static adil_status check_value_type(uint32_t type, size_t at, const char *field) {
    if (type >= GGUF_TYPE_COUNT) {
        return adil_fail(MF, "gguf: %s at offset %zu: expected a value type 0..%d, got %" PRIu32, field, at,
                         GGUF_TYPE_COUNT - 1, type);
    }
    return ADIL_OK;
}

static adil_status check_bools(const gguf_cursor *c, uint64_t n, const char *field) {
    for (uint64_t i = 0; i < n; i++) {
        uint8_t b = c->base[c->pos + i];
        if (b > 1) {
            return adil_fail(MF, "gguf: %s at offset %zu: expected a bool (0 or 1), got %u", field,
                             c->pos + (size_t)i, b);
        }
    }
    return ADIL_OK;
}

/* Skips `n` scalars of `type` after checking they exist. */
static adil_status skip_scalars(gguf_cursor *c, uint32_t type, uint64_t n, const char *field) {
    size_t size = gguf_scalar_size(type);
    if (n > gguf_remaining(c) / size) {
        return adil_fail(MF,
                         "gguf: %s at offset %zu: expected %" PRIu64 " values of %zu bytes, "
                         "got %zu bytes (end of file)",
                         field, c->pos, n, size, gguf_remaining(c));
    }
    if (type == GGUF_TYPE_BOOL) {
        adil_status st = check_bools(c, n, field);
        if (st != ADIL_OK) {
            return st;
        }
    }
    gguf_skip(c, n * size);
    return ADIL_OK;
}

/* Parses an array's body (element type, count, elements) at depth `depth`.
 * When `kv` is given (a top-level array) records the element type, count and
 * (for strings) every element. */
static adil_status parse_array(gguf_cursor *c, int depth, gguf_kv *kv, const char *field) {
    if (depth > GGUF_MAX_ARRAY_DEPTH) {
        return adil_fail(MF,
                         "gguf: %s at offset %zu: expected arrays nested at most %d deep, got "
                         "deeper",
                         field, c->pos, GGUF_MAX_ARRAY_DEPTH);
    }
    uint32_t type;
    uint64_t count;
    size_t at = c->pos;
    adil_status st = gguf_read_u32(c, field, &type);
    if (st == ADIL_OK) {
        st = check_value_type(type, at, field);
    }
    if (st == ADIL_OK) {
        at = c->pos;
        st = gguf_read_u64(c, field, &count);
    }
    if (st != ADIL_OK) {
        return st;
    }
    if (kv != NULL) {
        kv->arr_type = type;
        kv->arr_count = count;
        kv->value_offset = c->pos;
    }
    if (type != GGUF_TYPE_STRING && type != GGUF_TYPE_ARRAY) {
        return skip_scalars(c, type, count, field);
    }
    /* Strings and arrays: bound the count by their smallest encoding. */
    uint64_t min = type == GGUF_TYPE_STRING ? 8 : MIN_ARRAY_BYTES;
    if (count > gguf_remaining(c) / min) {
        return adil_fail(MF,
                         "gguf: %s count at offset %zu: expected at most %zu (%" PRIu64
                         " bytes each in %zu bytes left), got %" PRIu64,
                         field, at, gguf_remaining(c) / (size_t)min, min, gguf_remaining(c), count);
    }
    if (type == GGUF_TYPE_ARRAY) {
        for (uint64_t i = 0; i < count; i++) {
            if ((st = parse_array(c, depth + 1, NULL, field)) != ADIL_OK) {
                return st;
            }
        }
        return ADIL_OK;
    }
    gguf_str *strs = NULL;
    if (kv != NULL && count > 0) {
        strs = malloc((size_t)count * sizeof(*strs)); /* count <= bytes left / 8 */
        if (strs == NULL) {
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: %s: %" PRIu64 " strings", field, count);
        }
        kv->arr_strs = strs;
    }
    for (uint64_t i = 0; i < count; i++) {
        gguf_str s;
        if ((st = read_str(c, field, &s)) != ADIL_OK) {
            return st;
        }
        if (strs != NULL) {
            strs[i] = s;
        }
    }
    return ADIL_OK;
}

static adil_status parse_value(gguf_cursor *c, gguf_kv *kv, const char *field) {
    kv->value_offset = c->pos;
    if (kv->type == GGUF_TYPE_STRING) {
        gguf_str s;
        return read_str(c, field, &s);
    }
    if (kv->type == GGUF_TYPE_ARRAY) {
        return parse_array(c, 1, kv, field);
    }
    return skip_scalars(c, kv->type, 1, field);
}

static adil_status parse_kv(gguf_cursor *c, uint64_t i, gguf_kv *kv) {
    char field[96];
    memset(kv, 0, sizeof(*kv));
    kv->key_offset = c->pos;
    snprintf(field, sizeof(field), "key of kv %" PRIu64, i);
    adil_status st = read_str(c, field, &kv->key);
    if (st != ADIL_OK) {
        return st;
    }
    char name[64];
    snprintf(field, sizeof(field), "kv '%s' value type", printable(kv->key, name));
    size_t at = c->pos;
    if ((st = gguf_read_u32(c, field, &kv->type)) != ADIL_OK) {
        return st;
    }
    if ((st = check_value_type(kv->type, at, field)) != ADIL_OK) {
        return st;
    }
    snprintf(field, sizeof(field), "kv '%s' value", name);
    return parse_value(c, kv, field);
}

static adil_status index_kvs(gguf_file *f) {
    adil_status st = adil_hash_index_init(&f->kv_index, f->n_kv, "gguf: key index");
    for (uint64_t i = 0; st == ADIL_OK && i < f->n_kv; i++) {
        const gguf_kv *kv = &f->kvs[i];
        uint32_t *slot = gguf_kv_slot(f, kv->key.ptr, (size_t)kv->key.len);
        if (*slot != 0) {
            char name[64];
            return adil_fail(MF,
                             "gguf: key '%s' at offset %" PRIu64 ": expected unique keys, got "
                             "a repeat (first at offset %" PRIu64 ")",
                             printable(kv->key, name), kv->key_offset, f->kvs[*slot - 1].key_offset);
        }
        *slot = (uint32_t)i + 1;
    }
    return st;
}

static adil_status parse_kvs(gguf_cursor *c, gguf_file *f, uint64_t n_kv) {
    size_t cap = 0;
    /* f->n_kv counts the entries parsed so far: those gguf_close releases. */
    for (uint64_t i = 0; i < n_kv; i++) {
        adil_status st = adil_grow((void **)&f->kvs, &cap, (size_t)i + 1, sizeof(*f->kvs), "gguf: key table");
        if (st != ADIL_OK) {
            return st;
        }
        f->n_kv = i + 1;
        if ((st = parse_kv(c, i, &f->kvs[i])) != ADIL_OK) {
            return st;
        }
    }
    return index_kvs(f);
}

/* general.alignment: optional, any unsigned integer type, a power of two. */
static adil_status read_alignment(gguf_file *f) {
    f->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = gguf_find_key(f, "general.alignment");
    if (i < 0) {
        return ADIL_OK;
    }
    uint32_t a = 0;
    adil_status st = gguf_get_u32(f, "general.alignment", &a, NULL);
    if (st != ADIL_OK) {
        return st;
    }
    if (a == 0 || (a & (a - 1)) != 0) {
        return adil_fail(
            MF, "gguf: general.alignment at offset %" PRIu64 ": expected a power of two, got %" PRIu32,
            f->kvs[i].value_offset, a);
    }
    f->alignment = a;
    return ADIL_OK;
}

/* ---- tensor infos --------------------------------------------------------- */

static adil_status parse_dims(gguf_cursor *c, gguf_tensor *t, const char *name) {
    char field[96];
    snprintf(field, sizeof(field), "tensor '%s' n_dims", name);
    size_t at = c->pos;
    adil_status st = gguf_read_u32(c, field, &t->n_dims);
    if (st != ADIL_OK) {
        return st;
    }
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        return adil_fail(MF, "gguf: %s at offset %zu: expected 1..%d, got %" PRIu32, field, at, GGUF_MAX_DIMS,
                         t->n_dims);
    }
    uint64_t product = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
    }
    for (uint32_t d = 0; d < t->n_dims; d++) {
        snprintf(field, sizeof(field), "tensor '%s' ne[%" PRIu32 "]", name, d);
        at = c->pos;
        if ((st = gguf_read_u64(c, field, &t->ne[d])) != ADIL_OK) {
            return st;
        }
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX / product) {
            return adil_fail(MF,
                             "gguf: %s at offset %zu: expected 1..%" PRIu64
                             " (element count within int64), got %" PRIu64,
                             field, at, (uint64_t)INT64_MAX / product, t->ne[d]);
        }
        product *= t->ne[d];
    }
    return ADIL_OK;
}

/* Type id, whole blocks per row, and the byte size (no overflow). */
static adil_status parse_type(gguf_cursor *c, gguf_tensor *t, const char *name) {
    char field[96];
    snprintf(field, sizeof(field), "tensor '%s' type", name);
    size_t at = c->pos;
    adil_status st = gguf_read_u32(c, field, &t->type);
    if (st != ADIL_OK) {
        return st;
    }
    const adil_wtype_facts *tr = adil_wtype_facts_get(t->type);
    if (tr == NULL) {
        return adil_fail(MF, "gguf: %s at offset %zu: expected a known ggml type id, got %" PRIu32, field, at,
                         t->type);
    }
    if (t->ne[0] % (uint64_t)tr->block_size != 0) {
        return adil_fail(MF,
                         "gguf: tensor '%s' ne[0] at offset %zu: expected a multiple of %s's "
                         "block size %lld, got %" PRIu64,
                         name, at, tr->name, (long long)tr->block_size, t->ne[0]);
    }
    /* Blocks in the tensor <= elements <= INT64_MAX, so only the multiply by
     * the block's bytes can overflow. */
    uint64_t blocks = t->ne[0] / (uint64_t)tr->block_size * t->ne[1] * t->ne[2] * t->ne[3];
    if (blocks > UINT64_MAX / tr->type_size) {
        return adil_fail(MF,
                         "gguf: tensor '%s' size at offset %zu: expected under 2^64 bytes, "
                         "got %" PRIu64 " blocks of %zu bytes",
                         name, at, blocks, tr->type_size);
    }
    t->n_bytes = blocks * tr->type_size;
    return ADIL_OK;
}

static adil_status parse_tensor(gguf_cursor *c, gguf_file *f, uint64_t i, gguf_str *name_out) {
    gguf_tensor *t = &f->tensors[i];
    char field[96];
    snprintf(field, sizeof(field), "name of tensor %" PRIu64, i);
    size_t at = c->pos;
    adil_status st = read_str(c, field, name_out);
    if (st != ADIL_OK) {
        return st;
    }
    char name[64];
    printable(*name_out, name);
    if (memchr(name_out->ptr, '\0', (size_t)name_out->len) != NULL) {
        return adil_fail(MF, "gguf: %s at offset %zu: expected no NUL byte, got one in '%s'", field, at,
                         name);
    }
    if ((st = parse_dims(c, t, name)) != ADIL_OK || (st = parse_type(c, t, name)) != ADIL_OK) {
        return st;
    }
    snprintf(field, sizeof(field), "tensor '%s' offset", name);
    at = c->pos;
    if ((st = gguf_read_u64(c, field, &t->offset)) != ADIL_OK) {
        return st;
    }
    if (t->offset % f->alignment != 0) {
        return adil_fail(
            MF, "gguf: %s at offset %zu: expected a multiple of the alignment %" PRIu64 ", got %" PRIu64,
            field, at, f->alignment, t->offset);
    }
    return ADIL_OK;
}

/* Copies the names into one block of NUL-terminated strings. */
static adil_status copy_names(gguf_file *f, const gguf_str *names) {
    size_t total = 0;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        total += (size_t)names[i].len + 1; /* names lie inside the file: no overflow */
    }
    f->names = malloc(total ? total : 1);
    if (f->names == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: %zu bytes of tensor names", total);
    }
    char *p = f->names;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        memcpy(p, names[i].ptr, (size_t)names[i].len);
        p[names[i].len] = '\0';
        f->tensors[i].name = p;
        p += names[i].len + 1;
    }
    return ADIL_OK;
}

static adil_status index_tensors(gguf_file *f, const gguf_str *names) {
    adil_status st = adil_hash_index_init(&f->tensor_index, f->n_tensors, "gguf: tensor index");
    for (uint64_t i = 0; st == ADIL_OK && i < f->n_tensors; i++) {
        const char *name = f->tensors[i].name;
        uint32_t *slot = gguf_tensor_slot(f, name, strlen(name));
        if (*slot != 0) {
            char buf[64];
            return adil_fail(MF,
                             "gguf: name of tensor %" PRIu64 ": expected unique names, got a "
                             "second '%s'",
                             i, printable(names[i], buf));
        }
        *slot = (uint32_t)i + 1;
    }
    return st;
}

static adil_status parse_tensors(gguf_cursor *c, gguf_file *f, uint64_t n_tensors) {
    size_t cap = 0;
    gguf_str *names = NULL;
    size_t names_cap = 0;
    adil_status st = ADIL_OK;
    for (uint64_t i = 0; st == ADIL_OK && i < n_tensors; i++) {
        st = adil_grow((void **)&f->tensors, &cap, (size_t)i + 1, sizeof(*f->tensors), "gguf: tensor table");
        if (st == ADIL_OK) {
            st = adil_grow((void **)&names, &names_cap, (size_t)i + 1, sizeof(*names), "gguf: tensor names");
        }
        if (st == ADIL_OK) {
            memset(&f->tensors[i], 0, sizeof(f->tensors[i]));
            st = parse_tensor(c, f, i, &names[i]);
        }
    }
    if (st == ADIL_OK) {
        f->n_tensors = n_tensors;
        st = copy_names(f, names);
    }
    if (st == ADIL_OK) {
        st = index_tensors(f, names);
    }
    free(names);
    return st;
}

/* ---- data section ----------------------------------------------------------- */

static adil_status place_data(gguf_cursor *c, gguf_file *f) {
    uint64_t pad = (f->alignment - c->pos % f->alignment) % f->alignment;
    f->data_offset = c->pos + pad;
    if (f->n_tensors == 0) {
        return ADIL_OK; /* nothing is read from the data section */
    }
    if (pad > gguf_remaining(c)) {
        return adil_fail(MF,
                         "gguf: data section at offset %" PRIu64 ": expected to start inside "
                         "the file, got a file of %zu bytes",
                         f->data_offset, c->size);
    }
    uint64_t room = c->size - f->data_offset;
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        gguf_tensor *t = &f->tensors[i];
        if (t->offset > room || t->n_bytes > room - t->offset) {
            return adil_fail(MF,
                             "gguf: tensor '%s' data at offset %" PRIu64 ": expected %" PRIu64
                             " bytes inside the data section of %" PRIu64 " bytes, got offset %" PRIu64,
                             t->name, f->data_offset, t->n_bytes, room, t->offset);
        }
        t->data = c->base + f->data_offset + t->offset;
        t->offset += f->data_offset; /* absolute from now on */
    }
    return ADIL_OK;
}

typedef struct extent {
    uint64_t begin, end, index;
} extent;

static int cmp_extent(const void *a, const void *b) {
    const extent *x = a, *y = b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

/* Sorts the tensors by offset and refuses any two that share bytes. */
static adil_status check_overlaps(gguf_file *f) {
    if (f->n_tensors < 2) {
        return ADIL_OK;
    }
    extent *e = malloc((size_t)f->n_tensors * sizeof(*e));
    if (e == NULL) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "gguf: overlap check");
    }
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        e[i] = (extent){f->tensors[i].offset, f->tensors[i].offset + f->tensors[i].n_bytes, i};
    }
    qsort(e, (size_t)f->n_tensors, sizeof(*e), cmp_extent);
    adil_status st = ADIL_OK;
    for (uint64_t i = 1; i < f->n_tensors && st == ADIL_OK; i++) {
        if (e[i].begin < e[i - 1].end) {
            const gguf_tensor *a = &f->tensors[e[i - 1].index], *b = &f->tensors[e[i].index];
            st = adil_fail(MF,
                           "gguf: tensor '%s' data at offset %" PRIu64 ": expected to start at "
                           "or after %" PRIu64 " where tensor '%s' ends, got an overlap",
                           b->name, b->offset, e[i - 1].end, a->name);
        }
    }
    free(e);
    return st;
}

adil_status gguf_parse(gguf_file *f) {
    gguf_cursor c = {f->base, f->size, 0};
    uint64_t n_tensors = 0, n_kv = 0;
    adil_status st = parse_header(&c, f, &n_tensors, &n_kv);
    if (st == ADIL_OK) {
        st = parse_kvs(&c, f, n_kv);
    }
    if (st == ADIL_OK) {
        st = read_alignment(f);
    }
    if (st == ADIL_OK) {
        st = parse_tensors(&c, f, n_tensors);
    }
    if (st == ADIL_OK) {
        st = place_data(&c, f);
    }
    if (st == ADIL_OK) {
        st = check_overlaps(f);
    }
    return st;
}
