/*
 * clock.c — monotonic time and a sleep that a cancelled flag interrupts.
 *
 * Sleeps are cut into slices of at most 1 ms so that a cancel is seen within
 * about a millisecond, whatever the length of the whole sleep.
 */
#define _POSIX_C_SOURCE 200809L

#include "adil_common.h"

#include <time.h>

double adil_now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1.0e6;
}

void adil_sleep_slice_ms(double ms) {
    if (!(ms > 0.0)) return;
    if (ms > 1.0) ms = 1.0;
    struct timespec ts = {0, (long)(ms * 1.0e6)};
    /* An interrupted nanosleep only shortens the slice; callers loop on the clock. */
    nanosleep(&ts, NULL);
}

bool adil_sleep_ms_cancellable(double ms, adil_cancelled_fn cancelled, void *token) {
    double end = adil_now_ms() + ms;
    for (;;) {
        if (cancelled != NULL && cancelled(token)) return true;
        double left = end - adil_now_ms();
        if (left <= 0.0) return false;
        adil_sleep_slice_ms(left);
    }
}
