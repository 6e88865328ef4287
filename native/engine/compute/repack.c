/*
 * repack.c — the 8-row layouts of Q4_K, Q8_0 and Q5_0 (see repack.h): the
 * conversion both ways and the reference tile kernels.
 */
#include "compute/repack.h"

#include "compute/kernels_scalar.h"
#include "compute/simd/kscales.h"

#include <stddef.h>
#include <string.h>

size_t adil_weight_row_bytes(const adil_weight *w) {
    if (w->layout == ADIL_LAYOUT_R8 && w->type == ADIL_WT_Q4_K) {
        return (size_t)(w->cols / ADIL_QK_K) * ADIL_Q4_K_R8_ROW_BYTES;
    }
    return adil_row_size(w->type, w->cols);
}

bool adil_repack_supported(uint32_t type) {
    const adil_wtype_kernels *k = adil_wtype_kernels_get(type);
    return k != NULL && k->tile_dot_r8 != NULL;
}

bool adil_layout_runs(const adil_weight *w, int64_t group_rows) {
    return w->layout == ADIL_LAYOUT_ROWS ||
           (w->layout == ADIL_LAYOUT_R8 && adil_repack_supported(w->type) && group_rows % ADIL_R8_ROWS == 0);
}

adil_tile_dot_fn adil_layout_tile(const adil_weight *w, const adil_wtype_kernels *wk) {
    return w->layout == ADIL_LAYOUT_R8 ? wk->tile_dot_r8 : wk->tile_dot;
}

int64_t adil_layout_row_align(const adil_weight *w) { return w->layout == ADIL_LAYOUT_R8 ? ADIL_R8_ROWS : 1; }

size_t adil_repack_bytes(uint32_t type, int64_t rows, int64_t cols) {
    const adil_weight w = {.type = type, .rows = rows, .cols = cols, .layout = ADIL_LAYOUT_R8};
    return (size_t)rows * adil_weight_row_bytes(&w);
}

/* One super-block of 8 rows (x[r] the block of row r). */
static void pack_block(const block_q4_K *const x[ADIL_R8_ROWS], block_q4_K_r8 *out) {
    for (int r = 0; r < ADIL_R8_ROWS; r++) {
        uint8_t sc[8], m[8];
        adil_kscales_unpack(x[r]->scales, sc, m);
        out->d[r] = x[r]->d;
        out->dmin[r] = x[r]->dmin;
        for (int j = 0; j < 8; j++) {
            out->scales[j][r] = sc[j];
            out->mins[j / 2][r][j % 2] = m[j];
        }
        for (int c = 0; c < 16; c++) {
            memcpy(out->qs[c][r], x[r]->qs + 8 * c, 8);
        }
    }
}

static void repack_q4_K(const void *src, void *dst, int64_t cols, int64_t g0, int64_t g1) {
    const int64_t nb = cols / ADIL_QK_K;
    const block_q4_K *rows = src;
    block_q4_K_r8 *groups = dst;
    for (int64_t g = g0; g < g1; g++) {
        for (int64_t i = 0; i < nb; i++) {
            const block_q4_K *x[ADIL_R8_ROWS];
            for (int r = 0; r < ADIL_R8_ROWS; r++) {
                x[r] = rows + (g * ADIL_R8_ROWS + r) * nb + i;
            }
            pack_block(x, groups + g * nb + i);
        }
    }
}

/* The 12 packed bytes of 8 scales and mins (the inverse of kscales.h). */
static void pack_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t s[12]) {
    for (int j = 0; j < 4; j++) {
        s[j] = (uint8_t)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (uint8_t)(m[j] | (m[j + 4] >> 4) << 6);
        s[j + 8] = (uint8_t)((sc[j + 4] & 0x0F) | (m[j + 4] & 0x0F) << 4);
    }
}

static void unpack_row_q4_K(const void *data, int64_t cols, int64_t r, void *dst) {
    const int64_t nb = cols / ADIL_QK_K;
    const block_q4_K_r8 *g = (const block_q4_K_r8 *)data + (r / ADIL_R8_ROWS) * nb;
    const int k = (int)(r % ADIL_R8_ROWS);
    block_q4_K *out = dst;
    for (int64_t i = 0; i < nb; i++) {
        uint8_t sc[8], m[8];
        for (int j = 0; j < 8; j++) {
            sc[j] = g[i].scales[j][k];
            m[j] = g[i].mins[j / 2][k][j % 2];
        }
        out[i].d = g[i].d[k];
        out[i].dmin = g[i].dmin[k];
        pack_scales(sc, m, out[i].scales);
        for (int c = 0; c < 16; c++) {
            memcpy(out[i].qs + 8 * c, g[i].qs[c][k], 8);
        }
    }
}

/* Row k of block x times activation y: the scalar reference's arithmetic.
 * Byte b of chunk c = 4h + q holds element 64h + 8q + b (low nibble, sub-block
 * 2h) and element 64h + 32 + 8q + b (high nibble, sub-block 2h + 1). */
static float block_dot(const block_q4_K_r8 *x, int k, const block_q8_K *y) {
    int dots = 0, mins = 0;
    for (int c = 0; c < 16; c++) {
        const int h = c / 4, base = 64 * h + 8 * (c % 4);
        for (int b = 0; b < 8; b++) {
            const uint8_t byte = x->qs[c][k][b];
            dots += x->scales[2 * h][k] * (byte & 0x0F) * y->qs[base + b];
            dots += x->scales[2 * h + 1][k] * (byte >> 4) * y->qs[base + 32 + b];
        }
    }
    for (int j = 0; j < 8; j++) {
        mins += x->mins[j / 2][k][j % 2] * (y->bsums[2 * j] + y->bsums[2 * j + 1]);
    }
    return y->d * (adil_fp16_to_f32(x->d[k]) * (float)dots - adil_fp16_to_f32(x->dmin[k]) * (float)mins);
}

void adil_tile_q4_K_r8_ref(const adil_tile *t) {
    const int64_t nb = t->n / ADIL_QK_K;
    for (int64_t r0 = 0; r0 < t->n_rows; r0 += ADIL_R8_ROWS) {
        const block_q4_K_r8 *g = (const block_q4_K_r8 *)(t->w + (size_t)r0 * t->w_stride);
        for (int64_t tok = 0; tok < t->n_tok; tok++) {
            const block_q8_K *y = (const block_q8_K *)(t->act + (size_t)tok * t->act_stride);
            for (int k = 0; k < ADIL_R8_ROWS; k++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < nb; i++) {
                    sum += block_dot(g + i, k, y + i);
                }
                t->y[(size_t)tok * t->y_stride + (size_t)(r0 + k)] = sum;
            }
        }
    }
}

/* ---- the 32-element types (Q8_0, Q5_0) -------------------------------------------- */

/* Level q of element e (0 .. 31) of row k of an 8-row block. */
typedef int (*r8_level_fn)(const void *block, int k, int e);

_Static_assert(offsetof(block_q8_0_r8, d) == 0 && offsetof(block_q5_0_r8, d) == 0,
               "an 8-row block of a 32-element type starts with its rows' d");

/* The reference tile of a 32-element 8-row layout (blocks of block_bytes,
 * levels by `level`): quant_legacy.c's vec_dot arithmetic, an exact integer
 * dot per block times d_w * d_a, summed in block order. */
static void tile_r8_ref_32(const adil_tile *t, size_t block_bytes, r8_level_fn level) {
    const int64_t nb = t->n / ADIL_QK;
    for (int64_t r0 = 0; r0 < t->n_rows; r0 += ADIL_R8_ROWS) {
        const uint8_t *g = t->w + (size_t)r0 * t->w_stride;
        for (int64_t tok = 0; tok < t->n_tok; tok++) {
            const block_q8_0 *y = (const block_q8_0 *)(t->act + (size_t)tok * t->act_stride);
            for (int k = 0; k < ADIL_R8_ROWS; k++) {
                float sum = 0.0f;
                for (int64_t i = 0; i < nb; i++) {
                    const uint8_t *x = g + (size_t)i * block_bytes;
                    int s = 0;
                    for (int e = 0; e < ADIL_QK; e++) s += level(x, k, e) * y[i].qs[e];
                    const adil_fp16 *d = (const adil_fp16 *)x;
                    sum += (float)s * (adil_fp16_to_f32(d[k]) * adil_fp16_to_f32(y[i].d));
                }
                t->y[(size_t)tok * t->y_stride + (size_t)(r0 + k)] = sum;
            }
        }
    }
}

/* ---- Q8_0 ------------------------------------------------------------------------ */

static void repack_q8_0(const void *src, void *dst, int64_t cols, int64_t g0, int64_t g1) {
    const int64_t nb = cols / ADIL_QK;
    const block_q8_0 *rows = src;
    block_q8_0_r8 *groups = dst;
    for (int64_t g = g0; g < g1; g++)
        for (int64_t i = 0; i < nb; i++) {
            block_q8_0_r8 *out = groups + g * nb + i;
            for (int r = 0; r < ADIL_R8_ROWS; r++) {
                const block_q8_0 *x = rows + (g * ADIL_R8_ROWS + r) * nb + i;
                out->d[r] = x->d;
                for (int e = 0; e < ADIL_QK; e++) out->qs[e / 8][r][e % 8] = (uint8_t)x->qs[e] ^ 0x80;
            }
        }
}

static void unpack_row_q8_0(const void *data, int64_t cols, int64_t r, void *dst) {
    const int64_t nb = cols / ADIL_QK;
    const block_q8_0_r8 *g = (const block_q8_0_r8 *)data + (r / ADIL_R8_ROWS) * nb;
    const int k = (int)(r % ADIL_R8_ROWS);
    block_q8_0 *out = dst;
    for (int64_t i = 0; i < nb; i++) {
        out[i].d = g[i].d[k];
        for (int e = 0; e < ADIL_QK; e++) out[i].qs[e] = (int8_t)(g[i].qs[e / 8][k][e % 8] ^ 0x80);
    }
}

/* Level q of element e of row k of block x (the stored q + 128 back). */
static int q8_0_level(const void *block, int k, int e) {
    const block_q8_0_r8 *x = block;
    return (int)x->qs[e / 8][k][e % 8] - 128;
}

void adil_tile_q8_0_r8_ref(const adil_tile *t) { tile_r8_ref_32(t, sizeof(block_q8_0_r8), q8_0_level); }

/* ---- Q5_0 ------------------------------------------------------------------------ */

static void repack_q5_0(const void *src, void *dst, int64_t cols, int64_t g0, int64_t g1) {
    const int64_t nb = cols / ADIL_QK;
    const block_q5_0 *rows = src;
    block_q5_0_r8 *groups = dst;
    for (int64_t g = g0; g < g1; g++)
        for (int64_t i = 0; i < nb; i++) {
            block_q5_0_r8 *out = groups + g * nb + i;
            for (int r = 0; r < ADIL_R8_ROWS; r++) {
                const block_q5_0 *x = rows + (g * ADIL_R8_ROWS + r) * nb + i;
                out->d[r] = x->d;
                for (int j = 0; j < 4; j++) out->qh[j][r] = x->qh[j];
                for (int c = 0; c < 2; c++) memcpy(out->qs[c][r], x->qs + 8 * c, 8);
            }
        }
}

static void unpack_row_q5_0(const void *data, int64_t cols, int64_t r, void *dst) {
    const int64_t nb = cols / ADIL_QK;
    const block_q5_0_r8 *g = (const block_q5_0_r8 *)data + (r / ADIL_R8_ROWS) * nb;
    const int k = (int)(r % ADIL_R8_ROWS);
    block_q5_0 *out = dst;
    for (int64_t i = 0; i < nb; i++) {
        out[i].d = g[i].d[k];
        for (int j = 0; j < 4; j++) out[i].qh[j] = g[i].qh[j][k];
        for (int c = 0; c < 2; c++) memcpy(out[i].qs + 8 * c, g[i].qs[c][k], 8);
    }
}

/* Level q of element e of row k of block x: quant_legacy.c's Q5_0 arithmetic. */
static int q5_0_level(const void *block, int k, int e) {
    const block_q5_0_r8 *x = block;
    const int half = e / 16, j = e % 16; /* nibble half of qs byte j */
    const int nibble = (x->qs[j / 8][k][j % 8] >> (4 * half)) & 0x0F;
    const int fifth = (x->qh[e / 8][k] >> (e % 8)) & 1;
    return (nibble | fifth << 4) - 16;
}

void adil_tile_q5_0_r8_ref(const adil_tile *t) { tile_r8_ref_32(t, sizeof(block_q5_0_r8), q5_0_level); }

/* ---- by type ------------------------------------------------------------------- */

void adil_repack(uint32_t type, const void *src, void *dst, int64_t cols, int64_t g0, int64_t g1) {
    if (type == ADIL_WT_Q4_K) repack_q4_K(src, dst, cols, g0, g1);
    if (type == ADIL_WT_Q8_0) repack_q8_0(src, dst, cols, g0, g1);
    if (type == ADIL_WT_Q5_0) repack_q5_0(src, dst, cols, g0, g1);
}

void adil_unpack_row(uint32_t type, const void *data, int64_t cols, int64_t r, void *dst) {
    if (type == ADIL_WT_Q4_K) unpack_row_q4_K(data, cols, r, dst);
    if (type == ADIL_WT_Q8_0) unpack_row_q8_0(data, cols, r, dst);
    if (type == ADIL_WT_Q5_0) unpack_row_q5_0(data, cols, r, dst);
}
