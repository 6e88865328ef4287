"""Agents: the tool-calling loop, proposals that wait for a person, display
fields, cancellation and deadlines."""

from __future__ import annotations

from .agent import Agent, AgentHandle, Listener
from .config import Policy, PolicyDecision, ResultHook
from .events import (
    AgentEvent,
    ProposalRaised,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .proposal import Proposal, ProposalView
from .records import DisplayField, RunOutcome, ToolCall
from .stream import AgentStream
from .syntax import CALL_CLOSE, CALL_OPEN

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "Agent",
    "AgentEvent",
    "AgentHandle",
    "AgentStream",
    "DisplayField",
    "Listener",
    "Policy",
    "PolicyDecision",
    "Proposal",
    "ProposalRaised",
    "ProposalView",
    "ResultHook",
    "RunFinished",
    "RunOutcome",
    "TextDelta",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
]
