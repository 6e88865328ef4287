/*
 * gguf.h — a validating reader for GGUF model files (versions 2 and 3).
 *
 * Byte layout (all integers little-endian; "str" = u64 length + bytes, no NUL):
 *
 *   offset 0   u32  magic        "GGUF" = bytes 47 47 55 46 (0x46554747 as u32)
 *          4   u32  version      2 or 3 (1 used u32 counts and is refused)
 *          8   u64  n_tensors
 *         16   u64  n_kv
 *         24   n_kv key/value pairs:
 *                str  key
 *                u32  value type (gguf_value_type below)
 *                ...  value: fixed-size scalar, str, or an array:
 *                       u32 element type, u64 count, count elements
 *                       (elements may themselves be strings or arrays)
 *              n_tensors tensor infos:
 *                str  name
 *                u32  n_dims (1..4)
 *                u64  ne[n_dims]   ne[0] is the innermost, contiguous dimension
 *                u32  type        (a ggml type id, compute/weight_types.h)
 *                u64  offset      relative to the data section, a multiple of
 *                                 the alignment
 *              padding to a multiple of the alignment
 *   data:      tensor bytes; the alignment is the key general.alignment
 *              (u32, a power of two), 32 when absent.
 *
 * Everything read from the file is checked against the bytes that remain
 * before it is used: counts, string and array lengths (nested arrays
 * included), value types, n_dims, dims (non-zero, product without overflow),
 * tensor types (known ids), whole blocks per row, offsets (aligned), each
 * tensor's extent inside the file, overlaps between tensors, duplicate keys,
 * duplicate tensor names and NUL bytes inside tensor names.  BOOL values must
 * be 0 or 1; arrays may nest at most 8 deep.  Any violation fails the open with
 * ADIL_STATUS_MODEL_FORMAT and a message of the form
 *     "gguf: <field> at offset <N>: expected <X>, got <Y>".
 * The reader never reads outside the bytes it was given.
 *
 * Lifetime: every pointer returned by the getters below (strings, arrays,
 * tensor names, tensor data) points into memory owned by the gguf_file and
 * stays valid until gguf_close().  A gguf_file is read-only after open, so
 * its getters may be called from any number of threads at once.
 */
#ifndef ADIL_GGUF_H
#define ADIL_GGUF_H

#include "adil_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gguf_file gguf_file;

/* Value types of metadata (explicit values, as stored in the file). */
typedef enum gguf_value_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
} gguf_value_type;
#define GGUF_TYPE_COUNT 13

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS          4

/* A string inside the file: `len` bytes at `ptr`, NOT NUL-terminated (GGUF
 * strings may contain any byte, NUL included).  ptr is never NULL (an empty
 * string has len 0 and a valid ptr). */
typedef struct gguf_str {
    const char *ptr;
    uint64_t len;
} gguf_str;

/* Plain description of one tensor. */
typedef struct gguf_tensor {
    const char *name;           /* NUL-terminated copy owned by the gguf_file */
    uint32_t type;              /* ggml type id (ADIL_WT_*), known to weight_types.h */
    uint32_t n_dims;            /* 1..4 */
    uint64_t ne[GGUF_MAX_DIMS]; /* ne[0] innermost (row length); dims >= n_dims are 1 */
    const void *data;           /* first byte, aligned to the file's alignment relative to the file start */
    uint64_t n_bytes;           /* row_size(type, ne[0]) * ne[1] * ne[2] * ne[3] */
    uint64_t offset;            /* absolute offset of data in the file (for messages) */
} gguf_tensor;

/* A metadata array.  Filled by gguf_get_array(); read it with the
 * gguf_array_* accessors.  Plain data pointing into the gguf_file. */
typedef struct gguf_array {
    uint32_t type;    /* element type (gguf_value_type) */
    uint64_t count;   /* number of elements */
    const void *data; /* numeric arrays: `count` packed little-endian elements,
                          NOT necessarily aligned (use the accessors or memcpy).
                          Other element types: the first element's bytes. */
    const void *priv; /* reader's internal index (string offsets); do not touch */
} gguf_array;

/* ---- open / close ---------------------------------------------------- */

/* Memory-maps and validates the file at `path` (read-only, private).
 * Returns ADIL_OK and a new handle in *out; ADIL_STATUS_IO when the file
 * cannot be opened, stat'ed or mapped, or is not a regular file (a
 * directory, a FIFO, a device: the message says which; a FIFO is refused
 * without waiting for a writer); ADIL_STATUS_MODEL_FORMAT when it is
 * malformed; ADIL_STATUS_OUT_OF_MEMORY; ADIL_STATUS_INVALID_ARGUMENT for NULL
 * arguments.  *out is NULL on failure. */
adil_status gguf_open_file(const char *path, gguf_file **out);

/* Reads the whole file at `path` into new 64-byte aligned memory (to open
 * with gguf_open_memory when a model must not depend on the file later; the
 * caller frees *bytes).  Same refusals as gguf_open_file for what is not a
 * regular file; ADIL_STATUS_IO when the file shrinks while it is read;
 * ADIL_STATUS_OUT_OF_MEMORY naming the size. */
adil_status gguf_read_file(const char *path, void **bytes, size_t *size);

/* Validates `size` bytes at `data` (for tests and fuzzing).  The handle
 * BORROWS `data`: it must stay valid and unchanged until gguf_close().
 * Tensor data pointers are data + offset, so their alignment is that of
 * `data` plus the file's alignment.  Same statuses as gguf_open_file. */
adil_status gguf_open_memory(const void *data, size_t size, gguf_file **out);

/* ADIL_OK when the file a handle maps still has the size and modification
 * time it had when mapped (one fstat of the descriptor the handle keeps), and
 * always for a handle opened from memory.  Otherwise ADIL_STATUS_IO with "the
 * model file '<path>' changed since it was loaded (size A -> B bytes) ...":
 * reading tensor data of a truncated mapping would raise SIGBUS.  A file
 * replaced by rename keeps the old mapping valid and is not a change. */
adil_status gguf_check_unchanged(const gguf_file *f);

/* Releases the handle and its mapping.  NULL is ignored. */
void gguf_close(gguf_file *f);

/* File-level facts. */
uint32_t gguf_version(const gguf_file *f);     /* 2 or 3 */
uint64_t gguf_alignment(const gguf_file *f);   /* general.alignment or 32 */
uint64_t gguf_data_offset(const gguf_file *f); /* absolute offset of the data section */
size_t gguf_size(const gguf_file *f);          /* bytes of the whole file */

/* ---- metadata: iteration --------------------------------------------- */

uint64_t gguf_n_kv(const gguf_file *f);
/* Key and value type of pair i (0 <= i < gguf_n_kv; i out of range gives an
 * empty key and type GGUF_TYPE_COUNT). */
gguf_str gguf_kv_key(const gguf_file *f, uint64_t i);
uint32_t gguf_kv_type(const gguf_file *f, uint64_t i);
/* Index of `key` (a NUL-terminated string) or -1 when absent; hashed. */
int64_t gguf_find_key(const gguf_file *f, const char *key);

/* ---- metadata: typed getters ----------------------------------------
 * All getters follow one convention:
 *  - key present with a compatible type: *out is set, *found (if given) is
 *    set true, ADIL_OK;
 *  - key absent: if `found` is NULL the key is required and the getter
 *    returns ADIL_STATUS_MODEL_FORMAT "gguf: key 'K': expected present, got
 *    missing"; otherwise *found = false, *out is left untouched (preset your
 *    default) and the getter returns ADIL_OK;
 *  - key present with an incompatible type (or a value that does not fit):
 *    ADIL_STATUS_MODEL_FORMAT naming the key, its offset, the expected and the
 *    actual type; *out untouched.
 */

/* Any integer type whose value fits in uint32 (negative values refused). */
adil_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, bool *found);
/* Any integer type whose value fits in uint64 (negative values refused). */
adil_status gguf_get_u64(const gguf_file *f, const char *key, uint64_t *out, bool *found);
/* Any integer type whose value fits in int32. */
adil_status gguf_get_i32(const gguf_file *f, const char *key, int32_t *out, bool *found);
/* FLOAT32 or FLOAT64 (converted to float). */
adil_status gguf_get_f32(const gguf_file *f, const char *key, float *out, bool *found);
/* BOOL (a stored byte other than 0 or 1 is refused at open). */
adil_status gguf_get_bool(const gguf_file *f, const char *key, bool *out, bool *found);
/* STRING: points into the file, not NUL-terminated (see gguf_str). */
adil_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, bool *found);
/* STRING that the caller turns into a C string (a name shown to users, a
 * template): as gguf_get_str, and a NUL byte inside is ADIL_STATUS_MODEL_FORMAT
 * naming the key, since the C string would be cut at it. */
adil_status gguf_get_cstr(const gguf_file *f, const char *key, gguf_str *out, bool *found);
/* ARRAY of any element type; check out->type yourself or use
 * gguf_get_array_of() which also checks the element type. */
adil_status gguf_get_array(const gguf_file *f, const char *key, gguf_array *out, bool *found);
adil_status gguf_get_array_of(const gguf_file *f, const char *key, uint32_t elem_type, gguf_array *out,
                              bool *found);

/* True when `s` equals the NUL-terminated `cstr` (byte for byte). */
bool gguf_str_eq(gguf_str s, const char *cstr);

/* ---- metadata: array elements ----------------------------------------
 * i must be < a->count (out of range gives 0 / an empty string).  Elements of
 * nested arrays (type GGUF_TYPE_ARRAY) are validated at open but not
 * accessible through this API. */

/* Element i of a STRING array. */
gguf_str gguf_array_str(const gguf_array *a, uint64_t i);
/* Element i of an integer or BOOL array, widened to int64 (UINT64 values above
 * INT64_MAX saturate to INT64_MAX; use gguf_array_u64 for those). */
int64_t gguf_array_i64(const gguf_array *a, uint64_t i);
uint64_t gguf_array_u64(const gguf_array *a, uint64_t i); /* negative -> 0 */
/* Element i of a FLOAT32/FLOAT64 or integer array, as float. */
float gguf_array_f32(const gguf_array *a, uint64_t i);

/* ---- tensors ----------------------------------------------------------- */

uint64_t gguf_n_tensors(const gguf_file *f);
/* Tensor i in file order (NULL when i is out of range). */
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);
/* The tensor called `name` or NULL; hashed. */
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name);

#endif /* ADIL_GGUF_H */
