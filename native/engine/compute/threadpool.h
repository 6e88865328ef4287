/*
 * threadpool.h — a persistent pool of worker threads, one per model.
 *
 * Threads are created once by adil_pool_create() and parked on a condition
 * variable between jobs; adil_pool_run() wakes them, runs fn on every thread
 * (the calling thread is worker 0) and returns when all have finished.  No
 * thread is created per call.
 *
 * Thread safety: one adil_pool_run() at a time per pool (the model serves one
 * run at a time).  fn must not call adil_pool_run() on the same pool.
 */
#ifndef ADIL_THREADPOOL_H
#define ADIL_THREADPOOL_H

#include "adil_common.h"

typedef struct adil_pool adil_pool;

/* A job: called once per thread with ith in [0, nth). */
typedef void (*adil_pool_fn)(void *ctx, int ith, int nth);

#define ADIL_POOL_MAX_THREADS 256

/* Creates a pool of n_threads workers (the caller counts as one, so
 * n_threads - 1 threads are started).  n_threads in [1, ADIL_POOL_MAX_THREADS]
 * (ADIL_STATUS_INVALID_ARGUMENT otherwise); ADIL_STATUS_OUT_OF_MEMORY or
 * ADIL_STATUS_INTERNAL when threads cannot be created. */
adil_status adil_pool_create(int n_threads, adil_pool **out);

/* Stops and joins the workers.  NULL is ignored.  Not during a run. */
void adil_pool_free(adil_pool *pool);

/* Number of workers, caller included (1 for a NULL pool). */
int adil_pool_n_threads(const adil_pool *pool);

/* Runs fn(ctx, ith, nth) on all nth workers and waits for all of them.
 * A NULL pool runs fn(ctx, 0, 1) on the caller. */
void adil_pool_run(adil_pool *pool, adil_pool_fn fn, void *ctx);

/* Splits [0, n) into nth nearly equal contiguous ranges; worker ith gets
 * [*begin, *end).  `grain` rounds range boundaries to multiples of it (>= 1). */
void adil_pool_split(int64_t n, int64_t grain, int ith, int nth, int64_t *begin, int64_t *end);

#endif /* ADIL_THREADPOOL_H */
