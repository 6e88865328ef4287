/*
 * component.c — what this engine library is: its ABI version and its
 * component-info struct (name, version, backends, CPU features, struct sizes).
 */
#include "engine_internal.h"
#include "backends/backend_select.h"
#include "compute/cpu_level.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Filled once (pthread_once) and read-only afterwards, like the kernel level
 * and the kernel tables of compute/: the engine's process-wide state (adil.h,
 * "Rules of the ABI"). */
static adil_component_info component_info;
static char cpu_feature_list[192];
static pthread_once_t component_once = PTHREAD_ONCE_INIT;

static void append_feature(char *list, size_t cap, const char *name) {
    size_t len = strlen(list);
    size_t need = strlen(name) + (len ? 1 : 0);
    if (len + need + 1 > cap) return; /* the list is informational: drop, never overflow */
    if (len) list[len++] = ',';
    memcpy(list + len, name, strlen(name) + 1);
}

static void detect_cpu_features(char *list, size_t cap) {
    list[0] = '\0';
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse3")) append_feature(list, cap, "sse3");
    if (__builtin_cpu_supports("ssse3")) append_feature(list, cap, "ssse3");
    if (__builtin_cpu_supports("avx")) append_feature(list, cap, "avx");
    if (__builtin_cpu_supports("avx2")) append_feature(list, cap, "avx2");
    if (__builtin_cpu_supports("fma")) append_feature(list, cap, "fma");
    if (__builtin_cpu_supports("f16c")) append_feature(list, cap, "f16c");
    if (__builtin_cpu_supports("avx512f")) append_feature(list, cap, "avx512f");
    if (__builtin_cpu_supports("avx512bw")) append_feature(list, cap, "avx512bw");
    if (__builtin_cpu_supports("avx512vl")) append_feature(list, cap, "avx512vl");
    if (__builtin_cpu_supports("avx512vnni")) append_feature(list, cap, "avx512vnni");
#endif
    if (!list[0]) append_feature(list, cap, "scalar");
    /* Which kernel set really runs (ADIL_CPU applied): hosts show it apart. */
    char level[32];
    snprintf(level, sizeof level, "kernels=%s", adil_cpu_level_name());
    append_feature(list, cap, level);
}

static void component_init(void) {
    detect_cpu_features(cpu_feature_list, sizeof cpu_feature_list);
    adil_component_fill(&component_info, ADIL_ABI_MAJOR, ADIL_ABI_MINOR, ADIL_HOST_MAJOR,
                        ADIL_CPU_ENGINE_NAME, ADIL_CPU_ENGINE_VERSION, adil_backends_built(),
                        cpu_feature_list, "grammar,logits,logprobs,lookup");
}

const char *adil_cpu_features(void) {
    pthread_once(&component_once, component_init);
    return cpu_feature_list;
}

uint32_t adil_cpu_count(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n >= 1 ? (uint32_t)n : 1u;
}

uint64_t adil_physical_memory(void) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0) return UINT64_MAX;
    return (uint64_t)pages * (uint64_t)page;
}

ADIL_API uint32_t adil_abi_version(void) { return ADIL_ABI_VERSION; }

ADIL_API const adil_component_info *adil_component(void) {
    pthread_once(&component_once, component_init);
    return &component_info;
}
