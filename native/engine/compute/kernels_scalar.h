/*
 * kernels_scalar.h — the scalar reference kernels of each weight type,
 * gathered by the scalar table in kernels.c.  Other code calls them through
 * adil_wtype_kernels_get(type)->..., never directly, so SIMD versions can
 * replace them per CPU feature.
 *
 * Naming: dequantize_row_<type>, quantize_row_<type>, vec_dot_<type>_<act>
 * where <act> is the activation type the weight type pairs with.
 */
#ifndef ADIL_KERNELS_SCALAR_H
#define ADIL_KERNELS_SCALAR_H

#include "compute/weight_types.h"

/* plain floats (float_types.c); activations stay F32 */
void adil_dequantize_row_f32(const void *src, float *dst, int64_t n);
void adil_quantize_row_f32(const float *src, void *dst, int64_t n);
float adil_vec_dot_f32_f32(int64_t n, const void *w, const void *a);
void adil_dequantize_row_f16(const void *src, float *dst, int64_t n);
void adil_quantize_row_f16(const float *src, void *dst, int64_t n);
float adil_vec_dot_f16_f32(int64_t n, const void *w, const void *a);
void adil_dequantize_row_bf16(const void *src, float *dst, int64_t n);
void adil_quantize_row_bf16(const float *src, void *dst, int64_t n);
float adil_vec_dot_bf16_f32(int64_t n, const void *w, const void *a);

/* legacy 32-element quants (quant_legacy.c) */
void adil_dequantize_row_q4_0(const void *src, float *dst, int64_t n);
void adil_quantize_row_q4_0(const float *src, void *dst, int64_t n);
float adil_vec_dot_q4_0_q8_0(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q4_1(const void *src, float *dst, int64_t n);
void adil_quantize_row_q4_1(const float *src, void *dst, int64_t n);
float adil_vec_dot_q4_1_q8_1(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q5_0(const void *src, float *dst, int64_t n);
void adil_quantize_row_q5_0(const float *src, void *dst, int64_t n);
float adil_vec_dot_q5_0_q8_0(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q5_1(const void *src, float *dst, int64_t n);
void adil_quantize_row_q5_1(const float *src, void *dst, int64_t n);
float adil_vec_dot_q5_1_q8_1(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q8_0(const void *src, float *dst, int64_t n);
void adil_quantize_row_q8_0(const float *src, void *dst, int64_t n);
float adil_vec_dot_q8_0_q8_0(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q8_1(const void *src, float *dst, int64_t n);
void adil_quantize_row_q8_1(const float *src, void *dst, int64_t n);

/* 4-bit codes into a table of values, 32-element blocks (quant_codebook.c);
 * IQ4_NL has no quantizer (ggml's searches scales; tests write random blocks) */
void adil_dequantize_row_iq4_nl(const void *src, float *dst, int64_t n);
float adil_vec_dot_iq4_nl_q8_0(int64_t n, const void *w, const void *a);
void adil_dequantize_row_mxfp4(const void *src, float *dst, int64_t n);
void adil_quantize_row_mxfp4(const float *src, void *dst, int64_t n);
float adil_vec_dot_mxfp4_q8_0(int64_t n, const void *w, const void *a);
/* IQ4_XS: IQ4_NL's table in 256-element super-blocks, Q8_K activations */
void adil_dequantize_row_iq4_xs(const void *src, float *dst, int64_t n);
float adil_vec_dot_iq4_xs_q8_K(int64_t n, const void *w, const void *a);

/* K-quants, 256-element super-blocks (quant_k.c) */
void adil_dequantize_row_q2_K(const void *src, float *dst, int64_t n);
float adil_vec_dot_q2_K_q8_K(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q3_K(const void *src, float *dst, int64_t n);
float adil_vec_dot_q3_K_q8_K(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q4_K(const void *src, float *dst, int64_t n);
float adil_vec_dot_q4_K_q8_K(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q5_K(const void *src, float *dst, int64_t n);
float adil_vec_dot_q5_K_q8_K(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q6_K(const void *src, float *dst, int64_t n);
float adil_vec_dot_q6_K_q8_K(int64_t n, const void *w, const void *a);
void adil_dequantize_row_q8_K(const void *src, float *dst, int64_t n);
void adil_quantize_row_q8_K(const float *src, void *dst, int64_t n);

#endif /* ADIL_KERNELS_SCALAR_H */
