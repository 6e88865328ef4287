/*
 * threadpool.c — the persistent worker pool (see threadpool.h).
 *
 * A job is announced in one 64-bit atomic word: a generation (16 bits, so
 * two jobs in a row differ), the number of chunks n (24 bits) and the next
 * unclaimed chunk (24 bits).  A thread claims a chunk by compare-and-swap of
 * next -> next + 1 while next < n; only after a successful claim does it read
 * the job's function and context, which cannot change until that chunk is
 * done (the job is not finished before every claimed chunk is), so a thread
 * that woke late for an old job can never run the wrong one.  Finished
 * chunks are counted in `done`; the caller returns when done == n.
 *
 * Waiting: a thread with nothing to claim spins on the word (pause) for up to
 * SPIN_NS, then parks on a condition variable.  SPIN_NS is longer than the
 * gap between two tokens of a generation (sampling, detokenizing), so the
 * workers stay hot for a whole generation and park soon after it.  Parked
 * threads are counted; a job is published with a plain atomic store, and the
 * mutex and broadcast are paid only when someone is parked (the counter is
 * written before, and the word read after, each side's own store, both
 * sequentially consistent, so a wake-up cannot be lost).  The caller waits for
 * `done` the same way.  Shared counters sit on their own cache lines, and so
 * does each worker's state.
 */
#define _POSIX_C_SOURCE 200809L

#include "compute/threadpool.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#define CACHE_LINE           64
#define SPIN_NS              1000000 /* 1 ms */
#define SPINS_PER_CLOCK_READ 64

#define N_BITS     24
#define MAX_CHUNKS ((1 << N_BITS) - 1)
#define FIELD_MASK ((uint64_t)MAX_CHUNKS)

/* The job word: generation | n | next. */
static uint64_t word_make(uint64_t gen, int64_t n) {
    return (gen & 0xFFFF) << (2 * N_BITS) | (uint64_t)n << N_BITS;
}
static int64_t word_n(uint64_t w) { return (int64_t)((w >> N_BITS) & FIELD_MASK); }
static int64_t word_next(uint64_t w) { return (int64_t)(w & FIELD_MASK); }

/* Per-thread state on its own cache line, so workers never share one. */
typedef struct worker {
    alignas(CACHE_LINE) struct adil_pool *pool;
    pthread_t thread;
    int ith;
    bool started;
} worker;

struct adil_pool {
    alignas(CACHE_LINE) _Atomic uint64_t word;
    /* the current job; written before its word is published */
    _Atomic(adil_pool_fn) run_fn;       /* adil_pool_run jobs */
    _Atomic(adil_pool_chunk_fn) for_fn; /* adil_pool_for jobs */
    _Atomic(void *) ctx;
    _Atomic int64_t base; /* chunk numbers passed to for_fn start here */
    atomic_bool stop;
    alignas(CACHE_LINE) _Atomic int64_t done; /* chunks of the current job finished */
    alignas(CACHE_LINE) atomic_int parked;    /* workers waiting on `wake` */
    atomic_bool caller_parked;                /* the caller waits on `finished` */
    pthread_mutex_t mutex;
    pthread_cond_t wake;
    pthread_cond_t finished;
    uint64_t generation; /* the caller's count of jobs */
    int n_threads;
    worker *workers; /* n_threads entries; [0] is the caller */
};

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Spins (pause) until cond holds or about SPIN_NS have passed. */
#define SPIN_UNTIL(cond)                          \
    do {                                          \
        int64_t deadline_ = 0;                    \
        for (int i_ = 1; !(cond); i_++) {         \
            cpu_relax();                          \
            if (i_ % SPINS_PER_CLOCK_READ == 0) { \
                const int64_t t_ = now_ns();      \
                if (deadline_ == 0)               \
                    deadline_ = t_ + SPIN_NS;     \
                else if (t_ > deadline_)          \
                    break;                        \
            }                                     \
        }                                         \
    } while (0)

/* Claims the next chunk of the current job; false when none is left. */
static bool claim(adil_pool *p, uint64_t *w, int64_t *chunk) {
    *w = atomic_load(&p->word);
    while (word_next(*w) < word_n(*w)) {
        if (atomic_compare_exchange_weak(&p->word, w, *w + 1)) {
            *chunk = word_next(*w);
            return true;
        }
    }
    return false;
}

/* Runs chunks of the current job until none is left to claim; returns the
 * exhausted job word. */
static uint64_t run_chunks(adil_pool *p, int ith) {
    uint64_t w;
    int64_t chunk;
    while (claim(p, &w, &chunk)) {
        /* the job cannot change before this chunk is done */
        adil_pool_chunk_fn for_fn = atomic_load_explicit(&p->for_fn, memory_order_relaxed);
        void *ctx = atomic_load_explicit(&p->ctx, memory_order_relaxed);
        if (for_fn != NULL)
            for_fn(ctx, atomic_load_explicit(&p->base, memory_order_relaxed) + chunk, ith);
        else
            atomic_load_explicit(&p->run_fn, memory_order_relaxed)(ctx, (int)chunk, p->n_threads);
        const int64_t n = word_n(w);
        if (atomic_fetch_add(&p->done, 1) + 1 == n && atomic_load(&p->caller_parked)) {
            pthread_mutex_lock(&p->mutex);
            pthread_cond_signal(&p->finished);
            pthread_mutex_unlock(&p->mutex);
        }
    }
    return w;
}

/* Waits until the job word differs from `seen`. */
static void wait_for_job(adil_pool *p, uint64_t seen) {
    SPIN_UNTIL(atomic_load_explicit(&p->word, memory_order_relaxed) != seen);
    if (atomic_load(&p->word) != seen) return;
    pthread_mutex_lock(&p->mutex);
    atomic_fetch_add(&p->parked, 1);
    while (atomic_load(&p->word) == seen) pthread_cond_wait(&p->wake, &p->mutex);
    atomic_fetch_sub(&p->parked, 1);
    pthread_mutex_unlock(&p->mutex);
}

/* Stop is checked after run_chunks, on the word it returns: a worker that
 * woke for a job may find that job finished by the others and the stop word
 * published instead, and would then wait for a word other than the last one
 * for ever.  Stop is stored before the stop word (both sequentially
 * consistent), so a worker that has loaded the stop word sees stop; one that
 * has not will see the stop word change its `seen`. */
static void *worker_main(void *arg) {
    worker *w = arg;
    adil_pool *p = w->pool;
    uint64_t seen = 0;
    for (;;) {
        wait_for_job(p, seen);
        seen = run_chunks(p, w->ith);
        if (atomic_load(&p->stop)) return NULL;
    }
}

adil_status adil_pool_create(int n_threads, adil_pool **out) {
    if (out == NULL || n_threads < 1 || n_threads > ADIL_POOL_MAX_THREADS) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_pool_create: n_threads: expected 1..%d, got %d",
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
    pthread_cond_init(&p->finished, NULL);
    atomic_init(&p->word, 0);
    atomic_init(&p->run_fn, NULL);
    atomic_init(&p->for_fn, NULL);
    atomic_init(&p->ctx, NULL);
    atomic_init(&p->base, 0);
    atomic_init(&p->stop, false);
    atomic_init(&p->done, 0);
    atomic_init(&p->parked, 0);
    atomic_init(&p->caller_parked, false);
    p->generation = 0;
    p->n_threads = n_threads;
    p->workers = ws;
    for (int i = 0; i < n_threads; i++) {
        ws[i] = (worker){.pool = p, .ith = i, .started = false};
    }
    for (int i = 1; i < n_threads; i++) {
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            adil_pool_free(p);
            return adil_fail(ADIL_STATUS_INTERNAL, "adil_pool_create: cannot start thread %d of %d", i,
                             n_threads);
        }
        ws[i].started = true;
    }
    *out = p;
    return ADIL_OK;
}

/* Announces a job of n chunks (0 with stop: the end) and wakes parked workers. */
static void publish(adil_pool *p, int64_t n) {
    atomic_store(&p->done, 0);
    p->generation++;
    atomic_store(&p->word, word_make(p->generation, n));
    if (atomic_load(&p->parked) > 0) {
        pthread_mutex_lock(&p->mutex);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mutex);
    }
}

/* The caller's share: claim chunks, then wait for those the others run. */
static void run_and_wait(adil_pool *p, int64_t n) {
    run_chunks(p, 0);
    SPIN_UNTIL(atomic_load_explicit(&p->done, memory_order_relaxed) == n);
    if (atomic_load(&p->done) == n) return;
    pthread_mutex_lock(&p->mutex);
    atomic_store(&p->caller_parked, true);
    while (atomic_load(&p->done) != n) pthread_cond_wait(&p->finished, &p->mutex);
    atomic_store(&p->caller_parked, false);
    pthread_mutex_unlock(&p->mutex);
}

void adil_pool_free(adil_pool *p) {
    if (p == NULL) {
        return;
    }
    atomic_store(&p->stop, true);
    publish(p, 0);
    for (int i = 1; i < p->n_threads; i++) {
        if (p->workers[i].started) {
            pthread_join(p->workers[i].thread, NULL);
        }
    }
    pthread_cond_destroy(&p->finished);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mutex);
    free(p->workers);
    free(p);
}

int adil_pool_n_threads(const adil_pool *p) { return p != NULL ? p->n_threads : 1; }

void adil_pool_run(adil_pool *p, adil_pool_fn fn, void *ctx) {
    if (p == NULL || p->n_threads == 1) {
        fn(ctx, 0, 1);
        return;
    }
    atomic_store_explicit(&p->run_fn, fn, memory_order_relaxed);
    atomic_store_explicit(&p->for_fn, NULL, memory_order_relaxed);
    atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
    publish(p, p->n_threads);
    run_and_wait(p, p->n_threads);
}

void adil_pool_for(adil_pool *p, int64_t n_chunks, adil_pool_chunk_fn fn, void *ctx) {
    if (p == NULL || p->n_threads == 1 || n_chunks <= 1) {
        for (int64_t c = 0; c < n_chunks; c++) fn(ctx, c, 0);
        return;
    }
    /* jobs of at most MAX_CHUNKS chunks (the word's field) */
    for (int64_t base = 0; base < n_chunks; base += MAX_CHUNKS) {
        const int64_t n = n_chunks - base < MAX_CHUNKS ? n_chunks - base : MAX_CHUNKS;
        atomic_store_explicit(&p->for_fn, fn, memory_order_relaxed);
        atomic_store_explicit(&p->ctx, ctx, memory_order_relaxed);
        atomic_store_explicit(&p->base, base, memory_order_relaxed);
        publish(p, n);
        run_and_wait(p, n);
    }
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
