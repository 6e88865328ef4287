/*
 * test_stub_struct_sizes.c — adil.h's struct_size rule in the stub engine,
 * loaded as a host loads it (struct_size_checks.h; test_struct_sizes.c checks
 * the common helpers and the CPU engine).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, for struct_size_checks.h */
#include "test_stub_api.h"
#include "struct_size_checks.h"

int main(void) {
    stub_api api;
    if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
    check_component(&api, "grammar,logprobs,lookup");
    check_struct_sizes(&api, ADIL_TEST_DATA_DIR "/stub_basic.json");
    stub_api_close(&api);
    return test_report("test_stub_struct_sizes");
}
