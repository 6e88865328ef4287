"""The JSON-schema subset a tool's parameters may use (DESIGN §5).

Everything outside it is refused when the tool is built, with a
:class:`~adil.errors.ToolSchemaError` whose ``.location`` is the JSON Pointer
of the offending keyword (``/properties/to/$ref``).  The subset is what the
engine's grammar can enforce exactly, so what the model writes and what the
validator accepts are the same language.

Supported keywords: ``type`` (a name or a list of names), ``properties``,
``required``, ``additionalProperties`` (a boolean), ``items`` (one schema),
``enum``, ``const``, ``description``, ``title``, ``minimum``/``maximum``,
``minLength``/``maxLength``, ``minItems``/``maxItems``.  Every schema needs
``type``, ``enum`` or ``const``.  An object schema without
``additionalProperties`` is allowed with a :class:`ToolSchemaWarning`: set it
to false so that invented fields are refused.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from ..errors import ToolSchemaError
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
            f"type must be one of {sorted(JSON_TYPES)} or a list of them, got {value!r}",
            location=where,
        )
    if len(set(names)) != len(names):
        raise ToolSchemaError(f"type lists a name twice: {value!r}", location=where)


def _check_text(value: Any, where: str) -> None:
    if not isinstance(value, str):
        raise ToolSchemaError(f"expected a string, got {value!r}", location=where)


def _check_bound(value: Any, where: str) -> None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or abs(value) > MAX_EXACT:
        raise ToolSchemaError(
            f"expected a finite number within ±(2^53−1), got {value!r}", location=where
        )


def _check_count(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ToolSchemaError(f"expected a non-negative integer, got {value!r}", location=where)


def _check_boolean(value: Any, where: str) -> None:
    if not isinstance(value, bool):
        raise ToolSchemaError(
            f"additionalProperties must be true or false (a schema there is outside the "
            f"subset), got {value!r}",
            location=where,
        )


def _check_enum(value: Any, where: str) -> None:
    if not isinstance(value, list) or not value:
        raise ToolSchemaError(f"enum must be a non-empty list, got {value!r}", location=where)
    for i, item in enumerate(value):
        _check_json_value(item, join(where, i))


def _check_json_value(value: Any, where: str) -> None:
    if value is None or isinstance(value, bool | str):
        return
    if isinstance(value, int | float):
        _check_bound(value, where)
        return
    if isinstance(value, list):
        for i, item in enumerate(value):
            _check_json_value(item, join(where, i))
        return
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        for key, item in value.items():
            _check_json_value(item, join(where, key))
        return
    raise ToolSchemaError(f"not a JSON value: {value!r}", location=where)


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
    "const": _check_json_value,
}
KEYWORDS = frozenset(_VALUE_CHECKS) | {"properties", "required", "items"}


def check_schema(schema: Any, *, root_object: bool = True) -> list[str]:
    """Checks `schema` against the subset; raises :class:`ToolSchemaError`
    at the first keyword outside it.  Returns the JSON Pointers of the object
    schemas that lack ``additionalProperties`` (for a warning).

    With `root_object` (tool parameters), the top level must be an object."""
    open_objects: list[str] = []
    _walk(schema, "", open_objects)
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


def _walk(schema: Any, where: str, open_objects: list[str]) -> None:
    if not isinstance(schema, dict):
        raise ToolSchemaError(
            f"a schema must be a JSON object, got {schema!r}", location=where
        )
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
        raise ToolSchemaError(
            "a schema needs type, enum or const (the grammar cannot constrain any value)",
            location=where,
        )
    _check_ranges(schema, where)
    _walk_object(schema, where, open_objects)
    if "items" in schema:
        _walk(schema["items"], join(where, "items"), open_objects)


def _walk_object(schema: dict[str, Any], where: str, open_objects: list[str]) -> None:
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ToolSchemaError(
            f"properties must be an object, got {properties!r}", location=join(where, "properties")
        )
    for name, sub in properties.items():
        _walk(sub, join(where, "properties", name), open_objects)
    required = schema.get("required", [])
    if not isinstance(required, list):
        raise ToolSchemaError(
            f"required must be a list of names, got {required!r}", location=join(where, "required")
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
