/*
 * number.c — see number.h.  Values: an integer text is exactly the int64 it
 * spells; a decimal text with M as its digits and f fraction digits reads as
 * M / 10^f, and since M < 2^53 and 10^f (f <= 22) are exact doubles, one
 * IEEE division gives the correctly rounded value, as strtod and Python's
 * float() do.  The bound checks at the end are therefore exact, and so are
 * the checks on a prefix (can any completion still fit?): the completions
 * are grids of decimals (one per count of digits still to come), and a grid
 * is searched for its first value at or above the lower bound, so a range
 * narrower than the step of the grid (0.1999999999999999 .. 1 after "0.1",
 * whose completions of at most 15 digits stop at 0.199999999999999) is not
 * taken for one that holds a value.
 */
#include "number.h"

#include <math.h>

enum { N_START, N_MINUS, N_ZERO, N_INT, N_DOT, N_FRAC };

#define MAX_INT_DIGITS  16                  /* 2^53 - 1 has 16 digits */
#define MAX_SIG_DIGITS  15                  /* of a decimal */
#define MAX_FRAC_DIGITS 22                  /* 10^22 is the last exact power of ten */
#define SIG_LIMIT       1000000000000000ull /* 10^15: the digits of a decimal stay below */

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

static bool negative(const frame *f) { return f->flags & 1u; }

/* Some integer text extending M (with `digits` digits) lies in [lo, hi]? */
static bool ints_fit(uint64_t m, uint32_t digits, bool neg, int64_t lo, int64_t hi) {
    if (lo > hi) return false; /* a "number" range without an integer */
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

/* Some N in [a, b) reads, as N / 10^p (negated when neg), within [min, max]?
 * N < 10^15, so N / 10^p is one correctly rounded division, and the values
 * rise with N: the first N at or above the lower bound decides.  The guess
 * ceil(lo * 10^p) is off by a unit or two at most. */
static bool grid_fits(uint64_t a, uint64_t b, uint32_t p, bool neg, double min, double max) {
    if (b > SIG_LIMIT) b = SIG_LIMIT;
    if (a >= b) return false;
    const double lo = neg ? -max : min, hi = neg ? -min : max;
    const double guess = ceil(lo * POW10[p]);
    uint64_t n = guess <= (double)a ? a : guess >= (double)b ? b - 1 : (uint64_t)guess;
    while (n > a && (double)(n - 1) / POW10[p] >= lo) n--;
    while (n < b && (double)n / POW10[p] < lo) n++;
    return n < b && (double)n / POW10[p] <= hi;
}

/* Some decimal extending digits M (`digits` of them, fd after the point;
 * then k more integer digits when fd = 0) with at least `first` fraction
 * digits lies in [min, max]?  Its digits N extend M to F <= 22 fraction
 * digits and stay below 10^15 (15 significant digits).  For M > 0 the
 * finest such grid holds every coarser one; for M = 0 (only zeros so far)
 * the grids finer than fd + 15 digits each add smaller values. */
static bool grid_prefix(uint64_t m, uint32_t digits, uint32_t k, uint32_t fd, uint32_t first, bool neg,
                        double min, double max) {
    if (m > 0) {
        if (digits + k > MAX_SIG_DIGITS) return false;
        uint32_t F = fd + MAX_SIG_DIGITS - digits - k;
        if (F > MAX_FRAC_DIGITS) F = MAX_FRAC_DIGITS;
        if (F < first) return false;
        uint64_t scale = 1;
        for (uint32_t e = 0; e < k + F - fd; e++) scale *= 10;
        return grid_fits(m * scale, (m + 1) * scale, F, neg, min, max);
    }
    const uint32_t from = fd + MAX_SIG_DIGITS < MAX_FRAC_DIGITS ? fd + MAX_SIG_DIGITS : MAX_FRAC_DIGITS;
    for (uint32_t F = from < first ? first : from; F <= MAX_FRAC_DIGITS; F++) {
        uint64_t b = 1;
        for (uint32_t e = fd; e < F && b < SIG_LIMIT; e++) b *= 10;
        if (grid_fits(0, b, F, neg, min, max)) return true;
    }
    return false;
}

/* Some decimal extending the integer part M (`digits` digits) lies in
 * [min, max]?  More integer digits (none after a lone 0), then at least one
 * fraction digit. */
static bool decimals_fit(uint64_t m, uint32_t digits, bool neg, double min, double max) {
    if (m == 0) return grid_prefix(0, 0, 0, 0, 1, neg, min, max);
    for (uint32_t k = 0; digits + k < MAX_SIG_DIGITS; k++)
        if (grid_prefix(m, digits, k, 0, 1, neg, min, max)) return true;
    return false;
}

/* Some completion of the fraction so far lies in [min, max]? */
static bool fraction_fits(const frame *f, double min, double max) {
    return grid_prefix(f->x, f->hi, 0, f->lo, f->phase == N_DOT ? 1 : f->lo, negative(f), min, max);
}

/* After "-": some digit leads on ("-0" only to a decimal). */
static bool minus_fits(const gnode *n) {
    const bool number = n->kind == NODE_NUMBER;
    if (number && decimals_fit(0, 1, true, n->min, n->max)) return true;
    for (uint64_t d = 1; d <= 9; d++)
        if (ints_fit(d, 1, true, n->imin, n->imax) || (number && decimals_fit(d, 1, true, n->min, n->max)))
            return true;
    return false;
}

static bool viable(const gnode *n, const frame *f) {
    const bool number = n->kind == NODE_NUMBER;
    switch (f->phase) {
    case N_MINUS:
        return minus_fits(n);
    case N_ZERO:
    case N_INT:
        if (ints_fit(f->x, f->count, negative(f), n->imin, n->imax)) return true;
        return number && f->hi < MAX_SIG_DIGITS && decimals_fit(f->x, f->count, negative(f), n->min, n->max);
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

bool number_exists(const gnode *n) {
    static const char starts[] = "-0123456789";
    for (const char *b = starts; *b; b++) {
        frame f = {.node = 0};
        if (number_step(n, &f, (uint8_t)*b) == NUM_TAKEN) return true;
    }
    return false;
}
