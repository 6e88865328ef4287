"""Validating tool arguments against a checked schema (see :mod:`.schema`).

Errors are :class:`~adil.errors.OutputValidationError` with the JSON Pointer
of the offending value in ``.location`` (for a missing property, the pointer
where it should be).
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError, OutputValidationError
from .depth import MAX_DEPTH
from .pointer import join
from .strict_json import strict_loads

__all__ = ["json_equal", "json_type", "parse_arguments", "validate"]


def parse_arguments(text: str | bytes, schema: dict[str, Any]) -> dict[str, Any]:
    """Strictly reads JSON `text` and validates it against `schema`."""
    value = strict_loads(text)
    validate(value, schema)
    if not isinstance(value, dict):
        raise OutputValidationError(
            f"arguments must be a JSON object, got {json_type(value)}", location=""
        )
    return value


def json_type(value: Any) -> str:
    """The JSON type name of a plain Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _has_type(value: Any, name: str) -> bool:
    actual = json_type(value)
    return actual == name or (name == "number" and actual == "integer")


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 == 1.0, but true != 1 and "1" != 1.  Recurses only as
    deep as the shallower value (a checked schema's enum/const is at most
    MAX_DEPTH deep)."""
    ta, tb = json_type(a), json_type(b)
    if {ta, tb} <= {"integer", "number"}:
        return bool(a == b)
    if ta != tb:
        return False
    if ta == "array":
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if ta == "object":
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    return bool(a == b)


def validate(value: Any, schema: dict[str, Any], where: str = "", _depth: int = 1) -> None:
    """Raises :class:`OutputValidationError` when `value` breaks `schema`
    (a schema checked by :func:`~.schema.check_schema`).  The walk follows
    the schema, so it is as deep as the schema at most: MAX_DEPTH levels."""
    if not isinstance(schema, dict):
        raise InvalidArgumentError(f"a schema is a dict, got {type(schema).__name__}")
    if _depth > MAX_DEPTH:
        raise OutputValidationError(
            f"nested deeper than {MAX_DEPTH} levels (is the schema checked?)", location=where
        )
    if "const" in schema and not json_equal(value, schema["const"]):
        raise OutputValidationError(
            f"expected the constant {schema['const']!r}, got {value!r}", location=where
        )
    if "enum" in schema and not any(json_equal(value, e) for e in schema["enum"]):
        raise OutputValidationError(
            f"expected one of {schema['enum']!r}, got {value!r}", location=where
        )
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_has_type(value, n) for n in names):
            expected = " or ".join(names)
            hint = ""
            if "integer" in names and isinstance(value, float) and value.is_integer():
                hint = (f" {value!r}: write an integer without a decimal point or exponent "
                        f"(as {int(value)}); a number written as a float stays a float")
            raise OutputValidationError(
                f"expected {expected}, got {json_type(value)}{hint}", location=where
            )
    kind = json_type(value)
    if kind in ("integer", "number"):
        _check_number(value, schema, where)
    elif kind == "string":
        _check_length(len(value), schema, "minLength", "maxLength", "characters", where)
    elif kind == "array":
        _check_length(len(value), schema, "minItems", "maxItems", "items", where)
        if "items" in schema:
            for i, item in enumerate(value):
                validate(item, schema["items"], join(where, i), _depth + 1)
    elif kind == "object":
        _check_object(value, schema, where, _depth)


def _check_number(value: float, schema: dict[str, Any], where: str) -> None:
    if "minimum" in schema and value < schema["minimum"]:
        raise OutputValidationError(
            f"{value!r} is below the minimum {schema['minimum']!r}", location=where
        )
    if "maximum" in schema and value > schema["maximum"]:
        raise OutputValidationError(
            f"{value!r} is above the maximum {schema['maximum']!r}", location=where
        )


def _check_length(
    size: int, schema: dict[str, Any], low: str, high: str, unit: str, where: str
) -> None:
    if low in schema and size < schema[low]:
        raise OutputValidationError(
            f"{size} {unit}, fewer than {low} {schema[low]}", location=where
        )
    if high in schema and size > schema[high]:
        raise OutputValidationError(
            f"{size} {unit}, more than {high} {schema[high]}", location=where
        )


def _check_object(value: dict[str, Any], schema: dict[str, Any], where: str, depth: int) -> None:
    properties: dict[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            raise OutputValidationError(
                f"required property {name!r} is missing", location=join(where, name)
            )
    for name, item in value.items():
        if name in properties:
            validate(item, properties[name], join(where, name), depth + 1)
        elif schema.get("additionalProperties") is False:
            raise OutputValidationError(
                f"property {name!r} is not in the schema (additionalProperties is false)",
                location=join(where, name),
            )
