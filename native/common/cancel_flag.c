/*
 * cancel_flag.c — a flag for one piece of work (a generation and the tools it
 * leads to).  Setting it is one atomic store, so it is safe from any thread
 * and from a signal handler; reading it is one atomic load, so the generation
 * loop can poll it before every token.
 */
#include "adil_common.h"

#include <stdlib.h>

ADIL_API adil_status adil_cancel_flag_new(adil_cancel_flag **out) {
    if (out == NULL)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_cancel_flag_new: expected an out pointer, got NULL");
    *out = NULL;
    adil_cancel_flag *flag = malloc(sizeof *flag);
    if (flag == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_cancel_flag_new: could not allocate %zu bytes",
                         sizeof *flag);
    atomic_init(&flag->set, 0);
    *out = flag;
    adil_clear_error();
    return ADIL_OK;
}

ADIL_API void adil_cancel_flag_set(adil_cancel_flag *flag) {
    if (flag != NULL) atomic_store_explicit(&flag->set, 1, memory_order_release);
}

ADIL_API int adil_cancel_flag_is_set(void *flag) {
    if (flag == NULL) return 0;
    return atomic_load_explicit(&((adil_cancel_flag *)flag)->set, memory_order_acquire) != 0;
}

ADIL_API void adil_cancel_flag_free(adil_cancel_flag *flag) { free(flag); }
