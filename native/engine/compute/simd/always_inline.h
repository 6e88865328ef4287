/*
 * always_inline.h — ADIL_INLINE, the one spelling of a forced inline, for
 * the SIMD files.
 *
 * Their kernels are written as generic cores with compile-time shape
 * arguments (rows, tokens, kind of block); forcing the inlining is what
 * turns those arguments into constants at each call, so loops unroll and
 * accumulators stay in registers whatever the compiler's size heuristics
 * would decide.
 */
#ifndef ADIL_ALWAYS_INLINE_H
#define ADIL_ALWAYS_INLINE_H

#define ADIL_INLINE static inline __attribute__((always_inline))

#endif /* ADIL_ALWAYS_INLINE_H */
