"""An agent's fixed settings, checked once when the Agent is built."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Literal

from ..constraints import Constraint, tool_call_constraint
from ..errors import InvalidArgumentError, ToolSchemaError, check_int
from ..retry import RetryPolicy
from ..sampling import Sampling
from ..timeouts import Clock, Timeout
from ..tools import Tool
from .proposal import ProposalView
from .protocol import ModelLike
from .records import ToolCall

__all__ = ["TOOL_CHOICES", "AgentConfig", "Policy", "PolicyDecision", "ResultHook",
           "require_text", "tools_by_name"]

# tool_choice values besides a tool's name (they win over a tool of that name).
TOOL_CHOICES = ("auto", "none", "required")
_TOOL_CHOICE_TEXT = "'auto', 'none', 'required' or the name of a tool"

PolicyDecision = Literal["allow", "deny"] | None
Policy = Callable[[ProposalView], PolicyDecision]
ResultHook = Callable[[ToolCall, str], str]


def require_text(label: str, value: object) -> str:
    """`value` when it is a str that UTF-8 can encode; InvalidArgumentError
    otherwise (text with a lone surrogate would make every later render of
    the conversation fail)."""
    if not isinstance(value, str):
        raise InvalidArgumentError(f"{label} must be a string, got {type(value).__name__}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidArgumentError(
            f"{label} holds a lone surrogate at index {exc.start} (not Unicode text)"
        ) from None
    return value


def tools_by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    """The agent's tools by name; InvalidArgumentError when `tools` is not a
    list or tuple, ToolSchemaError for a non-Tool or a repeated name."""
    if not isinstance(tools, list | tuple):
        raise InvalidArgumentError(
            f"tools must be a list or tuple of adil.Tool objects, got {type(tools).__name__}"
        )
    by_name: dict[str, Tool] = {}
    for item in tools:
        if not isinstance(item, Tool):
            raise ToolSchemaError(
                f"tools must be adil.Tool objects (use Tool.from_openai for a dict), got {item!r}"
            )
        if item.name in by_name:
            raise ToolSchemaError(f"two tools are named {item.name!r}")
        by_name[item.name] = item
    return by_name


@dataclass(frozen=True)
class AgentConfig:
    """What Agent.__init__ was given (it alone holds the defaults), with the
    tools by name (tools_by_name); the other settings are checked here."""

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
    constrain_calls: bool = True

    def __post_init__(self) -> None:
        missing = [m for m in ("render_chat", "generate", "cancel_token")
                   if not callable(getattr(self.model, m, None))]
        if missing:
            raise InvalidArgumentError(
                f"model must be an adil.Model or a service client's model; "
                f"{type(self.model).__name__} has no {', '.join(missing)}()"
            )
        require_text("instructions", self.instructions)
        for name, setting, kind in (("timeout", self.timeout, Timeout),
                                    ("retry", self.retry, RetryPolicy)):
            if not isinstance(setting, kind):
                raise InvalidArgumentError(
                    f"{name} must be an adil.{kind.__name__} or None, got {setting!r}"
                )
        if self.sampling is not None and not isinstance(self.sampling, Sampling):
            raise InvalidArgumentError(
                f"sampling must be an adil.Sampling or None, got {self.sampling!r}"
            )
        for name, function in (("policy", self.policy), ("result_hook", self.result_hook),
                               ("clock", self.clock)):
            if function is not None and not callable(function):
                raise InvalidArgumentError(f"{name} must be callable, got {function!r}")
        self._check_tool_choice()
        if not isinstance(self.constrain_calls, bool):
            raise InvalidArgumentError(
                f"constrain_calls must be True or False, got {self.constrain_calls!r}")
        for name, value in (("max_tokens", self.max_tokens), ("max_turns", self.max_turns),
                            ("n", self.n)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
        if self.max_result_tokens is not None:
            check_int("max_result_tokens", self.max_result_tokens, low=16)

    def _check_tool_choice(self) -> None:
        choice = self.tool_choice
        if not isinstance(choice, str) or (choice not in TOOL_CHOICES and choice not in self.tools):
            raise InvalidArgumentError(f"tool_choice must be {_TOOL_CHOICE_TEXT}, got {choice!r}")
        if choice == "required" and not self.tools:
            raise InvalidArgumentError("tool_choice='required' needs at least one tool")

    @property
    def forced_tools(self) -> list[Tool]:
        """The tools a forced first turn chooses from: every tool for
        "required", the named one for a name, none otherwise."""
        if self.tool_choice == "required":
            return list(self.tools.values())
        tool = self.tools.get(self.tool_choice) if self.tool_choice not in TOOL_CHOICES else None
        return [tool] if tool is not None else []

    @property
    def offered_tools(self) -> list[Tool]:
        return [] if self.tool_choice == "none" else list(self.tools.values())

    @cached_property
    def forced_constraint(self) -> Constraint | None:
        """The grammar of a forced first turn: the bare call envelope."""
        forced = self.forced_tools
        return tool_call_constraint(forced) if forced else None

    @cached_property
    def lazy_constraint(self) -> Constraint | None:
        """The grammar of an "auto" turn: free text, and each call from its
        opening tag on (None when calls are not constrained)."""
        offered = self.offered_tools
        return tool_call_constraint(offered, lazy=True) if offered and self.constrain_calls \
            else None
