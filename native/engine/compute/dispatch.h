/*
 * dispatch.h — the traits table of each CPU level: the scalar reference
 * table with the entries that level has SIMD kernels for replaced.  Built
 * once on first use and read-only afterwards; adil_wtype_get() reads the
 * selected level's table (no per-call feature checks).
 */
#ifndef ADIL_DISPATCH_H
#define ADIL_DISPATCH_H

#include "compute/cpu_level.h"
#include "compute/weight_types.h"

/* The scalar reference table, ADIL_WT_COUNT entries (weight_types.c). */
const adil_wtype_traits *adil_wtype_scalar_table(void);

/* The ADIL_WT_COUNT-entry table of `level` (< ADIL_CPU_LEVEL_COUNT). */
const adil_wtype_traits *adil_dispatch_table(adil_cpu_level level);

#endif /* ADIL_DISPATCH_H */
