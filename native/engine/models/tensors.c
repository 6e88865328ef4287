/*
 * tensors.c — hyperparameter keys and tensor binding for the architecture
 * loaders (see tensors.h).
 */
#include "models/tensors.h"

#include "compute/kernels.h"

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

adil_status adil_bind_matrix(const gguf_file *f, const char *fmt, int layer, int64_t rows, int64_t cols,
                             adil_weight *out, bool *found) {
    char name[96];
    const gguf_tensor *t = find(f, fmt, layer, name, sizeof name);
    if (!t) return absent(name, found);
    if (found) *found = true;
    if (t->ne[0] != (uint64_t)cols || t->ne[1] != (uint64_t)rows || t->ne[2] != 1 || t->ne[3] != 1)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: tensor '%s' at offset %llu: expected shape [%lld, %lld], got "
                         "[%llu, %llu, %llu, %llu]",
                         name, (unsigned long long)t->offset, (long long)cols, (long long)rows,
                         (unsigned long long)t->ne[0], (unsigned long long)t->ne[1],
                         (unsigned long long)t->ne[2], (unsigned long long)t->ne[3]);
    if (!adil_wtype_has_kernels(t->type))
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: tensor '%s' has weight type %s (%u), which this engine cannot "
                         "compute with",
                         name, adil_wtype_name(t->type), t->type);
    out->type = t->type;
    out->rows = rows;
    out->cols = cols;
    out->data = t->data;
    return ADIL_OK;
}

adil_status adil_bind_vector(const gguf_file *f, const char *fmt, int layer, int64_t n, adil_f32_arena *arena,
                             const float **out, bool *found) {
    char name[96];
    const gguf_tensor *t = find(f, fmt, layer, name, sizeof name);
    if (!t) return absent(name, found);
    if (found) *found = true;
    if (t->ne[0] != (uint64_t)n || t->ne[1] != 1 || t->ne[2] != 1 || t->ne[3] != 1)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "model: tensor '%s' at offset %llu: expected shape [%lld], got "
                         "[%llu, %llu, %llu, %llu]",
                         name, (unsigned long long)t->offset, (long long)n, (unsigned long long)t->ne[0],
                         (unsigned long long)t->ne[1], (unsigned long long)t->ne[2],
                         (unsigned long long)t->ne[3]);
    const adil_wtype_kernels *wk = adil_wtype_kernels_get(t->type);
    if (!wk || !wk->dequantize_row)
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "model: tensor '%s' has weight type %s (%u), which this engine cannot read", name,
                         adil_wtype_name(t->type), t->type);
    if (arena->cap - arena->used < (size_t)n)
        return adil_fail(ADIL_STATUS_INTERNAL, "model: vector arena too small for '%s'", name);
    float *dst = arena->base + arena->used;
    wk->dequantize_row(t->data, dst, n);
    arena->used += (size_t)n;
    *out = dst;
    return ADIL_OK;
}
