"""Display declarations: which result fields an interface may show.

``display={"temp_c": "number", "city": "quoted_text",
"sky": ("enum", ["clear", "cloudy"])}`` — kinds ``number``, ``integer``,
``boolean``, ``quoted_text`` and ``enum`` (with its allowed values).  Field
names are top-level keys of the tool's JSON-object result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ToolSchemaError
from .arguments import json_equal
from .numbers import is_exact_value
from .pointer import join

__all__ = ["DISPLAY_KINDS", "DisplaySpec", "parse_display"]

DISPLAY_KINDS = ("number", "integer", "boolean", "quoted_text", "enum")


@dataclass(frozen=True)
class DisplaySpec:
    """One declared field: its kind, and the allowed values of an enum."""

    name: str
    kind: str
    values: tuple[Any, ...] = ()

    def accepts(self, value: Any) -> bool:
        """True when `value`'s JSON type matches the kind (numbers also
        within the exact-number range)."""
        if self.kind == "number":
            return is_exact_value(value)
        if self.kind == "integer":
            return isinstance(value, int) and is_exact_value(value)
        if self.kind == "boolean":
            return isinstance(value, bool)
        if self.kind == "quoted_text":
            return isinstance(value, str) and _is_unicode(value)
        return any(json_equal(value, v) for v in self.values)


def _is_unicode(text: str) -> bool:
    """False for text with a lone surrogate: no interface can show it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def parse_display(display: Mapping[str, Any] | None) -> dict[str, DisplaySpec]:
    """Checks a tool's display declaration; ToolSchemaError at
    ``/display/<field>`` for anything wrong."""
    if display is not None and not isinstance(display, Mapping):
        raise ToolSchemaError(
            f"display maps result field names to kinds, got {type(display).__name__}",
            location="/display")
    specs: dict[str, DisplaySpec] = {}
    for name, decl in (display or {}).items():
        where = join("/display", name)
        if not isinstance(name, str) or not name:
            raise ToolSchemaError(f"display field names are non-empty strings: {name!r}",
                                  location=where)
        specs[name] = _parse_one(name, decl, where)
    return specs


def _parse_one(name: str, decl: Any, where: str) -> DisplaySpec:
    kind, values = decl, None
    if isinstance(decl, tuple | list) and len(decl) == 2:
        kind, values = decl
    elif isinstance(decl, Mapping):
        kind, values = decl.get("kind"), decl.get("values")
    if kind not in DISPLAY_KINDS:
        raise ToolSchemaError(
            f"display kind {kind!r} is not one of {', '.join(DISPLAY_KINDS)}", location=where
        )
    if kind != "enum":
        if values is not None:
            raise ToolSchemaError(f"only enum fields take values: {decl!r}", location=where)
        return DisplaySpec(name, kind)
    ok = isinstance(values, list | tuple) and values and all(
        isinstance(v, str | bool) or is_exact_value(v) for v in values)
    if not ok:
        raise ToolSchemaError(
            f"an enum display field needs a non-empty list of JSON scalar values, got {values!r}",
            location=where,
        )
    assert isinstance(values, list | tuple)
    return DisplaySpec(name, kind, tuple(values))
