/*
 * fuzz_require.h — the fuzz targets' invariant check: a broken invariant
 * aborts, which libFuzzer reports as a crash together with the input.
 */
#ifndef ADIL_FUZZ_REQUIRE_H
#define ADIL_FUZZ_REQUIRE_H

#include <stdio.h>
#include <stdlib.h>

#define REQUIRE(cond)                                                                    \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

#endif
