"""Tool: a name, a description, a parameters schema in the subset, an
effect, flags, a handler, and optional display fields.

Everything is checked when the Tool is built; a tool that could be misused is
refused with :class:`~adil.errors.ToolSchemaError` right there, not when a
model first calls it.
"""

from __future__ import annotations

import copy
import re
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..errors import ToolSchemaError
from .arguments import parse_arguments
from .context import ToolContext
from .display import DisplaySpec, parse_display
from .schema import ToolSchemaWarning, check_schema

__all__ = ["EFFECTS", "Effect", "Handler", "Tool"]

Effect = Literal["read_only", "state_changing"]
EFFECTS: tuple[str, ...] = ("read_only", "state_changing")
Handler = Callable[[dict[str, Any], ToolContext], Any]

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$")
_EMPTY_PARAMETERS: dict[str, Any] = {
    "type": "object", "properties": {}, "additionalProperties": False,
}


class Tool:
    """A tool the model may call.

    ``handler(arguments, ctx)`` receives the validated arguments and a
    :class:`ToolContext`.  ``effect`` is ``read_only`` or ``state_changing``
    (the default: a tool is assumed to change something until you say it
    does not).  State-changing tools and tools registered with
    ``confirmation_required=True`` wait for a person's confirmation; tools
    that read private data or send anything out must be registered
    confirmation-required.
    """

    def __init__(
        self,
        *,
        name: str,
        handler: Handler,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        effect: Effect = "state_changing",
        reads_private_data: bool = False,
        sends_out: bool = False,
        confirmation_required: bool = False,
        display: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ToolSchemaError(
                f"tool name {name!r} must match {_NAME.pattern}", location=None
            )
        if not callable(handler):
            raise ToolSchemaError(f"tool {name!r}: handler must be callable", location=None)
        if effect not in EFFECTS:
            raise ToolSchemaError(
                f"tool {name!r}: effect must be 'read_only' or 'state_changing', got {effect!r}"
            )
        if (reads_private_data or sends_out) and confirmation_required is not True:
            flag = "reads_private_data" if reads_private_data else "sends_out"
            raise ToolSchemaError(
                f"tool {name!r} is registered {flag}=True, so it must also be registered "
                "confirmation_required=True"
            )
        given = _EMPTY_PARAMETERS if parameters is None else (
            parameters if isinstance(parameters, dict) else dict(parameters))
        open_objects = check_schema(given)  # first: a schema too deep or cyclic to copy fails here
        schema = copy.deepcopy(given)
        if open_objects:
            where = ", ".join(repr(p) for p in open_objects)
            warnings.warn(
                f"tool {name!r}: object schema at {where} has no additionalProperties; set it "
                "to false so that invented fields are refused",
                ToolSchemaWarning, stacklevel=_caller_level(),
            )
        self.name = name
        self.description = description
        self.parameters = schema
        self.effect: Effect = effect
        self.reads_private_data = reads_private_data
        self.sends_out = sends_out
        self.confirmation_required = confirmation_required
        self.display: dict[str, DisplaySpec] = parse_display(display)
        self._handler = handler

    @property
    def needs_confirmation(self) -> bool:
        """True when a call must wait for a person: state-changing or
        registered confirmation-required."""
        return self.effect == "state_changing" or self.confirmation_required

    def parse_arguments(self, json_text: str | bytes) -> dict[str, Any]:
        """Strictly reads and validates arguments written by a model: duplicate
        keys refused, invented fields refused when additionalProperties is
        false, types, enum/const, bounds and lengths checked, numbers held to
        the exact-number rule.  Raises OutputValidationError with
        ``.location``."""
        return parse_arguments(json_text, self.parameters)

    def invoke(self, arguments: dict[str, Any], ctx: ToolContext) -> Any:
        """Runs the handler on validated arguments (the agent calls this)."""
        return self._handler(arguments, ctx)

    def spec(self) -> dict[str, Any]:
        """What the model is shown: name, description and parameters."""
        return {"name": self.name, "description": self.description,
                "parameters": copy.deepcopy(self.parameters)}

    def to_openai(self) -> dict[str, Any]:
        """The OpenAI-style function-tool dict of this tool."""
        return {"type": "function", "function": self.spec()}

    @classmethod
    def from_openai(
        cls,
        spec: Mapping[str, Any],
        *,
        handler: Handler,
        effect: Effect = "state_changing",
        reads_private_data: bool = False,
        sends_out: bool = False,
        confirmation_required: bool = False,
        display: Mapping[str, Any] | None = None,
    ) -> Tool:
        """A Tool from an OpenAI-style dict, either ``{"type": "function",
        "function": {...}}`` or the inner ``{"name", "description",
        "parameters"}``.  Effect and flags are yours to state: the dict does
        not carry them."""
        function = spec.get("function", spec) if spec.get("type") == "function" else spec
        if not isinstance(function, Mapping) or "name" not in function:
            raise ToolSchemaError("an OpenAI-style tool needs a function with a name",
                                  location="/function/name")
        unknown = set(function) - {"name", "description", "parameters", "strict"}
        if unknown:
            key = sorted(unknown)[0]
            raise ToolSchemaError(f"unknown function field {key!r}", location=f"/function/{key}")
        return cls(
            name=function["name"], handler=handler,
            description=function.get("description", ""),
            parameters=function.get("parameters"), effect=effect,
            reads_private_data=reads_private_data, sends_out=sends_out,
            confirmation_required=confirmation_required, display=display,
        )

    def __repr__(self) -> str:
        return f"<adil.Tool {self.name} {self.effect}>"


def _caller_level() -> int:
    """Stack level of the user's code for warnings (past this package)."""
    import sys

    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("adil.tools"):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level
