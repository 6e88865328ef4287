/*
 * repack.h — weights stored with 8 rows interleaved, the layout the SIMD
 * tile kernels of a type read fastest (ggml's CPU "repack" buffers do the
 * same).  In the row-major layout of the file, a kernel unpacks one row's
 * super-block (scales, levels) and reuses it for a few tokens; with 8 rows
 * side by side in each 64-byte line, one vector holds 8 bytes of every row,
 * one broadcast activation meets all 8, each row's scales sit in that row's
 * lanes, and the 8 results are one store: a quarter of the instructions per
 * multiply-add in decode, and the activations are loaded once per 8 rows.
 *
 * Rows r = 8g .. 8g + 7 (group g) of a Q4_K, Q8_0 or Q5_0 weight become, per
 * (super-)block i, one block_q4_K_r8 / block_q8_0_r8 / block_q5_0_r8 at group
 * g's block i:
 * groups one after another, the blocks of a group in column order.  So a
 * group takes exactly 8 rows of the layout's row bytes per super-block, and
 * row 8g starts at 8g * (bytes per row), as in the row-major layout.  Q4_K's
 * scales and mins are stored unpacked (one byte each), which the kernels
 * would otherwise unpack for every super-block and row: 148 bytes per row
 * and super-block instead of 144; Q8_0 keeps its 34 per block, Q5_0 its 22.
 *
 * Results are those of the same arithmetic as the scalar reference
 * (integer sums per super-block, then d * sum - dmin * msum in float), in a
 * different float order than the row-major kernels: within the tolerance of
 * the kernel tests, not bit for bit.  A repacked weight gives the same
 * result for a (row, token) in any tile, thread count or batch.
 */
#ifndef ADIL_REPACK_H
#define ADIL_REPACK_H

#include "compute/kernels.h"
#include "compute/matmul.h"
#include "compute/weight_types.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADIL_R8_ROWS 8

/* Q4_K, 8 rows: row r's d, dmin, its 8 sub-block scales and mins (6-bit
 * values, one per byte), and its 128 level bytes in 16 chunks of 8:
 * qs[c][r][b] = byte 8c + b of row r's block_q4_K.qs. */
typedef struct {
    adil_fp16 d[ADIL_R8_ROWS];
    adil_fp16 dmin[ADIL_R8_ROWS];
    uint8_t scales[8][ADIL_R8_ROWS];  /* [sub-block j][row r] */
    uint8_t mins[4][ADIL_R8_ROWS][2]; /* [pair p][row r][j - 2p]: sub-blocks 2p, 2p + 1 */
    uint8_t qs[16][ADIL_R8_ROWS][8];
} block_q4_K_r8;
_Static_assert(sizeof(block_q4_K_r8) == 32 + 64 + 64 + 1024, "block_q4_K_r8 size");

#define ADIL_Q4_K_R8_ROW_BYTES (sizeof(block_q4_K_r8) / ADIL_R8_ROWS)

/* Q8_0, 8 rows: row r's d, and its 32 levels q in 4 chunks of 8, stored as
 * the unsigned q + 128 (q ^ 0x80) that vpdpbusd multiplies with a signed
 * activation; the kernel takes 128 * sum(a) back out.  As many bytes as the
 * file's 8 rows. */
typedef struct {
    adil_fp16 d[ADIL_R8_ROWS];
    uint8_t qs[4][ADIL_R8_ROWS][8]; /* [chunk c][row r][b]: q[8c + b] ^ 0x80 */
} block_q8_0_r8;
_Static_assert(sizeof(block_q8_0_r8) == 8 * sizeof(block_q8_0), "block_q8_0_r8 size");

/* Q5_0, 8 rows: row r's d, its fifth bits by byte (qh[j][r] = byte j of row
 * r's qh: elements 8j .. 8j + 7, so one 64-bit load is the byte mask of a
 * chunk's 8 rows) and its 16 level bytes in 2 chunks of 8: qs[c][r][b] = byte
 * 8c + b of row r's qs (low nibble element 8c + b, high nibble 16 + 8c + b).
 * As many bytes as the file's 8 rows. */
typedef struct {
    adil_fp16 d[ADIL_R8_ROWS];
    uint8_t qh[4][ADIL_R8_ROWS];
    uint8_t qs[2][ADIL_R8_ROWS][8];
} block_q5_0_r8;
_Static_assert(sizeof(block_q5_0_r8) == 8 * sizeof(block_q5_0), "block_q5_0_r8 size");

/* Bytes from one row of w to the next (of a group's share, for R8). */
size_t adil_weight_row_bytes(const adil_weight *w);

/* Whether `type` has an 8-row layout with kernels at the selected CPU level. */
bool adil_repack_supported(uint32_t type);

/* Whether w's layout has a kernel at the selected CPU level: the file's
 * rows, or the 8-row layout of a type that has one there with
 * `group_rows` (the rows the caller cuts w into: all of them, or one
 * expert's) a multiple of 8. */
bool adil_layout_runs(const adil_weight *w, int64_t group_rows);

/* The tile kernel of w's layout among the type's kernels wk (NULL: none,
 * loop over vec_dot), and the multiple of rows its tiles start at. */
adil_tile_dot_fn adil_layout_tile(const adil_weight *w, const adil_wtype_kernels *wk);
int64_t adil_layout_row_align(const adil_weight *w);

/* Bytes `rows` x `cols` of `type` take in the 8-row layout (rows a multiple
 * of 8, cols of the block size). */
size_t adil_repack_bytes(uint32_t type, int64_t rows, int64_t cols);

/* Groups [g0, g1) of the row-major weight src (rows, cols) of `type` (Q4_K,
 * Q8_0 or Q5_0) into dst, laid out as above (the whole weight is groups 0 ..
 * rows / 8). */
void adil_repack(uint32_t type, const void *src, void *dst, int64_t cols, int64_t g0, int64_t g1);

/* Row r of a weight of `type` in the 8-row layout, back as the file's row
 * (bit for bit the one adil_repack read). */
void adil_unpack_row(uint32_t type, const void *data, int64_t cols, int64_t r, void *dst);

/* The reference tile kernels of the 8-row layouts, written for clarity
 * (tests compare the SIMD ones with them): adil_tile with n_rows a multiple of
 * 8, w at a group's first row, w_stride the layout's row bytes. */
void adil_tile_q4_K_r8_ref(const adil_tile *t);
void adil_tile_q8_0_r8_ref(const adil_tile *t);
void adil_tile_q5_0_r8_ref(const adil_tile *t);

#endif /* ADIL_REPACK_H */
