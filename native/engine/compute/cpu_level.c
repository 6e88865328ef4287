/*
 * cpu_level.c — run-time CPU feature detection and the ADIL_CPU override
 * (see cpu_level.h).  The choice is made once under pthread_once and is
 * read-only afterwards, so kernels never test features in hot loops.
 */
#define _POSIX_C_SOURCE 200809L

#include "compute/cpu_level.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const LEVEL_NAMES[ADIL_CPU_LEVEL_COUNT] = {"scalar", "avx2", "avx512"};

/* Filled once by choose_once(), read-only afterwards. */
static adil_cpu_level selected_level;
static char selected_note[160];
static pthread_once_t selected_once = PTHREAD_ONCE_INIT;

adil_cpu_level adil_cpu_level_supported(void) {
#if defined(__x86_64__) /* the SIMD kernels are built for x86-64 only (kernels.c) */
    /* __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512
     * register state (XGETBV), not only the CPUID bits. */
    __builtin_cpu_init();
    bool avx2 =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    bool avx512 = avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                  __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
                  __builtin_cpu_supports("avx512vnni");
    return avx512 ? ADIL_CPU_AVX512 : avx2 ? ADIL_CPU_AVX2 : ADIL_CPU_SCALAR;
#else
    return ADIL_CPU_SCALAR;
#endif
}

const char *adil_cpu_level_string(adil_cpu_level level) {
    return (unsigned)level < ADIL_CPU_LEVEL_COUNT ? LEVEL_NAMES[level] : "?";
}

bool adil_cpu_level_parse(const char *text, adil_cpu_level *out) {
    for (int i = 0; i < ADIL_CPU_LEVEL_COUNT; i++) {
        if (text != NULL && strcmp(text, LEVEL_NAMES[i]) == 0) {
            *out = (adil_cpu_level)i;
            return true;
        }
    }
    return false;
}

adil_cpu_level adil_cpu_level_choose(const char *text, adil_cpu_level supported, char *note, size_t cap) {
    if (cap > 0) {
        note[0] = '\0';
    }
    if (text == NULL || text[0] == '\0') {
        return supported;
    }
    adil_cpu_level asked;
    if (!adil_cpu_level_parse(text, &asked)) {
        snprintf(note, cap, "ADIL_CPU=%.32s: expected scalar, avx2 or avx512; using %s", text,
                 LEVEL_NAMES[supported]);
        return supported;
    }
    if (asked > supported) {
        snprintf(note, cap, "ADIL_CPU=%s: this CPU supports at most %s; using %s", text,
                 LEVEL_NAMES[supported], LEVEL_NAMES[supported]);
        return supported;
    }
    return asked;
}

static void choose_once(void) {
    selected_level = adil_cpu_level_choose(getenv("ADIL_CPU"), adil_cpu_level_supported(), selected_note,
                                           sizeof selected_note);
}

adil_cpu_level adil_cpu_level_selected(void) {
    pthread_once(&selected_once, choose_once);
    return selected_level;
}

const char *adil_cpu_level_name(void) { return LEVEL_NAMES[adil_cpu_level_selected()]; }

const char *adil_cpu_level_note(void) {
    pthread_once(&selected_once, choose_once);
    return selected_note;
}
