"""What a streamed run reports as it happens (``agent.stream()``,
``agent.astream()``, or ``on_event=`` of ``run``/``start``/``resume``).

Events of one run segment, in order:

* :class:`TextDelta` — a piece of the model's text, as it is generated.
  Text inside ``<tool_call> ... </tool_call>`` (and the whole of a turn
  that a forced ``tool_choice`` makes a bare call) is not shown: calls are
  reported as tool-call events.  The deltas of all turns of a run follow
  each other; the final answer is ``RunFinished.outcome.text``.  A delta
  is shown once it is generated: text of a turn that is later cancelled,
  or whose call turns out invalid, has been shown already.
* :class:`ToolCallStarted` — a tool's handler starts (after a person
  confirmed it, when it needs confirmation).  A call that never starts
  (invalid, rejected, cancelled before it started) has no Started event.
* :class:`ToolCallFinished` — a call reached its final status in this
  segment: ``completed``, ``failed``, ``invalid``, ``rejected``,
  ``cancelled`` or ``abandoned`` (see :class:`~.records.ToolCall`).
* :class:`ProposalRaised` — a call waits for a person's confirmation; the
  run has paused (``RunFinished`` with status ``awaiting_confirmation``
  follows).  The agent is idle by then: approve or reject the proposal,
  then ``resume()`` / ``stream_resume()`` it.  Nothing in a stream ever
  approves it.
* :class:`RunFinished` — last; ``outcome`` is what ``run()`` returns.  The
  agent is free for its next run once it is delivered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeAlias

from .proposal import Proposal
from .records import CallStatus, RunOutcome, ToolCall

__all__ = ["AgentEvent", "ProposalRaised", "RunFinished", "TextDelta", "ToolCallFinished",
           "ToolCallStarted"]


@dataclass(frozen=True)
class TextDelta:
    """A piece of the model's text (never text of a tool call)."""

    text: str


@dataclass(frozen=True)
class ToolCallStarted:
    """A tool's handler starts.  ``arguments``: a copy of the validated
    arguments."""

    call_id: str
    tool: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class ToolCallFinished:
    """A call reached its final status; ``result`` is the handler's return
    value when ``status`` is ``completed`` (None otherwise), ``error`` the
    reason of a failed, invalid or cancelled call."""

    call_id: str
    tool: str | None
    status: CallStatus
    result: Any = None
    error: BaseException | None = None

    @classmethod
    def of(cls, call: ToolCall) -> ToolCallFinished:
        result = call.result if call.status == "completed" else None
        return cls(call.call_id, call.tool, call.status, result, call.error)


@dataclass(frozen=True)
class ProposalRaised:
    """A call waits for a person: decide ``proposal``, then resume the run."""

    proposal: Proposal


@dataclass(frozen=True)
class RunFinished:
    """The run (segment) ended; always the last event."""

    outcome: RunOutcome


AgentEvent: TypeAlias = (
    TextDelta | ToolCallStarted | ToolCallFinished | ProposalRaised | RunFinished)
