"""A model behind a plain OpenAI-compatible server (llama.cpp's
``llama-server``, vLLM, ``adil serve``'s own ``/v1`` routes), with the
interface the agent needs (:mod:`adil.agent.protocol`), so the same
``adil.Agent`` code runs against an existing serving engine::

    client = adil.OpenAIClient("http://gpu-box:8080", model="qwen2.5-7b-instruct")
    agent = adil.Agent(client.model(), tools=[...])

How each call goes over the wire:

* ``generate(prompt)``: ``POST /v1/completions`` with ``stream: true``
  (``data: {chunk}`` ... ``data: [DONE]``), under the client's deadlines:
  the total deadline and a cancel token close the stream, and the server
  cancels the run.  ``max_tokens``, ``temperature``, ``top_p``, ``seed``
  and ``stop`` are OpenAI's fields; ``top_k``, ``min_p`` and
  ``repeat_penalty`` are sent too (llama.cpp's and adil's extensions;
  other servers ignore them), so the SDK's default sampling holds.  Pieces
  carry text only (OpenAI's stream has no token ids).
* ``render_chat``: rendered here, with :func:`adil.chat.render_chat` and
  the ``chat_template=`` given to the client, else the one llama-server
  reports in ``GET /props``; otherwise CapabilityError asking for
  ``chat_template=``.  ``bos_token`` is "" by default: the server adds the
  BOS itself when it tokenizes a completion's prompt.
* ``chat(messages, tools=...)``: ``POST /v1/chat/completions``, rendered
  with the server's own template; tool calls come back as
  :class:`adil.ChatToolCall` objects.
* ``tokenize``/``detokenize``: ``POST /tokenize``/``/detokenize`` (llama-server
  and vLLM have them; CapabilityError elsewhere).  The agent uses
  ``tokenize`` only to fit long tool results once it knows the context
  length (``info.context_length``: llama-server's ``/props``, vLLM's
  ``max_model_len``; None otherwise, and then it never asks).
* ``capabilities``: none.  Without ``grammar`` the agent passes no
  constraint and reads the model's tool calls from its text.

Errors: OpenAI's envelope ``{"error": {"message", "type", "code"}}`` (or
vLLM's unwrapped one) becomes an :mod:`adil.errors` class by HTTP status —
400 InvalidArgumentError (ContextLengthError when it says so), 401/403
PermissionDeniedError, 404 InvalidArgumentError (an unknown model), 429
and 503 BusyError (retried by the client's policy; llama-server's "Loading
model" is ModelNotReadyError), 501 CapabilityError, other 5xx
EngineInternalError — or, when the body carries one of adil's stable codes
(``adil serve``), the class of that code; ``.status`` and ``.request_id``
(``x-request-id``) are set.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

from ..errors import (
    AdilError,
    BusyError,
    CapabilityError,
    ContextLengthError,
    EngineInternalError,
    InvalidArgumentError,
    ModelNotReadyError,
    OutputValidationError,
    PermissionDeniedError,
    ServiceConnectionError,
    error_for_code,
)
from ..generation import Completion, Piece, Stats, StopReason
from ..sampling import Sampling, resolve_sampling
from ..timeouts import Deadline, Timeout, as_timeout
from .remote_model import RemoteCancelToken, _text
from .transport import EventStream, Stopped, Transport, error_from_body

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..chat_api import ChatChunk, ChatResponse
    from ..constraints import Constraint
    from ..messages import ChatToolCall
    from ..options import BaseChatOptions
    from ..tools import Tool

    class _ChatOptions(BaseChatOptions, total=False):
        """The keywords of :meth:`OpenAIModel.chat`: any cancel token."""

        cancel: Any

__all__ = ["OpenAIChatStream", "OpenAIGeneration", "OpenAIModel", "ServedModelInfo",
           "openai_error"]

COMPLETIONS = "/v1/completions"
CHAT = "/v1/chat/completions"
_ABSENT = (404, 405, 501)  # a route this server does not have


def openai_error(body: Any, status: int | None, request_id: str | None) -> AdilError:
    """The SDK error for an OpenAI-style error body (see the module
    docstring); `status` None (an error sent mid-stream) reads the body's
    numeric ``code``."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        inner = {"message": str(body)[:200] if body else ""}
    code = inner.get("code")
    if isinstance(code, str) and error_for_code(code) is not AdilError:
        return error_from_body({"error": inner}, status, request_id)  # adil serve's stable code
    if status is None and isinstance(code, int) and not isinstance(code, bool):
        status = code
    message = str(inner.get("message") or f"HTTP {status}")
    kind = str(inner.get("type") or "")
    common: dict[str, Any] = {"status": status, "request_id": request_id}
    lowered = message.lower()
    if kind == "exceed_context_size_error" or "context length" in lowered:
        return ContextLengthError(message, **common)
    if status in (401, 403):
        return PermissionDeniedError(message, **common)
    if status in (400, 404, 422):
        return InvalidArgumentError(message, **common)
    if status == 503 and "loading model" in lowered:
        return ModelNotReadyError(message, **common)
    if status in (429, 503):
        return BusyError(message, **common)
    if status == 501:
        return CapabilityError(message, **common)
    if status is not None and status >= 500:
        return EngineInternalError(message, **common)
    return AdilError(f"{message} (HTTP {status}, type {kind or 'none'})", **common)


@dataclass(frozen=True)
class ServedModelInfo:
    """What an OpenAI-compatible server tells of its model: its ``id`` and,
    when it says, its ``context_length`` (None otherwise)."""

    id: str | None
    context_length: int | None


class OpenAIModel:
    """The model of an OpenAI-compatible server (see the module docstring).
    Made by :meth:`adil.OpenAIClient.model`."""

    def __init__(self, transport: Transport, *, model: str | None = None,
                 chat_template: str | None = None, bos_token: str = "",
                 eos_token: str | None = None) -> None:
        if chat_template is not None and (not isinstance(chat_template, str)
                                          or not chat_template):
            raise InvalidArgumentError("chat_template must be a non-empty Jinja template string")
        self._transport = transport
        self._model = model
        self._template = chat_template
        self._bos = bos_token
        self._eos = eos_token
        self._props: dict[str, Any] | None = None
        self._info: ServedModelInfo | None = None
        self._lock = threading.Lock()

    @property
    def id(self) -> str | None:
        """The served model's id sent with each request (None: not sent)."""
        return self._model

    @property
    def capabilities(self) -> tuple[str, ...]:
        """None: no grammar (the agent reads calls from the text)."""
        return ()

    def cancel_token(self) -> RemoteCancelToken:
        """A new cancel flag for :meth:`generate`'s and :meth:`chat`'s ``cancel=``."""
        return RemoteCancelToken()

    # -- what the server says ------------------------------------------------
    def props(self) -> dict[str, Any]:
        """llama-server's ``GET /props`` ({} when the server has none);
        asked once, then kept."""
        with self._lock:
            if self._props is None:
                try:
                    body = self._transport.request("GET", "/props")
                except AdilError as exc:
                    if exc.status not in _ABSENT:
                        raise
                    body = {}
                self._props = body if isinstance(body, dict) else {}
            return self._props

    @property
    def info(self) -> ServedModelInfo:
        """The model's id and context length (``/props``, ``/v1/models``)."""
        if self._info is None:
            settings = self.props().get("default_generation_settings")
            length = settings.get("n_ctx") if isinstance(settings, dict) else None
            ident = self._model
            listed = self._transport.request("GET", "/v1/models")
            entries = listed.get("data") if isinstance(listed, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if not isinstance(entry, dict) or (ident is not None and entry.get("id") != ident):
                    continue
                ident = ident or (str(entry["id"]) if "id" in entry else None)
                length = length or entry.get("max_model_len")  # vLLM
                break
            self._info = ServedModelInfo(
                ident, length if isinstance(length, int) and length > 0 else None)
        return self._info

    def chat_template(self) -> str:
        """The template :meth:`render_chat` uses: the client's
        ``chat_template=``, else the server's (``/props``)."""
        if self._template is not None:
            return self._template
        served = self.props().get("chat_template")
        if isinstance(served, str) and served:
            return served
        raise CapabilityError(
            f"{self._transport.base_url} does not report its chat template (no GET /props "
            "chat_template); rendering prompts here needs one: pass chat_template= (the served "
            "model's Jinja chat template) to adil.OpenAIClient, or use model.chat(), which "
            "the server renders")

    # -- tokens -------------------------------------------------------------------
    def tokenize(self, text: str | bytes, *, add_bos: bool | None = None, special: bool = True,
                 timeout: Timeout | float | None = None) -> list[int]:
        """Token ids from the server's ``POST /tokenize`` (llama-server, vLLM)."""
        add = True if add_bos is None else add_bos
        content = _text("text", text)
        body = self._optional("/tokenize", {
            "content": content, "add_special": add, "parse_special": special,  # llama-server
            "prompt": content, "add_special_tokens": add,  # vLLM
            **self._model_field()}, timeout)
        tokens = body.get("tokens")
        if not isinstance(tokens, list):
            raise ServiceConnectionError("/tokenize answered without a token list")
        return [int(t["id"]) if isinstance(t, dict) else int(t) for t in tokens]

    def detokenize(self, ids: Sequence[int], *, special: bool = False,
                   timeout: Timeout | float | None = None) -> str:
        """Text from the server's ``POST /detokenize`` (llama-server, vLLM)."""
        body = self._optional("/detokenize", {"tokens": [int(t) for t in ids],
                                              **self._model_field()}, timeout)
        text = body.get("content", body.get("prompt"))
        if not isinstance(text, str):
            raise ServiceConnectionError("/detokenize answered without text")
        return text

    def _optional(self, path: str, body: dict[str, Any],
                  timeout: Timeout | float | None) -> dict[str, Any]:
        try:
            answer = self._transport.request("POST", path, body, timeout=as_timeout(timeout))
        except AdilError as exc:
            if exc.status in _ABSENT:
                raise CapabilityError(f"{self._transport.base_url} has no {path}",
                                      status=exc.status, request_id=exc.request_id) from exc
            raise
        if not isinstance(answer, dict):
            raise ServiceConnectionError(f"{path} answered with something that is not an object")
        return answer

    # -- prompts ----------------------------------------------------------------------
    def render_chat(
        self, messages: Sequence[Mapping[str, Any] | Any], *, add_generation_prompt: bool = True,
        tools: Sequence[Tool | Mapping[str, Any]] | None = None,
        deadline: Deadline | None = None,
    ) -> str:
        """The prompt for `messages` (and `tools`), rendered here with
        :meth:`chat_template` as ``Model.render_chat`` renders it."""
        from ..chat import render_chat, template_variables
        from ..chat_api import _sdk_messages, _template_message, _tools
        from ..messages import normalize_messages

        template = self.chat_template()
        checked = normalize_messages(messages)
        offered = _tools(tools)
        if "tools" in template_variables(template):
            rendered = [_template_message(m) for m in checked]
            tool_dicts: list[dict[str, Any]] | None = [t.to_openai() for t in offered] or None
        else:
            rendered = _sdk_messages(checked, offered)
            tool_dicts = None
        eos = self._eos
        if eos is None:
            served = self.props().get("eos_token")
            eos = served if isinstance(served, str) else ""
        return render_chat(template, rendered, add_generation_prompt=add_generation_prompt,
                           bos_token=self._bos, eos_token=eos, tools=tool_dicts,
                           deadline=deadline)

    # -- generation ---------------------------------------------------------------------
    def generate(
        self,
        prompt: str | bytes | Sequence[int],
        *,
        max_tokens: int | None = 256,
        sampling: Sampling | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        seed: int | None = None,
        repeat_penalty: float | None = None,
        schema: Any = None,
        timeout: Timeout | float | None = None,
        cancel: Any = None,
        stop: str | Sequence[str] = (),
        n: int = 1,
        images: Sequence[Any] | None = None,
        ignore_eos: bool = False,
        constraint: Constraint | None = None,
        logprobs: int | None = None,
    ) -> OpenAIGeneration:
        """Starts a completion (``POST /v1/completions``, streamed) and
        returns its pieces.  ``max_tokens=None`` leaves the length to the
        server's default.  Busy, not ready and refused connections are
        retried by the client's policy before the stream starts."""
        if n != 1:
            raise CapabilityError(f"one choice per request here; n={n} asked")
        if images:
            raise CapabilityError("images are not sent to an OpenAI-compatible server")
        if schema is not None or constraint is not None:
            raise CapabilityError("schema= and constraint= need grammar, which a plain "
                                  "OpenAI-compatible completion does not offer")
        if logprobs is not None:
            raise CapabilityError("logprobs= is not read from an OpenAI-compatible server")
        body = self._common(sampling, temperature, top_p, top_k, min_p, seed, repeat_penalty,
                            max_tokens, stop, cancel)
        body["prompt"] = (_text("prompt", prompt) if isinstance(prompt, str | bytes)
                          else [int(t) for t in prompt])
        if ignore_eos:
            body["ignore_eos"] = True
        deadline = self._transport.deadline(as_timeout(timeout))
        stream = self._transport.stream(COMPLETIONS, body, deadline, cancel=cancel)
        return OpenAIGeneration(stream)

    def complete(self, prompt: str | bytes | Sequence[int], **kwargs: Any) -> Completion:
        """Runs a generation to its end (the arguments of :meth:`generate`)."""
        with self.generate(prompt, **kwargs) as generation:
            return generation.completion()

    @overload
    def chat(self, messages: Any, *, stream: Literal[False] = False,
             **options: Unpack[_ChatOptions]) -> ChatResponse: ...

    @overload
    def chat(self, messages: Any, *, stream: Literal[True],
             **options: Unpack[_ChatOptions]) -> OpenAIChatStream: ...

    @overload
    def chat(self, messages: Any, *, stream: bool = False,
             **options: Unpack[_ChatOptions]) -> ChatResponse | OpenAIChatStream: ...

    def chat(
        self,
        messages: Any,
        *,
        tools: Sequence[Tool | Mapping[str, Any]] | None = None,
        tool_choice: str | Mapping[str, Any] = "auto",
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
        cancel: Any = None,
    ) -> ChatResponse | OpenAIChatStream:
        """One assistant turn over ``POST /v1/chat/completions``, rendered by
        the server with its own template: a :class:`adil.ChatResponse`, or
        with ``stream=True`` an :class:`OpenAIChatStream` of content chunks
        whose ``response`` is known once it ended.  Tools are passed through
        and never run; their calls come back in ``response.tool_calls``.
        ``schema=`` becomes ``response_format`` (json_schema) and the answer
        is read into ``response.value``."""
        from ..chat_api import _tools
        from ..messages import normalize_messages
        from ..structured import output_schema

        offered = _tools(tools)
        output = None if schema is None else output_schema(schema)
        if output is not None and offered:
            raise InvalidArgumentError("give schema= or tools=, not both")
        body = self._common(sampling, temperature, top_p, top_k, min_p, seed, repeat_penalty,
                            max_tokens, stop, cancel)
        body["messages"] = [m.to_dict() for m in normalize_messages(messages)]
        if offered:
            body["tools"] = [t.to_openai() for t in offered]
            body["tool_choice"] = _tool_choice(tool_choice)
        if output is not None:
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": "output", "schema": output.schema, "strict": True}}
        deadline = self._transport.deadline(as_timeout(timeout))
        result = OpenAIChatStream(self._transport.stream(CHAT, body, deadline, cancel=cancel),
                                  output)
        if stream:
            return result
        with result:
            for _ in result:
                pass
        return result.response

    def _model_field(self) -> dict[str, Any]:
        return {} if self._model is None else {"model": self._model}

    def _common(self, sampling: Sampling | None, temperature: float | None,
                top_p: float | None, top_k: int | None, min_p: float | None,
                seed: int | None, repeat_penalty: float | None, max_tokens: int | None,
                stop: str | Sequence[str], cancel: Any) -> dict[str, Any]:
        """The fields completions and chat share (checked as generate's)."""
        if cancel is not None and not callable(getattr(cancel, "cancelled", None)):
            raise InvalidArgumentError("cancel must be a cancel token (with cancelled())")
        if max_tokens is not None and (not isinstance(max_tokens, int)
                                       or isinstance(max_tokens, bool) or max_tokens < 1):
            raise InvalidArgumentError(f"max_tokens must be an int >= 1 or None, "
                                       f"got {max_tokens!r}")
        chosen = resolve_sampling(sampling, temperature=temperature, top_p=top_p, top_k=top_k,
                                  min_p=min_p, seed=seed, repeat_penalty=repeat_penalty)
        stops = [stop] if isinstance(stop, str) else list(stop)
        body: dict[str, Any] = {
            **self._model_field(), "stream": True, "stream_options": {"include_usage": True},
            "temperature": chosen.temperature, "top_p": chosen.top_p, "top_k": chosen.top_k,
            "min_p": chosen.min_p, "repeat_penalty": chosen.repeat_penalty,
        }
        if chosen.seed is not None:
            body["seed"] = chosen.seed
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if stops:
            body["stop"] = stops
        return body


def _tool_choice(choice: str | Mapping[str, Any]) -> Any:
    if isinstance(choice, Mapping):
        return dict(choice)
    if choice in ("auto", "none", "required"):
        return choice
    if isinstance(choice, str) and choice:
        return {"type": "function", "function": {"name": choice}}
    raise InvalidArgumentError(
        f"tool_choice must be 'auto', 'none', 'required' or a tool's name, got {choice!r}")


class _Chunks:
    """The ``data:`` chunks of one OpenAI stream, up to ``[DONE]``; an error
    chunk raises its error; usage kept."""

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream
        self.prompt_tokens = 0
        self.completion_tokens: int | None = None
        self.finished = False  # a finish_reason came

    @property
    def request_id(self) -> str | None:
        return self.stream.request_id

    def next(self) -> dict[str, Any] | None:
        """The next choice (choices[0]) or None at the end."""
        while True:
            event = self.stream.next_event()
            if event is None:
                if self.finished:
                    return None  # a server that ends without [DONE]
                raise ServiceConnectionError("the stream ended before its answer did",
                                             request_id=self.request_id)
            if event.data.strip() == "[DONE]":
                return None
            try:
                data = json.loads(event.data)
            except ValueError as exc:
                raise ServiceConnectionError("the server sent a chunk that is not JSON",
                                             request_id=self.request_id) from exc
            if not isinstance(data, dict):
                raise ServiceConnectionError("the server sent a chunk that is not an object",
                                             request_id=self.request_id)
            if event.name == "error" or "error" in data:
                raise openai_error(data, None, self.request_id)
            usage = data.get("usage")
            if isinstance(usage, dict):
                self.prompt_tokens = int(usage.get("prompt_tokens") or 0)
                self.completion_tokens = int(usage.get("completion_tokens") or 0)
            choices = data.get("choices")
            if isinstance(choices, list) and choices and isinstance(choices[0], dict):
                if choices[0].get("finish_reason") is not None:
                    self.finished = True
                return dict(choices[0])


class _Reader:
    """What a generation and a chat stream share: one reader at a time,
    ending, cancel and close."""

    def __init__(self, stream: EventStream) -> None:
        self._chunks = _Chunks(stream)
        self._stream = stream
        self._lock = threading.Lock()
        self.running = True
        self.cancel_acknowledged = False

    @property
    def request_id(self) -> str | None:
        """The server's id of this request (``x-request-id``), when it sent one."""
        return self._stream.request_id

    def _next_choice(self) -> dict[str, Any] | None:
        """The next choice; None at the end (also: cancelled or closed)."""
        if not self.running:
            return None
        if not self._lock.acquire(blocking=False):
            raise BusyError("another thread reads this stream")
        try:
            try:
                choice = self._chunks.next()
            except Stopped:
                self._end(cancelled=True)
                return None
            except BaseException as exc:
                self._end(failed=exc)
                raise
            if choice is None:
                self._stream.finish()  # the connection is reused by the next request
                self._end()
            return choice
        finally:
            self._lock.release()

    def _end(self, *, cancelled: bool = False, failed: BaseException | None = None) -> None:
        self.running = False
        self.cancel_acknowledged = self.cancel_acknowledged or cancelled
        try:
            self._finish(cancelled, failed)
        finally:
            self._stream.close()

    def _finish(self, cancelled: bool, failed: BaseException | None) -> None:
        raise NotImplementedError

    def cancel(self) -> None:
        """Stops the run (any thread): the stream closes, the server cancels."""
        self._stream.abort("cancelled")

    def close(self) -> None:
        """Cancels the run if it still goes on and frees the connection."""
        if self.running:
            self._stream.abort("closed")
            with self._lock:
                if self.running:
                    self._end(cancelled=True)
        self._stream.close()

    def __del__(self) -> None:
        # A stream dropped unread still ends its run on the server.
        try:
            if getattr(self, "running", False):
                self.close()
        except Exception:  # noqa: BLE001 - nothing may escape a finalizer
            pass


class OpenAIGeneration(_Reader, Iterator[Piece]):
    """An iterator of :class:`adil.Piece` (text only) from
    ``/v1/completions``; after it ends, ``text``, ``stop_reason``,
    ``stats`` (token counts from the server's usage) and
    ``cancel_acknowledged`` describe it, as :class:`adil.Generation`'s do.
    A cancelled or closed stream just ends (``cancelled``); a deadline raises
    DeadlineError after the pieces before it."""

    def __init__(self, stream: EventStream) -> None:
        super().__init__(stream)
        self._parts: list[str] = []
        self._finish_reason: str | None = None
        self._stop_string = False
        self.stop_reason: StopReason = "running"
        self.stats = Stats()

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def tokens(self) -> tuple[int, ...]:
        """Always empty: OpenAI's stream has no token ids."""
        return ()

    @property
    def value(self) -> Any:
        return None

    def __iter__(self) -> OpenAIGeneration:
        return self

    def __next__(self) -> Piece:
        while True:
            choice = self._next_choice()
            if choice is None:
                raise StopIteration
            if choice.get("finish_reason") is not None:
                self._finish_reason = str(choice["finish_reason"])
                # vLLM names the stop string that ended it; llama.cpp says stopping_word
                self._stop_string = bool(choice.get("stop_reason")
                                         if isinstance(choice.get("stop_reason"), str)
                                         else choice.get("stopping_word"))
            text = choice.get("text")
            if isinstance(text, str) and text:
                self._parts.append(text)
                return Piece(text, ())

    def _finish(self, cancelled: bool, failed: BaseException | None) -> None:
        from ..errors import DeadlineError

        if cancelled:
            self.stop_reason = "cancelled"
        elif failed is not None:
            self.stop_reason = "deadline" if isinstance(failed, DeadlineError) else "error"
        elif self._finish_reason == "length":
            self.stop_reason = "max_tokens"
        else:
            self.stop_reason = "stop_sequence" if self._stop_string else "end_of_text"
        generated = self._chunks.completion_tokens
        self.stats = Stats(n_prompt_tokens=self._chunks.prompt_tokens,
                           n_generated=generated if generated is not None else 0)

    def __enter__(self) -> OpenAIGeneration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def completion(self) -> Completion:
        """Reads the rest and returns the finished :class:`adil.Completion`."""
        for _ in self:
            pass
        return Completion(self.text, (), self.stop_reason, self.stats, self.cancel_acknowledged)


@dataclass
class _PendingCall:
    id: str = ""
    name: str = ""
    arguments: str = ""


class OpenAIChatStream(_Reader, Iterator["ChatChunk"]):
    """The content chunks (:class:`adil.ChatChunk`) of one streamed
    ``/v1/chat/completions`` answer; ``response`` (an
    :class:`adil.ChatResponse`) once it ended.  Tool calls are gathered
    from their deltas and are in the response, never in the chunks."""

    def __init__(self, stream: EventStream, output: Any = None) -> None:
        super().__init__(stream)
        self._output = output
        self._parts: list[str] = []
        self._calls: dict[int, _PendingCall] = {}
        self._finish_reason: str | None = None
        self._response: ChatResponse | None = None
        self._failed: BaseException | None = None

    def __iter__(self) -> OpenAIChatStream:
        return self

    def __next__(self) -> ChatChunk:
        from ..chat_api import ChatChunk

        while True:
            choice = self._next_choice()
            if choice is None:
                raise StopIteration
            if choice.get("finish_reason") is not None:
                self._finish_reason = str(choice["finish_reason"])
            delta = choice.get("delta")
            if not isinstance(delta, dict):
                continue
            self._gather(delta.get("tool_calls"))
            text = delta.get("content")
            if isinstance(text, str) and text:
                self._parts.append(text)
                return ChatChunk(text)

    def _gather(self, calls: Any) -> None:
        """Merges tool call deltas by index (id and name once, arguments in parts)."""
        for position, delta in enumerate(calls if isinstance(calls, list) else []):
            if not isinstance(delta, dict):
                continue
            index = delta.get("index", position)
            pending = self._calls.setdefault(int(index), _PendingCall())
            pending.id = str(delta.get("id") or pending.id)
            function = delta.get("function")
            if isinstance(function, dict):
                pending.name = str(function.get("name") or pending.name)
                arguments = function.get("arguments")
                if isinstance(arguments, str):
                    pending.arguments += arguments
                elif isinstance(arguments, dict):
                    pending.arguments = json.dumps(arguments)

    @property
    def response(self) -> ChatResponse:
        """The finished answer; InvalidArgumentError while it still streams
        or when it failed."""
        if self._response is None:
            raise InvalidArgumentError("the answer is not finished: read the stream to its end"
                                       if self.running else "the answer failed")
        return self._response

    def _finish(self, cancelled: bool, failed: BaseException | None) -> None:
        from ..chat_api import ChatResponse
        from ..messages import ChatMessage, Usage

        if failed is not None:
            self._failed = failed
            return
        calls = tuple(self._tool_call(i, c) for i, c in sorted(self._calls.items()))
        text = "".join(self._parts)
        reason = self._finish_reason
        finish: Any = ("cancelled" if cancelled else "tool_calls" if calls
                       else "length" if reason == "length" else "stop")
        message = ChatMessage(role="assistant", content=text if text or not calls else None,
                              tool_calls=calls)
        generated = self._chunks.completion_tokens
        usage = Usage(self._chunks.prompt_tokens, generated if generated is not None else 0)
        value = None
        if self._output is not None and finish == "stop":
            value = self._output.read(text)
        self._response = ChatResponse(
            message, finish, usage,
            Stats(n_prompt_tokens=usage.prompt_tokens, n_generated=usage.completion_tokens),
            value)

    def _tool_call(self, index: int, call: _PendingCall) -> ChatToolCall:
        from ..messages import ChatToolCall

        try:
            arguments = json.loads(call.arguments or "{}")
        except ValueError as exc:
            raise OutputValidationError(
                f"tool call {index} ({call.name}): its arguments are not JSON: {exc}",
                text=call.arguments, request_id=self.request_id) from exc
        if not isinstance(arguments, dict):
            raise OutputValidationError(
                f"tool call {index} ({call.name}): its arguments are not a JSON object",
                text=call.arguments, request_id=self.request_id)
        return ChatToolCall(call.id or f"call_{index}", call.name, arguments)

    def __enter__(self) -> OpenAIChatStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

