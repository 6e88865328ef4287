/*
 * errors.c — status names and the per-thread last-error message.
 *
 * The message buffer is thread-local so that two threads failing at the same
 * time never see each other's message; it is the only thread-local state of
 * an engine.  (The CPU engine's other statics are set once and read-only
 * afterwards: the kernel level, its kernel tables, the component info; see
 * "Rules of the ABI" in adil.h.)
 */
#include "adil_common.h"

#include <stdarg.h>
#include <stdio.h>

/* Long enough for a message naming a path, a field and two numbers. */
#define ADIL_ERROR_CAPACITY 1024

static _Thread_local char last_error[ADIL_ERROR_CAPACITY];

adil_status adil_fail(adil_status status, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    /* vsnprintf truncates and always terminates: a long path cannot overflow. */
    vsnprintf(last_error, sizeof last_error, fmt, args);
    va_end(args);
    return status;
}

void adil_clear_error(void) { last_error[0] = '\0'; }

ADIL_API const char *adil_last_error(void) { return last_error; }

ADIL_API const char *adil_status_string(adil_status status) {
    switch (status) {
    case ADIL_OK:
        return "ok";
    case ADIL_STATUS_CANCELLED:
        return "cancelled";
    case ADIL_STATUS_DEADLINE:
        return "deadline";
    case ADIL_STATUS_BUSY:
        return "busy";
    case ADIL_STATUS_MODEL_NOT_READY:
        return "model_not_ready";
    case ADIL_STATUS_CONTEXT_LENGTH:
        return "context_length";
    case ADIL_STATUS_CAPABILITY:
        return "capability";
    case ADIL_STATUS_OUTPUT_VALIDATION:
        return "output_validation";
    case ADIL_STATUS_MODEL_FORMAT:
        return "model_format";
    case ADIL_STATUS_HOST_REFUSED:
        return "host_refused";
    case ADIL_STATUS_INVALID_ARGUMENT:
        return "invalid_argument";
    case ADIL_STATUS_IO:
        return "io";
    case ADIL_STATUS_OUT_OF_MEMORY:
        return "out_of_memory";
    case ADIL_STATUS_INTERNAL:
        return "internal";
    }
    /* A value from a newer header, or garbage from a host. */
    return "unknown";
}
