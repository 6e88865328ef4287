"""``model.chat``: OpenAI-style chat on a loaded model.

    resp = model.chat([{"role": "user", "content": "Name the capital of France."}])
    resp.text, resp.finish_reason, resp.usage

The conversation is rendered with the model's chat template (see
:mod:`adil.chat_templates` for which one), tokenized without a second BOS
when the template writes one, and generated until the end of the assistant
turn (the model's EOS/EOT, and the family's end-of-turn token).

Tools (``tools=``: :class:`adil.Tool` objects or OpenAI function dicts) are
never run: the calls the model writes come back as
:class:`~adil.messages.ChatToolCall` objects with ``finish_reason ==
"tool_calls"``, as OpenAI's API does.  A template that reads ``tools``
presents them in its own format (given as OpenAI dicts); otherwise the
SDK's tool prompt (the Agent's, see :mod:`adil.agent.syntax`) is added to
the system message.  Either way the model writes Hermes-style calls,
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.  On an engine
with the ``grammar`` capability each call is constrained to an offered
tool and its parameters' schema; ``tool_choice="required"`` (or a tool's
name) forces a call from the first token, which needs that capability.
Earlier calls and results in ``messages`` (assistant ``tool_calls``, tool
messages) are written back the same way.
"""

from __future__ import annotations

import inspect
import json
import secrets
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

from .agent.prompt import system_message
from .agent.syntax import (
    CALL_CLOSE,
    CALL_OPEN,
    RESULT_OPEN,
    VisibleText,
    parse_envelope,
    result_block,
    split_calls,
)
from .chat import DEFAULT_TIMEOUT, render_chat, template_variables
from .chat_templates import ResolvedTemplate, end_tokens, resolve_template
from .constraints import Constraint, supports_grammar, tool_call_constraint
from .errors import (
    CapabilityError,
    ContextLengthError,
    InvalidArgumentError,
    OutputValidationError,
)
from .generation import Stats, TokenLogprob
from .messages import ChatMessage, ChatToolCall, Usage, normalize_messages
from .sampling import Sampling, resolve_sampling
from .timeouts import Deadline, Timeout, as_timeout
from .tools import Tool, validate

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .cancel import CancelToken
    from .engine import Model
    from .generation import Generation
    from .options import ChatOptions

__all__ = ["ChatChunk", "ChatResponse", "ChatStream", "FinishReason", "Prompt", "chat",
           "render_prompt"]

FinishReason = Literal["stop", "length", "tool_calls", "cancelled"]
ToolChoice = str | Mapping[str, Any]


@dataclass(frozen=True)
class ChatChunk:
    """A streamed piece of the answer's content (never text of a tool call)."""

    text: str


@dataclass(frozen=True)
class ChatResponse:
    """The answer of one ``model.chat`` call.

    ``message``: the assistant message (append it to the conversation);
    ``finish_reason``: ``stop`` (end of turn or a stop string), ``length``
    (``max_tokens`` or the context ran out), ``tool_calls`` (the turn
    ended with calls), ``cancelled``; ``usage``: token counts; ``stats``:
    the engine's timings; ``value``: with ``schema=``, the document read
    and validated; ``logprobs``: with ``logprobs=k``, one entry per
    generated token."""

    message: ChatMessage
    finish_reason: FinishReason
    usage: Usage
    stats: Stats
    value: Any = None
    logprobs: tuple[TokenLogprob, ...] | None = None

    @property
    def text(self) -> str:
        """The content, or "" when there is none (a turn of tool calls)."""
        return self.message.content or ""

    @property
    def tool_calls(self) -> tuple[ChatToolCall, ...]:
        return self.message.tool_calls


@dataclass(frozen=True)
class Prompt:
    """A rendered conversation: its text, the template it came from, and
    whether that template presented the tools itself."""

    text: str
    template: ResolvedTemplate
    tools_in_template: bool


# ---------------------------------------------------------------------------
# Rendering
# ---------------------------------------------------------------------------

def render_prompt(
    model: Model,
    messages: Any,
    *,
    add_generation_prompt: bool = True,
    tools: Sequence[Tool | Mapping[str, Any]] | None = None,
    chat_template: str | None = None,
    timeout: float | None = DEFAULT_TIMEOUT,
    deadline: Deadline | None = None,
) -> Prompt:
    """`messages` (checked, see :func:`adil.messages.normalize_messages`)
    rendered for `model` with `tools` presented (module docstring)."""
    checked = normalize_messages(messages)
    offered = _tools(tools)
    resolved = resolve_template(model, chat_template)
    own_tools = "tools" in template_variables(resolved.source)
    if own_tools:
        rendered = [_template_message(m) for m in checked]
        tool_dicts: list[dict[str, Any]] | None = [t.to_openai() for t in offered] or None
    else:
        rendered = _sdk_messages(checked, offered)
        tool_dicts = None
    info = model.info
    text = render_chat(
        resolved.source, rendered, add_generation_prompt=add_generation_prompt,
        bos_token=_token_text(model, info.bos_token), eos_token=_token_text(model, info.eos_token),
        tools=tool_dicts, timeout=timeout, deadline=deadline)
    return Prompt(text, resolved, own_tools)


def _token_text(model: Model, token: int | None) -> str:
    return model.detokenize([token], special=True) if token is not None else ""


def _template_message(message: ChatMessage) -> dict[str, Any]:
    """The dict a template reads: only the keys that are set (templates
    test ``'tool_calls' in message``), arguments as a dict (templates write
    ``arguments | tojson``)."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.content is None and not message.tool_calls:
        out["content"] = ""
    if message.tool_calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.name, "arguments": c.arguments}}
                             for c in message.tool_calls]
    if message.tool_call_id is not None:
        out["tool_call_id"] = message.tool_call_id
    if message.name is not None:
        out["name"] = message.name
    return out


def _sdk_messages(messages: Sequence[ChatMessage], tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Plain role/content messages in the SDK's tool syntax: the tool
    prompt in the system message, calls as ``<tool_call>`` blocks in the
    assistant's text, results as ``<tool_result>`` blocks in a user turn."""
    out: list[dict[str, Any]] = []
    names = {c.id: c.name for m in messages for c in m.tool_calls}
    if tools:
        first = messages[0]
        instructions = first.content or "" if first.role == "system" else ""
        out.append({"role": "system", "content": system_message(instructions, tools)})
        if first.role == "system":
            messages = messages[1:]
    results: list[str] = []
    for message in messages:
        if message.role == "tool":
            call_id = str(message.tool_call_id)
            results.append(result_block(call_id, message.name or names.get(call_id, ""),
                                        message.content or ""))
            continue
        if results:
            out.append({"role": "user", "content": "\n".join(results)})
            results = []
        content = message.content or ""
        if message.tool_calls:
            content += "".join(_call_text(c) for c in message.tool_calls)
        out.append({"role": message.role, "content": content})
    if results:
        out.append({"role": "user", "content": "\n".join(results)})
    return out


def _call_text(call: ChatToolCall) -> str:
    envelope = json.dumps({"name": call.name, "arguments": call.arguments},
                          ensure_ascii=False, separators=(",", ":"))
    return f"{CALL_OPEN}{envelope}{CALL_CLOSE}"


def _tools(tools: Sequence[Tool | Mapping[str, Any]] | None) -> tuple[Tool, ...]:
    if tools is None:
        return ()
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Sequence):
        raise InvalidArgumentError(
            f"tools must be a list of adil.Tool objects or OpenAI function dicts, got "
            f"{type(tools).__name__}")
    out: list[Tool] = []
    for i, tool in enumerate(tools):
        if isinstance(tool, Mapping):
            tool = Tool.from_openai(tool, handler=_not_run, effect="read_only")
        elif not isinstance(tool, Tool):
            raise InvalidArgumentError(
                f"tools[{i}] must be an adil.Tool or an OpenAI function dict, got "
                f"{type(tool).__name__}")
        if any(t.name == tool.name for t in out):
            raise InvalidArgumentError(f"tools[{i}]: a second tool named {tool.name!r}")
        out.append(tool)
    return tuple(out)


def _not_run(arguments: dict[str, Any], ctx: Any) -> None:
    raise CapabilityError("model.chat returns tool calls; it never runs a tool")


# ---------------------------------------------------------------------------
# chat()
# ---------------------------------------------------------------------------

@overload
def chat(model: Model, messages: Any, *, stream: Literal[False] = False,
         **options: Unpack[ChatOptions]) -> ChatResponse: ...


@overload
def chat(model: Model, messages: Any, *, stream: Literal[True],
         **options: Unpack[ChatOptions]) -> ChatStream: ...


@overload
def chat(model: Model, messages: Any, *, stream: bool = False,
         **options: Unpack[ChatOptions]) -> ChatResponse | ChatStream: ...


def chat(
    model: Model,
    messages: Any,
    *,
    tools: Sequence[Tool | Mapping[str, Any]] | None = None,
    tool_choice: ToolChoice = "auto",
    schema: Any = None,
    stream: bool = False,
    max_tokens: int | None = None,
    sampling: Sampling | None = None,
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    min_p: float | None = None,
    seed: int | None = None,
    repeat_penalty: float | None = None,
    stop: str | Sequence[str] = (),
    timeout: Timeout | float | None = None,
    cancel: CancelToken | None = None,
    logprobs: int | None = None,
    chat_template: str | None = None,
    speculative: Literal["lookup"] | None = None,
) -> ChatResponse | ChatStream:
    """One assistant turn for `messages` (see the module docstring and
    ``Model.chat``): a :class:`ChatResponse`, or with ``stream=True`` a
    :class:`ChatStream` of content chunks whose ``response`` is known once
    it ended.  The keywords and their defaults: :class:`adil.options.ChatOptions`."""
    # generate's own rules for these keywords, checked before anything is rendered
    chosen = resolve_sampling(sampling, temperature=temperature, top_p=top_p, top_k=top_k,
                              min_p=min_p, seed=seed, repeat_penalty=repeat_penalty)
    limit = as_timeout(timeout)
    offered = _tools(tools)
    choice = _tool_choice(tool_choice, offered)
    active = offered if choice != "none" else ()
    if schema is not None and active:
        raise InvalidArgumentError("give schema= or tools=, not both (tool_choice='none' "
                                   "keeps tools out)")
    forced = tuple(t for t in active if choice in ("required", t.name))
    prompt = render_prompt(model, messages, tools=active, chat_template=chat_template)
    info = model.info
    bos = _token_text(model, info.bos_token)
    add_bos = False if bos and prompt.text.startswith(bos) else None
    ids = model.tokenize(prompt.text, add_bos=add_bos, special=True)
    stop_ids, end_texts = end_tokens(model, prompt.template.source,
                                     exclude=(info.eos_token, info.eot_token))
    stops = [stop] if isinstance(stop, str) else list(stop)
    if active and not forced and not prompt.tools_in_template:
        stops.append(RESULT_OPEN)  # a model that starts writing a result itself is cut
    stops += end_texts  # a model that spells the end marker as plain text
    constraint = _constraint(model, active, forced)
    options: dict[str, Any] = {
        "max_tokens": _max_tokens(max_tokens, len(ids), info.context_length),
        "sampling": chosen, "timeout": limit, "cancel": cancel, "stop": tuple(stops),
    }
    if schema is not None:
        options["schema"] = schema
    if constraint is not None:
        options["constraint"] = constraint
    if logprobs is not None:
        options["logprobs"] = logprobs
    if speculative is not None:
        options["speculative"] = speculative
    if stop_ids and _accepts(model.generate, "stop_tokens"):
        options["stop_tokens"] = stop_ids
    generation = model.generate(ids, **options)
    result = ChatStream(generation, len(ids), active, bool(forced), schema is not None)
    if stream:
        return result
    with result:
        for _ in result:
            pass
    return result.response


def _tool_choice(choice: ToolChoice, tools: Sequence[Tool]) -> str:
    """"auto", "none", "required" or a tool's name."""
    if isinstance(choice, Mapping):  # OpenAI's {"type": "function", "function": {"name": N}}
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else None
        if choice.get("type") != "function" or not isinstance(name, str):
            raise InvalidArgumentError(
                f'tool_choice as a dict is {{"type": "function", "function": {{"name": ...}}}}, '
                f"got {dict(choice)!r}")
        choice = name
    if not isinstance(choice, str):
        raise InvalidArgumentError(
            f"tool_choice must be 'auto', 'none', 'required' or a tool's name, got {choice!r}")
    if choice in ("auto", "none"):
        return choice
    if not tools:
        raise InvalidArgumentError(f"tool_choice={choice!r} needs tools=")
    if choice != "required" and all(t.name != choice for t in tools):
        raise InvalidArgumentError(
            f"tool_choice={choice!r} is not 'auto', 'none', 'required' or one of the tools "
            f"({', '.join(t.name for t in tools)})")
    return choice


def _constraint(model: Model, active: Sequence[Tool], forced: Sequence[Tool]
                ) -> Constraint | None:
    grammar = supports_grammar(model)
    if forced:
        if not grammar:
            raise CapabilityError(
                "tool_choice forces a tool call, which needs an engine with grammar support; "
                f"this model's engine has none (its capabilities: "
                f"{', '.join(model.capabilities) or 'none'})")
        return tool_call_constraint(forced)
    if active and grammar:
        return tool_call_constraint(active, lazy=True)
    return None


def _max_tokens(max_tokens: int | None, n_prompt: int, context: int) -> int:
    """`max_tokens`, or (None) what the context has left after the prompt."""
    if max_tokens is None:
        left = context - n_prompt
        if left <= 0:
            raise ContextLengthError(
                f"the rendered conversation has {n_prompt} tokens; the context window holds "
                f"{context}: no room for an answer")
        return left
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise InvalidArgumentError(
            f"max_tokens must be a positive int or None (to the end of the context), got "
            f"{max_tokens!r}")
    return max_tokens


def _accepts(function: Any, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


# ---------------------------------------------------------------------------
# The stream
# ---------------------------------------------------------------------------

class ChatStream(Iterator[ChatChunk]):
    """The answer as it is generated: an iterator of :class:`ChatChunk`
    (content only: the text of tool calls is held back), then
    ``response``.  ``cancel()`` stops it before its next token (any
    thread); ``close()`` (or leaving a ``with`` block) stops it and frees
    the run."""

    def __init__(self, generation: Generation, n_prompt: int, tools: Sequence[Tool],
                 forced: bool, schema: bool = False) -> None:
        self._generation = generation
        self._schema = schema
        self._n_prompt = n_prompt
        self._tools = {t.name: t for t in tools}
        self._forced = forced
        # Content and tool-call text apart as pieces arrive (the Agent's
        # TextDelta filter); None: everything is content, or (forced) a call.
        self._visible = VisibleText() if tools and not forced else None
        self._content: list[str] = []  # what the filter let through
        self._logprobs: list[TokenLogprob] = []
        self._has_logprobs = False
        self._response: ChatResponse | None = None
        self._cut = False  # max_tokens ended a constrained call

    @property
    def response(self) -> ChatResponse:
        """The whole answer, once the stream has ended (InvalidArgumentError
        before)."""
        if self._response is None:
            raise InvalidArgumentError("the response is known once the stream has ended")
        return self._response

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> ChatChunk:
        while self._response is None:
            try:
                piece = next(self._generation)
            except StopIteration:
                tail = self._show(self._visible.end()) if self._visible is not None else ""
                self._response = self._finish()
                if tail:
                    return ChatChunk(tail)
                break
            except OutputValidationError:
                if self._tools and self._generation.stop_reason == "max_tokens":
                    self._cut = True  # a call cut short: the answer ends with "length"
                    continue
                raise
            lps = getattr(piece, "logprobs", None)
            if lps is not None:
                self._has_logprobs = True
                self._logprobs.extend(lps)
            if self._forced:
                continue  # the whole answer is the call: no content to show
            text = piece.text if self._visible is None else self._show(
                self._visible.feed(piece.text))
            if text:
                return ChatChunk(text)
        raise StopIteration

    def _show(self, text: str) -> str:
        self._content.append(text)
        return text

    def cancel(self) -> None:
        self._generation.cancel()

    def close(self) -> None:
        """Stops the answer (if still going) and frees the run; the
        response then holds what was generated, ``cancelled``."""
        self._generation.close()
        if self._response is None:
            self._response = self._finish()

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the response -------------------------------------------------------
    def _finish(self) -> ChatResponse:
        generation = self._generation
        text = generation.text
        calls: tuple[ChatToolCall, ...] = ()
        cut = self._cut
        if self._forced:
            calls = (self._call(text.strip(), text),) if text.strip() and not cut else ()
            content: str | None = None
        elif self._tools:
            bodies = split_calls(text)[1]
            complete = [b for b in bodies if not _is_cut(b)]
            cut = cut or len(complete) < len(bodies)
            calls = tuple(self._call(b, text) for b in complete)
            content = "".join(self._content)
            if calls or cut:
                content = content.strip() or None
        else:
            content = text
        reason = _finish_reason(generation.stop_reason, bool(calls), cut)
        if cut and reason not in ("length", "cancelled"):
            raise OutputValidationError(
                "the model ended its turn inside a tool call", location=None, text=text)
        message = ChatMessage(role="assistant", content=content, tool_calls=calls)
        usage = Usage(self._n_prompt, len(generation.tokens))
        value = generation.value if self._schema and reason != "cancelled" else None
        return ChatResponse(message, reason, usage, generation.stats, value,
                            tuple(self._logprobs) if self._has_logprobs else None)

    def _call(self, body: str, text: str) -> ChatToolCall:
        """The call in `body`; OutputValidationError when it is not a valid
        call of an offered tool (possible without the engine's grammar)."""
        parsed = parse_envelope(body)
        error = parsed.error
        tool = self._tools.get(parsed.name) if parsed.name is not None else None
        if error is None and tool is None:
            error = OutputValidationError(f"there is no tool named {parsed.name!r}")
        if error is None and tool is not None and parsed.arguments is not None:
            try:
                validate(parsed.arguments, tool.parameters)
            except OutputValidationError as exc:
                error = exc
        if error is not None or parsed.name is None or parsed.arguments is None:
            raise OutputValidationError(
                f"the model wrote an invalid tool call: {error}",
                location=error.location if error is not None else None, text=text)
        return ChatToolCall("call_" + secrets.token_hex(12), parsed.name, parsed.arguments)


def _is_cut(body: str) -> bool:
    return body.startswith(CALL_OPEN) or (bool(body) and CALL_OPEN.startswith(body))


def _finish_reason(stop_reason: str, calls: bool, cut: bool) -> FinishReason:
    if stop_reason == "cancelled":
        return "cancelled"
    if stop_reason == "max_tokens" or cut:
        return "length"
    return "tool_calls" if calls else "stop"
