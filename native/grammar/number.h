/*
 * number.h — the number lexer of the grammar, under the exact-number rule:
 * integers -?(0|[1-9][0-9]*) within ±(2^53-1), never "-0"; for "number"
 * nodes also decimals without exponent of at most 15 significant digits
 * (every such text reads as a double that prints back as the same decimal).
 * Bounds (minimum/maximum) are kept as the digits come: a digit is refused
 * when no completion of the text can fall within them.
 *
 * Frame fields: flags bit 0 = negative; count = integer digits; lo =
 * fraction digits; hi = significant digits; x = all digits as an integer.
 */
#ifndef ADIL_GRAMMAR_NUMBER_H
#define ADIL_GRAMMAR_NUMBER_H

#include "grammar_internal.h"

typedef enum number_result {
    NUM_REJECT,
    NUM_TAKEN, /* the byte belongs to the number */
    NUM_ENDED  /* the number is complete and the byte belongs to what follows */
} number_result;

/* Steps the number frame `f` of node `n` over byte b (f updated when TAKEN). */
number_result number_step(const gnode *n, frame *f, uint8_t b);

/* True when the number so far is a complete, valid value of `n`. */
bool number_can_end(const gnode *n, const frame *f);

/* True when some text is a valid value of `n` (a range may hold reals but
 * no integer and no decimal of at most 15 significant digits). */
bool number_exists(const gnode *n);

#endif /* ADIL_GRAMMAR_NUMBER_H */
