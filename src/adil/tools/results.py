"""A tool's result as the JSON text the model receives.

The handler may return any JSON value built of dicts, lists and tuples,
str, int, float, bool and None, dataclass instances and pydantic models.
Anything else, NaN and infinities, a value that contains itself, and
nesting deeper than :data:`~.depth.MAX_RESULT_DEPTH` are refused with
:class:`~adil.errors.OutputValidationError`, whose ``.location`` is the
JSON Pointer of the offending value inside the result.  The walk is bounded
by that depth, so no result can exhaust Python's recursion.
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from ..errors import OutputValidationError
from .depth import MAX_RESULT_DEPTH
from .pointer import join

__all__ = ["result_json"]


def result_json(value: Any) -> str:
    """`value` as compact JSON text (``ensure_ascii=False``), or
    :class:`OutputValidationError`."""
    tree = _plain(value, "", 0, set())
    try:
        return json.dumps(tree, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:  # keys json cannot write, ints too long for str
        raise OutputValidationError(f"the result is not JSON: {exc}", location="") from exc


def _plain(value: Any, where: str, depth: int, path: set[int]) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise OutputValidationError(f"{value!r} is not a JSON number", location=where)
        return value
    original = id(value)  # a dataclass or model is converted: cycles are checked on it
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    else:
        dump = getattr(value, "model_dump", None)
        if callable(dump) and not isinstance(value, type):  # a pydantic model
            value = dump(mode="json")
    if not isinstance(value, dict | list | tuple):
        raise OutputValidationError(
            f"a value of type {type(value).__name__} is not JSON (use dicts, lists, str, "
            "int, float, bool, None, dataclasses or pydantic models)", location=where)
    if depth >= MAX_RESULT_DEPTH:
        raise OutputValidationError(
            f"the result nests deeper than {MAX_RESULT_DEPTH} levels", location=where)
    if original in path:
        raise OutputValidationError("the result contains itself (a circular reference)",
                                    location=where)
    path.add(original)
    try:
        if isinstance(value, dict):
            return {k: _plain(v, join(where, str(k)), depth + 1, path) for k, v in value.items()}
        return [_plain(v, join(where, i), depth + 1, path) for i, v in enumerate(value)]
    finally:
        path.discard(original)
