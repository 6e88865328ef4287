/*
 * test_containers.c — native/common's growing arrays and hash index
 * (adil_containers.h): growth keeps the contents, a size that cannot be had
 * is refused with the array left as it was; the index finds every key,
 * tells a missing key by its empty slot, and keeps what its caller wrote
 * for a repeated key.
 */
#include "adil_common.h"
#include "adil_containers.h"
#include "test_util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void test_grow(void) {
    int32_t *data = NULL;
    size_t cap = 0;
    for (int32_t i = 0; i < 1000; i++) {
        CHECK(adil_grow((void **)&data, &cap, (size_t)i + 1, sizeof *data, "test ids") == ADIL_OK);
        data[i] = i;
    }
    CHECK(cap >= 1000 && cap < 2048 && (cap & (cap - 1)) == 0);
    for (int32_t i = 0; i < 1000; i++) {
        CHECK(data[i] == i);
    }
    /* Room enough: nothing changes. */
    int32_t *before = data;
    size_t cap_before = cap;
    CHECK(adil_grow((void **)&data, &cap, 10, sizeof *data, "test ids") == ADIL_OK);
    CHECK(data == before && cap == cap_before);
    /* More bytes than size_t holds: refused, the array untouched. */
    CHECK(adil_grow((void **)&data, &cap, SIZE_MAX / 2, sizeof *data, "test ids") ==
          ADIL_STATUS_OUT_OF_MEMORY);
    CHECK_HAS(adil_last_error(), "test ids: out of memory for");
    CHECK(data == before && cap == cap_before && data[999] == 999);
    free(data);
}

/* Entries of the index: strings kept by the caller. */
static const char *const WORDS[] = {"alpha", "beta", "gamma", "delta", "", "alpha", "a", "ab"};
#define N_WORDS (sizeof WORDS / sizeof WORDS[0])

typedef struct word_key {
    const char *text;
    size_t len;
} word_key;

static bool word_eq(const void *ctx, uint64_t pos, const void *key) {
    const char *const *words = ctx;
    const word_key *k = key;
    return strlen(words[pos]) == k->len && memcmp(words[pos], k->text, k->len) == 0;
}

static uint32_t *word_slot(const adil_hash_index *ix, const char *text, size_t len) {
    const word_key key = {text, len};
    return adil_hash_index_slot(ix, adil_hash_bytes(ADIL_HASH_SEED, text, len), word_eq, WORDS, &key);
}

static void test_hash_index(void) {
    adil_hash_index ix;
    CHECK(adil_hash_index_init(&ix, N_WORDS, "test words") == ADIL_OK);
    CHECK(ix.mask + 1 == 16);
    for (uint32_t i = 0; i < N_WORDS; i++) {
        uint32_t *slot = word_slot(&ix, WORDS[i], strlen(WORDS[i]));
        if (*slot == 0) {
            *slot = i + 1; /* a repeated word keeps its first position */
        }
    }
    CHECK(*word_slot(&ix, "alpha", 5) == 1);
    CHECK(*word_slot(&ix, "delta", 5) == 4);
    CHECK(*word_slot(&ix, "", 0) == 5);
    CHECK(*word_slot(&ix, "ab", 2) == 8);
    CHECK(*word_slot(&ix, "abc", 2) == 8); /* the length, not the NUL, ends a key */
    CHECK(*word_slot(&ix, "epsilon", 7) == 0);
    CHECK(*word_slot(&ix, "alph", 4) == 0);
    adil_hash_index_free(&ix);
    adil_hash_index_free(&ix); /* idempotent */
    CHECK(word_slot(&ix, "alpha", 5) == NULL);

    /* Pieces hash like the whole. */
    CHECK(adil_hash_bytes(adil_hash_bytes(ADIL_HASH_SEED, "ab", 2), "cd", 2) ==
          adil_hash_bytes(ADIL_HASH_SEED, "abcd", 4));

    /* Capacities: at least twice n, a power of two. */
    CHECK(adil_hash_index_init(&ix, 9, "test") == ADIL_OK && ix.mask + 1 == 32);
    adil_hash_index_free(&ix);
    CHECK(adil_hash_index_init(&ix, 0, "test") == ADIL_OK && ix.mask + 1 == 16);
    adil_hash_index_free(&ix);
    CHECK(adil_hash_index_init(&ix, (uint64_t)ADIL_HASH_INDEX_MAX + 1, "huge") == ADIL_STATUS_OUT_OF_MEMORY);
    CHECK_HAS(adil_last_error(), "huge: an index of 2147483648 entries: expected at most 2147483647");
    CHECK(ix.slots == NULL);
}

int main(void) {
    test_grow();
    test_hash_index();
    return test_report("test_containers");
}
