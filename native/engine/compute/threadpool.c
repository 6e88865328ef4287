/*
 * threadpool.c — the persistent worker pool (see threadpool.h).
 *
 * A job is published by bumping `generation` under the mutex; workers wait
 * for a generation they have not run yet.  Before parking on the condition
 * variable a worker spins briefly on the atomic generation, because in decode
 * jobs arrive every few tens of microseconds and a futex wake-up costs about
 * as much as the job.  Completion is a countdown of the workers still busy;
 * the last one to finish wakes the caller.
 */
#define _POSIX_C_SOURCE 200809L

#include "compute/threadpool.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdlib.h>

#define CACHE_LINE 64
#define SPIN_ROUNDS 4000

/* Per-thread state on its own cache line, so workers never share one. */
typedef struct worker {
    alignas(CACHE_LINE) struct adil_pool *pool;
    pthread_t thread;
    int ith;
    bool started;
} worker;

struct adil_pool {
    pthread_mutex_t mutex;
    pthread_cond_t wake;      /* workers wait here for a new generation */
    pthread_cond_t done;      /* the caller waits here for pending == 0 */
    alignas(CACHE_LINE) atomic_uint_fast64_t generation;
    alignas(CACHE_LINE) atomic_int pending; /* workers (not the caller) still running */
    adil_pool_fn fn;          /* the current job; written before generation++ */
    void *ctx;
    bool stop;
    int n_threads;
    worker *workers;          /* n_threads entries; [0] is the caller */
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Waits until the pool's generation differs from `seen`; returns it. */
static uint64_t wait_for_job(adil_pool *p, uint64_t seen) {
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        uint64_t g = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (g != seen) {
            return g;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&p->mutex);
    uint64_t g;
    while ((g = atomic_load_explicit(&p->generation, memory_order_acquire)) == seen) {
        pthread_cond_wait(&p->wake, &p->mutex);
    }
    pthread_mutex_unlock(&p->mutex);
    return g;
}

static void finish_job(adil_pool *p) {
    if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
        pthread_mutex_lock(&p->mutex);
        pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->mutex);
    }
}

static void *worker_main(void *arg) {
    worker *w = arg;
    adil_pool *p = w->pool;
    uint64_t seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (p->stop) {
            return NULL;
        }
        p->fn(p->ctx, w->ith, p->n_threads);
        finish_job(p);
    }
}

adil_status adil_pool_create(int n_threads, adil_pool **out) {
    if (out == NULL || n_threads < 1 || n_threads > ADIL_POOL_MAX_THREADS) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_pool_create: n_threads: expected 1..%d, got %d",
                         ADIL_POOL_MAX_THREADS, n_threads);
    }
    *out = NULL;
    /* Both sizes are multiples of CACHE_LINE (their structs are aligned to it). */
    adil_pool *p = aligned_alloc(CACHE_LINE, sizeof(adil_pool));
    worker *ws = aligned_alloc(CACHE_LINE, (size_t)n_threads * sizeof(worker));
    if (p == NULL || ws == NULL) {
        free(p);
        free(ws);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_pool_create: %d workers", n_threads);
    }
    pthread_mutex_init(&p->mutex, NULL);
    pthread_cond_init(&p->wake, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->generation, 0);
    atomic_init(&p->pending, 0);
    p->fn = NULL;
    p->ctx = NULL;
    p->stop = false;
    p->n_threads = n_threads;
    p->workers = ws;
    for (int i = 0; i < n_threads; i++) {
        ws[i] = (worker){.pool = p, .ith = i, .started = false};
    }
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            adil_pool_free(p);
            return adil_fail(ADIL_STATUS_INTERNAL, "adil_pool_create: cannot start thread %d of %d",
                             i, n_threads);
        }
        ws[i].started = true;
    }
    *out = p;
    return ADIL_OK;
}

/* Publishes a job (or the stop request) to every worker. */
static void publish(adil_pool *p, adil_pool_fn fn, void *ctx, bool stop) {
    pthread_mutex_lock(&p->mutex);
    p->fn = fn;
    p->ctx = ctx;
    p->stop = stop;
    atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mutex);
}

void adil_pool_free(adil_pool *p) {
    if (p == NULL) {
        return;
    }
    publish(p, NULL, NULL, true);
    for (int i = 1; i < p->n_threads; i++) {
        if (p->workers[i].started) {
            pthread_join(p->workers[i].thread, NULL);
        }
    }
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->workers);
    free(p);
}

int adil_pool_n_threads(const adil_pool *p) {
    return p != NULL ? p->n_threads : 1;
}

void adil_pool_run(adil_pool *p, adil_pool_fn fn, void *ctx) {
    if (p == NULL || p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    publish(p, fn, ctx, false);
    fn(ctx, 0, p->n_threads);
    for (int i = 0; i < SPIN_ROUNDS; i++) {
        if (atomic_load_explicit(&p->pending, memory_order_acquire) == 0) {
            return;
        }
        cpu_relax();
    }
    pthread_mutex_lock(&p->mutex);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        pthread_cond_wait(&p->done, &p->mutex);
    }
    pthread_mutex_unlock(&p->mutex);
}

void adil_pool_split(int64_t n, int64_t grain, int ith, int nth, int64_t *begin, int64_t *end) {
    if (grain < 1) {
        grain = 1;
    }
    int64_t units = (n + grain - 1) / grain; /* ranges are made of whole grains */
    int64_t b = units * ith / nth * grain, e = units * (ith + 1) / nth * grain;
    *begin = b < n ? b : n;
    *end = e < n ? e : n;
}
