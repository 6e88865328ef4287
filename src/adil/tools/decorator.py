"""``@adil.tool``: a Tool from a typed Python function.

    @adil.tool(effect="read_only", display={"temp_c": "number"})
    def get_weather(city: str, ctx: adil.ToolContext) -> dict:
        '''Current weather of a city.

        Args:
            city: The city name, e.g. "Oslo".
        '''

The schema comes from the type hints (see :mod:`.hints`), the descriptions
from the docstring; a parameter named ``ctx`` (or typed ``ToolContext``)
receives the :class:`ToolContext` and is not part of the schema.  Parameters
with a default are optional.  The decorated object is a :class:`Tool` that
can still be called like the function.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, get_type_hints, overload

from ..errors import ToolSchemaError
from .context import ToolContext
from .docstrings import parse_docstring
from .hints import convert, schema_for_hint
from .pointer import join
from .tool import Effect, Tool, named_error

__all__ = ["FunctionTool", "tool"]


class FunctionTool(Tool):
    """A Tool built from a function; calling it calls the function."""

    fn: Callable[..., Any]

    def __init__(self, function: Callable[..., Any], **kwargs: Any) -> None:
        self.fn = function
        self.__doc__ = function.__doc__
        super().__init__(**kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    fn: None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "state_changing",
    reads_private_data: bool = False,
    sends_out: bool = False,
    confirmation_required: bool = False,
    display: Mapping[str, Any] | None = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    effect: Effect = "state_changing",
    reads_private_data: bool = False,
    sends_out: bool = False,
    confirmation_required: bool = False,
    display: Mapping[str, Any] | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Decorates a function as a tool (bare ``@tool`` or ``@tool(...)``).
    Without ``effect`` a tool is state-changing: it waits for confirmation."""

    def build(function: Callable[..., Any]) -> FunctionTool:
        if not callable(function):
            raise ToolSchemaError(f"@tool decorates a function, got {function!r}")
        tool_name: Any = name if name is not None else getattr(function, "__name__", "")
        summary, param_docs = parse_docstring(getattr(function, "__doc__", None))
        try:
            parameters, hints, takes_ctx = _signature_schema(function, param_docs)
        except ToolSchemaError as exc:
            raise named_error(exc, tool_name) from exc
        return FunctionTool(
            function,
            name=tool_name,
            handler=_adapter(function, hints, takes_ctx),
            description=summary if description is None else description,
            parameters=parameters, effect=effect, reads_private_data=reads_private_data,
            sends_out=sends_out, confirmation_required=confirmation_required, display=display,
        )

    return build(fn) if fn is not None else build


def _is_context(param: inspect.Parameter, hints: Mapping[str, Any]) -> bool:
    return param.name == "ctx" or hints.get(param.name) is ToolContext


def _signature_schema(
    function: Callable[..., Any], docs: Mapping[str, str]
) -> tuple[dict[str, Any], dict[str, Any], str | None]:
    """(parameters schema, {name: hint}, name of the ctx parameter or None)."""
    try:
        hints = get_type_hints(function, include_extras=True)
    except (NameError, TypeError) as exc:
        raise ToolSchemaError(f"cannot resolve the type hints of {function!r}: {exc}") from exc
    properties: dict[str, Any] = {}
    required: list[str] = []
    kept: dict[str, Any] = {}
    ctx_name: str | None = None
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ToolSchemaError(f"cannot read the signature of {function!r}: {exc}") from exc
    for param in signature.parameters.values():
        where = join("/properties", param.name)
        if _is_context(param, hints):
            ctx_name = param.name
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD, param.POSITIONAL_ONLY):
            raise ToolSchemaError(
                f"parameter {param.name!r}: tools take named parameters only", location=where
            )
        if param.name not in hints:
            raise ToolSchemaError(f"parameter {param.name!r} needs a type hint", location=where)
        schema = schema_for_hint(hints[param.name], where)
        if param.name in docs and docs[param.name] and "description" not in schema:
            schema = {**schema, "description": docs[param.name]}
        properties[param.name] = schema
        kept[param.name] = hints[param.name]
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    return parameters, kept, ctx_name


def _adapter(
    function: Callable[..., Any], hints: Mapping[str, Any], ctx_name: str | None
) -> Callable[[dict[str, Any], ToolContext], Any]:
    def call(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        kwargs = {k: convert(v, hints[k]) for k, v in arguments.items() if k in hints}
        if ctx_name is not None:
            kwargs[ctx_name] = ctx
        return function(**kwargs)

    return call
