/*
 * stub_sleep_tool.c — adil_stub_sleep_tool (adil_stub.h): a "slow tool" that
 * honours the cancelled-flag function it is given, for the tests of
 * cancellation after a tool has started.
 */
#include "adil_stub.h"

#include "adil_json.h"

#include <stdio.h>
#include <string.h>

#define STUB_SLEEP_TOOL_MAX_MS 600000

static adil_status read_ms(const char *arguments_json, size_t arguments_len, uint32_t *ms) {
    adil_json args;
    adil_status st = adil_json_parse(arguments_json, arguments_len, ADIL_STATUS_INVALID_ARGUMENT,
                                     "adil_stub_sleep_tool: arguments", &args);
    if (st != ADIL_OK) return st;
    const adil_json *value = adil_json_get(&args, "ms");
    if (args.kind != ADIL_JSON_OBJECT || args.n_members != 1 || value == NULL ||
        value->kind != ADIL_JSON_NUMBER || !value->is_integer || value->integer < 0 ||
        value->integer > STUB_SLEEP_TOOL_MAX_MS) {
        st =
            adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                      "adil_stub_sleep_tool: arguments expected {\"ms\": an integer from 0 to %d}, got %.*s",
                      STUB_SLEEP_TOOL_MAX_MS, (int)(arguments_len > 64 ? 64 : arguments_len), arguments_json);
    } else {
        *ms = (uint32_t)value->integer;
    }
    adil_json_free(&args);
    return st;
}

ADIL_API adil_status adil_stub_sleep_tool(void *user_data, const char *arguments_json, size_t arguments_len,
                                          adil_cancelled_fn cancelled, void *cancel_token, char *result,
                                          size_t result_capacity, size_t *result_len) {
    (void)user_data;
    if (result_len == NULL || (result == NULL && result_capacity > 0))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_stub_sleep_tool: expected result_len and a result buffer, got NULL");
    uint32_t ms = 0;
    adil_status st = read_ms(arguments_json, arguments_len, &ms);
    if (st != ADIL_OK) return st;
    char text[32];
    int len = snprintf(text, sizeof text, "{\"slept_ms\": %u}", ms);
    *result_len = (size_t)len;
    if ((size_t)len > result_capacity) /* say so before sleeping, not after */
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_stub_sleep_tool: result needs %d bytes, got room for %zu", len,
                         result_capacity);
    if (adil_sleep_ms_cancellable((double)ms, cancelled, cancel_token))
        return adil_fail(ADIL_STATUS_CANCELLED, "adil_stub_sleep_tool: cancelled before %u ms had passed",
                         ms);
    memcpy(result, text, (size_t)len);
    adil_clear_error();
    return ADIL_OK;
}
