/*
 * cpu_level_hook.c — the hooks that tell which kernel level the library
 * dispatches to and the note on an ADIL_CPU request it could not honour
 * (see adil_internal.h).
 */
#include "adil_internal.h"

#include "compute/cpu_level.h"

ADIL_API const char *adil_internal_cpu_level(void) { return adil_cpu_level_name(); }

ADIL_API const char *adil_internal_cpu_level_note(void) { return adil_cpu_level_note(); }
