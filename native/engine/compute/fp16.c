/*
 * fp16.c — IEEE half and bfloat16 conversions, bit-exact with round to
 * nearest even (what numpy's astype(float16) and ggml's F16C path give), so
 * our quantizers produce the same bytes as the reference tools.
 */
#include "compute/weight_types.h"

#include <string.h>

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    return u;
}

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}

float adil_fp16_to_f32(adil_fp16 h) {
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1Fu;
    uint32_t man = h & 0x3FFu;
    if (exp == 0x1F) { /* inf / NaN */
        return bits_f32(sign | 0x7F800000u | man << 13);
    }
    if (exp != 0) { /* normal: rebias 15 -> 127 */
        return bits_f32(sign | (exp + 112) << 23 | man << 13);
    }
    float v = (float)man * 0x1p-24f; /* zero or subnormal: man * 2^-24, exact */
    return sign ? -v : v;
}

adil_fp16 adil_f32_to_fp16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u) { /* NaN: keep it quiet and keep the top payload */
        return (adil_fp16)(sign | 0x7E00u | ((ax >> 13) & 0x3FFu));
    }
    if (ax >= 0x477FF000u) { /* >= 65520 rounds to infinity (inf included) */
        return (adil_fp16)(sign | 0x7C00u);
    }
    if (ax < 0x38800000u) { /* below 2^-14: a half subnormal, value * 2^24 rounded */
        uint32_t e = ax >> 23;
        uint32_t shift = 126 - e; /* the significand M times 2^-shift */
        if (shift >= 25) {
            return sign; /* below half the smallest subnormal (ties go to even 0) */
        }
        uint32_t m = (ax & 0x7FFFFFu) | (e ? 0x800000u : 0);
        uint32_t q = m >> shift, rem = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        q += rem > half || (rem == half && (q & 1));
        return (adil_fp16)(sign | q);
    }
    uint32_t r = ax - (112u << 23); /* rebias 127 -> 15 */
    r += 0xFFFu + ((r >> 13) & 1u); /* round to nearest even */
    return (adil_fp16)(sign | (r >> 13));
}

float adil_bf16_to_f32(adil_bf16 h) { return bits_f32((uint32_t)h << 16); }

adil_bf16 adil_f32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u) {
        return (adil_bf16)((x >> 16) | 0x40u); /* quiet NaN */
    }
    return (adil_bf16)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}
