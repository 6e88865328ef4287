"""Strict JSON reading for tool arguments.

``json.loads`` with hooks that keep what a plain read would lose: the raw text
of every number (for the exact-number rule), duplicate keys (refused, where a
plain read silently keeps the last), and NaN/Infinity (not JSON).  A second
pass turns the tree into plain Python values and reports the first problem
with its JSON Pointer.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import InvalidArgumentError, OutputValidationError
from .depth import MAX_DEPTH, too_deep_at
from .numbers import InexactNumber, exact_number
from .pointer import join

__all__ = ["strict_loads"]


class _Number:
    """A number's raw text, judged later when its location is known."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Constant:
    """NaN, Infinity or -Infinity: Python accepts them, JSON does not."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Object(dict[str, Any]):
    """An object that remembers the keys it saw twice."""

    duplicates: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> _Object:
    obj = _Object()
    obj.duplicates = []
    for key, value in pairs:
        if key in obj:
            obj.duplicates.append(key)
        else:
            obj[key] = value
    return obj


def strict_loads(text: str | bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """Plain Python values of JSON `text`, or :class:`OutputValidationError`
    (with ``.location``) for invalid JSON, duplicate keys, non-JSON
    constants, numbers that break the exact-number rule, or lone surrogates
    (``\\ud800``: JSON can write them, UTF-8 cannot; a key that holds one is
    reported at the location of its object, so that every location is
    Unicode text), or nesting deeper than `max_depth` (checked on the text
    before it is read, so that no depth exhausts Python's recursion)."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise OutputValidationError(f"arguments are not UTF-8: {exc}") from exc
    if not isinstance(text, str):
        raise InvalidArgumentError(f"expected JSON text (str or bytes), got {type(text).__name__}")
    offset = too_deep_at(text, max_depth)
    if offset is not None:
        raise OutputValidationError(
            f"JSON nested deeper than {max_depth} levels (at offset {offset})")
    try:
        tree = json.loads(
            text, object_pairs_hook=_pairs, parse_int=_Number, parse_float=_Number,
            parse_constant=_Constant,
        )
    except json.JSONDecodeError as exc:
        raise OutputValidationError(
            f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno} (offset {exc.pos})"
        ) from exc
    return _plain(tree, "")


def _plain(node: Any, where: str) -> Any:
    if isinstance(node, _Object):
        for key in node:
            if not _is_unicode(key):
                raise OutputValidationError(
                    f"the key {ascii(key)} holds a lone surrogate escape (not a Unicode "
                    "character)", location=where)
        if node.duplicates:
            key = node.duplicates[0]
            raise OutputValidationError(f"duplicate key {key!r}", location=join(where, key))
        return {k: _plain(v, join(where, k)) for k, v in node.items()}
    if isinstance(node, list):
        return [_plain(v, join(where, i)) for i, v in enumerate(node)]
    if isinstance(node, _Number):
        try:
            return exact_number(node.text)
        except InexactNumber as exc:
            raise OutputValidationError(str(exc), location=where) from None
    if isinstance(node, _Constant):
        raise OutputValidationError(f"{node.text} is not a JSON number", location=where)
    if isinstance(node, str):
        _check_text(node, where)
    return node


def _check_text(text: str, where: str) -> None:
    if not _is_unicode(text):
        raise OutputValidationError(
            "string holds a lone surrogate escape (not a Unicode character)", location=where
        )


def _is_unicode(text: str) -> bool:
    """False when `text` holds a lone surrogate (it has no UTF-8 form)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
