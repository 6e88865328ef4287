"""What a run reports: its tool calls, display fields, and the outcome."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import AdilError
from .proposal import Proposal

__all__ = ["CallStatus", "DisplayField", "RunOutcome", "RunStatus", "ToolCall"]

RunStatus = Literal["completed", "awaiting_confirmation", "cancelled", "failed"]
CallStatus = Literal[
    "queued",                 # read from the model's turn, not handled yet
    "completed",              # the handler ran and its result went to the model
    "failed",                 # the handler raised; the model was told
    "invalid",                # unknown tool or refused arguments; the model was told
    "rejected",               # a person or the policy rejected it; it never ran
    "awaiting_confirmation",  # waiting for a person
    "cancelled",              # never started, or started and its result discarded
    "abandoned",              # started, still running at the total deadline; result discarded
]


@dataclass(frozen=True)
class ToolCall:
    """One tool call of a run, as it stands.

    ``result_json`` is what the handler returned (as JSON); ``delivered`` is
    the payload the model received (after any result hook and any cut to fit
    the context); ``started`` says whether the handler ran at all."""

    call_id: str
    tool: str | None
    raw: str
    arguments: dict[str, Any] | None = None
    status: CallStatus = "invalid"
    started: bool = False
    result: Any = None
    result_json: str | None = None
    delivered: str | None = None
    confirmed_by: str | None = None
    policy_decision: str | None = None
    error: BaseException | None = None

    @property
    def delivered_unchanged(self) -> bool:
        """True when the model got exactly (byte for byte) what the handler
        returned."""
        return (self.status == "completed" and self.result_json is not None
                and self.delivered is not None
                and self.delivered.encode("utf-8") == self.result_json.encode("utf-8"))


@dataclass(frozen=True)
class DisplayField:
    """A declared result field an interface may show, apart from the
    model's text.  ``quoted`` fields are data quoted from a tool: show them
    as quoted data (:meth:`render` does), never as the assistant's words."""

    tool: str
    call_id: str
    name: str
    kind: str
    value: Any

    @property
    def quoted(self) -> bool:
        return self.kind == "quoted_text"

    def render(self) -> str:
        """The value as JSON text: quoted text keeps its quotes and escapes."""
        return json.dumps(self.value, ensure_ascii=False)


@dataclass(frozen=True)
class RunOutcome:
    """How a run (or a resumed run) ended.

    ``status``: ``completed`` (``text`` is the final answer),
    ``awaiting_confirmation`` (``proposal`` waits for a person),
    ``cancelled``, or ``failed`` (``error`` is the :class:`AdilError`).
    ``cancel_acknowledged``: a cancel reached the run, even when its text
    was still returned; drop a late answer in your application if it must
    not be shown."""

    status: RunStatus
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    display_fields: tuple[DisplayField, ...] = ()
    cancel_acknowledged: bool = False
    proposal: Proposal | None = None
    error: AdilError | None = None
    messages: tuple[dict[str, str], ...] = field(default=(), repr=False)

    def raise_for_error(self) -> RunOutcome:
        """Raises ``error`` when the run failed; returns self otherwise."""
        if self.error is not None:
            raise self.error
        return self
