/*
 * unicode.c — UTF-8 decoding and code point classes for the tokenizers.
 */
#include "text/unicode.h"

#include "text/unicode_tables.h"

size_t adil_utf8_len(uint8_t lead) {
    /* Indexed by the top four bits: 0x0-0xB one byte (ASCII, and stray
     * continuation bytes taken alone), 0xC-0xD two, 0xE three, 0xF four. */
    static const uint8_t by_high_bits[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return by_high_bits[lead >> 4];
}

static bool is_continuation(const uint8_t *text, size_t len, size_t i) {
    return i < len && (text[i] & 0xC0u) == 0x80u;
}

uint32_t adil_utf8_decode(const uint8_t *text, size_t len, size_t *pos) {
    size_t i = *pos;
    uint8_t b = text[i];
    uint32_t cp;
    size_t n;
    if (b < 0x80u) {
        *pos = i + 1;
        return b;
    }
    if ((b & 0xE0u) == 0xC0u) {
        n = 2;
        cp = b & 0x1Fu;
    } else if ((b & 0xF0u) == 0xE0u) {
        n = 3;
        cp = b & 0x0Fu;
    } else if ((b & 0xF8u) == 0xF0u) {
        n = 4;
        cp = b & 0x07u;
    } else {
        *pos = i + 1; /* a stray continuation byte or 0xF8..0xFF */
        return ADIL_UNICODE_REPLACEMENT;
    }
    for (size_t k = 1; k < n; k++) {
        if (!is_continuation(text, len, i + k)) {
            *pos = i + 1;
            return ADIL_UNICODE_REPLACEMENT;
        }
        cp = (cp << 6) | (text[i + k] & 0x3Fu);
    }
    *pos = i + n;
    return cp <= 0x10FFFFu ? cp : ADIL_UNICODE_REPLACEMENT;
}

size_t adil_utf8_encode(uint32_t cp, uint8_t out[4]) {
    if (cp < 0x80u) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800u) {
        out[0] = (uint8_t)(0xC0u | (cp >> 6));
        out[1] = (uint8_t)(0x80u | (cp & 0x3Fu));
        return 2;
    }
    if (cp < 0x10000u) {
        out[0] = (uint8_t)(0xE0u | (cp >> 12));
        out[1] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
        out[2] = (uint8_t)(0x80u | (cp & 0x3Fu));
        return 3;
    }
    out[0] = (uint8_t)(0xF0u | ((cp >> 18) & 0x07u));
    out[1] = (uint8_t)(0x80u | ((cp >> 12) & 0x3Fu));
    out[2] = (uint8_t)(0x80u | ((cp >> 6) & 0x3Fu));
    out[3] = (uint8_t)(0x80u | (cp & 0x3Fu));
    return 4;
}

adil_ucd_class adil_ucd_class_of(uint32_t cp) {
    /* The last range whose first code point is <= cp. */
    size_t lo = 0, hi = ADIL_UCD_N_RANGES;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((adil_ucd_ranges[mid] >> 3) <= cp) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return (adil_ucd_class)(adil_ucd_ranges[lo] & 7u);
}

bool adil_ucd_is_space(uint32_t cp) {
    for (size_t i = 0; i < ADIL_UCD_N_WHITE_SPACE; i++) {
        if (adil_ucd_white_space[i] == cp) {
            return true;
        }
    }
    return false;
}
