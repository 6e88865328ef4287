"""The state of one agent run (kept while it waits for a person) and of one
segment of it (a run() or a resume(): its own cancel token and deadline)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..timeouts import Deadline, Timeout
from .proposal import Proposal
from .protocol import CancelTokenLike
from .records import DisplayField, ToolCall

__all__ = ["RunState", "Segment"]


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


@dataclass
class Segment:
    token: CancelTokenLike
    deadline: Deadline
    timeout: Timeout
    wake: threading.Event = field(default_factory=threading.Event)
    cancel_requested: bool = False  # agent.cancel() was called
    deadline_hit: bool = False  # the total deadline fired during a tool

    def sleep(self, seconds: float) -> None:
        """A retry pause that a cancel cuts short."""
        self.wake.wait(seconds)
