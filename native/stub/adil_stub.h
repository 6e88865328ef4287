/*
 * adil_stub.h — what the reference stub engine exports besides the ABI of
 * adil.h.  Test-only; hosts must not depend on it.
 */
#ifndef ADIL_STUB_H
#define ADIL_STUB_H

#include "adil/adil.h"

/* A native tool for cancellation tests, of type adil_native_tool_fn.
 * Arguments: {"ms": N} with N an integer in [0, 600000].  Sleeps N ms in
 * slices of at most 1 ms, polling cancelled(cancel_token) (which may be
 * NULL) between slices; returns ADIL_STATUS_CANCELLED as soon as it is set.
 * Otherwise writes {"slept_ms": N} as its result.  The result room is
 * checked before sleeping: when it is too small the needed length goes to
 * *result_len and the tool returns ADIL_STATUS_INVALID_ARGUMENT at once.
 * Bad arguments: ADIL_STATUS_INVALID_ARGUMENT.  user_data is unused. */
ADIL_API adil_status adil_stub_sleep_tool(void *user_data, const char *arguments_json, size_t arguments_len,
                                          adil_cancelled_fn cancelled, void *cancel_token, char *result,
                                          size_t result_capacity, size_t *result_len);

#endif /* ADIL_STUB_H */
