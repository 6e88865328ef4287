/*
 * cuda_probe.c — counts and names the CUDA devices through the driver API
 * (cuInit, cuDeviceGetCount, cuDeviceGet, cuDeviceGetName), loaded with
 * dlopen.  The types are those of the driver API's C declarations (CUresult
 * and CUdevice are ints), written here so that no CUDA header is needed.
 */
#include "backends/cuda_probe.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CUDA_SUCCESS         0
#define PROBE_NAMES_REPORTED 4 /* devices named in the text; the count says the rest */

typedef int (*cu_init_fn)(unsigned int flags);
typedef int (*cu_device_get_count_fn)(int *count);
typedef int (*cu_device_get_fn)(int *device, int ordinal);
typedef int (*cu_device_get_name_fn)(char *name, int len, int device);
typedef int (*cu_get_error_name_fn)(int error, const char **name);

typedef struct driver_api {
    cu_init_fn init;
    cu_device_get_count_fn device_get_count;
    cu_device_get_fn device_get;
    cu_device_get_name_fn device_get_name;
    cu_get_error_name_fn get_error_name; /* optional: only names the codes */
} driver_api;

static bool say(adil_cuda_probe *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes the probe's text (truncated to fit) and returns false, the result
 * of every path that finds no device. */
static bool say(adil_cuda_probe *out, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out->text, sizeof out->text, fmt, ap);
    va_end(ap);
    return false;
}

/* dlsym gives a void *, which POSIX lets convert to the function's type;
 * copying the bytes says so without a cast between object and function
 * pointers. */
_Static_assert(sizeof(void *) == sizeof(cu_init_fn), "function and object pointers differ in size");
static void load(void *lib, const char *name, void *fn, size_t fn_size) {
    void *found = dlsym(lib, name);
    memcpy(fn, &found, fn_size);
}

static const char *missing_symbol(void *lib, driver_api *api) {
    load(lib, "cuInit", &api->init, sizeof api->init);
    load(lib, "cuDeviceGetCount", &api->device_get_count, sizeof api->device_get_count);
    load(lib, "cuDeviceGet", &api->device_get, sizeof api->device_get);
    load(lib, "cuDeviceGetName", &api->device_get_name, sizeof api->device_get_name);
    load(lib, "cuGetErrorName", &api->get_error_name, sizeof api->get_error_name);
    if (!api->init) return "cuInit";
    if (!api->device_get_count) return "cuDeviceGetCount";
    if (!api->device_get) return "cuDeviceGet";
    if (!api->device_get_name) return "cuDeviceGetName";
    return NULL;
}

/* "CUDA_ERROR_NO_DEVICE (100)", or the code alone when the driver cannot name it. */
static void error_name(const driver_api *api, int code, char *buf, size_t cap) {
    const char *name = NULL;
    if (api->get_error_name && api->get_error_name(code, &name) != CUDA_SUCCESS) name = NULL;
    snprintf(buf, cap, "%s (%d)", name ? name : "CUresult", code);
}

/* Appends ", N NAME" (or "0 NAME" first) for device `ordinal`. */
static void append_device(const driver_api *api, int ordinal, adil_cuda_probe *out) {
    char name[128] = "?";
    int device = 0;
    if (api->device_get(&device, ordinal) != CUDA_SUCCESS ||
        api->device_get_name(name, (int)sizeof name, device) != CUDA_SUCCESS)
        snprintf(name, sizeof name, "(name unavailable)");
    name[sizeof name - 1] = '\0';
    size_t len = strlen(out->text);
    snprintf(out->text + len, sizeof out->text - len, "%s%d %s", ordinal ? ", " : "", ordinal, name);
}

static bool count_devices(const driver_api *api, const char *path, adil_cuda_probe *out) {
    char code[96];
    int st = api->init(0);
    if (st != CUDA_SUCCESS) {
        error_name(api, st, code, sizeof code);
        return say(out, "CUDA driver %s: cuInit failed: %s", path, code);
    }
    int count = 0;
    st = api->device_get_count(&count);
    if (st != CUDA_SUCCESS) {
        error_name(api, st, code, sizeof code);
        return say(out, "CUDA driver %s: cuDeviceGetCount failed: %s", path, code);
    }
    if (count <= 0) return say(out, "the CUDA driver (%s) sees no device", path);
    out->n_devices = count;
    snprintf(out->text, sizeof out->text, "%d device%s: ", count, count == 1 ? "" : "s");
    for (int i = 0; i < count && i < PROBE_NAMES_REPORTED; i++) append_device(api, i, out);
    if (count > PROBE_NAMES_REPORTED) {
        size_t len = strlen(out->text);
        snprintf(out->text + len, sizeof out->text - len, ", ...");
    }
    return true;
}

bool adil_cuda_probe_devices(adil_cuda_probe *out) {
    out->n_devices = 0;
    out->text[0] = '\0';
    const char *path = getenv("ADIL_CUDA_DRIVER");
    if (!path || !path[0]) path = "libcuda.so.1";
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        return say(out, "no CUDA driver (%s)", why ? why : path);
    }
    driver_api api;
    const char *missing = missing_symbol(lib, &api);
    if (missing) {
        dlclose(lib); /* never initialised: safe to unload */
        return say(out, "%s is not a CUDA driver: it has no %s", path, missing);
    }
    return count_devices(&api, path, out); /* lib stays loaded: see cuda_probe.h */
}
