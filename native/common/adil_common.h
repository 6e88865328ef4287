/*
 * adil_common.h — internal helpers shared by every engine built from this
 * tree (the CPU engine and the reference stub).  Not part of the ABI.
 *
 * Implemented in native/common/: errors.c (status strings, per-thread last
 * error), params.c (defaults and struct_size checks), cancel_flag.c, clock.c,
 * files.c (opening a model's file); json.c (adil_json.h, a strict JSON reader).
 */
#ifndef ADIL_COMMON_H
#define ADIL_COMMON_H

#include "adil/adil.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- errors ---------------------------------------------------------- */

/* Records a printf-style message as the calling thread's last error and
 * returns `status`, so that callers can write
 *     return adil_fail(ADIL_STATUS_MODEL_FORMAT, "gguf: ...: expected %u, got %u", a, b); */
adil_status adil_fail(adil_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clears the calling thread's last error (called on entry of ABI functions
 * that succeed, so adil_last_error() never reports a stale failure). */
void adil_clear_error(void);

/* ---- params ---------------------------------------------------------- */

/* The two halves of adil.h's struct_size rule; every struct an engine takes
 * from or gives to a host goes through one of them, with `min_size` the
 * struct's ADIL_SIZE_2_0_* from adil.h. */

/* Copies a caller's params struct into `dst` (dst_size bytes, already filled
 * with defaults) after checking its struct_size: only the first
 * min(src->struct_size, dst_size) bytes are read, and dst->struct_size
 * becomes dst_size.  ADIL_STATUS_INVALID_ARGUMENT with a message naming
 * `what` when struct_size is smaller than `min_size`.  `src` may be NULL
 * (defaults stay). */
adil_status adil_copy_params(void *dst, size_t dst_size, const void *src, size_t min_size, const char *what);

/* Writes an engine-filled struct `src` (of src_size bytes, a full struct of
 * this tree) into a caller's out struct `dst`, whose struct_size the caller
 * set: only the first min(dst->struct_size, src_size) bytes are written and
 * dst->struct_size is kept.  ADIL_STATUS_INVALID_ARGUMENT (naming `what`) for
 * a NULL dst or a struct_size smaller than `min_size`. */
adil_status adil_copy_out(void *dst, const void *src, size_t src_size, size_t min_size, const char *what);

/* Fills a component-info struct with this tree's struct sizes and ABI;
 * `capabilities` is the engine's comma-separated optional features (2.1). */
void adil_component_fill(adil_component_info *info, uint32_t abi_major, uint32_t abi_minor,
                         uint32_t host_major_accepted, const char *engine_name, const char *engine_version,
                         const char *backends, const char *cpu_features, const char *capabilities);

/* Checks a host against the major an engine accepts. */
adil_status adil_check_host(const adil_host_info *host, uint32_t host_major_accepted);

/* ---- cancel flags ---------------------------------------------------- */

struct adil_cancel_flag {
    atomic_int set;
};

/* ---- clock ----------------------------------------------------------- */

/* Monotonic milliseconds (CLOCK_MONOTONIC). */
double adil_now_ms(void);

/* Sleeps min(ms, 1) milliseconds: one slice of a loop that checks flags and
 * deadlines between slices.  Does nothing for ms <= 0. */
void adil_sleep_slice_ms(double ms);

/* Sleeps `ms` milliseconds in slices of at most 1 ms, returning early (true)
 * as soon as cancelled(token) is non-zero.  cancelled may be NULL. */
bool adil_sleep_ms_cancellable(double ms, adil_cancelled_fn cancelled, void *token);

/* ---- files ---------------------------------------------------------- */

/* What a regular file was when it was opened: a later fstat that gives
 * another size or modification time means it was written or truncated. */
typedef struct adil_file_id {
    uint64_t size;
    int64_t mtime_sec, mtime_nsec;
} adil_file_id;

/* Opens `path` read-only and close-on-exec without blocking (a FIFO with no
 * writer would block open() for ever), and refuses anything but a regular
 * file: ADIL_STATUS_IO with "<what>: '<path>': expected a regular file, got
 * a directory" (a named pipe, a character device, ...), or naming errno.
 * On success *fd is open (blocking reads) and *id describes the file. */
adil_status adil_open_regular_file(const char *path, const char *what, int *fd, adil_file_id *id);

/* The identity of the open file `fd` now (one fstat); ADIL_STATUS_IO naming
 * `path` when fstat fails. */
adil_status adil_file_id_now(int fd, const char *path, adil_file_id *id);

bool adil_file_id_equal(const adil_file_id *a, const adil_file_id *b);

/* Reads exactly `size` bytes from fd into buf (retrying short reads);
 * ADIL_STATUS_IO naming `what` and `path` on an error or an early end (the
 * file shrank since it was opened). */
adil_status adil_read_fd(int fd, const char *path, const char *what, void *buf, size_t size);

#endif /* ADIL_COMMON_H */
