/*
 * test_cuda_probe.c — backends/cuda_probe.c and backend_select.c without a
 * GPU: every reason "cuda" cannot be had (no driver library, a library that
 * is no driver, cuInit failing, no device), the device list a fake driver
 * (tests/native/fake_cuda) reports, the refusal of "cuda" even then (no
 * CUDA forward pass yet), "auto" staying on the CPU, and probes on several
 * threads at once.
 */
#define _POSIX_C_SOURCE 200809L
#include "backends/backend_select.h"
#include "backends/cuda_probe.h"
#include "test_util.h"

#include <pthread.h>
#include <stdlib.h>

static void use_driver(const char *path, const char *init, const char *devices) {
    setenv("ADIL_CUDA_DRIVER", path, 1);
    setenv("ADIL_FAKE_CUDA_INIT", init, 1);
    setenv("ADIL_FAKE_CUDA_DEVICES", devices, 1);
}

static void test_missing_driver(void) {
    use_driver("/nonexistent/libcuda.so.1", "0", "1");
    adil_cuda_probe p;
    CHECK(!adil_cuda_probe_devices(&p));
    CHECK(p.n_devices == 0);
    CHECK_HAS(p.text, "no CUDA driver (/nonexistent/libcuda.so.1: cannot open shared object file");
}

static void test_library_that_is_no_driver(void) {
    use_driver(ADIL_STUB_LIBRARY, "0", "1");
    adil_cuda_probe p;
    CHECK(!adil_cuda_probe_devices(&p));
    CHECK_HAS(p.text, "is not a CUDA driver: it has no cuInit");
}

static void test_init_failure_named(void) {
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "100", "1");
    adil_cuda_probe p;
    CHECK(!adil_cuda_probe_devices(&p));
    CHECK_HAS(p.text, "cuInit failed: CUDA_ERROR_NO_DEVICE (100)");
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "12345", "1"); /* a code the driver cannot name */
    CHECK(!adil_cuda_probe_devices(&p));
    CHECK_HAS(p.text, "cuInit failed: CUresult (12345)");
}

static void test_no_device(void) {
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "0", "0");
    adil_cuda_probe p;
    CHECK(!adil_cuda_probe_devices(&p));
    CHECK_HAS(p.text, "sees no device");
}

static void test_devices_listed(void) {
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "0", "1");
    adil_cuda_probe p;
    CHECK(adil_cuda_probe_devices(&p));
    CHECK(p.n_devices == 1);
    CHECK(strcmp(p.text, "1 device: 0 Fake GPU 0") == 0);
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "0", "6"); /* the first four named, the rest counted */
    CHECK(adil_cuda_probe_devices(&p));
    CHECK(p.n_devices == 6);
    CHECK(strcmp(p.text, "6 devices: 0 Fake GPU 0, 1 Fake GPU 1, 2 Fake GPU 2, 3 Fake GPU 3, ...") == 0);
}

static void test_selection(void) {
    const int built = strstr(adil_backends_built(), "cuda") != NULL;
    char out[16];
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "0", "1");
    CHECK(adil_backend_select("cuda", out, sizeof out) == ADIL_STATUS_CAPABILITY);
    CHECK_HAS(adil_last_error(), built
                                     ? "the CUDA forward pass is not implemented yet (1 device: 0 Fake GPU 0)"
                                     : "built without CUDA (ADIL_CUDA=OFF)");
    use_driver("/nonexistent/libcuda.so.1", "0", "1");
    CHECK(adil_backend_select("cuda", out, sizeof out) == ADIL_STATUS_CAPABILITY);
    CHECK_HAS(adil_last_error(), built ? "backend \"cuda\": no CUDA driver" : "built without CUDA");
    CHECK(adil_backend_select("auto", out, sizeof out) == ADIL_OK && strcmp(out, "cpu") == 0);
    CHECK(adil_backend_select(NULL, out, sizeof out) == ADIL_OK && strcmp(out, "cpu") == 0);
    CHECK(adil_backend_select("cpu", out, sizeof out) == ADIL_OK && strcmp(out, "cpu") == 0);
    CHECK(adil_backend_select("metal", out, sizeof out) == ADIL_STATUS_CAPABILITY);
    CHECK_HAS(adil_last_error(), "backend \"metal\" is not built into this engine");
}

#define PROBE_THREADS 8

static void *probe_thread(void *arg) {
    adil_cuda_probe *p = arg;
    for (int i = 0; i < 50; i++) adil_cuda_probe_devices(p);
    return NULL;
}

static void test_threads(void) {
    use_driver(ADIL_FAKE_CUDA_LIBRARY, "0", "2"); /* set before the threads: they only read it */
    pthread_t threads[PROBE_THREADS];
    adil_cuda_probe probes[PROBE_THREADS];
    for (int i = 0; i < PROBE_THREADS; i++)
        CHECK(pthread_create(&threads[i], NULL, probe_thread, &probes[i]) == 0);
    for (int i = 0; i < PROBE_THREADS; i++) {
        pthread_join(threads[i], NULL);
        CHECK(probes[i].n_devices == 2);
        CHECK(strcmp(probes[i].text, "2 devices: 0 Fake GPU 0, 1 Fake GPU 1") == 0);
    }
}

int main(void) {
    test_missing_driver();
    test_library_that_is_no_driver();
    test_init_failure_named();
    test_no_device();
    test_devices_listed();
    test_selection();
    test_threads();
    return test_report("test_cuda_probe");
}
