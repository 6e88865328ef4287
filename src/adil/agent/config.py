"""An agent's fixed settings, checked once when the Agent is built."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import InvalidArgumentError, ToolSchemaError
from ..retry import RetryPolicy
from ..timeouts import Clock, Timeout
from ..tools import Tool
from .proposal import Proposal
from .protocol import ModelLike
from .records import ToolCall

__all__ = ["AgentConfig", "Policy", "PolicyDecision", "ResultHook", "build_config"]

PolicyDecision = Literal["allow", "deny"] | None
Policy = Callable[[Proposal], PolicyDecision]
ResultHook = Callable[[ToolCall, str], str]


@dataclass(frozen=True)
class AgentConfig:
    model: ModelLike
    tools: Mapping[str, Tool]
    instructions: str
    policy: Policy | None
    timeout: Timeout
    retry: RetryPolicy
    tool_choice: str
    max_tokens: int
    sampling: Any
    max_turns: int
    result_hook: ResultHook | None
    max_result_tokens: int | None
    n: int
    clock: Clock

    @property
    def forced_tool(self) -> Tool | None:
        return self.tools.get(self.tool_choice) if self.tool_choice not in ("auto", "none") \
            else None

    @property
    def offered_tools(self) -> list[Tool]:
        return [] if self.tool_choice == "none" else list(self.tools.values())


def build_config(
    model: ModelLike,
    tools: Sequence[Tool],
    *,
    instructions: str = "",
    policy: Policy | None = None,
    timeout: Timeout | None = None,
    retry: RetryPolicy | None = None,
    tool_choice: str = "auto",
    max_tokens: int = 1024,
    sampling: Any = None,
    max_turns: int = 16,
    result_hook: ResultHook | None = None,
    max_result_tokens: int | None = None,
    n: int = 1,
    clock: Clock = time.monotonic,
) -> AgentConfig:
    by_name: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise ToolSchemaError(
                f"tools must be adil.Tool objects (use Tool.from_openai for a dict), got {item!r}"
            )
        if item.name in by_name:
            raise ToolSchemaError(f"two tools are named {item.name!r}")
        by_name[item.name] = item
    if tool_choice not in ("auto", "none") and tool_choice not in by_name:
        raise InvalidArgumentError(
            f"tool_choice must be 'auto', 'none' or the name of a tool, got {tool_choice!r}"
        )
    for name, value in (("max_tokens", max_tokens), ("max_turns", max_turns)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    if max_result_tokens is not None and max_result_tokens < 16:
        raise InvalidArgumentError(f"max_result_tokens must be >= 16, got {max_result_tokens}")
    return AgentConfig(
        model=model, tools=by_name, instructions=instructions, policy=policy,
        timeout=timeout or Timeout(), retry=retry or RetryPolicy(), tool_choice=tool_choice,
        max_tokens=max_tokens, sampling=sampling, max_turns=max_turns,
        result_hook=result_hook, max_result_tokens=max_result_tokens, n=n, clock=clock,
    )
