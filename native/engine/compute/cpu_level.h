/*
 * cpu_level.h — which kernel set (scalar, AVX2, AVX-512) the engine runs.
 *
 * The level is decided once per process, on first use: the best level this
 * CPU (and OS) supports, unless the environment variable ADIL_CPU asks for a
 * lower one:
 *     ADIL_CPU=scalar   the portable reference kernels
 *     ADIL_CPU=avx2     AVX2 + FMA + F16C
 *     ADIL_CPU=avx512   AVX-512 F, BW, VL, DQ and VNNI (plus the AVX2 set)
 * A request above what the CPU has, or an unknown value, is not an error: the
 * engine falls back to the best supported level and says why in
 * adil_cpu_level_note() (so a CI script that forces avx512 on an older
 * runner keeps working, and the component info shows what really ran).
 * Unset or empty ADIL_CPU means "best".
 */
#ifndef ADIL_CPU_LEVEL_H
#define ADIL_CPU_LEVEL_H

#include <stdbool.h>
#include <stddef.h>

typedef enum adil_cpu_level {
    ADIL_CPU_SCALAR = 0,
    ADIL_CPU_AVX2 = 1,
    ADIL_CPU_AVX512 = 2,
    ADIL_CPU_LEVEL_COUNT
} adil_cpu_level;

/* The best level this CPU runs (feature flags checked at run time). */
adil_cpu_level adil_cpu_level_supported(void);

/* The level the kernel tables dispatch to (ADIL_CPU applied; decided once). */
adil_cpu_level adil_cpu_level_selected(void);

/* Name of the selected level: "scalar", "avx2" or "avx512" (for the
 * component info's cpu_features and the bench). */
const char *adil_cpu_level_name(void);

/* "" when ADIL_CPU was unset or honoured; else one sentence saying what was
 * asked and what is used instead. */
const char *adil_cpu_level_note(void);

/* Name of any level ("?" when out of range). */
const char *adil_cpu_level_string(adil_cpu_level level);

/* Parses "scalar" / "avx2" / "avx512" (exact, lower case). */
bool adil_cpu_level_parse(const char *text, adil_cpu_level *out);

/* The decision rule, pure so tests can check it: the level used for the
 * request `text` (NULL or "" = best) on a CPU whose best is `supported`;
 * writes the note (possibly "") into note[cap]. */
adil_cpu_level adil_cpu_level_choose(const char *text, adil_cpu_level supported, char *note, size_t cap);

#endif /* ADIL_CPU_LEVEL_H */
