"""Tool: a name, a description, a parameters schema in the subset, an
effect, flags, a handler, and optional display fields.

Everything is checked when the Tool is built; a tool that could be misused is
refused with :class:`~adil.errors.ToolSchemaError` right there, not when a
model first calls it.  Its message names the tool and the location.

A Tool is immutable once built, so that nothing can change it past those
checks: ``parameters`` is a read-only deep copy (see :mod:`.frozen`),
``display`` a read-only mapping, and assigning or deleting any of the
checked attributes raises :class:`~adil.errors.InvalidArgumentError`.  A
subclass may not redefine them either.  Being immutable, one Tool may be
shared by several agents and threads; its handler is then called from each
(see the thread rule in :mod:`adil.agent.agent`).
"""

from __future__ import annotations

import re
import types
import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

from ..errors import InvalidArgumentError, ToolSchemaError
from .arguments import parse_arguments
from .context import ToolContext
from .display import DisplaySpec, parse_display
from .frozen import freeze, thaw
from .schema import ToolSchemaWarning, check_schema

__all__ = ["EFFECTS", "Effect", "Handler", "Tool", "named_error"]

Effect = Literal["read_only", "state_changing"]
EFFECTS: tuple[str, ...] = ("read_only", "state_changing")
Handler = Callable[[dict[str, Any], ToolContext], Any]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
_EMPTY_PARAMETERS: dict[str, Any] = {
    "type": "object", "properties": {}, "additionalProperties": False,
}
_FLAGS = ("reads_private_data", "sends_out", "confirmation_required")
# What Tool.__init__ sets and checks: never assigned again, never redefined.
_SEALED = frozenset({"name", "description", "parameters", "effect", *_FLAGS, "display",
                     "_handler", "needs_confirmation"})


class Tool:
    """A tool the model may call.

    ``handler(arguments, ctx)`` receives the validated arguments and a
    :class:`ToolContext`.  ``effect`` is ``read_only`` or ``state_changing``
    (the default: a tool is assumed to change something until you say it
    does not).  State-changing tools and tools registered with
    ``confirmation_required=True`` wait for a person's confirmation; tools
    that read private data or send anything out must be registered
    confirmation-required.  Flags are booleans.
    """

    name: str
    description: str
    parameters: dict[str, Any]
    effect: Effect
    reads_private_data: bool
    sends_out: bool
    confirmation_required: bool
    display: Mapping[str, DisplaySpec]
    _handler: Handler

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        redefined = sorted(_SEALED & set(vars(cls)))
        if redefined:
            raise ToolSchemaError(
                f"{cls.__name__} redefines {', '.join(redefined)}: a Tool subclass may not "
                "change what Tool checks"
            )

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
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ToolSchemaError(
                f"tool name {name!r} must match {_NAME.pattern}", location=None
            )
        flags = {"reads_private_data": reads_private_data, "sends_out": sends_out,
                 "confirmation_required": confirmation_required}
        try:
            schema, open_objects = _check(handler, description, parameters, effect, flags)
            specs = parse_display(display)
        except ToolSchemaError as exc:
            raise named_error(exc, name) from exc
        if open_objects:
            where = ", ".join(repr(p) for p in open_objects)
            warnings.warn(
                f"tool {name!r}: object schema at {where} has no additionalProperties; set it "
                "to false so that invented fields are refused",
                ToolSchemaWarning, stacklevel=_caller_level(),
            )
        init = object.__setattr__
        init(self, "name", name)
        init(self, "description", description)
        init(self, "parameters", freeze(schema))
        init(self, "effect", effect)
        for flag, value in flags.items():
            init(self, flag, value)
        init(self, "display", types.MappingProxyType(specs))
        init(self, "_handler", handler)

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr in _SEALED:
            raise InvalidArgumentError(
                f"tool {self.__dict__.get('name')!r}: {attr} cannot change after the tool is "
                "built (build a new Tool)"
            )
        object.__setattr__(self, attr, value)

    def __delattr__(self, attr: str) -> None:
        if attr in _SEALED:
            raise InvalidArgumentError(
                f"tool {self.__dict__.get('name')!r}: {attr} cannot be deleted"
            )
        object.__delattr__(self, attr)

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
        """What the model is shown: name, description and parameters (a
        plain, mutable copy)."""
        return {"name": self.name, "description": self.description,
                "parameters": thaw(self.parameters)}

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
        not carry them.  Anything else is refused with ToolSchemaError."""
        if not isinstance(spec, Mapping):
            raise ToolSchemaError(
                f"an OpenAI-style tool is a dict, got {type(spec).__name__}", location="")
        wrapped = spec.get("type") == "function"
        function = spec.get("function") if wrapped else spec
        prefix = "/function" if wrapped else ""
        if wrapped and set(spec) - {"type", "function"}:
            key = sorted(set(spec) - {"type", "function"}, key=str)[0]
            raise ToolSchemaError(f"unknown tool field {key!r}", location=f"/{key}")
        if not isinstance(function, Mapping) or "name" not in function:
            raise ToolSchemaError("an OpenAI-style tool needs a function with a name",
                                  location=f"{prefix}/name")
        unknown = set(function) - {"name", "description", "parameters", "strict"}
        if unknown:
            key = sorted(unknown, key=str)[0]
            raise ToolSchemaError(f"unknown function field {key!r}", location=f"{prefix}/{key}")
        return cls(
            name=function["name"], handler=handler,
            description=function.get("description", ""),
            parameters=function.get("parameters"), effect=effect,
            reads_private_data=reads_private_data, sends_out=sends_out,
            confirmation_required=confirmation_required, display=display,
        )

    def __repr__(self) -> str:
        return f"<adil.Tool {self.name} {self.effect}>"


def _check(handler: Any, description: Any, parameters: Any, effect: Any,
           flags: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Checks what Tool() was given; returns the parameters schema to keep
    (not yet copied) and its object schemas without additionalProperties."""
    if not callable(handler):
        raise ToolSchemaError("handler must be callable")
    if not isinstance(description, str):
        raise ToolSchemaError(f"description must be a string, got {type(description).__name__}")
    try:
        description.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolSchemaError("description holds a lone surrogate (not Unicode)") from None
    if effect not in EFFECTS:
        raise ToolSchemaError(f"effect must be 'read_only' or 'state_changing', got {effect!r}")
    for flag, value in flags.items():
        if not isinstance(value, bool):
            raise ToolSchemaError(f"{flag} must be True or False, got {value!r}")
    if (flags["reads_private_data"] or flags["sends_out"]) and not flags["confirmation_required"]:
        flag = "reads_private_data" if flags["reads_private_data"] else "sends_out"
        raise ToolSchemaError(
            f"registered {flag}=True, so it must also be registered confirmation_required=True"
        )
    if parameters is None:
        return _EMPTY_PARAMETERS, []
    if not isinstance(parameters, Mapping):
        raise ToolSchemaError(
            f"parameters must be a JSON-schema dict, got {type(parameters).__name__}",
            location="")
    schema = parameters if isinstance(parameters, dict) else dict(parameters)
    # Checked before it is copied: a schema too deep or cyclic to copy fails here.
    return schema, check_schema(schema)


def named_error(error: ToolSchemaError, name: object) -> ToolSchemaError:
    """`error` with a message that names the tool and the location."""
    location = error.location
    where = "" if location is None else (
        " at the root of its parameters" if location == "" else f" at {location}")
    return ToolSchemaError(f"tool {name!r}{where}: {error.message}", location=location)


def _caller_level() -> int:
    """Stack level of the user's code for warnings (past this package)."""
    import sys

    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("adil.tools"):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level
