/*
 * matmul_group.h — several matrix products of one input in one pool job:
 *     y[i] = x · W[i]ᵀ,  i < n  (n <= ADIL_MM_GROUP_MAX)
 * as a layer's q/k/v projections or its FFN gate and up projections need.
 *
 * Against n calls of adil_matmul (matmul.h) it saves n - 1 quantizations of
 * x (once per activation type in the group) and n - 1 pool jobs, and it
 * hands out work dynamically: the rows of all the weights are cut into
 * chunks of roughly equal bytes, several per thread, claimed by whichever
 * thread is free (adil_pool_for), so a thread that starts late or loses its
 * core for a while costs little.  With an epilogue, a chunk is the same
 * rows [r0, r1) of every weight (they must have as many rows), and
 * epilogue(user, r0, r1) runs right after them on the thread that computed
 * them, while they are in cache (e.g. the gated activation of the FFN).
 *
 * Results are bit for bit those of adil_matmul: the same quantized
 * activations, and each output is the level's vec_dot of its row and token
 * (the tile kernels' contract), whatever the chunks and threads.
 */
#ifndef ADIL_MATMUL_GROUP_H
#define ADIL_MATMUL_GROUP_H

#include "compute/matmul.h"

#define ADIL_MM_GROUP_MAX 4

/* Called once per chunk with its rows [r0, r1) of every weight. */
typedef void (*adil_mm_epilogue_fn)(void *user, int64_t r0, int64_t r1);

typedef struct adil_mm_group {
    int n;                                /* 1 .. ADIL_MM_GROUP_MAX */
    const adil_weight *w[ADIL_MM_GROUP_MAX];
    float *y[ADIL_MM_GROUP_MAX];          /* (n_tokens, w[i]->rows), no overlap with x */
    adil_mm_epilogue_fn epilogue;         /* may be NULL */
    void *user;
} adil_mm_group;

/* Bytes of scratch adil_matmul_group needs: the quantized activations of
 * every distinct activation type of the group (0 for float types). */
size_t adil_matmul_group_scratch_size(const adil_mm_group *g, int64_t n_tokens);

/* Computes the group for x (n_tokens, cols), every weight having `cols`
 * columns.  scratch: at least adil_matmul_group_scratch_size bytes, aligned
 * to 16.  Returns ADIL_STATUS_INVALID_ARGUMENT (nothing computed) for a bad
 * weight (as adil_matmul), differing cols, differing rows with an epilogue,
 * n out of range, NULL pointers or too small a scratch. */
adil_status adil_matmul_group(adil_pool *pool, const adil_mm_group *g, const float *x,
                              int64_t n_tokens, void *scratch, size_t scratch_size);

#endif /* ADIL_MATMUL_GROUP_H */
