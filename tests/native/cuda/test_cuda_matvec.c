/*
 * test_cuda_matvec.c — adil_cuda_matvec on a GPU against the CPU's scalar
 * reference, for every weight type it supports (matvec_cases.h).  Exits 77
 * (skipped) with the reason when no GPU can be used.  Until it has passed
 * on a GPU, the kernels are unverified (bench/cuda/README.md).
 */
#include "backends/cuda/cuda_kernels.h"
#include "matvec_cases.h"
#include "test_util.h"

#define SKIP 77

/* One type: upload, multiply, download, compare each row with the reference. */
static adil_status check_type(const matvec_case *c) {
    const size_t row_bytes = adil_row_size(c->type, c->cols), bytes = matvec_bytes(c);
    const size_t x_bytes = sizeof(float) * (size_t)c->cols;
    uint8_t *w = malloc(bytes);
    float *x = malloc(x_bytes), *scratch = malloc(x_bytes);
    float y[CASE_ROWS];
    matvec_fill_weights(c, w);
    matvec_fill_vector(x, c->cols);
    void *dw = NULL, *dx = NULL, *dy = NULL;
    adil_status st = adil_cuda_alloc(bytes, &dw);
    if (st == ADIL_OK) st = adil_cuda_alloc(x_bytes, &dx);
    if (st == ADIL_OK) st = adil_cuda_alloc(sizeof y, &dy);
    if (st == ADIL_OK) st = adil_cuda_upload(dw, w, bytes);
    if (st == ADIL_OK) st = adil_cuda_upload(dx, x, x_bytes);
    if (st == ADIL_OK) st = adil_cuda_matvec(c->type, dw, dx, dy, CASE_ROWS, c->cols, NULL);
    if (st == ADIL_OK) st = adil_cuda_synchronize();
    if (st == ADIL_OK) st = adil_cuda_download(y, dy, sizeof y);
    if (st != ADIL_OK) fprintf(stderr, "%s: %s\n", adil_wtype_name(c->type), adil_cuda_last_error());
    for (int r = 0; st == ADIL_OK && r < CASE_ROWS; r++) {
        double mag;
        double ref = matvec_reference(c, w + (size_t)r * row_bytes, x, scratch, &mag);
        if (!matvec_close(y[r], ref, mag)) {
            fprintf(stderr, "%s row %d: cuda %.8g, reference %.8g\n", adil_wtype_name(c->type), r, y[r], ref);
            test_failures++;
        }
    }
    adil_cuda_free(dw);
    adil_cuda_free(dx);
    adil_cuda_free(dy);
    free(w);
    free(x);
    free(scratch);
    return st;
}

int main(void) {
    if (adil_cuda_use_device(0) != ADIL_OK) {
        printf("test_cuda_matvec: skipped, no usable GPU: %s\n", adil_cuda_last_error());
        return SKIP;
    }
    for (size_t i = 0; i < MATVEC_CASE_COUNT; i++) {
        CHECK(adil_cuda_matvec_supports(matvec_cases[i].type));
        CHECK(check_type(&matvec_cases[i]) == ADIL_OK);
    }
    CHECK(!adil_cuda_matvec_supports(ADIL_WT_Q2_K));
    return test_report("test_cuda_matvec");
}
