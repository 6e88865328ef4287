"""The JSON-schema subset a tool's parameters may use.

Everything outside it is refused when the tool is built, with a
:class:`~adil.errors.ToolSchemaError` whose ``.location`` is the JSON Pointer
of the offending keyword (``/properties/to/$ref``).  The subset is what the
engine's grammar can enforce exactly, so what the model writes and what the
validator accepts are the same language.

Supported keywords: ``type`` (a name or a list of names), ``properties``,
``required``, ``additionalProperties`` (a boolean), ``items`` (one schema),
``enum``, ``const``, ``description``, ``title``, ``minimum``/``maximum``,
``minLength``/``maxLength``, ``minItems``/``maxItems``.  Every schema needs
``type``, ``enum`` or ``const``, except in structured output
(``check_schema(..., any_value=True)``), where a schema with none of them
(``{}``, or only ``description``/``title``) stands for any JSON value.  Schemas nest at most
:data:`~.depth.MAX_DEPTH` (64) levels, and so do ``enum``/``const`` values;
a schema that contains itself (a Python dict or list inside itself) is
refused as a cycle: without ``$ref`` a schema is a finite tree.  An object schema without
``additionalProperties`` is allowed with a :class:`ToolSchemaWarning`: set it
to false so that invented fields are refused.
"""

from __future__ import annotations

import math
import reprlib
from collections.abc import Callable
from typing import Any

from ..errors import ToolSchemaError
from .depth import MAX_DEPTH
from .numbers import MAX_EXACT
from .pointer import join

__all__ = ["JSON_TYPES", "KEYWORDS", "ToolSchemaWarning", "check_schema"]

JSON_TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


class ToolSchemaWarning(UserWarning):
    """A schema inside the subset that is still unwise (no additionalProperties)."""


def _check_type(value: Any, where: str) -> None:
    names = value if isinstance(value, list) else [value]
    if not names or not all(isinstance(n, str) and n in JSON_TYPES for n in names):
        raise ToolSchemaError(
            f"type must be one of {sorted(JSON_TYPES)} or a list of them, got {_short(value)}",
            location=where,
        )
    if len(set(names)) != len(names):
        raise ToolSchemaError(f"type lists a name twice: {value!r}", location=where)


def _check_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ToolSchemaError(f"expected a string, got {_short(value)}", location=where)
    _check_unicode(value, where)


def _check_bound(value: Any, where: str) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or abs(value) > MAX_EXACT:
        raise ToolSchemaError(
            f"expected a finite number within ±(2^53−1), got {_short(value)}", location=where
        )


def _check_count(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolSchemaError(f"expected a non-negative integer, got {_short(value)}",
                              location=where)


def _check_boolean(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise ToolSchemaError(
            f"additionalProperties must be true or false (a schema there is outside the "
            f"subset), got {_short(value)}",
            location=where,
        )


def _check_enum(value: Any, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise ToolSchemaError(f"enum must be a non-empty list, got {_short(value)}",
                              location=where)
    for i, item in enumerate(value):
        _check_json_value(item, join(where, i))


def _check_const(value: Any, where: str) -> None:
    _check_json_value(value, where)


def _check_json_value(value: Any, where: str, depth: int = 0,
                      path: frozenset[int] = frozenset()) -> None:
    if isinstance(value, str):
        _check_unicode(value, where)
        return
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, int | float):
        _check_bound(value, where)
        return
    if not isinstance(value, list | dict):
        raise ToolSchemaError(f"not a JSON value: {_short(value)}", location=where)
    if id(value) in path:
        raise ToolSchemaError("the value contains itself (a cycle)", location=where)
    if depth >= MAX_DEPTH:
        raise ToolSchemaError(f"values in a schema nest at most {MAX_DEPTH} levels",
                              location=where)
    inner = path | {id(value)}
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_value(item, join(where, i), depth + 1, inner)
        return
    for key, item in value.items():
        if not isinstance(key, str):
            raise ToolSchemaError(f"object keys are strings, got {key!r}", location=where)
        _check_unicode(key, where)
        _check_json_value(item, join(where, key), depth + 1, inner)


def _short(value: Any) -> str:
    """repr(value), cut: a refused value may be huge, deep, or contain itself."""
    return reprlib.repr(value)


def _check_unicode(text: str, where: str) -> None:
    """Schema text is shown to the model: it must be Unicode (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolSchemaError(f"text holds a lone surrogate: {ascii(text)[:80]}",
                              location=where) from None


# keyword -> the check of its value (schemas nested in properties/items are
# walked by check_schema itself).
_VALUE_CHECKS: dict[str, Callable[[Any, str], None]] = {
    "type": _check_type,
    "description": _check_text,
    "title": _check_text,
    "minimum": _check_bound,
    "maximum": _check_bound,
    "minLength": _check_count,
    "maxLength": _check_count,
    "minItems": _check_count,
    "maxItems": _check_count,
    "additionalProperties": _check_boolean,
    "enum": _check_enum,
    "const": _check_const,
}
KEYWORDS = frozenset(_VALUE_CHECKS) | {"properties", "required", "items"}


def check_schema(schema: Any, *, root_object: bool = True, any_value: bool = False) -> list[str]:
    """Checks `schema` against the subset; raises :class:`ToolSchemaError`
    at the first keyword outside it.  Returns the JSON Pointers of the object
    schemas that lack ``additionalProperties`` (for a warning).

    With `root_object` (tool parameters), the top level must be an object.
    With `any_value` (structured output), a schema without ``type``,
    ``enum`` or ``const`` stands for any JSON value; it may then carry only
    ``description`` and ``title`` (the grammar and the validator must read
    it the same way)."""
    open_objects: list[str] = []
    _walk(schema, "", open_objects, 1, frozenset(), any_value)
    if root_object and _types(schema) != {"object"}:
        raise ToolSchemaError(
            'tool parameters must be a schema of "type": "object"', location=join("", "type")
        )
    return open_objects


def _types(schema: dict[str, Any]) -> set[str]:
    value = schema.get("type")
    if value is None:
        return set()
    return set(value) if isinstance(value, list) else {value}


def _walk(schema: Any, where: str, open_objects: list[str], depth: int,
          path: frozenset[int], any_value: bool) -> None:
    """Checks one schema `depth` levels deep; `path`: the ids of the schemas
    that enclose it (a schema among them is a cycle)."""
    if not isinstance(schema, dict):
        raise ToolSchemaError(
            f"a schema must be a JSON object, got {_short(schema)}", location=where
        )
    if id(schema) in path:
        raise ToolSchemaError(
            "the schema contains itself (a cycle); without $ref a schema is a finite tree",
            location=where,
        )
    if depth > MAX_DEPTH:
        raise ToolSchemaError(f"schemas nest at most {MAX_DEPTH} levels", location=where)
    inner = path | {id(schema)}
    for key in schema:
        if key not in KEYWORDS:
            raise ToolSchemaError(
                f"{key!r} is outside the supported schema subset", location=join(where, key)
            )
    for key, value in schema.items():
        check = _VALUE_CHECKS.get(key)
        if check is not None:
            check(value, join(where, key))
    if not {"type", "enum", "const"} & schema.keys():
        _check_any_value(schema, where, any_value)
        return
    _check_ranges(schema, where)
    _walk_object(schema, where, open_objects, depth, inner, any_value)
    if "items" in schema:
        _walk(schema["items"], join(where, "items"), open_objects, depth + 1, inner, any_value)


def _check_any_value(schema: dict[str, Any], where: str, any_value: bool) -> None:
    """A schema without type, enum or const: any value, where allowed."""
    if not any_value:
        raise ToolSchemaError(
            "a schema needs type, enum or const (the grammar cannot constrain any value)",
            location=where,
        )
    other = sorted(set(schema) - {"description", "title"})
    if other:
        raise ToolSchemaError(
            f"a schema without type, enum or const stands for any value; {other[0]!r} needs "
            "a type beside it", location=join(where, other[0]),
        )


def _walk_object(schema: dict[str, Any], where: str, open_objects: list[str], depth: int,
                 path: frozenset[int], any_value: bool) -> None:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ToolSchemaError(
            f"properties must be an object, got {_short(properties)}",
            location=join(where, "properties"),
        )
    for name, sub in properties.items():
        if not isinstance(name, str):
            raise ToolSchemaError(f"property names are strings, got {name!r}",
                                  location=join(where, "properties"))
        _check_unicode(name, join(where, "properties"))
        _walk(sub, join(where, "properties", name), open_objects, depth + 1, path, any_value)
    required = schema.get("required", [])
    if not isinstance(required, list):
        raise ToolSchemaError(
            f"required must be a list of names, got {_short(required)}",
            location=join(where, "required"),
        )
    for i, name in enumerate(required):
        if not isinstance(name, str) or name not in properties or required.index(name) != i:
            raise ToolSchemaError(
                f"required entry {name!r} is not a declared property (or repeats one)",
                location=join(where, "required", i),
            )
    if "object" in _types(schema) and "additionalProperties" not in schema:
        open_objects.append(where)


def _check_ranges(schema: dict[str, Any], where: str) -> None:
    for low, high in (("minimum", "maximum"), ("minLength", "maxLength"),
                      ("minItems", "maxItems")):
        if low in schema and high in schema and schema[low] > schema[high]:
            raise ToolSchemaError(
                f"{low} {schema[low]!r} is above {high} {schema[high]!r}",
                location=join(where, high),
            )
