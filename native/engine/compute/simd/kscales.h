/*
 * kscales.h — the 6-bit scales and minimums of Q4_K / Q5_K super-blocks,
 * unpacked with 32-bit integer operations (shared by the SIMD kernels; the
 * scalar reference keeps its own per-element reading in quant_k.c).
 *
 * The 12 bytes hold 8 scales and 8 mins.  With u0, u1, u2 the three
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

#endif /* ADIL_KSCALES_H */
