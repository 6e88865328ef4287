"""Tools: schemas in the supported subset, strict arguments, effects and
flags, display declarations, and the ``@tool`` decorator."""

from __future__ import annotations

from .arguments import json_equal, json_type, parse_arguments, validate
from .context import CancelSignal, ToolContext
from .decorator import FunctionTool, tool
from .depth import MAX_DEPTH, MAX_RESULT_DEPTH
from .display import DISPLAY_KINDS, DisplaySpec
from .numbers import MAX_EXACT, exact_number
from .results import result_json
from .schema import ToolSchemaWarning, check_schema
from .strict_json import strict_loads
from .tool import EFFECTS, Effect, Handler, Tool

__all__ = [
    "DISPLAY_KINDS",
    "EFFECTS",
    "MAX_DEPTH",
    "MAX_EXACT",
    "MAX_RESULT_DEPTH",
    "CancelSignal",
    "DisplaySpec",
    "Effect",
    "FunctionTool",
    "Handler",
    "Tool",
    "ToolContext",
    "ToolSchemaWarning",
    "check_schema",
    "exact_number",
    "json_equal",
    "json_type",
    "parse_arguments",
    "result_json",
    "strict_loads",
    "tool",
    "validate",
]
