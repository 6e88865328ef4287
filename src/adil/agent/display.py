"""Display fields: declared result fields, only from results the model got
unchanged, only when the JSON type matches the declared kind."""

from __future__ import annotations

import json

from ..tools import Tool
from .records import DisplayField, ToolCall

__all__ = ["display_fields"]


def display_fields(tool: Tool, call: ToolCall) -> list[DisplayField]:
    """The fields of `call` that `tool` declared and that may be shown."""
    if not tool.display or not call.delivered_unchanged or call.delivered is None:
        return []
    result = json.loads(call.delivered)
    if not isinstance(result, dict):
        return []
    fields = []
    for name, spec in tool.display.items():
        if name in result and spec.accepts(result[name]):
            fields.append(DisplayField(tool.name, call.call_id, name, spec.kind, result[name]))
    return fields
