/*
 * tensors.c — hyperparameter keys and tensor binding for the architecture
 * loaders (see tensors.h).
 */
#include "models/tensors.h"

#include "compute/kernels.h"
#include "compute/weight_types.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void key_name(char *buf, size_t cap, const char *arch, const char *key) {
    snprintf(buf, cap, "%s.%s", arch, key);
}

adil_status adil_hp_int(const gguf_file *f, const char *arch, const char *key, int64_t dflt, int64_t max,
                        int64_t *out) {
    char name[128];
    key_name(name, sizeof name, arch, key);
    uint64_t v = 0;
    bool found = false;
    adil_status st = gguf_get_u64(f, name, &v, dflt < 0 ? NULL : &found);
    if (st != ADIL_OK) return st;
    if (dflt >= 0 && !found) {
        *out = dflt;
        return ADIL_OK;
    }
    if (v < 1 || v > (uint64_t)max)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT, "model: key '%s': expected 1..%lld, got %llu", name,
                         (long long)max, (unsigned long long)v);
    *out = (int64_t)v;
    return ADIL_OK;
}

adil_status adil_hp_float(const gguf_file *f, const char *arch, const char *key, float dflt, float *out) {
    char name[128];
    key_name(name, sizeof name, arch, key);
    float v = dflt;
    bool found = false;
    adil_status st = gguf_get_f32(f, name, &v, &found);
    if (st != ADIL_OK) return st;
    if (!(isfinite(v) && v > 0.0f))
        return adil_fail(ADIL_STATUS_MODEL_FORMAT, "model: key '%s': expected a positive number, got %g",
                         name, (double)v);
    *out = v;
    return ADIL_OK;
}

/* Finds `fmt` (with the layer filled in); NULL when absent. */
static const gguf_tensor *find(const gguf_file *f, const char *fmt, int layer, char *name, size_t cap) {
    if (layer >= 0)
        snprintf(name, cap, fmt, layer);
    else
        snprintf(name, cap, "%s", fmt);
    return gguf_find_tensor(f, name);
}

static adil_status absent(const char *name, bool *found) {
    if (found) {
        *found = false;
        return ADIL_OK;
    }
    return adil_fail(ADIL_STATUS_MODEL_FORMAT, "model: tensor '%s': expected present, got missing", name);
}

/* The MODEL_FORMAT error for tensor t of `name` whose shape is not the n
 * dimensions want[] (trailing dimensions 1). */
static adil_status shape_error(const char *name, const gguf_tensor *t, const int64_t *want, int n) {
    char expected[96];
    size_t used = 0;
    for (int i = 0; i < n && used < sizeof expected; i++)
        used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%lld", i ? ", " : "",
                                 (long long)want[i]);
    return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                     "model: tensor '%s' at offset %llu: expected shape [%s], got [%llu, %llu, %llu, %llu]",
                     name, (unsigned long long)t->offset, expected, (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                     (unsigned long long)t->ne[3]);
}

/* Binds `name` as a weight of ne = [cols, rows, n3]: seen as (n3 * rows, cols). */
static adil_status bind_weight(const gguf_file *f, const char *fmt, int layer, int64_t n3, int64_t rows,
                               int64_t cols, adil_weight *out, bool *found) {
    char name[96];
    const gguf_tensor *t = find(f, fmt, layer, name, sizeof name);
    if (!t) return absent(name, found);
    if (found) *found = true;
    if (t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows || t->ne[2] != (uint64_t)n3 || t->ne[3] != 1)
        return shape_error(name, t, (const int64_t[]){cols, rows, n3}, n3 == 1 ? 2 : 3);
    if (!adil_wtype_has_kernels(t->type))
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: tensor '%s' has weight type %s (%u), which this engine cannot "
                         "compute with",
                         name, adil_wtype_name(t->type), t->type);
    out->type = t->type;
    out->rows = n3 * rows;
    out->cols = cols;
    out->data = t->data;
    out->layout = ADIL_LAYOUT_ROWS;
    return ADIL_OK;
}

adil_status adil_bind_matrix(const gguf_file *f, const char *fmt, int layer, int64_t rows, int64_t cols,
                             adil_weight *out, bool *found) {
    return bind_weight(f, fmt, layer, 1, rows, cols, out, found);
}

adil_status adil_bind_experts(const gguf_file *f, const char *fmt, int layer, int64_t n_expert, int64_t rows,
                              int64_t cols, adil_weight *out, bool *found) {
    return bind_weight(f, fmt, layer, n_expert, rows, cols, out, found);
}

adil_weight adil_weight_rows(const adil_weight *w, int64_t r0, int64_t n) {
    adil_weight v = *w; /* row-major: views are made at load, before any repacking */
    v.rows = n;
    v.data = (const uint8_t *)w->data + (size_t)r0 * adil_row_size(w->type, w->cols);
    return v;
}

/* Dequantizes `name`, ne = [cols, rows], into the arena. */
static adil_status bind_f32(const gguf_file *f, const char *fmt, int layer, int64_t rows, int64_t cols,
                            adil_f32_arena *arena, const float **out, bool *found) {
    char name[96];
    const gguf_tensor *t = find(f, fmt, layer, name, sizeof name);
    if (!t) return absent(name, found);
    if (found) *found = true;
    if (t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows || t->ne[2] != 1 || t->ne[3] != 1)
        return shape_error(name, t, (const int64_t[]){cols, rows}, rows == 1 ? 1 : 2);
    const adil_wtype_kernels *wk = adil_wtype_kernels_get(t->type);
    if (!wk || !wk->dequantize_row)
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: tensor '%s' has weight type %s (%u), which this engine cannot read", name,
                         adil_wtype_name(t->type), t->type);
    const size_t n = (size_t)rows * (size_t)cols;
    if (arena->cap - arena->used < n)
        return adil_fail(ADIL_STATUS_INTERNAL, "model: vector arena too small for '%s'", name);
    float *dst = arena->base + arena->used;
    const size_t row = adil_row_size(t->type, cols);
    for (int64_t r = 0; r < rows; r++)
        wk->dequantize_row((const uint8_t *)t->data + (size_t)r * row, dst + r * cols, cols);
    arena->used += n;
    *out = dst;
    return ADIL_OK;
}

adil_status adil_bind_vector(const gguf_file *f, const char *fmt, int layer, int64_t n, adil_f32_arena *arena,
                             const float **out, bool *found) {
    return bind_f32(f, fmt, layer, 1, n, arena, out, found);
}

adil_status adil_bind_table(const gguf_file *f, const char *fmt, int layer, int64_t rows, int64_t cols,
                            adil_f32_arena *arena, const float **out, bool *found) {
    return bind_f32(f, fmt, layer, rows, cols, arena, out, found);
}
