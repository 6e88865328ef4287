/*
 * test_kernels.c — the compute layer without Python: half/bfloat16
 * conversions (exhaustive round trip, rounding ties), the facts and kernel
 * tables, the thread pool (every worker runs every job, ranges tile exactly),
 * and matmul / get_rows against a naive dequantize-then-dot reference.
 */
#include "adil_common.h"
#include "compute/matmul.h"
#include "compute/threadpool.h"
#include "compute/kernels.h"
#include "test_util.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- conversions ----------------------------------------------------------- */

static void test_fp16(void) {
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = adil_fp16_to_f32((adil_fp16)h);
        if (isnan(f)) {
            CHECK(isnan(adil_fp16_to_f32(adil_f32_to_fp16(f))));
        } else if (adil_f32_to_fp16(f) != h) {
            fprintf(stderr, "fp16 %04x -> %g -> %04x\n", h, f, adil_f32_to_fp16(f));
            test_failures++;
        }
    }
    CHECK(adil_f32_to_fp16(1.0f) == 0x3C00);
    CHECK(adil_f32_to_fp16(65504.0f) == 0x7BFF);
    CHECK(adil_f32_to_fp16(65519.0f) == 0x7BFF);
    CHECK(adil_f32_to_fp16(65520.0f) == 0x7C00); /* ties away into infinity */
    CHECK(adil_f32_to_fp16(0x1p-24f) == 0x0001); /* smallest subnormal */
    CHECK(adil_f32_to_fp16(0x1p-25f) == 0x0000); /* tie -> even (zero) */
    CHECK(adil_f32_to_fp16(0x1.8p-25f) == 0x0001);
    CHECK(adil_f32_to_fp16(0x1.8p-24f) == 0x0002);      /* 1.5 ulp tie -> even 2 */
    CHECK(adil_f32_to_fp16(1.0f + 0x1p-11f) == 0x3C00); /* tie -> even */
    CHECK(adil_f32_to_fp16(1.0f + 0x1.8p-10f) == 0x3C02);
    CHECK(adil_f32_to_fp16(-2.0f) == 0xC000);
    CHECK(adil_f32_to_fp16(1e-10f) == 0 && adil_f32_to_fp16(-1e-10f) == 0x8000);
    CHECK(adil_bf16_to_f32(adil_f32_to_bf16(1.0f)) == 1.0f);
    CHECK(adil_f32_to_bf16(1.0f + 0x1p-8f) == 0x3F80); /* tie -> even */
    CHECK(adil_f32_to_bf16(1.0f + 0x1.8p-7f) == 0x3F82);
    CHECK(isnan(adil_bf16_to_f32(adil_f32_to_bf16(NAN))));
}

static void test_tables(void) {
    static const uint32_t with_kernels[] = {
        ADIL_WT_F32,  ADIL_WT_F16,    ADIL_WT_BF16,  ADIL_WT_Q4_0,   ADIL_WT_Q4_1, ADIL_WT_Q5_0,
        ADIL_WT_Q5_1, ADIL_WT_Q8_0,   ADIL_WT_Q2_K,  ADIL_WT_Q3_K,   ADIL_WT_Q4_K, ADIL_WT_Q5_K,
        ADIL_WT_Q6_K, ADIL_WT_IQ4_NL, ADIL_WT_MXFP4, ADIL_WT_IQ4_XS,
    };
    for (size_t i = 0; i < sizeof(with_kernels) / sizeof(with_kernels[0]); i++) {
        const adil_wtype_facts *t = adil_wtype_facts_get(with_kernels[i]);
        const adil_wtype_kernels *k = adil_wtype_kernels_get(with_kernels[i]);
        CHECK(t != NULL && k != NULL && adil_wtype_has_kernels(with_kernels[i]));
        const adil_wtype_kernels *act = adil_wtype_kernels_get(k->vec_dot_type);
        CHECK(act != NULL && act->quantize_row != NULL &&
              adil_wtype_facts_get(k->vec_dot_type)->block_size == t->block_size);
        CHECK(adil_row_size(with_kernels[i], 4 * t->block_size) == 4 * t->type_size);
    }
    CHECK(adil_wtype_facts_get(4) == NULL && adil_wtype_facts_get(99) == NULL);
    CHECK(adil_wtype_kernels_get(4) == NULL && adil_wtype_kernels_get(99) == NULL);
    /* known without kernels: the reader accepts it, no model computes with it */
    CHECK(adil_wtype_facts_get(ADIL_WT_I32) != NULL &&
          adil_wtype_kernels_get(ADIL_WT_I32)->dequantize_row == NULL);
    CHECK(strcmp(adil_wtype_name(99), "?") == 0 && strcmp(adil_wtype_name(12), "Q4_K") == 0);
    CHECK(!adil_wtype_has_kernels(ADIL_WT_Q8_K) && !adil_wtype_has_kernels(ADIL_WT_I32));
    CHECK(adil_row_size(ADIL_WT_Q4_K, 255) == 0 && adil_row_size(99, 32) == 0);
}

/* ---- thread pool ---------------------------------------------------------------- */

typedef struct count_job {
    atomic_int runs[8];
    atomic_long sum;
    int64_t n;
} count_job;

static void count_fn(void *ctx, int ith, int nth) {
    count_job *j = ctx;
    atomic_fetch_add(&j->runs[ith], 1);
    int64_t b, e;
    adil_pool_split(j->n, 4, ith, nth, &b, &e);
    long s = 0;
    for (int64_t i = b; i < e; i++) {
        s += (long)i;
    }
    atomic_fetch_add(&j->sum, s);
}

static void test_pool(void) {
    for (int nth = 1; nth <= 4; nth++) {
        adil_pool *pool = NULL;
        CHECK(adil_pool_create(nth, &pool) == ADIL_OK);
        CHECK(adil_pool_n_threads(pool) == nth);
        count_job job;
        memset(&job, 0, sizeof(job));
        job.n = 1001;
        for (int r = 0; r < 2000; r++) {
            adil_pool_run(pool, count_fn, &job);
        }
        for (int i = 0; i < nth; i++) {
            CHECK(atomic_load(&job.runs[i]) == 2000);
        }
        CHECK(atomic_load(&job.sum) == 2000L * (1001L * 1000 / 2));
        adil_pool_free(pool);
    }
    adil_pool *pool = NULL;
    CHECK(adil_pool_create(0, &pool) == ADIL_STATUS_INVALID_ARGUMENT && pool == NULL);
    CHECK(adil_pool_n_threads(NULL) == 1);
    /* split: contiguous, disjoint, whole grains, covering [0, n) */
    for (int64_t n = 0; n < 70; n++) {
        for (int nth = 1; nth <= 5; nth++) {
            int64_t next = 0;
            for (int ith = 0; ith < nth; ith++) {
                int64_t b, e;
                adil_pool_split(n, 16, ith, nth, &b, &e);
                CHECK(b == next && e >= b && (b % 16 == 0 || b == n));
                next = e;
            }
            CHECK(next == n);
        }
    }
}

/* ---- matmul ------------------------------------------------------------------------ */

static uint32_t rng_state = 12345;

static uint32_t next_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 17;
    rng_state ^= rng_state << 5;
    return rng_state;
}

static float next_f(void) { return (float)(next_u32() % 20001) / 10000.0f - 1.0f; }

/* A weight of `type`: quantized from random floats where a quantizer exists,
 * else random bytes with small fp16 scales at the given offsets. */
static void *random_weight(uint32_t type, int64_t rows, int64_t cols) {
    const adil_wtype_kernels *k = adil_wtype_kernels_get(type);
    size_t row = adil_row_size(type, cols);
    uint8_t *w = malloc(row * (size_t)rows);
    float *x = malloc(sizeof(float) * (size_t)cols);
    for (int64_t r = 0; r < rows; r++) {
        if (k->quantize_row != NULL) {
            for (int64_t c = 0; c < cols; c++) {
                x[c] = next_f();
            }
            k->quantize_row(x, w + (size_t)r * row, cols);
            continue;
        }
        for (size_t i = 0; i < row; i++) {
            w[(size_t)r * row + i] = (uint8_t)next_u32();
        }
        /* Q4_K: d and dmin are the first two halves of each 144-byte block. */
        for (size_t b = 0; b < row; b += adil_wtype_facts_get(type)->type_size) {
            adil_fp16 d = adil_f32_to_fp16(0.01f), m = adil_f32_to_fp16(0.002f);
            memcpy(w + (size_t)r * row + b, &d, 2);
            memcpy(w + (size_t)r * row + b + 2, &m, 2);
        }
    }
    free(x);
    return w;
}

static void test_matmul_type(adil_pool *pool, uint32_t type, double budget) {
    const int64_t rows = 37, cols = 512, n_tokens = 7;
    void *w = random_weight(type, rows, cols);
    float *x = malloc(sizeof(float) * (size_t)(n_tokens * cols));
    float *y = malloc(sizeof(float) * (size_t)(n_tokens * rows));
    float *wf = malloc(sizeof(float) * (size_t)(rows * cols));
    for (int64_t i = 0; i < n_tokens * cols; i++) {
        x[i] = next_f();
    }
    adil_weight weight = {type, rows, cols, w, ADIL_LAYOUT_ROWS};
    CHECK(adil_get_rows(&weight, (const int32_t[]){0}, 0, wf) == ADIL_OK);
    for (int32_t r = 0; r < rows; r++) {
        CHECK(adil_get_rows(&weight, &r, 1, wf + r * cols) == ADIL_OK);
    }
    size_t size = adil_matmul_scratch_size(&weight, n_tokens);
    void *scratch = size ? malloc(size) : NULL;
    CHECK(adil_matmul(pool, &weight, x, n_tokens, y, scratch, size) == ADIL_OK);
    double worst = 0;
    for (int64_t t = 0; t < n_tokens; t++) {
        for (int64_t r = 0; r < rows; r++) {
            double ref = 0, scale = 0;
            for (int64_t c = 0; c < cols; c++) {
                ref += (double)wf[r * cols + c] * x[t * cols + c];
                scale += fabs((double)wf[r * cols + c] * x[t * cols + c]);
            }
            double err = fabs(y[t * rows + r] - ref) / (scale > 0 ? scale : 1);
            worst = err > worst ? err : worst;
        }
    }
    if (worst > budget) {
        fprintf(stderr, "matmul %s: relative error %g over budget %g\n", adil_wtype_name(type), worst,
                budget);
        test_failures++;
    }
    if (size > 0) { /* too small a scratch is refused */
        CHECK(adil_matmul(pool, &weight, x, n_tokens, y, scratch, size - 1) == ADIL_STATUS_INVALID_ARGUMENT);
    }
    free(scratch);
    free(wf);
    free(y);
    free(x);
    free(w);
}

static void test_matmul(void) {
    adil_pool *pool = NULL;
    CHECK(adil_pool_create(3, &pool) == ADIL_OK);
    test_matmul_type(pool, ADIL_WT_F32, 1e-6);
    test_matmul_type(pool, ADIL_WT_F16, 1e-6);
    test_matmul_type(pool, ADIL_WT_BF16, 1e-6);
    test_matmul_type(pool, ADIL_WT_Q8_0, 2e-2);
    test_matmul_type(pool, ADIL_WT_Q4_0, 2e-2);
    test_matmul_type(pool, ADIL_WT_Q5_0, 2e-2);
    test_matmul_type(pool, ADIL_WT_Q4_1, 2e-2);
    test_matmul_type(pool, ADIL_WT_Q4_K, 2e-2);

    float x[32] = {0}, y[4];
    adil_weight bad = {ADIL_WT_Q8_K, 1, 256, x, ADIL_LAYOUT_ROWS};
    CHECK(adil_matmul(pool, &bad, x, 1, y, NULL, 0) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_weight odd = {ADIL_WT_Q8_0, 1, 48, x, ADIL_LAYOUT_ROWS};
    CHECK(adil_matmul(pool, &odd, x, 1, y, NULL, 0) == ADIL_STATUS_INVALID_ARGUMENT);
    adil_weight f32 = {ADIL_WT_F32, 4, 8, x, ADIL_LAYOUT_ROWS};
    CHECK(adil_matmul(pool, &f32, x, 0, y, NULL, 0) == ADIL_STATUS_INVALID_ARGUMENT);
    int32_t ids[2] = {1, 4};
    float rows[16];
    CHECK(adil_get_rows(&f32, ids, 2, rows) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(strstr(adil_last_error(), "expected 0..3, got 4") != NULL);
    adil_pool_free(pool);
}

int main(void) {
    test_fp16();
    test_tables();
    test_pool();
    test_matmul();
    return test_report("test_kernels");
}
