/*
 * threadpool.h — a persistent pool of worker threads, one per model.
 *
 * Threads are created once by adil_pool_create() and wait between jobs
 * (spinning briefly, then parked on a condition variable); no thread is
 * created per call.  A job is a number of chunks; every thread of the pool,
 * the caller included, claims chunks one at a time until none is left, and
 * the call returns when all have finished.  So a thread that wakes late, or
 * that another process keeps off its core, simply runs fewer chunks: the
 * caller never waits for a thread to start, only for chunks in progress.
 *
 * Thread safety: one job at a time per pool (the model serves one run at a
 * time).  A job's function must not start another job on the same pool.
 */
#ifndef ADIL_THREADPOOL_H
#define ADIL_THREADPOOL_H

#include "adil_common.h"

#include <stdint.h>

typedef struct adil_pool adil_pool;

/* A job of nth parts: called once for each ith in [0, nth), on any threads.
 * ith names the part (and so the per-part scratch a job may use); two calls
 * with different ith may run at the same time. */
typedef void (*adil_pool_fn)(void *ctx, int ith, int nth);

/* A job of chunks: called once for each chunk in [0, n_chunks).  ith is the
 * thread running it (0 = the caller, < adil_pool_n_threads), for per-thread
 * scratch: no two calls with the same ith run at the same time. */
typedef void (*adil_pool_chunk_fn)(void *ctx, int64_t chunk, int ith);

#define ADIL_POOL_MAX_THREADS 256

/* Creates a pool of n_threads workers (the caller counts as one, so
 * n_threads - 1 threads are started).  n_threads in [1, ADIL_POOL_MAX_THREADS]
 * (ADIL_STATUS_INVALID_ARGUMENT otherwise); ADIL_STATUS_OUT_OF_MEMORY or
 * ADIL_STATUS_INTERNAL when threads cannot be created. */
adil_status adil_pool_create(int n_threads, adil_pool **out);

/* Stops and joins the workers.  NULL is ignored.  Not during a job. */
void adil_pool_free(adil_pool *pool);

/* Number of workers, caller included (1 for a NULL pool). */
int adil_pool_n_threads(const adil_pool *pool);

/* Runs fn(ctx, ith, nth) for every ith in [0, nth), nth = the pool's thread
 * count, and waits for all of them.  A NULL pool runs fn(ctx, 0, 1). */
void adil_pool_run(adil_pool *pool, adil_pool_fn fn, void *ctx);

/* Runs fn(ctx, chunk, ith) for every chunk in [0, n_chunks) (n_chunks <
 * 2^31) and waits for all of them.  Chunks are claimed in increasing order,
 * so put the longest first.  A NULL pool runs them in order on the caller. */
void adil_pool_for(adil_pool *pool, int64_t n_chunks, adil_pool_chunk_fn fn, void *ctx);

/* Splits [0, n) into nth nearly equal contiguous ranges; worker ith gets
 * [*begin, *end).  `grain` rounds range boundaries to multiples of it (>= 1). */
void adil_pool_split(int64_t n, int64_t grain, int ith, int nth, int64_t *begin, int64_t *end);

#endif /* ADIL_THREADPOOL_H */
