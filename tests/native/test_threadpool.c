/*
 * test_threadpool.c — the worker pool (compute/threadpool.h):
 *   - adil_pool_run calls every part [0, nth) exactly once, for pools of 1..5
 *     threads and a NULL pool;
 *   - adil_pool_for runs every chunk exactly once (0, 1, a few, many chunks),
 *     with ith < n_threads and never two chunks with the same ith at once;
 *   - thousands of back-to-back jobs (the hot path), and jobs after the
 *     workers have parked (an idle pause longer than their spin);
 *   - a pool is freed while idle or right after a job;
 *   - many create / job / free cycles with more threads than cores, where a
 *     worker that woke for the last job is often still on its way when the
 *     pool is freed (it once missed the stop and adil_pool_free hung in
 *     pthread_join).  A watchdog turns a hang into a failure.
 * Run it under -DADIL_SANITIZE=ON and -DADIL_TSAN=ON for the races.
 */
#define _POSIX_C_SOURCE 200809L

#include "compute/threadpool.h"
#include "test_util.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_CHUNKS 5000

typedef struct counts {
    atomic_int hits[MAX_CHUNKS];
    atomic_int busy[ADIL_POOL_MAX_THREADS]; /* chunks running per ith */
    atomic_int bad_ith;
    atomic_int overlap;
    int nth_seen;
    int n_threads;
} counts;

static void part(void *ctx, int ith, int nth) {
    counts *c = ctx;
    if (ith < 0 || ith >= nth || nth != c->n_threads)
        atomic_fetch_add(&c->bad_ith, 1);
    else
        atomic_fetch_add(&c->hits[ith], 1);
}

static void chunk(void *ctx, int64_t k, int ith) {
    counts *c = ctx;
    if (ith < 0 || ith >= c->n_threads || k < 0 || k >= MAX_CHUNKS) {
        atomic_fetch_add(&c->bad_ith, 1);
        return;
    }
    if (atomic_fetch_add(&c->busy[ith], 1) != 0) atomic_fetch_add(&c->overlap, 1);
    volatile int spin = 0;
    for (int i = 0; i < (int)(k % 7) * 50; i++) spin = spin + i; /* uneven chunks */
    atomic_fetch_add(&c->hits[k], 1);
    atomic_fetch_sub(&c->busy[ith], 1);
}

static counts *fresh(int n_threads) {
    counts *c = calloc(1, sizeof *c);
    c->n_threads = n_threads;
    return c;
}

static void check_all_once(counts *c, int64_t n) {
    for (int64_t i = 0; i < n; i++) CHECK(atomic_load(&c->hits[i]) == 1);
    for (int64_t i = n; i < MAX_CHUNKS; i++) CHECK(atomic_load(&c->hits[i]) == 0);
    CHECK(atomic_load(&c->bad_ith) == 0);
    CHECK(atomic_load(&c->overlap) == 0);
}

static void sleep_ms(int ms) {
    struct timespec ts = {0, ms * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_pool(int n_threads) {
    adil_pool *pool = NULL;
    CHECK(adil_pool_create(n_threads, &pool) == ADIL_OK);
    CHECK(adil_pool_n_threads(pool) == n_threads);
    const int64_t sizes[] = {0, 1, 2, 3, 17, 1000, MAX_CHUNKS};
    for (int round = 0; round < 3; round++) {
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
            counts *c = fresh(n_threads);
            adil_pool_for(pool, sizes[s], chunk, c);
            check_all_once(c, sizes[s]);
            free(c);
        }
        counts *c = fresh(n_threads);
        adil_pool_run(pool, part, c);
        check_all_once(c, n_threads);
        free(c);
        if (round == 1) sleep_ms(20); /* the workers park; the next job wakes them */
    }
    /* the hot path: many small jobs back to back */
    for (int i = 0; i < 3000; i++) {
        counts *c = fresh(n_threads);
        if (i % 2)
            adil_pool_run(pool, part, c);
        else
            adil_pool_for(pool, 1 + i % 9, chunk, c);
        check_all_once(c, i % 2 ? n_threads : 1 + i % 9);
        free(c);
    }
    adil_pool_free(pool);
}

/* A tiny job: every part counts itself. */
static void tick(void *ctx, int ith, int nth) {
    (void)ith;
    (void)nth;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

static void tick_chunk(void *ctx, int64_t k, int ith) {
    (void)k;
    (void)ith;
    atomic_fetch_add((atomic_int *)ctx, 1);
}

#define RACE_THREADS 8 /* more than the cores of a CI machine */
#define RACE_LOOPS   4 /* loops at once, so that workers are often preempted */
#define RACE_CYCLES  400

/* Pools created, given one or two tiny jobs and freed at once, over and
 * over; every 4th cycle the workers park first, so the job wakes them.  The
 * free races with workers still waking for the last job. */
static void *free_races_late_workers(void *arg) {
    atomic_int *bad = arg;
    for (int cycle = 0; cycle < RACE_CYCLES; cycle++) {
        adil_pool *pool = NULL;
        if (adil_pool_create(RACE_THREADS, &pool) != ADIL_OK) {
            atomic_fetch_add(bad, 1);
            return NULL;
        }
        if (cycle % 4 == 0) sleep_ms(2); /* longer than the workers' spin */
        atomic_int n = 0;
        adil_pool_run(pool, tick, &n);
        if (cycle % 2) adil_pool_for(pool, 3, tick_chunk, &n);
        if (atomic_load(&n) != RACE_THREADS + (cycle % 2 ? 3 : 0)) atomic_fetch_add(bad, 1);
        adil_pool_free(pool);
    }
    return NULL;
}

static void test_free_races_late_workers(void) {
    pthread_t loops[RACE_LOOPS];
    atomic_int bad = 0;
    for (int i = 0; i < RACE_LOOPS; i++)
        CHECK(pthread_create(&loops[i], NULL, free_races_late_workers, &bad) == 0);
    for (int i = 0; i < RACE_LOOPS; i++) pthread_join(loops[i], NULL);
    CHECK(atomic_load(&bad) == 0);
}

/* A hang fails the test (and says where) instead of stalling ctest. */
static void on_alarm(int sig) {
    (void)sig;
    static const char msg[] = "test_threadpool: watchdog: no end after 120 s (a pool hangs)\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(2);
}

int main(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    alarm(120);
    test_free_races_late_workers();
    for (int n = 1; n <= 5; n++) test_pool(n);
    /* a NULL pool runs everything on the caller */
    counts *c = fresh(1);
    adil_pool_run(NULL, part, c);
    check_all_once(c, 1);
    free(c);
    c = fresh(1);
    adil_pool_for(NULL, 10, chunk, c);
    check_all_once(c, 10);
    free(c);
    CHECK(adil_pool_n_threads(NULL) == 1);
    adil_pool *pool = NULL;
    CHECK(adil_pool_create(0, &pool) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_pool_create(ADIL_POOL_MAX_THREADS + 1, &pool) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_pool_create(3, &pool) == ADIL_OK);
    adil_pool_free(pool); /* freed without a job */
    adil_pool_free(NULL);
    return test_report("test_threadpool");
}
