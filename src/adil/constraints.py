"""Output constraints: the documents an engine's grammar compiler takes.

The one place where the SDK writes them (the format is specified in
native/grammar/grammar.h)::

    schema_constraint(schema)               # one JSON document of `schema`
    tool_call_constraint(tools)             # {"name":N,"arguments":<N's schema>}, from
                                            # the first token (a forced call)
    tool_call_constraint(tools, lazy=True)  # free text; after "<tool_call>" one such
                                            # call, then "</tool_call>", then free text

A :class:`Constraint` goes to ``Model.generate(constraint=...)``, which
compiles it for the model's vocabulary; engines whose component info lacks
the ``grammar`` capability refuse it with :class:`~adil.errors.CapabilityError`.
Users give schemas (``generate(schema=...)``, see :mod:`adil.structured`);
constraints are for the agent and the benchmark.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .agent.syntax import CALL_CLOSE, CALL_OPEN
from .errors import InvalidArgumentError
from .tools import Tool, check_schema

__all__ = ["GRAMMAR", "Constraint", "schema_constraint", "supports_grammar",
           "tool_call_constraint"]

# The capability an engine lists (EngineInfo.capabilities) when it compiles
# constraints.
GRAMMAR = "grammar"

_TOOLS, _TRIGGER, _END = "x-adil-tools", "x-adil-trigger", "x-adil-end"


@dataclass(frozen=True)
class Constraint:
    """A compile input for an engine's grammar, as compact JSON text
    (``document`` gives it back as a dict).  Immutable: one constraint may
    serve any number of runs and threads."""

    text: str
    kind: str  # "schema" | "tool_call" | "lazy_tool_call" | "raw"
    trigger: str | None = None  # lazy: the document starts after the last one

    @property
    def document(self) -> dict[str, Any]:
        value: dict[str, Any] = json.loads(self.text)
        return value

    @classmethod
    def raw(cls, document: Mapping[str, Any]) -> Constraint:
        """A document taken as it is (the engine's compiler checks it and
        names the JSON Pointer of what it refuses): for benchmarks and tests
        of the compiler itself."""
        if not isinstance(document, Mapping):
            raise InvalidArgumentError(
                f"a constraint document is a JSON object, got {type(document).__name__}")
        trigger = document.get(_TRIGGER)
        return cls(_compact(document), "raw", trigger if isinstance(trigger, str) else None)


def schema_constraint(schema: Mapping[str, Any]) -> Constraint:
    """One JSON document of `schema` (structured output: the root may be any
    type, and a schema without type, enum or const stands for any value).
    ToolSchemaError (``.location``) for a schema outside the subset."""
    check_schema(schema, root_object=False, any_value=True)
    return Constraint(_compact(schema), "schema")


def tool_call_constraint(tools: Iterable[Tool], *, lazy: bool = False) -> Constraint:
    """A call of one of `tools`, written as the bare envelope
    ``{"name":"TOOL","arguments":{...}}`` (name first, arguments by that
    tool's parameters).  Not lazy: the call is the whole output, from the
    first token.  Lazy: free text until ``<tool_call>``, then one call and
    ``</tool_call>``, then free text again (any number of calls)."""
    entries = []
    for tool in tools:
        if not isinstance(tool, Tool):
            raise InvalidArgumentError(
                f"tool_call_constraint takes adil.Tool objects, got {tool!r}")
        entries.append({"name": tool.name, "parameters": tool.parameters})
    if not entries:
        raise InvalidArgumentError("a tool-call constraint needs at least one tool")
    document: dict[str, Any] = {_TOOLS: entries}
    if not lazy:
        return Constraint(_compact(document), "tool_call")
    document[_TRIGGER], document[_END] = CALL_OPEN, CALL_CLOSE
    return Constraint(_compact(document), "lazy_tool_call", CALL_OPEN)


def supports_grammar(model: object) -> bool:
    """True when `model` says it compiles constraints: its ``capabilities``
    (``adil.Model.capabilities``, the engine's component info) list
    ``grammar``.  A model without the attribute has no grammar support."""
    capabilities = getattr(model, "capabilities", ())
    try:
        return GRAMMAR in capabilities
    except TypeError:
        return False


def _compact(document: Mapping[str, Any]) -> str:
    try:
        return json.dumps(document, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"a constraint must be JSON: {exc}") from exc
