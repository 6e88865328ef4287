"""Structured output: ``model.complete(prompt, schema=...)`` returns the
parsed value as well as the text.

A schema is one of:

* a dict in the schema subset (:mod:`adil.tools.schema`); unlike tool
  parameters its root may be any type, and a schema without ``type``,
  ``enum`` or ``const`` (``{}``) stands for any JSON value;
* a type the ``@adil.tool`` decorator reads (:mod:`adil.tools.hints`): a
  ``@dataclass``, a ``TypedDict``, a pydantic model when pydantic is
  installed, or any other hint it supports (``list[int]``, ``Literal``...).

The engine's grammar keeps the output a prefix of a valid document token by
token; the finished text is then read with the same strict reader and
validator as tool arguments (:func:`~adil.tools.strict_json.strict_loads`,
:func:`~adil.tools.arguments.validate`) and, for a type, converted to it (an
instance of the dataclass or pydantic model; a dict for a TypedDict).  Output
that is invalid, breaks the schema or was cut short (``max_tokens``) raises
:class:`~adil.errors.OutputValidationError`: ``.location`` is the JSON
Pointer of the value at fault (for output cut short or refused by the
engine, the value it was writing), ``.text`` the text generated so far.
"""

from __future__ import annotations

import copy
import json
import typing
from dataclasses import dataclass
from typing import Any

from .constraints import Constraint, schema_constraint
from .errors import InvalidArgumentError, OutputValidationError, ToolSchemaError
from .tools import strict_loads, validate
from .tools.hints import convert, schema_for_hint
from .tools.pointer import join

__all__ = ["OutputSchema", "output_schema", "prefix_location"]


@dataclass(frozen=True)
class OutputSchema:
    """A checked output schema: the grammar's constraint, and how the
    finished text becomes a value."""

    schema: dict[str, Any]
    constraint: Constraint
    hint: Any = None  # the type the value is converted to (None: plain JSON values)

    def read(self, text: str) -> Any:
        """The value of the finished `text`, or OutputValidationError (with
        ``.location`` and ``.text``)."""
        try:
            value = strict_loads(text)
            validate(value, self.schema)
        except OutputValidationError as exc:
            raise OutputValidationError(
                f"the output does not match the schema: {exc}", location=exc.location, text=text
            ) from exc
        return value if self.hint is None else self._convert(value, text)

    def _convert(self, value: Any, text: str) -> Any:
        try:
            return convert(value, self.hint)
        except (ValueError, TypeError) as exc:  # a __post_init__ or a pydantic validator refused
            name = getattr(self.hint, "__name__", repr(self.hint))
            raise OutputValidationError(
                f"the output matches the schema but {name} refused it: {exc}", location="",
                text=text,
            ) from exc


def output_schema(spec: Any) -> OutputSchema:
    """The :class:`OutputSchema` of a dict schema or a type;
    ToolSchemaError (``.location``) for one outside the subset,
    InvalidArgumentError for anything else."""
    if isinstance(spec, dict):
        schema = copy.deepcopy(spec)  # later changes of the caller's dict change nothing
        return OutputSchema(schema, schema_constraint(schema))
    if not (isinstance(spec, type) or typing.get_origin(spec) is not None):
        raise InvalidArgumentError(
            "schema must be a dict (a JSON schema) or a type (a dataclass, a TypedDict, a "
            f"pydantic model...), got {spec!r}")
    try:
        schema = schema_for_hint(spec, "")
    except RecursionError as exc:
        raise ToolSchemaError(f"{spec!r} nests too deeply", location="") from exc
    return OutputSchema(schema, schema_constraint(schema), spec)


# Where a container of a JSON prefix stands (prefix_location).
_KEY, _VALUE, _DONE = 0, 1, 2  # writing a key / inside a value / after a complete value


def prefix_location(text: str) -> str:
    """The JSON Pointer of the value that the JSON prefix `text` was
    writing when it stopped (``{"a":[1,`` -> ``/a/1``); the container
    itself while a key is written or after a complete string or container
    (``{"a":"x"`` -> ``""``: what comes next belongs to the object).  Meant
    for text an engine cut short or refused: it reads what it can and never
    raises."""
    frames: list[list[Any]] = []  # [is_object, key or index, _KEY | _VALUE | _DONE]
    i = 0
    while i < len(text):
        char = text[i]
        if char == '"':
            end = _string_end(text, i)
            if end is None:
                break  # inside a string: the value it belongs to stands
            if frames and frames[-1][0] and frames[-1][2] == _KEY:
                frames[-1][1] = _key(text[i:end])
            elif frames:
                frames[-1][2] = _DONE
            i = end
            continue
        _structure(frames, char)
        i += 1
    return join("", *(frame[1] for frame in frames if frame[2] == _VALUE))


def _structure(frames: list[list[Any]], char: str) -> None:
    if char in "{[":
        frames.append([True, None, _KEY] if char == "{" else [False, 0, _VALUE])
    elif char in "}]" and frames:
        frames.pop()
        if frames:
            frames[-1][2] = _DONE
    elif char == ":" and frames and frames[-1][0]:
        frames[-1][2] = _VALUE
    elif char == "," and frames:
        frame = frames[-1]
        if frame[0]:
            frame[1], frame[2] = None, _KEY
        else:
            frame[1], frame[2] = frame[1] + 1, _VALUE


def _string_end(text: str, start: int) -> int | None:
    """The index after the closing quote of the string opening at `start`."""
    i = start + 1
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text[i] == '"':
            return i + 1
        else:
            i += 1
    return None


def _key(literal: str) -> str:
    try:
        key = json.loads(literal)
    except ValueError:
        return literal[1:-1]
    return key if isinstance(key, str) else literal[1:-1]
