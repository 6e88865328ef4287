/*
 * number.c — see number.h.  Values: an integer text is exactly the int64 it
 * spells; a decimal text with M as its digits and f fraction digits reads as
 * M / 10^f, and since M < 2^53 and 10^f (f <= 22) are exact doubles, one
 * IEEE division gives the correctly rounded value, as strtod and Python's
 * float() do.  The bound checks at the end are therefore exact; the checks
 * on a prefix (can any completion still fit?) look at the intervals of
 * completions, one per count of digits still to come.
 */
#include "number.h"

enum { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC };

#define MAX_INT_DIGITS  16 /* 2^53 - 1 has 16 digits */
#define MAX_SIG_DIGITS  15 /* of a decimal */
#define MAX_FRAC_DIGITS 22 /* 10^22 is the last exact power of ten */

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static bool negative(const frame *f) { return f->flags & 1u; }

/* Some integer text extending M (with `digits` digits) lies in [lo, hi]? */
static bool ints_fit(uint64_t m, uint32_t digits, bool neg, int64_t lo, int64_t hi) {
    uint64_t scale = 1;
    for (uint32_t k = 0; digits + k <= MAX_INT_DIGITS; k++, scale *= 10) {
        if (m > (uint64_t)GRAMMAR_MAX_EXACT / scale) break;
        const uint64_t a = m * scale;
        uint64_t z = a + (scale - 1);
        if (z > (uint64_t)GRAMMAR_MAX_EXACT) z = (uint64_t)GRAMMAR_MAX_EXACT;
        const int64_t first = neg ? -(int64_t)z : (int64_t)a, last = neg ? -(int64_t)a : (int64_t)z;
        if (!(neg && m == 0) && last >= lo && first <= hi) return true;
        if (m == 0) break; /* "0" takes no more integer digits */
    }
    return false;
}

/* The reals [a, z) (mirrored when negative) meet [min, max]? */
static bool span_fits(double a, double z, bool neg, double min, double max) {
    if (neg) return -z < max && -a >= min;
    return a <= max && z > min;
}

/* Some decimal extending integer part M (digits, sig) lies in [min, max]? */
static bool decimals_fit(uint64_t m, uint32_t digits, uint32_t sig, bool neg, double min, double max) {
    if (sig >= MAX_SIG_DIGITS) return false;
    for (uint32_t k = 0; digits + k <= MAX_SIG_DIGITS; k++) {
        if (span_fits((double)m * POW10[k], (double)(m + 1) * POW10[k], neg, min, max)) return true;
        if (m == 0) break;
    }
    return false;
}

/* Some completion of the fraction M / 10^f lies in [min, max]?  The
 * completions are the decimals of [M, M + 1) / 10^f; both ends are exact
 * decimals of at most 15 digits, each read as a double by one correctly
 * rounded division (as strtod would), and no other decimal of at most 15
 * digits reads as the same double as either, so the doubles the
 * completions read as are exactly [lo, hi) (v + 1/10^f, rounded twice, could
 * let an end in that is not). */
static bool fraction_fits(const frame *f, double min, double max) {
    const double lo = (double)f->x / POW10[f->lo];
    const bool more = f->hi < MAX_SIG_DIGITS && f->lo < MAX_FRAC_DIGITS;
    if (!more) return negative(f) ? (-lo >= min && -lo <= max) : (lo >= min && lo <= max);
    return span_fits(lo, (double)(f->x + 1) / POW10[f->lo], negative(f), min, max);
}

static bool viable(const gnode *n, const frame *f) {
    const bool number = n->kind == NODE_NUMBER;
    switch (f->phase) {
    case N_MINUS:
        return number ? n->min <= 0 : n->imin <= -1;
    case N_ZERO:
    case N_INT:
        if (ints_fit(f->x, f->count, negative(f), n->imin, n->imax)) return true;
        return number && decimals_fit(f->x, f->count, f->hi, negative(f), n->min, n->max);
    case N_DOT:
    case N_FRAC:
        return fraction_fits(f, n->min, n->max);
    default:
        return false;
    }
}

bool number_can_end(const gnode *n, const frame *f) {
    if (f->phase == N_ZERO || f->phase == N_INT) {
        if (negative(f) && f->x == 0) return false; /* "-0" reads as the integer 0 */
        const int64_t v = negative(f) ? -(int64_t)f->x : (int64_t)f->x;
        return v >= n->imin && v <= n->imax;
    }
    if (f->phase != N_FRAC) return false;
    const double v = (negative(f) ? -1.0 : 1.0) * ((double)f->x / POW10[f->lo]);
    return v >= n->min && v <= n->max;
}

static number_result take_digit(const gnode *n, frame *f, uint8_t d) {
    frame g = *f;
    const bool frac = f->phase == N_DOT || f->phase == N_FRAC;
    if (!frac) {
        if (g.count >= MAX_INT_DIGITS || g.x > ((uint64_t)GRAMMAR_MAX_EXACT - d) / 10) return NUM_REJECT;
        g.count++;
        g.phase = g.x == 0 && d == 0 ? N_ZERO : N_INT;
    } else {
        if (g.lo >= MAX_FRAC_DIGITS) return NUM_REJECT;
        g.lo++;
        g.phase = N_FRAC;
    }
    g.x = g.x * 10 + d;
    if (g.x != 0) g.hi++;
    if (frac && g.hi > MAX_SIG_DIGITS) return NUM_REJECT;
    if (!viable(n, &g)) return NUM_REJECT;
    *f = g;
    return NUM_TAKEN;
}

number_result number_step(const gnode *n, frame *f, uint8_t b) {
    const bool digit = b >= '0' && b <= '9';
    const bool number = n->kind == NODE_NUMBER;
    switch (f->phase) {
    case N_START:
        if (b == '-') {
            frame g = *f;
            g.flags |= 1u;
            g.phase = N_MINUS;
            if (!viable(n, &g)) return NUM_REJECT;
            *f = g;
            return NUM_TAKEN;
        }
        return digit ? take_digit(n, f, (uint8_t)(b - '0')) : NUM_REJECT;
    case N_MINUS:
        if (!digit || (b == '0' && !number)) return NUM_REJECT; /* "-0" only as "-0.x" */
        return take_digit(n, f, (uint8_t)(b - '0'));
    case N_ZERO:
    case N_INT:
        if (digit && f->phase == N_INT) return take_digit(n, f, (uint8_t)(b - '0'));
        if (b == '.' && number) {
            frame g = *f;
            g.phase = N_DOT;
            if (g.hi >= MAX_SIG_DIGITS || !viable(n, &g)) return NUM_REJECT;
            *f = g;
            return NUM_TAKEN;
        }
        return number_can_end(n, f) ? NUM_ENDED : NUM_REJECT;
    case N_DOT:
        return digit ? take_digit(n, f, (uint8_t)(b - '0')) : NUM_REJECT;
    case N_FRAC:
        if (digit) return take_digit(n, f, (uint8_t)(b - '0'));
        return number_can_end(n, f) ? NUM_ENDED : NUM_REJECT;
    default:
        return NUM_REJECT;
    }
}
