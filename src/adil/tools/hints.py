"""JSON schemas from Python type hints, and arguments back into those types.

Supported: ``str``, ``int``, ``float``, ``bool``, ``None``, ``Optional[X]`` /
``X | None``, unions of scalar types, ``Literal[...]``, ``enum.Enum``
subclasses, ``list[X]`` (and ``Sequence[X]``), ``TypedDict``, dataclasses,
pydantic models (when pydantic is installed), and ``Annotated[X, "text"]``
for a description.  Anything else raises :class:`ToolSchemaError` at the
parameter's location: the schema subset has no ``$ref`` or ``anyOf``, so
recursive types and unions of structures cannot be written.
"""

from __future__ import annotations

import dataclasses
import enum
import types
import typing
from collections.abc import Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from ..errors import ToolSchemaError
from .pointer import join

__all__ = ["convert", "schema_for_hint"]

_SCALARS: dict[Any, str] = {
    str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null",
    None: "null",
}
_LIST_ORIGINS = (list, Sequence, typing.Sequence)


def _pydantic_base() -> type | None:
    try:
        from pydantic import BaseModel
    except ImportError:
        return None
    return BaseModel


def _is_pydantic(hint: Any) -> bool:
    base = _pydantic_base()
    return base is not None and isinstance(hint, type) and issubclass(hint, base)


def _is_union(hint: Any) -> bool:
    return get_origin(hint) in (Union, types.UnionType)


def schema_for_hint(hint: Any, where: str, _seen: tuple[type, ...] = ()) -> dict[str, Any]:
    """The subset schema for `hint`; `where` is its JSON Pointer in the
    parameters schema (for errors)."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        inner, *extra = get_args(hint)
        schema = schema_for_hint(inner, where, _seen)
        notes = [e for e in extra if isinstance(e, str)]
        return {**schema, "description": " ".join(notes)} if notes else schema
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if origin is Literal:
        return _enum_schema(list(get_args(hint)), where)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([m.value for m in hint], where)
    if _is_union(hint):
        return _union_schema(hint, where, _seen)
    if origin in _LIST_ORIGINS:
        (item,) = get_args(hint) or (None,)
        if item is None:
            raise ToolSchemaError(f"{hint!r} needs an item type", location=where)
        return {"type": "array", "items": schema_for_hint(item, join(where, "items"), _seen)}
    if isinstance(hint, type) and hint in _seen:
        raise ToolSchemaError(
            f"{hint.__name__} refers to itself; recursive types need $ref, which is outside "
            "the schema subset", location=where,
        )
    if typing.is_typeddict(hint):
        return _typed_dict_schema(hint, where, (*_seen, hint))
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _dataclass_schema(hint, where, (*_seen, hint))
    if _is_pydantic(hint):
        return _pydantic_schema(hint, where, (*_seen, hint))
    raise ToolSchemaError(f"type hint {hint!r} has no schema in the subset", location=where)


def _enum_schema(values: list[Any], where: str) -> dict[str, Any]:
    for value in values:
        if value is not None and not isinstance(value, str | int | float | bool):
            raise ToolSchemaError(f"enum value {value!r} is not a JSON scalar", location=where)
    names = list(dict.fromkeys(_json_scalar_type(v) for v in values))
    schema: dict[str, Any] = {"type": names[0] if len(names) == 1 else names}
    schema["enum"] = values
    return schema


def _json_scalar_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    return "integer" if isinstance(value, int) else "number" if isinstance(
        value, float) else "string"


def _union_schema(hint: Any, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    members = [m for m in get_args(hint) if m is not type(None)]
    nullable = len(members) != len(get_args(hint))
    if len(members) == 1:
        schema = dict(schema_for_hint(members[0], where, seen))
    elif all(m in _SCALARS for m in members):
        schema = {"type": [_SCALARS[m] for m in members]}
    else:
        raise ToolSchemaError(
            f"{hint!r}: unions other than Optional[X] or of scalar types need anyOf, which is "
            "outside the schema subset", location=where,
        )
    return _with_null(schema) if nullable else schema


def _with_null(schema: dict[str, Any]) -> dict[str, Any]:
    if "enum" in schema and None not in schema["enum"]:
        schema["enum"] = [*schema["enum"], None]
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    if "null" not in names:
        schema["type"] = [*names, "null"]
    return schema


def _object_schema(
    fields: list[tuple[str, Any, bool, str | None]], where: str, seen: tuple[type, ...]
) -> dict[str, Any]:
    """fields: (name, hint, required, description)."""
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, hint, is_required, text in fields:
        schema = schema_for_hint(hint, join(where, "properties", name), seen)
        if text and "description" not in schema:
            schema = {**schema, "description": text}
        properties[name] = schema
        if is_required:
            required.append(name)
    schema_out: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema_out["required"] = required
    schema_out["additionalProperties"] = False
    return schema_out


def _typed_dict_schema(hint: Any, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    total = getattr(hint, "__total__", True)
    fields: list[tuple[str, Any, bool, str | None]] = [
        (name, _strip_required(h), _is_required_key(h, total), None)
        for name, h in hints.items()]
    return _object_schema(fields, where, seen)


def _is_required_key(hint: Any, total: bool) -> bool:
    """Read from the hint itself: ``__required_keys__`` misses NotRequired
    in string annotations (``from __future__ import annotations``)."""
    origin = get_origin(hint)
    if origin is typing.NotRequired:
        return False
    return True if origin is typing.Required else total


def _strip_required(hint: Any) -> Any:
    """Required[X] / NotRequired[X] → X (get_type_hints keeps them with extras)."""
    if get_origin(hint) in (typing.Required, typing.NotRequired):
        return get_args(hint)[0]
    return hint


def _dataclass_schema(hint: type, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    hints = get_type_hints(hint, include_extras=True)
    fields = []
    for field in dataclasses.fields(hint):
        if not field.init:
            continue
        missing = dataclasses.MISSING
        required = field.default is missing and field.default_factory is missing
        text = field.metadata.get("description") if field.metadata else None
        fields.append((field.name, hints[field.name], required, text))
    return _object_schema(fields, where, seen)


def _pydantic_schema(hint: Any, where: str, seen: tuple[type, ...]) -> dict[str, Any]:
    fields = []
    for name, info in hint.model_fields.items():
        key = info.alias or name
        fields.append((key, info.annotation, info.is_required(), info.description))
    return _object_schema(fields, where, seen)


def convert(value: Any, hint: Any) -> Any:
    """A validated JSON value as the Python type `hint` names: dataclasses,
    pydantic models and enums are built, floats stay floats, the rest is
    passed through."""
    origin = get_origin(hint)
    if origin is typing.Annotated:
        return convert(value, get_args(hint)[0])
    if value is None:
        return None
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if _is_union(hint):
        members = [m for m in get_args(hint) if m is not type(None)]
        return convert(value, members[0]) if len(members) == 1 else value
    if origin in _LIST_ORIGINS:
        (item,) = get_args(hint)
        return [convert(v, item) for v in value]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if typing.is_typeddict(hint):
        hints = get_type_hints(hint, include_extras=True)
        return {k: convert(v, _strip_required(hints[k])) if k in hints else v
                for k, v in value.items()}
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = get_type_hints(hint, include_extras=True)
        return hint(**{k: convert(v, hints[k]) for k, v in value.items()})
    if _is_pydantic(hint):
        return hint.model_validate(value)
    return value
