"""Agents: the tool-calling loop, proposals that wait for a person, display
fields, cancellation and deadlines."""

from __future__ import annotations

from .agent import Agent, AgentHandle
from .config import Policy, PolicyDecision, ResultHook
from .proposal import Proposal, ProposalView
from .records import DisplayField, RunOutcome, ToolCall
from .syntax import CALL_CLOSE, CALL_OPEN

__all__ = [
    "CALL_CLOSE",
    "CALL_OPEN",
    "Agent",
    "AgentHandle",
    "DisplayField",
    "Policy",
    "PolicyDecision",
    "Proposal",
    "ProposalView",
    "ResultHook",
    "RunOutcome",
    "ToolCall",
]
