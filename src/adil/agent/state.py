"""The state of one agent run (kept while it waits for a person) and of one
segment of it (a run() or a resume(): its own cancel token and deadline)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..timeouts import Deadline, Timeout
from .events import AgentEvent, ToolCallFinished
from .proposal import Proposal
from .protocol import CancelTokenLike
from .records import DisplayField, ToolCall

__all__ = ["RunState", "Segment"]

_OPEN = ("queued", "awaiting_confirmation")  # call statuses that are not final


@dataclass
class RunState:
    images: Sequence[Any] | None = None
    calls: list[ToolCall] = field(default_factory=list)
    fields: list[DisplayField] = field(default_factory=list)
    queue: list[int] = field(default_factory=list)  # indices into calls, this turn
    results: list[str] = field(default_factory=list)  # result blocks, this turn
    proposal: Proposal | None = None
    cancel_ack: bool = False
    turns: int = 0
    reported: set[str] = field(default_factory=set)  # call ids with a ToolCallFinished event

    def finished_events(self) -> list[ToolCallFinished]:
        """A ToolCallFinished for each call that reached its final status
        since the last call of this method."""
        events = []
        for call in self.calls:
            if call.status not in _OPEN and call.call_id not in self.reported:
                self.reported.add(call.call_id)
                events.append(ToolCallFinished.of(call))
        return events


@dataclass
class Segment:
    token: CancelTokenLike
    deadline: Deadline
    timeout: Timeout
    wake: threading.Event = field(default_factory=threading.Event)
    cancel_requested: bool = False  # agent.cancel() was called
    deadline_hit: bool = False  # the total deadline fired during a tool
    on_event: Callable[[AgentEvent], None] | None = None  # the run's listener, if any

    def emit(self, event: AgentEvent) -> None:
        """Hands `event` to the listener (in the run's thread)."""
        if self.on_event is not None:
            self.on_event(event)

    def cancel(self) -> None:
        """Cancels this segment (any thread, takes no lock: a garbage
        collected stream calls it)."""
        self.cancel_requested = True
        self.token.cancel()
        self.wake.set()

    def sleep(self, seconds: float) -> None:
        """A retry pause that a cancel cuts short."""
        self.wake.wait(seconds)
