"""The tool-call syntax, documented for users and models alike.

A model calls a tool by writing (one or more calls), then ending its turn::

    <tool_call>{"name":"get_weather","arguments":{"city":"Oslo"}}</tool_call>

This compact form, ``name`` first, is the one the prompt shows and the
engine's grammar prefers (the text it forces is compact; it allows a little
whitespace between tokens, and without a grammar any JSON whitespace is
read).  ``arguments`` is a JSON object (a JSON string holding one is also
read).
The SDK answers in the next user turn, one block per call::

    <tool_result call_id="call_3f2a..." name="get_weather">
    {"temp_c": 21.5}
    </tool_result>

The payload is the handler's result as JSON (after any result hook and any
cut to fit the context), or ``{"error": {"code": ..., "message": ...}}``.
Everything the SDK writes back is Unicode text: a lone surrogate (which a
tool's result or error message may hold, and which UTF-8 cannot encode) is
written as its JSON escape ``\\udXXX`` (:func:`unicode_safe`).
When a call is forced (``tool_choice="required"`` or a tool's name) the
model writes the bare JSON object, constrained by a grammar; in ``"auto"``
turns an engine with a grammar constrains each call from its opening tag on
(see :mod:`.loop`).

A call that was cut off is refused like any invalid call (the model is
told, and may write it again): one without its closing tag, and a turn that
ends inside the opening tag (``I will check. <tool_ca``).  Such a turn is
never returned as the final answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import OutputValidationError
from ..tools.arguments import json_type
from ..tools.depth import MAX_DEPTH, too_deep_at
from ..tools.strict_json import strict_loads

__all__ = ["CALL_CLOSE", "CALL_OPEN", "RESULT_OPEN", "ParsedCall", "VisibleText",
           "arguments_error", "error_payload", "parse_calls", "parse_envelope", "peek_name",
           "result_block", "split_calls", "unicode_safe"]

CALL_OPEN = "<tool_call>"
CALL_CLOSE = "</tool_call>"
# Generation stops here: a model that starts writing a result itself is cut.
RESULT_OPEN = "<tool_result"
_SURROGATE = re.compile("[\ud800-\udfff]")
# The start of an envelope up to its name (a call cut short may end after it).
_NAME_FIRST = re.compile(r'\s*\{\s*"name"\s*:\s*("(?:[^"\\]|\\.)*")')


@dataclass(frozen=True)
class ParsedCall:
    """One call as written: its raw text, and name/arguments or the error."""

    raw: str
    name: str | None
    arguments: dict[str, Any] | None
    error: OutputValidationError | None


def split_calls(text: str) -> tuple[str, list[str]]:
    """(text before the first call, [raw call bodies]).  A call cut off (by
    max_tokens, or a model that stopped) is returned as is, to be refused:
    one without its closing tag, and a text that ends inside an opening tag
    (``... <tool_ca``: at least its first two characters) — such a turn is a
    call that was cut off, never a final answer."""
    head, sep, rest = text.partition(CALL_OPEN)
    bodies: list[str] = []
    trailing = head  # the text after the last complete call
    while sep:
        body, closed, rest = rest.partition(CALL_CLOSE)
        if not closed:
            bodies.append(CALL_OPEN + body)  # marks it unterminated
            return head, bodies
        bodies.append(body)
        trailing, sep, rest = rest.partition(CALL_OPEN)
    cut = _cut_opening_tag(trailing)
    if cut:
        bodies.append(cut)  # a proper prefix of CALL_OPEN marks it
    return head, bodies


def _cut_opening_tag(text: str) -> str:
    """The end of `text` when it is a proper prefix of CALL_OPEN (two
    characters at least: a lone "<" ends ordinary text too), else ""."""
    for size in range(len(CALL_OPEN) - 1, 1, -1):
        if text.endswith(CALL_OPEN[:size]):
            return CALL_OPEN[:size]
    return ""


def parse_calls(text: str) -> list[ParsedCall]:
    """Every call in a model turn, in order."""
    return [parse_envelope(body) for body in split_calls(text)[1]]


def parse_envelope(body: str) -> ParsedCall:
    """Reads ``{"name": ..., "arguments": ...}`` strictly.  Argument errors
    carry locations relative to the arguments object."""
    if body.startswith(CALL_OPEN):
        return ParsedCall(body, None, None, OutputValidationError(
            "the tool call was cut off before </tool_call> (max_tokens?)"))
    if body and CALL_OPEN.startswith(body):
        return ParsedCall(body, None, None, OutputValidationError(
            f"the tool call was cut off in its opening tag {CALL_OPEN} (max_tokens?)"))
    offset = too_deep_at(body, MAX_DEPTH + 1)  # the envelope is one level
    if offset is not None:
        return ParsedCall(body, None, None, OutputValidationError(
            f"the arguments nest deeper than {MAX_DEPTH} levels (at offset {offset} of the "
            "call)"))
    try:
        envelope = strict_loads(body, max_depth=MAX_DEPTH + 1)
    except OutputValidationError as exc:
        return ParsedCall(body, _peek_name(body), None, arguments_error(exc))
    if not isinstance(envelope, dict) or not isinstance(envelope.get("name"), str):
        return ParsedCall(body, None, None, OutputValidationError(
            'a tool call is {"name": "...", "arguments": {...}}', location=None))
    name = envelope["name"]
    extra = set(envelope) - {"name", "arguments"}
    if extra:
        return ParsedCall(body, name, None, OutputValidationError(
            f"unknown field {sorted(extra)[0]!r} in the tool call", location=None))
    arguments = envelope.get("arguments", {})
    if isinstance(arguments, str):
        try:
            arguments = strict_loads(arguments)
        except OutputValidationError as exc:
            return ParsedCall(body, name, None, exc)
    if not isinstance(arguments, dict):
        return ParsedCall(body, name, None, OutputValidationError(
            f"arguments must be a JSON object, got {json_type(arguments)}", location=""))
    return ParsedCall(body, name, arguments, None)


def arguments_error(exc: OutputValidationError) -> OutputValidationError:
    """`exc`, read in a whole call envelope, as an error of the call: its
    location relative to the arguments, or None with the message saying it
    is in the envelope."""
    location = exc.location
    if location is not None and (location == "/arguments" or location.startswith("/arguments/")):
        return OutputValidationError(str(exc), location=location[len("/arguments"):])
    return OutputValidationError(f"in the tool call envelope: {exc}", location=None)


def peek_name(body: str) -> str | None:
    """The tool name at the start of a call, even one cut short or refused
    after its name (``<tool_call>{"name":"x","argu``); None when it does not
    get that far."""
    match = _NAME_FIRST.match(body.removeprefix(CALL_OPEN))
    if match is None:
        return None
    try:
        name = json.loads(match.group(1))
    except ValueError:
        return None
    return name if isinstance(name, str) and unicode_safe(name) == name else None


def _peek_name(body: str) -> str | None:
    """The tool name from a call whose arguments were refused, for the record."""
    try:
        value = json.loads(body)
    except ValueError:
        return None
    name = value.get("name") if isinstance(value, dict) else None
    return name if isinstance(name, str) and unicode_safe(name) == name else None


def unicode_safe(text: str) -> str:
    """`text` with each lone surrogate written as its escape ``\\udXXX``.  In
    JSON text a surrogate can only stand inside a string, where the escape
    denotes the same value; elsewhere it keeps the text readable and
    encodable (a conversation must never hold text that UTF-8 cannot
    encode: every later render of it would fail)."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def result_block(call_id: str, name: str, payload: str) -> str:
    """The text that carries one call's payload back to the model."""
    head = f"<tool_result call_id={json.dumps(call_id)} name={json.dumps(name, ensure_ascii=False)}"
    return unicode_safe(f"{head}>\n{payload}\n</tool_result>")


def error_payload(code: str, message: str, location: str | None = None) -> str:
    error: dict[str, Any] = {"code": code, "message": message}
    if location is not None:
        error["location"] = location
    return unicode_safe(json.dumps({"error": error}, ensure_ascii=False))


class VisibleText:
    """The text of a model turn as a person may see it while it streams
    (the Agent's TextDelta events, ``model.chat``'s stream chunks and its
    content): everything outside ``<tool_call> ... </tool_call>``.  Text that may be
    the start of a tag is held back until the next piece tells.  At the
    end, a held back start of an opening tag of two characters or more is
    dropped (:func:`split_calls` reads it as a call that was cut off)."""

    def __init__(self) -> None:
        self._held = ""
        self._inside = False  # within a call

    def feed(self, text: str) -> str:
        """The visible part of `text` (the next piece of the turn)."""
        text, self._held = self._held + text, ""
        shown: list[str] = []
        while text:
            if self._inside:
                end = text.find(CALL_CLOSE)
                if end < 0:
                    self._held = text[-(len(CALL_CLOSE) - 1):]
                    break
                text, self._inside = text[end + len(CALL_CLOSE):], False
                continue
            start = text.find(CALL_OPEN)
            if start < 0:
                keep = _tag_start(text)
                shown.append(text[: len(text) - keep])
                self._held = text[len(text) - keep:]
                break
            shown.append(text[:start])
            text, self._inside = text[start + len(CALL_OPEN):], True
        return "".join(shown)

    def end(self) -> str:
        """What is left to show once the turn ended."""
        held, self._held = self._held, ""
        return "" if self._inside or len(held) >= 2 else held


def _tag_start(text: str) -> int:
    """The length of the longest end of `text` that is a proper prefix of
    CALL_OPEN (0 when none)."""
    for size in range(min(len(CALL_OPEN) - 1, len(text)), 0, -1):
        if text.endswith(CALL_OPEN[:size]):
            return size
    return 0
