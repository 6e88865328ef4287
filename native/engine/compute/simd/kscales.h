/*
 * kscales.h — the 6-bit scales and minimums of Q4_K / Q5_K super-blocks and
 * the 6-bit scales of IQ4_XS, unpacked with 32/64-bit integer operations
 * (shared by the SIMD kernels; the scalar references keep their own
 * per-element reading in quant_k.c and quant_codebook.c).
 *
 * Q4_K / Q5_K: the 12 bytes hold 8 scales and 8 mins.  With u0, u1, u2 the three
 * little-endian 32-bit words:
 *   scales 0..3 = low 6 bits of the bytes of u0, mins 0..3 those of u1;
 *   scales 4..7 = low nibbles of u2's bytes, with the top 2 bits of u0's
 *                 bytes above them; mins 4..7 = high nibbles of u2's bytes
 *                 with the top 2 bits of u1's bytes.
 */
#ifndef ADIL_KSCALES_H
#define ADIL_KSCALES_H

#include <stdint.h>
#include <string.h>

static inline void adil_kscales_unpack(const uint8_t packed[12], uint8_t sc[8], uint8_t m[8]) {
    uint32_t u[3], out[4];
    memcpy(u, packed, 12);
    out[0] = u[0] & 0x3F3F3F3Fu;
    out[2] = u[1] & 0x3F3F3F3Fu;
    out[1] = (u[2] & 0x0F0F0F0Fu) | ((u[0] >> 6) & 0x03030303u) << 4;
    out[3] = ((u[2] >> 4) & 0x0F0F0F0Fu) | ((u[1] >> 6) & 0x03030303u) << 4;
    memcpy(sc, &out[0], 8);
    memcpy(m, &out[2], 8);
}

/* IQ4_XS: the 8 scales ls (0..63, the scale is ls - 32), ls of sub-block j
 * in byte j of the result: its low 4 bits nibble j of scales_l (low nibble
 * first), its high 2 bits bits 2j, 2j + 1 of scales_h.  Each step moves
 * fields apart, halving their width, until each sits in its own byte. */
static inline uint64_t adil_kscales_iq4_xs(uint16_t scales_h, const uint8_t scales_l[4]) {
    uint32_t l;
    memcpy(&l, scales_l, 4);
    uint64_t lo = (l & 0xFFFFu) | (uint64_t)(l >> 16) << 32; /* byte k of l at bit 8k + 16 (k / 2) */
    lo = (lo & 0x000000FF000000FFu) | (lo & 0x0000FF000000FF00u) << 8;  /* byte k at bit 16k */
    lo = (lo & 0x000F000F000F000Fu) | (lo & 0x00F000F000F000F0u) << 4;  /* nibble j at bit 8j */
    uint64_t hi = (scales_h & 0xFFu) | (uint64_t)(scales_h >> 8) << 32; /* byte k at bit 32k */
    hi = (hi & 0x0000000F0000000Fu) | (hi & 0x000000F0000000F0u) << 12; /* nibble k at bit 16k */
    hi = (hi & 0x0003000300030003u) | (hi & 0x000C000C000C000Cu) << 6;  /* field j at bit 8j */
    return lo | hi << 4;
}

#endif /* ADIL_KSCALES_H */
