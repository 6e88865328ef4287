"""Chat messages: the typed form of OpenAI-shaped messages, and their checks.

``model.chat`` takes messages as OpenAI-style dicts::

    {"role": "system" | "user" | "assistant" | "tool",
     "content": str | None,
     "tool_calls": [{"id": "call_...", "type": "function",
                     "function": {"name": "...", "arguments": "{...}" or {...}}}],
     "tool_call_id": "call_...",      # tool messages: the call they answer
     "name": "..."}                   # optional

or as :class:`ChatMessage` objects (so ``messages.append(resp.message)``
works), or as objects with a ``model_dump()`` method (the openai client's
message types).  :func:`normalize_messages` checks them all and says which
message and which field is wrong (:class:`InvalidArgumentError`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .errors import InvalidArgumentError, OutputValidationError
from .tools import strict_loads

__all__ = ["ROLES", "ChatMessage", "ChatToolCall", "Role", "Usage", "normalize_messages"]

Role = Literal["system", "user", "assistant", "tool"]
ROLES: tuple[str, ...] = ("system", "user", "assistant", "tool")
_MESSAGE_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})
_CALL_KEYS = frozenset({"id", "type", "function"})
_FUNCTION_KEYS = frozenset({"name", "arguments"})


@dataclass(frozen=True)
class ChatToolCall:
    """A tool call the model wrote: ``id`` (``call_<hex>``), the tool's
    ``name`` and its ``arguments`` (a JSON object, read)."""

    id: str
    name: str
    arguments: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI shape (``arguments`` as a JSON string)."""
        return {"id": self.id, "type": "function",
                "function": {"name": self.name,
                             "arguments": json.dumps(self.arguments, ensure_ascii=False)}}


@dataclass(frozen=True)
class ChatMessage:
    """One message of a conversation (see the module docstring)."""

    role: Role
    content: str | None = None
    tool_calls: tuple[ChatToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI shape: ``role`` and ``content`` always, the other keys
        when set."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            out["name"] = self.name
        return out


@dataclass(frozen=True)
class Usage:
    """Tokens of one chat call: the rendered prompt's and the answer's."""

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int = field(default=-1)

    def __post_init__(self) -> None:
        if self.total_tokens == -1:
            object.__setattr__(self, "total_tokens", self.prompt_tokens + self.completion_tokens)


def normalize_messages(messages: Any) -> tuple[ChatMessage, ...]:
    """`messages` (a sequence of dicts, ChatMessage objects or objects with
    ``model_dump()``) as ChatMessage objects, checked.

    Raises InvalidArgumentError naming the message index and the field:
    not a sequence, an unknown role or key, content that is not a string
    (or None for an assistant message with tool calls), a tool message
    without ``tool_call_id``, malformed ``tool_calls``, arguments that are
    not a JSON object."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Sequence):
        raise InvalidArgumentError(
            f"messages must be a list of messages, got {type(messages).__name__}")
    if not messages:
        raise InvalidArgumentError("messages is empty: give at least one message")
    return tuple(_message(i, m) for i, m in enumerate(messages))


def _message(index: int, message: Any) -> ChatMessage:
    where = f"messages[{index}]"
    if isinstance(message, ChatMessage):
        message = message.to_dict()
    elif not isinstance(message, Mapping) and callable(getattr(message, "model_dump", None)):
        message = message.model_dump(exclude_none=True)
    if not isinstance(message, Mapping):
        raise InvalidArgumentError(
            f"{where} must be a dict with 'role' and 'content' or an adil.ChatMessage, "
            f"got {type(message).__name__}")
    unknown = sorted(str(k) for k in set(message) - _MESSAGE_KEYS)
    if unknown:
        raise InvalidArgumentError(
            f"{where} has an unknown field {unknown[0]!r} (known: "
            f"{', '.join(sorted(_MESSAGE_KEYS))})")
    role = message.get("role")
    if role not in ROLES:
        raise InvalidArgumentError(
            f"{where}.role must be one of {', '.join(ROLES)}, got {role!r}")
    calls = _tool_calls(where, message.get("tool_calls"))
    if calls and role != "assistant":
        raise InvalidArgumentError(f"{where}.tool_calls: only assistant messages carry tool calls")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise InvalidArgumentError(
            f"{where}.content must be a str (or None), got {type(content).__name__}")
    if content is None and role != "assistant":
        raise InvalidArgumentError(f"{where}.content is missing: a {role} message needs text")
    call_id = message.get("tool_call_id")
    if role == "tool":
        if not isinstance(call_id, str) or not call_id:
            raise InvalidArgumentError(
                f"{where}.tool_call_id is missing: a tool message answers a call by its id")
    elif call_id is not None:
        raise InvalidArgumentError(f"{where}.tool_call_id: only tool messages answer a call")
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidArgumentError(f"{where}.name must be a str, got {type(name).__name__}")
    return ChatMessage(role=role, content=content, tool_calls=calls, tool_call_id=call_id,
                       name=name)


def _tool_calls(where: str, calls: Any) -> tuple[ChatToolCall, ...]:
    if calls is None:
        return ()
    if isinstance(calls, str | bytes | Mapping) or not isinstance(calls, Sequence):
        raise InvalidArgumentError(
            f"{where}.tool_calls must be a list of calls, got {type(calls).__name__}")
    return tuple(_tool_call(f"{where}.tool_calls[{i}]", c) for i, c in enumerate(calls))


def _tool_call(where: str, call: Any) -> ChatToolCall:
    if isinstance(call, ChatToolCall):
        return call
    if not isinstance(call, Mapping):
        raise InvalidArgumentError(
            f'{where} must be {{"id", "type": "function", "function": {{"name", '
            f'"arguments"}}}}, got {type(call).__name__}')
    unknown = sorted(str(k) for k in set(call) - _CALL_KEYS)
    if unknown:
        raise InvalidArgumentError(f"{where} has an unknown field {unknown[0]!r}")
    if call.get("type", "function") != "function":
        raise InvalidArgumentError(f"{where}.type must be 'function', got {call.get('type')!r}")
    call_id = call.get("id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidArgumentError(f"{where}.id must be a non-empty str, got {call_id!r}")
    function = call.get("function")
    if not isinstance(function, Mapping):
        raise InvalidArgumentError(
            f"{where}.function must be a dict with name and arguments, got "
            f"{type(function).__name__}")
    unknown = sorted(str(k) for k in set(function) - _FUNCTION_KEYS)
    if unknown:
        raise InvalidArgumentError(f"{where}.function has an unknown field {unknown[0]!r}")
    name = function.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidArgumentError(f"{where}.function.name must be a non-empty str, got {name!r}")
    return ChatToolCall(call_id, name, _arguments(f"{where}.function.arguments",
                                                  function.get("arguments", {})))


def _arguments(where: str, arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, str):
        try:
            arguments = strict_loads(arguments)
        except OutputValidationError as exc:
            raise InvalidArgumentError(f"{where} is not valid JSON: {exc}") from exc
    if not isinstance(arguments, Mapping):
        raise InvalidArgumentError(
            f"{where} must be a JSON object (a dict or its JSON text), got "
            f"{type(arguments).__name__}")
    try:  # a plain, JSON-only copy: the caller's dict may change later
        copied: dict[str, Any] = json.loads(json.dumps(arguments, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidArgumentError(f"{where} is not JSON data: {exc}") from exc
    return copied
