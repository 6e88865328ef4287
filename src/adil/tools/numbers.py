"""The exact-number rule for tool arguments.

A JSON number is accepted only when the engine can hand the tool exactly the
value it validated:

* its magnitude is at most 2^53 − 1 (every integer up to there is exact in a
  double, so the value survives any JSON reader a tool may use), and
* its text prints back the same: the decimal it denotes equals the shortest
  round-trip form of the double it reads as.  ``0.1``, ``2.50`` and ``1e5``
  are accepted (they denote 0.1, 2.5 and 100000, which is what the doubles
  print as); ``0.10000000000000001`` (reads as 0.1) and ``1e-400`` (reads as
  0.0) are refused: the text promises digits the value does not hold.

Two consequences, stated here because JSON Schema decides them otherwise:

* ``-0`` is refused.  An integer text reads as a Python int, and the int
  zero has no sign: ``-0`` would reach the tool as ``0``, which does not
  print back as ``-0``.  Write ``0``, or ``-0.0`` for a negative zero (a
  float, handed over with its sign).
* An integer parameter refuses ``1.0`` and ``1e2`` (see
  :func:`~.arguments.validate`): JSON Schema counts them as integers, but
  a text with a decimal point or an exponent reads as a float, and handing
  the tool the int ``1`` would not print back as ``1.0``.  Integers are
  written without a decimal point or exponent.

Larger or exact-decimal identifiers belong in strings.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal

from ..errors import InvalidArgumentError

__all__ = ["MAX_EXACT", "InexactNumber", "exact_number", "is_exact_value"]

MAX_EXACT = 2**53 - 1
# More digits than this can never be within ±(2^53 − 1) as an integer text.
_MAX_INT_DIGITS = len(str(MAX_EXACT))
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")


class InexactNumber(ValueError):
    """The number text breaks the exact-number rule; the message says how."""


def exact_number(text: str) -> int | float:
    """The value of JSON number `text` (int for integer texts, float
    otherwise), or :class:`InexactNumber`; InvalidArgumentError when `text`
    is not a JSON number."""
    if not isinstance(text, str) or not _JSON_NUMBER.fullmatch(text):
        raise InvalidArgumentError(f"not a JSON number: {text!r}")
    if not any(c in text for c in ".eE"):
        return _exact_int(text)
    value = float(text)
    if not math.isfinite(value) or abs(value) > MAX_EXACT:
        raise InexactNumber(f"{text} is outside ±(2^53−1); use a string for it")
    if Decimal(text) != Decimal(repr(value)):
        raise InexactNumber(
            f"{text} does not print back the same: it reads as {value!r}; "
            "write it as that, or use a string"
        )
    return value


def _exact_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > _MAX_INT_DIGITS or abs(int(text)) > MAX_EXACT:
        raise InexactNumber(f"{text} is outside ±(2^53−1); use a string for it")
    value = int(text)
    if value == 0 and text.startswith("-"):
        raise InexactNumber(
            f"{text} does not print back the same: it reads as the integer 0, which has no "
            "sign; write 0, or -0.0 for a negative zero"
        )
    return value


def is_exact_value(value: object) -> bool:
    """True for an int or float (not bool) that the rule would accept as
    written by ``json.dumps``."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return abs(value) <= MAX_EXACT
