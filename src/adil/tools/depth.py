"""How deep JSON may nest, and the checks that keep every walk of it
bounded (Python's recursion limit is about 1,000 frames: a model's
arguments, a tool's result or an application's schema nested deeper would
otherwise end a run with RecursionError).

* :data:`MAX_DEPTH` (64): tool-call arguments and parameter schemas.  A
  schema nests at most 64 levels, so the values it describes do too; the
  reference stub engine's JSON reader has the same bound.
* :data:`MAX_RESULT_DEPTH` (128): tool results (see :mod:`.results`).

A value's depth counts its containers: ``1`` is 0 deep, ``{"a": 1}`` 1,
``{"a": [1]}`` 2.  A schema's depth counts schemas: the root is 1, each
``properties/x`` or ``items`` one more.
"""

from __future__ import annotations

import re

__all__ = ["MAX_DEPTH", "MAX_RESULT_DEPTH", "too_deep_at"]

MAX_DEPTH = 64
MAX_RESULT_DEPTH = 128

# A JSON string (skipped whole) or one bracket.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def too_deep_at(text: str, limit: int) -> int | None:
    """The offset of the first bracket of JSON `text` that opens a container
    more than `limit` deep, or None.  Brackets inside strings do not count;
    the text need not be valid JSON (the reader reports that)."""
    depth = 0
    for match in _TOKEN.finditer(text):
        char = match.group()
        if char in "[{":
            depth += 1
            if depth > limit:
                return match.start()
        elif char in "]}":
            depth -= 1
    return None
