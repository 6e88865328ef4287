/*
 * attention_tile.c — ns per cached position of one attention tile (compute/
 * attention.h) at every CPU level this machine supports, with its keys and
 * values in the cache or streamed from memory.
 *
 *   adil_attention_tile [ROWS [SPAN [HEAD_DIM]]]      defaults: 4 1024 256
 *
 * ROWS query rows (4: a decode step of gemma3's GQA group of 4 heads; 16: a
 * prefill tile) over SPAN f16 positions of HEAD_DIM dims.  "in cache": the
 * same keys and values every call; "from memory": a new set each call, out
 * of 64 MiB of them, so each call reads its span from memory as a decode at
 * depth does.  Prints one line per level and case; a benchmark, not a test.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "compute/attention.h"
#include "compute/cpu_level.h"
#include "compute/weight_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct bench {
    int rows;
    int64_t span, dim;
    int n_sets; /* key/value sets, each span × dim halves of keys and of values */
    uint16_t *kv;
    float *q, *o, *scratch, part_max[ADIL_ATT_MAX_ROWS], part_sum[ADIL_ATT_MAX_ROWS];
} bench;

/* Set s's keys (and, after them, its values). */
static const uint16_t *set_keys(const bench *b, int s) {
    return b->kv + (size_t)s * 2 * (size_t)(b->span * b->dim);
}

/* Median-free but steady: the fastest of 5 timings of `calls` tiles. */
static double ns_per_position(const bench *b, adil_att_fn fn, int sets, int calls) {
    double best = 1e30;
    for (int rep = 0; rep < 5; rep++) {
        const double t0 = now_s();
        for (int c = 0; c < calls; c++) {
            adil_att_tile t;
            memset(&t, 0, sizeof t);
            const uint16_t *k = set_keys(b, c % sets);
            t.n_rows = b->rows;
            t.kv_type = ADIL_KV_F16;
            t.k = k;
            t.v = k + b->span * b->dim;
            t.k_stride = t.v_stride = (size_t)b->dim;
            t.head_dim = t.head_dim_v = b->dim;
            t.scale = 0.0625f;
            t.scratch = b->scratch;
            t.part_max = (float *)b->part_max;
            t.part_sum = (float *)b->part_sum;
            for (int r = 0; r < b->rows; r++) {
                t.q[r] = b->q + r * b->dim;
                t.o[r] = b->o + r * b->dim;
                t.first[r] = 0;
                t.last[r] = b->span - 1;
            }
            fn(&t);
        }
        const double ns = (now_s() - t0) * 1e9 / ((double)calls * (double)b->span);
        best = ns < best ? ns : best;
    }
    return best;
}

int main(int argc, char **argv) {
    bench b = {.rows = argc > 1 ? atoi(argv[1]) : 4,
               .span = argc > 2 ? atoll(argv[2]) : 1024,
               .dim = argc > 3 ? atoll(argv[3]) : 256};
    if (b.rows < 1 || b.rows > ADIL_ATT_MAX_ROWS || b.span < 1 || b.span > (1 << 20) || b.dim < 1 ||
        b.dim > 1024) {
        fprintf(stderr, "usage: %s [ROWS 1..%d [SPAN 1..2^20 [HEAD_DIM 1..1024]]]\n", argv[0],
                ADIL_ATT_MAX_ROWS);
        return 2;
    }
    const size_t set_bytes = 2 * (size_t)(b.span * b.dim) * sizeof(uint16_t);
    b.n_sets = (int)((64u << 20) / set_bytes) > 2 ? (int)((64u << 20) / set_bytes) : 2;
    b.kv = malloc(set_bytes * (size_t)b.n_sets);
    b.q = malloc(sizeof(float) * (size_t)(b.rows * b.dim));
    b.o = malloc(sizeof(float) * (size_t)(b.rows * b.dim));
    b.scratch = malloc(sizeof(float) * ADIL_ATT_MAX_ROWS * (size_t)b.span);
    if (!b.kv || !b.q || !b.o || !b.scratch) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    const size_t halves = set_bytes / sizeof(uint16_t) * (size_t)b.n_sets;
    for (size_t i = 0; i < halves; i++) b.kv[i] = adil_f32_to_fp16((float)(i * 7919 % 1000) / 1000.0f - 0.5f);
    for (int64_t i = 0; i < b.rows * b.dim; i++) b.q[i] = (float)(i * 31 % 17) / 17.0f - 0.5f;

    printf("tile: %d rows x %lld f16 positions x %lld dims; %d sets of keys and values for \"from memory\"\n",
           b.rows, (long long)b.span, (long long)b.dim, b.n_sets);
    const int calls = (int)(4e6 / (double)(b.span * b.rows)) + 1;
    for (int level = ADIL_CPU_AVX2; level <= (int)adil_cpu_level_supported(); level++) {
        const adil_att_fn fn = adil_attention_kernel_at(level);
        const double hot = ns_per_position(&b, fn, 1, calls);
        const double cold = ns_per_position(&b, fn, b.n_sets, b.n_sets);
        printf("%-7s in cache %7.1f ns per position | from memory %7.1f ns per position (%.1f GB/s of keys "
               "and values)\n",
               adil_cpu_level_string((adil_cpu_level)level), hot, cold, (double)(2 * b.dim * 2) / cold);
    }
    return 0;
}
