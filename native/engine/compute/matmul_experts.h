/*
 * matmul_experts.h — the products of a mixture-of-experts layer ("mul_mat_id"
 * in ggml): every row of x goes through the expert it was routed to, all
 * experts in one pool job.
 *
 * A stacked weight holds n_expert matrices of `rows` rows each, expert e
 * being rows [e * rows, (e + 1) * rows) — a 3-D GGUF tensor ne = [cols,
 * rows, n_expert] seen as 2-D.  The A assignments (a token and one of its
 * experts) are numbered in expert order: expert e's are a in [off[e],
 * off[e + 1]).  For every weight i of the group:
 *     y[i][a] = x[src[a]] · W[i]_eᵀ    for e with off[e] <= a < off[e + 1]
 *     x     (n_x, cols)       float activations (src NULL: n_x = A, src[a] = a)
 *     y[i]  (A, rows)
 *
 * The rows of x are quantized once to the activation type of the weights
 * (as matmul.h) and copied into assignment order, so each expert's tokens
 * are consecutive activation rows.  Then one adil_pool_for over chunks: a
 * chunk is the same rows [r0, r1) of every chosen expert of every weight,
 * for all of that expert's assignments, so an expert's weights are read
 * once per batch whatever its number of tokens, experts nobody chose are not
 * read at all, and every chunk does the same work however the tokens are
 * spread over experts.  epilogue(user, r0, r1), when given, runs on the
 * chunk's thread right after it, for rows [r0, r1) of every assignment (the
 * gated activation after gate and up; the weighted sum after down).
 *
 * Every output is the level's vec_dot of its weight row and activation row
 * (the tile kernels' contract), so results do not depend on the thread
 * count, the grouping or the batch.
 */
#ifndef ADIL_MATMUL_EXPERTS_H
#define ADIL_MATMUL_EXPERTS_H

#include "compute/matmul.h"

typedef struct adil_mm_experts {
    int n;                                   /* 1 .. ADIL_MM_GROUP_MAX */
    const adil_weight *w[ADIL_MM_GROUP_MAX]; /* (n_expert * rows, cols), stacked */
    float *y[ADIL_MM_GROUP_MAX];             /* (A, rows) */
    int64_t n_expert;
    int64_t rows;                 /* rows of one expert (the same in every weight) */
    const int32_t *off;           /* (n_expert + 1) ascending, off[0] = 0, off[n_expert] = A */
    const int32_t *src;           /* (A) the row of x of each assignment, or NULL */
    adil_mm_epilogue_fn epilogue; /* may be NULL */
    void *user;
} adil_mm_experts;

/* Bytes of scratch adil_matmul_experts needs for n_x rows of x and A
 * assignments, with or without src (0 when the group is invalid; offsets
 * and outputs are not read). */
size_t adil_matmul_experts_scratch_size(const adil_mm_experts *g, int64_t n_x, int64_t A);

/* Computes the group for x (n_x, cols).  scratch: at least
 * adil_matmul_experts_scratch_size bytes, aligned to 16, clobbered.  pool
 * may be NULL.  ADIL_STATUS_INVALID_ARGUMENT (nothing computed) for a type
 * without kernels, columns that differ or are not whole blocks, weights not
 * n_expert * rows rows, offsets out of order, a src row outside [0, n_x),
 * NULL pointers or too small a scratch. */
adil_status adil_matmul_experts(adil_pool *pool, const adil_mm_experts *g, const float *x, int64_t n_x,
                                void *scratch, size_t scratch_size);

#endif /* ADIL_MATMUL_EXPERTS_H */
