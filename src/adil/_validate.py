"""Checks of the arguments the binding passes to C.

Everything that crosses into the engine is checked here first, so a bad
argument is an :class:`~adil.errors.InvalidArgumentError` naming it, never an
``OverflowError`` from cffi, a silently truncated value (float ids, 2-D
arrays) or a C string cut at an embedded NUL.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from .errors import InvalidArgumentError

__all__ = ["UINT32_MAX", "c_text", "milliseconds", "path_bytes", "text_bytes", "token_ids",
           "uint32"]

UINT32_MAX = 2**32 - 1
_INT32 = np.iinfo(np.int32)


def uint32(name: str, value: object, *, minimum: int = 0, maximum: int = UINT32_MAX) -> int:
    """`value` as an int in [minimum, maximum] (bools and floats refused)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, (bool, np.bool_)):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if not minimum <= int(value) <= maximum:
        raise InvalidArgumentError(f"{name} must be in {minimum}..{maximum}, got {value}")
    return int(value)


def text_bytes(name: str, text: object) -> bytes:
    """UTF-8 of a str (or bytes as they are); a lone surrogate is refused."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        return bytes(text)
    if not isinstance(text, str):
        raise InvalidArgumentError(f"{name} must be a str or bytes, got {type(text).__name__}")
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{name} is not valid Unicode: {exc.reason} at index {exc.start} "
            f"({text[exc.start:exc.end]!r})") from exc


def c_text(name: str, text: object) -> bytes:
    """Text for a C string: valid UTF-8 without NUL (C would cut it there)."""
    data = text_bytes(name, text)
    if b"\0" in data:
        raise InvalidArgumentError(f"{name} contains a NUL character: {text!r}")
    return data


def path_bytes(name: str, path: object) -> bytes:
    """A file system path for C: str/bytes/PathLike, without NUL."""
    try:
        data = os.fsencode(path)  # type: ignore[arg-type]
    except TypeError as exc:
        raise InvalidArgumentError(f"{name} must be a path, got {type(path).__name__}") from exc
    if b"\0" in data:
        raise InvalidArgumentError(f"{name} contains a NUL character: {path!r}")
    if not data:
        raise InvalidArgumentError(f"{name} is empty")
    return data


def token_ids(name: str, ids: Sequence[int] | npt.NDArray[Any]) -> npt.NDArray[np.int32]:
    """A contiguous 1-D int32 copy of token ids; floats, bools, nested
    sequences and values outside int32 are refused (never truncated)."""
    try:
        array = np.asarray(ids)
    except (ValueError, TypeError) as exc:  # ragged or unconvertible
        raise InvalidArgumentError(f"{name} must be a 1-D sequence of token ids: {exc}") from exc
    if array.ndim != 1:
        raise InvalidArgumentError(
            f"{name} must be a 1-D sequence of token ids, got shape {array.shape}")
    if array.size == 0:
        return np.empty(0, dtype=np.int32)
    if array.dtype.kind not in "iu":
        raise InvalidArgumentError(
            f"{name} must hold integers, got {array.dtype} values such as {array[0]!r}")
    low, high = int(array.min()), int(array.max())
    if low < _INT32.min or high > _INT32.max:
        bad = low if low < _INT32.min else high
        raise InvalidArgumentError(f"{name}: token id {bad} is outside int32")
    return np.ascontiguousarray(array, dtype=np.int32)


def milliseconds(name: str, seconds: float | None) -> int:
    """Seconds as whole milliseconds for the engine (0 = no limit).  An
    infinite limit is no limit; longer than the engine counts (~49 days) is
    also none."""
    if seconds is None or seconds == math.inf:
        return 0
    if not isinstance(seconds, (int, float)) or isinstance(seconds, bool) or not seconds > 0:
        raise InvalidArgumentError(f"{name} must be a positive number of seconds, got {seconds!r}")
    ms = math.ceil(seconds * 1000)
    return ms if ms <= UINT32_MAX else 0
