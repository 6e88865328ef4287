/*
 * test_sampler.c — the sampling chain (text/sampler.h): greedy and its ties,
 * top-k / top-p / min-p cuts, the repetition penalty, temperature, seeded
 * determinism, the empirical distribution at temperature 1, degenerate rows,
 * sampling among a subset of ids (a grammar's sparse mask), and the
 * parameter checks.
 */
#include "adil_common.h"
#include "text/sampler.h"
#include "test_util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define N_VOCAB 8

/* Sampling params with every filter off at temperature `temp`. */
static adil_sampling_params plain(float temp, uint64_t seed) {
    adil_sampling_params p;
    adil_sampling_default_params(&p);
    p.temperature = temp;
    p.top_k = 0;
    p.top_p = 1.0f;
    p.min_p = 0.0f;
    p.repeat_penalty = 1.0f;
    p.seed = seed;
    return p;
}

/* One draw from a fresh copy of `logits` (the sampler modifies its input). */
static int32_t draw(adil_sampler *s, const float *logits) {
    float row[N_VOCAB];
    memcpy(row, logits, sizeof row);
    return adil_sampler_sample(s, row);
}

static adil_sampler *make(const adil_sampling_params *p) {
    adil_sampler *s = NULL;
    CHECK(adil_sampler_new(p, N_VOCAB, &s) == ADIL_OK);
    return s;
}

static const float LOGITS[N_VOCAB] = {1.0f, 3.0f, 2.5f, -1.0f, 3.0f, 0.0f, 2.9f, -5.0f};

static void test_greedy(void) {
    adil_sampling_params p = plain(0.0f, 1);
    adil_sampler *s = make(&p);
    CHECK(draw(s, LOGITS) == 1); /* tie between 1 and 4: the lower id */
    float nan_row[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) nan_row[i] = NAN;
    nan_row[5] = 0.0f;
    CHECK(draw(s, nan_row) == 5); /* NaN never wins */
    adil_sampler_free(s);
}

static void test_top_k_one_is_greedy(void) {
    adil_sampling_params p = plain(1.5f, 99);
    p.top_k = 1;
    adil_sampler *s = make(&p);
    for (int i = 0; i < 100; i++) CHECK(draw(s, LOGITS) == 1);
    adil_sampler_free(s);
}

static void test_top_k_keeps_k_best(void) {
    adil_sampling_params p = plain(5.0f, 3);
    p.top_k = 3; /* ids 1, 4 (3.0) and 6 (2.9) */
    adil_sampler *s = make(&p);
    int seen[N_VOCAB] = {0};
    for (int i = 0; i < 2000; i++) seen[draw(s, LOGITS)]++;
    CHECK(seen[1] > 0 && seen[4] > 0 && seen[6] > 0);
    CHECK(seen[0] + seen[2] + seen[3] + seen[5] + seen[7] == 0);
    adil_sampler_free(s);
}

static void test_top_p_and_min_p(void) {
    /* p(0) ~ 0.84, p(1) ~ 0.11, the rest small */
    const float row[N_VOCAB] = {4.0f, 2.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, -10.0f};
    adil_sampling_params p = plain(1.0f, 5);
    p.top_p = 0.5f; /* the first token alone reaches 0.5 */
    adil_sampler *s = make(&p);
    for (int i = 0; i < 200; i++) CHECK(draw(s, row) == 0);
    adil_sampler_free(s);

    p = plain(1.0f, 5);
    p.min_p = 0.2f; /* token 1 has 0.135 of token 0's probability: cut */
    s = make(&p);
    for (int i = 0; i < 200; i++) CHECK(draw(s, row) == 0);
    adil_sampler_free(s);

    p = plain(1.0f, 5);
    p.min_p = 0.1f; /* now token 1 stays, the zeros (0.018) go */
    s = make(&p);
    int seen[N_VOCAB] = {0};
    for (int i = 0; i < 2000; i++) seen[draw(s, row)]++;
    CHECK(seen[0] > 0 && seen[1] > 0 && seen[0] + seen[1] == 2000);
    adil_sampler_free(s);
}

static void test_distribution_at_temperature_one(void) {
    const float row[N_VOCAB] = {0.0f, 1.0f, 2.0f, 0.5f, -1.0f, 1.5f, 0.0f, -2.0f};
    double z = 0.0, want[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) z += exp(row[i]);
    for (int i = 0; i < N_VOCAB; i++) want[i] = exp(row[i]) / z;
    adil_sampling_params p = plain(1.0f, 2024);
    adil_sampler *s = make(&p);
    const int n = 200000;
    int seen[N_VOCAB] = {0};
    for (int i = 0; i < n; i++) seen[draw(s, row)]++;
    for (int i = 0; i < N_VOCAB; i++) {
        const double got = (double)seen[i] / n;
        const double sd = sqrt(want[i] * (1 - want[i]) / n);
        CHECK(fabs(got - want[i]) < 5 * sd); /* 5 sigma: never flaky with a fixed seed */
    }
    adil_sampler_free(s);
}

static void test_temperature_sharpens(void) {
    const float row[N_VOCAB] = {1.0f, 1.2f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
    adil_sampling_params p = plain(0.05f, 11);
    adil_sampler *s = make(&p);
    int top = 0;
    for (int i = 0; i < 1000; i++) top += draw(s, row) == 1;
    CHECK(top > 980); /* exp(0.2 / 0.05) = 55 : 1 */
    adil_sampler_free(s);
}

static void test_repetition_penalty(void) {
    adil_sampling_params p = plain(0.0f, 1);
    p.repeat_penalty = 2.0f;
    p.repeat_last_n = 2;
    adil_sampler *s = make(&p);
    CHECK(draw(s, LOGITS) == 1);
    adil_sampler_accept(s, 1);
    adil_sampler_accept(s, 1); /* counted once: 3.0 -> 1.5 */
    CHECK(draw(s, LOGITS) == 4);
    adil_sampler_accept(s, 4); /* window of 2: {1, 4} penalised */
    CHECK(draw(s, LOGITS) == 6);
    adil_sampler_accept(s, 6); /* window now {4, 6}: 1 is free again */
    CHECK(draw(s, LOGITS) == 1);
    adil_sampler_reset(s);
    float neg[N_VOCAB] = {-1.0f, -1.5f, -9, -9, -9, -9, -9, -9};
    adil_sampler_accept(s, 0); /* negative logits are multiplied: -1 -> -2 */
    CHECK(draw(s, neg) == 1);
    adil_sampler_free(s);
}

static void test_seeded_determinism(void) {
    adil_sampling_params p = plain(1.0f, 42);
    adil_sampler *a = make(&p), *b = make(&p);
    p.seed = 43;
    adil_sampler *c = make(&p);
    int same_ab = 1, same_ac = 1;
    for (int i = 0; i < 200; i++) {
        const int32_t x = draw(a, LOGITS), y = draw(b, LOGITS), z = draw(c, LOGITS);
        same_ab &= x == y;
        same_ac &= x == z;
    }
    CHECK(same_ab);
    CHECK(!same_ac);
    adil_sampler_free(a);
    adil_sampler_free(b);
    adil_sampler_free(c);
}

static void test_bad_params(void) {
    adil_sampler *s = NULL;
    adil_sampling_params p = plain(-1.0f, 0);
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT && !s);
    CHECK(strstr(adil_last_error(), "temperature") != NULL);
    p = plain(1.0f, 0);
    p.top_p = 0.0f;
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    p = plain(1.0f, 0);
    p.min_p = 1.5f;
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    p = plain(1.0f, 0);
    p.repeat_penalty = 0.0f;
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    p = plain(1.0f, 0);
    p.repeat_last_n = -1;
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    p = plain(1.0f, 0);
    p.struct_size = 4;
    CHECK(adil_sampler_new(&p, N_VOCAB, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_sampler_new(NULL, 0, &s) == ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(adil_sampler_new(NULL, N_VOCAB, &s) == ADIL_OK && s); /* defaults */
    adil_sampler_free(s);
    adil_sampler_free(NULL);
}

/* Sampling among some ids, or under a mask of them, draws what sampling
 * the whole row draws when every other logit is -INFINITY: same seeds, same
 * tokens, every setting. */
static void test_among_equals_masked(void) {
    static const int32_t ids[] = {1, 2, 5, 6};
    const uint32_t mask = (1u << 1) | (1u << 2) | (1u << 5) | (1u << 6);
    const float logits[N_VOCAB] = {3.0f, 0.5f, 1.0f, 2.5f, -1.0f, 1.0f, 0.25f, 4.0f};
    float masked[N_VOCAB];
    for (int i = 0; i < N_VOCAB; i++) masked[i] = -INFINITY;
    for (size_t i = 0; i < 4; i++) masked[ids[i]] = logits[ids[i]];
    const float temps[] = {0.0f, 0.7f, 1.5f};
    for (size_t t = 0; t < 3; t++)
        for (int top_k = 0; top_k <= 3; top_k += 3) {
            adil_sampling_params p = plain(temps[t], 42);
            p.top_k = top_k;
            p.top_p = 0.9f;
            p.min_p = 0.02f;
            p.repeat_penalty = 1.3f;
            adil_sampler *a = make(&p), *b = make(&p), *c = make(&p);
            adil_sampler_accept(a, 2);
            adil_sampler_accept(b, 2);
            adil_sampler_accept(c, 2);
            for (int draw_i = 0; draw_i < 50; draw_i++) {
                float row_a[N_VOCAB], row_b[N_VOCAB];
                memcpy(row_a, masked, sizeof row_a);
                memcpy(row_b, logits, sizeof row_b);
                float row_c[N_VOCAB];
                memcpy(row_c, logits, sizeof row_c);
                const int32_t x = adil_sampler_sample(a, row_a);
                const int32_t y = adil_sampler_sample_among(b, row_b, ids, 4);
                const int32_t z = adil_sampler_sample_masked(c, row_c, &mask, 4);
                CHECK(x == y && y == z);
                CHECK(y == 1 || y == 2 || y == 5 || y == 6);
            }
            adil_sampler_free(a);
            adil_sampler_free(b);
            adil_sampler_free(c);
        }
}

int main(void) {
    test_among_equals_masked();
    test_greedy();
    test_top_k_one_is_greedy();
    test_top_k_keeps_k_best();
    test_top_p_and_min_p();
    test_distribution_at_temperature_one();
    test_temperature_sharpens();
    test_repetition_penalty();
    test_seeded_determinism();
    test_bad_params();
    return test_report("test_sampler");
}
