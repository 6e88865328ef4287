/*
 * test_rng.h — the xorshift64 generator the native tests draw their random
 * data from: reproducible, and the same in every test.  A test picks its
 * stream by defining TEST_RNG_SEED before including this.
 */
#ifndef TEST_RNG_H
#define TEST_RNG_H

#include <stdint.h>

#ifndef TEST_RNG_SEED
#    define TEST_RNG_SEED 0x9E3779B97F4A7C15u
#endif

static uint64_t rng_state = TEST_RNG_SEED;

static inline uint32_t next_u32(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 16);
}

/* Uniform in [-1, 1), in steps of 1e-6. */
static inline float next_f(void) { return (float)(next_u32() % 2000001) / 1000000.0f - 1.0f; }

#endif /* TEST_RNG_H */
