/*
 * test_util.h — what every native test shares: one failure counter, CHECK
 * (counts a failed condition and says where), CHECK_HAS (a message must
 * contain a needle) and test_report (the summary line and the exit status).
 * A test that needs _POSIX_C_SOURCE defines it before including this.
 */
#ifndef TEST_UTIL_H
#define TEST_UTIL_H

#include <stdio.h>
#include <string.h>

static int test_failures;

#define CHECK(cond)                                                                  \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            test_failures++;                                                         \
        }                                                                            \
    } while (0)

/* Checks that a message contains `needle`. */
#define CHECK_HAS(message, needle)                                                                       \
    do {                                                                                                 \
        const char *msg_ = (message);                                                                    \
        if (strstr(msg_, (needle)) == NULL) {                                                            \
            fprintf(stderr, "%s:%d: message \"%s\" lacks \"%s\"\n", __FILE__, __LINE__, msg_, (needle)); \
            test_failures++;                                                                             \
        }                                                                                                \
    } while (0)

/* The summary line; returns main's exit status (1 if any check failed). */
static inline int test_report(const char *name) {
    if (test_failures == 0)
        printf("%s: all checks passed\n", name);
    else
        printf("%s: %d check(s) failed\n", name, test_failures);
    return test_failures == 0 ? 0 : 1;
}

#endif /* TEST_UTIL_H */
