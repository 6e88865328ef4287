/*
 * cpu_level_hook.c — test hook: the kernel level the library dispatches to
 * ("scalar", "avx2", "avx512"), and the note on an ADIL_CPU request it could
 * not honour, so the Python tests can check that ADIL_CPU took effect.  Like
 * the adil_internal_* hooks of internal/adil_internal.h: exported, not part
 * of the ABI.
 */
#include "adil/adil.h"
#include "compute/cpu_level.h"

ADIL_API const char *adil_internal_cpu_level(void);
ADIL_API const char *adil_internal_cpu_level_note(void);

ADIL_API const char *adil_internal_cpu_level(void) {
    return adil_cpu_level_name();
}

ADIL_API const char *adil_internal_cpu_level_note(void) {
    return adil_cpu_level_note();
}
