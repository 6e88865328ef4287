/*
 * int8_peak_asm.h — the assembly text the int8 peak micro-kernels share
 * (int8_peak_avx2.c, int8_peak_avx512.c): zeroing their accumulators before
 * the loop and summing them into the first one after it.  `reg` names the
 * register file ("ymm" or "zmm"), `xor` the instruction that zeroes one
 * ("vpxor" on the xmm half, which clears the ymm; "vpxord" on zmm).
 */
#ifndef ADIL_INT8_PEAK_ASM_H
#define ADIL_INT8_PEAK_ASM_H

#define PEAK_ZERO(xor, reg, r) xor " %%" reg #r ", %%" reg #r ", %%" reg #r "\n\t"
/* reg<a> += reg<b> */
#define PEAK_ADD(reg, a, b) "vpaddd %%" reg #b ", %%" reg #a ", %%" reg #a "\n\t"

/* clang-format does not settle on a layout for these juxtaposed strings. */
/* clang-format off */
#define PEAK_ZERO_10(xor, reg)                                                                     \
    PEAK_ZERO(xor, reg, 0) PEAK_ZERO(xor, reg, 1) PEAK_ZERO(xor, reg, 2) PEAK_ZERO(xor, reg, 3)    \
    PEAK_ZERO(xor, reg, 4) PEAK_ZERO(xor, reg, 5) PEAK_ZERO(xor, reg, 6) PEAK_ZERO(xor, reg, 7)    \
    PEAK_ZERO(xor, reg, 8) PEAK_ZERO(xor, reg, 9)
#define PEAK_ZERO_12(xor, reg) PEAK_ZERO_10(xor, reg) PEAK_ZERO(xor, reg, 10) PEAK_ZERO(xor, reg, 11)

/* Accumulators 0..9 (0..11) summed into 0, in pairs first. */
#define PEAK_SUM_10(reg)                                                                           \
    PEAK_ADD(reg, 0, 1) PEAK_ADD(reg, 2, 3) PEAK_ADD(reg, 4, 5) PEAK_ADD(reg, 6, 7)                \
    PEAK_ADD(reg, 8, 9)                                                                            \
    PEAK_ADD(reg, 0, 2) PEAK_ADD(reg, 4, 6) PEAK_ADD(reg, 4, 8)                                    \
    PEAK_ADD(reg, 0, 4)
#define PEAK_SUM_12(reg)                                                                           \
    PEAK_ADD(reg, 0, 1) PEAK_ADD(reg, 2, 3) PEAK_ADD(reg, 4, 5) PEAK_ADD(reg, 6, 7)                \
    PEAK_ADD(reg, 8, 9) PEAK_ADD(reg, 10, 11)                                                      \
    PEAK_ADD(reg, 0, 2) PEAK_ADD(reg, 4, 6) PEAK_ADD(reg, 8, 10)                                   \
    PEAK_ADD(reg, 0, 4) PEAK_ADD(reg, 0, 8)
/* clang-format on */

/* The registers the kernels clobber (named by their xmm halves, as GCC takes them). */
#define PEAK_CLOBBER_10 "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9"
#define PEAK_CLOBBER_12 PEAK_CLOBBER_10, "xmm10", "xmm11"

#endif /* ADIL_INT8_PEAK_ASM_H */
