/*
 * kernels_simd.h — the SIMD kernels, by level.  Like the scalar ones
 * (kernels_scalar.h) they are reached only through the kernel tables
 * (kernels.c), which install a level's kernels when the CPU supports it;
 * calling one on a CPU without its features is an illegal instruction.
 *
 * Each level has, per weight type, vec_dot (same contract as the scalar
 * reference, results within the error budgets of tests/native/
 * test_kernels_simd.c) and tile_dot (adil_tile, equal to vec_dot bit for
 * bit).  The activation quantizers are bit-exact with the scalar ones, so
 * one set (AVX2) serves both levels.
 */
#ifndef ADIL_KERNELS_SIMD_H
#define ADIL_KERNELS_SIMD_H

#include "compute/kernels.h"

/* ---- AVX2 + FMA + F16C (simd/..._avx2.c) ---------------------------------- */

void adil_quantize_row_q8_0_avx2(const float *src, void *dst, int64_t n);
void adil_quantize_row_q8_1_avx2(const float *src, void *dst, int64_t n);
void adil_quantize_row_q8_K_avx2(const float *src, void *dst, int64_t n);

float adil_vec_dot_f32_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_f16_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_bf16_avx2(int64_t n, const void *w, const void *a);

float adil_vec_dot_q8_0_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_0_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_0_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_1_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_1_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_iq4_nl_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_mxfp4_avx2(int64_t n, const void *w, const void *a);
void adil_tile_q8_0_avx2(const adil_tile *t);
void adil_tile_q4_0_avx2(const adil_tile *t);
void adil_tile_q5_0_avx2(const adil_tile *t);
void adil_tile_q4_1_avx2(const adil_tile *t);
void adil_tile_q5_1_avx2(const adil_tile *t);
void adil_tile_iq4_nl_avx2(const adil_tile *t);
void adil_tile_mxfp4_avx2(const adil_tile *t);

float adil_vec_dot_q2_K_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q3_K_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_K_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_K_avx2(int64_t n, const void *w, const void *a);
float adil_vec_dot_q6_K_avx2(int64_t n, const void *w, const void *a);
void adil_tile_q2_K_avx2(const adil_tile *t);
void adil_tile_q3_K_avx2(const adil_tile *t);
void adil_tile_q4_K_avx2(const adil_tile *t);
void adil_tile_q4_K_r8_avx2(const adil_tile *t); /* 8-row layout, compute/repack.h */
void adil_tile_q5_K_avx2(const adil_tile *t);
void adil_tile_q6_K_avx2(const adil_tile *t);
float adil_vec_dot_iq4_xs_avx2(int64_t n, const void *w, const void *a);
void adil_tile_iq4_xs_avx2(const adil_tile *t);

/* ---- AVX-512 F/BW/VL/DQ + VNNI (simd/..._avx512.c) ------------------------- */

float adil_vec_dot_f32_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_f16_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_bf16_avx512(int64_t n, const void *w, const void *a);

float adil_vec_dot_q8_0_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_0_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_0_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_1_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_1_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_iq4_nl_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_mxfp4_avx512(int64_t n, const void *w, const void *a);
void adil_tile_q8_0_avx512(const adil_tile *t);
void adil_tile_q8_0_r8_avx512(const adil_tile *t); /* 8-row layout, compute/repack.h */
void adil_tile_q5_0_r8_avx512(const adil_tile *t); /* 8-row layout */
void adil_tile_q4_0_avx512(const adil_tile *t);
void adil_tile_q5_0_avx512(const adil_tile *t);
void adil_tile_q4_1_avx512(const adil_tile *t);
void adil_tile_q5_1_avx512(const adil_tile *t);
void adil_tile_iq4_nl_avx512(const adil_tile *t);
void adil_tile_mxfp4_avx512(const adil_tile *t);

float adil_vec_dot_q2_K_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q3_K_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q4_K_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q5_K_avx512(int64_t n, const void *w, const void *a);
float adil_vec_dot_q6_K_avx512(int64_t n, const void *w, const void *a);
void adil_tile_q2_K_avx512(const adil_tile *t);
void adil_tile_q3_K_avx512(const adil_tile *t);
void adil_tile_q4_K_avx512(const adil_tile *t);
void adil_tile_q4_K_r8_avx512(const adil_tile *t);
void adil_tile_q5_K_avx512(const adil_tile *t);
void adil_tile_q6_K_avx512(const adil_tile *t);
float adil_vec_dot_iq4_xs_avx512(int64_t n, const void *w, const void *a);
void adil_tile_iq4_xs_avx512(const adil_tile *t);

#endif /* ADIL_KERNELS_SIMD_H */
