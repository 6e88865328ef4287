"""OpenAI-compatible routes of ``adil serve``: ``GET /v1/models``,
``POST /v1/completions`` and ``POST /v1/chat/completions``.

The official ``openai`` client, curl and tools written for OpenAI's API
work against them unchanged::

    client = openai.OpenAI(base_url="http://127.0.0.1:8765/v1", api_key="-")
    client.chat.completions.create(model="smollm2-135m-instruct", messages=[...])

Chat requests become one :func:`adil.chat_api.chat` call (``messages``,
``tools``/``tool_choice``, ``response_format`` as ``schema=``, sampling,
``stop``, ``max_tokens``/``max_completion_tokens``, ``logprobs`` with
``top_logprobs``); completions one ``model.generate`` call.  The answers
have OpenAI's shapes (``chat.completion``, ``chat.completion.chunk``,
``text_completion``); ``stream: true`` sends them as server-sent events,
``data: {chunk}`` ... ``data: [DONE]``.  The content streams as it is
generated; tool calls come whole (one ``delta.tool_calls`` entry each, with
its index) in a chunk before the one with the finish reason; with
``logprobs`` every token's come with the finish reason.  The first step
(the prefill) runs before the response's head is sent, so its errors
(context length, capability...) get their own status; an error after that
is sent as ``data: {"error": {...}}`` and ends the stream (the client
raises it).  ``response_format`` and forced tool calls (``tool_choice``
``required`` or a name) need an engine with the ``grammar`` capability
(501 otherwise).

What differs from OpenAI, by design: one choice per request (``n`` other
than 1, several prompts, ``best_of`` > 1 -> 501 ``unsupported_capability``);
no penalties other than ``repeat_penalty`` (``frequency_penalty`` and
``presence_penalty`` other than 0, ``logit_bias`` -> 501); ``model`` must
be absent or name the served model (400 otherwise); an unknown request
field is refused (400 naming it); omitted sampling fields take the SDK's
defaults (:data:`adil.sampling.DEFAULT_SAMPLING`), and llama.cpp's
``top_k``, ``min_p`` and ``repeat_penalty`` are accepted as extensions; a
token's logprob that the engine did not compute (a token the grammar
forced) is ``null``; a completion's ``max_tokens`` defaults to 16, as
OpenAI's does.

The request readers (:func:`chat_request`, :func:`completion_request`) and
the answer builders are pure functions of JSON values, tested without a
server; the handlers at the end run them around the model in a worker
thread and hold the model's run slot.  A client that goes away cancels its
run (prefill included) and nothing more is sent.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ..errors import AdilError, CapabilityError, InvalidArgumentError
from .app import (
    PING,
    PING_INTERVAL,
    Request,
    Response,
    Router,
    RunPump,
    StreamingResponse,
    sse_event,
)
from .errors_http import error_body

if TYPE_CHECKING:
    from ..chat_api import ChatResponse, ChatStream
    from ..generation import Generation, TokenLogprob
    from ..messages import Usage

__all__ = [
    "ChatCall",
    "ChatChunks",
    "CompletionCall",
    "chat_json",
    "chat_request",
    "completion_chunk",
    "completion_json",
    "completion_request",
    "models_json",
    "routes",
]

DONE = sse_event("[DONE]")
R = TypeVar("R", bound=Iterator[Any])
COMPLETION_DEFAULT_MAX_TOKENS = 16  # OpenAI's default for /v1/completions

# llama.cpp's server accepts these sampling fields as extensions; so do we.
_SAMPLING_EXTENSIONS = ("top_k", "min_p", "repeat_penalty")
# Fields accepted and ignored: they change nothing in a local run.
_IGNORED = frozenset({"user", "metadata", "store", "service_tier", "parallel_tool_calls",
                      "prompt_cache_key", "safety_identifier", "reasoning_effort",
                      "verbosity"})
# Fields that ask for something this service does not do: 501 when set.
_UNSUPPORTED_CHAT = ("audio", "functions", "function_call", "prediction", "web_search_options")
_CHAT_FIELDS = frozenset({
    "messages", "model", "stream", "stream_options", "n", "temperature", "top_p", "seed",
    "max_tokens", "max_completion_tokens", "stop", "logprobs", "top_logprobs",
    "response_format", "tools", "tool_choice", "frequency_penalty", "presence_penalty",
    "logit_bias", "modalities", *_SAMPLING_EXTENSIONS, *_IGNORED, *_UNSUPPORTED_CHAT})
_COMPLETION_FIELDS = frozenset({
    "prompt", "model", "stream", "stream_options", "n", "best_of", "temperature", "top_p",
    "seed", "max_tokens", "stop", "logprobs", "echo", "suffix", "frequency_penalty",
    "presence_penalty", "logit_bias", "user", *_SAMPLING_EXTENSIONS})
# Keys of messages that the openai client's objects carry (model_dump) and
# that mean nothing here when empty.
_EMPTY_MESSAGE_KEYS = ("refusal", "audio", "function_call", "annotations")


# ---------------------------------------------------------------------------
# Reading requests: JSON -> keywords, 400 naming the field
# ---------------------------------------------------------------------------

@dataclass(frozen=True)
class ChatCall:
    """A checked chat request: ``kwargs`` for ``model.chat`` (without
    ``stream``), and how to answer."""

    kwargs: dict[str, Any]
    model: str | None = None
    stream: bool = False
    include_usage: bool = False  # stream_options.include_usage: a last chunk with usage
    logprobs: bool = False

    @property
    def forced(self) -> bool:
        """tool_choice forces a call: the whole answer is the call, sent as
        tool_calls (a ChatStream yields no content chunk for it, so the
        stream's head goes out once the call is complete)."""
        choice = self.kwargs.get("tool_choice", "auto")
        return bool(self.kwargs.get("tools")) and choice not in ("auto", "none")


@dataclass(frozen=True)
class CompletionCall:
    """A checked completion request: ``prompt`` and ``kwargs`` for
    ``model.generate``, and how to answer."""

    prompt: str | list[int]
    kwargs: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    stream: bool = False
    include_usage: bool = False
    echo: bool = False
    logprobs: int | None = None


def chat_request(body: Any) -> ChatCall:
    """The ``model.chat`` keywords of a ``/v1/chat/completions`` body.

    InvalidArgumentError (400) names the field at fault; CapabilityError
    (501) for what this service does not do (``n`` > 1, audio, penalties).
    The messages themselves are checked by ``model.chat`` (its errors name
    ``messages[i].field``)."""
    body = _object(body, _CHAT_FIELDS)
    for name in _UNSUPPORTED_CHAT:
        if body.get(name) is not None:
            raise CapabilityError(f"{name} is not supported by this service")
    modalities = body.get("modalities")
    if modalities is not None and modalities != ["text"]:
        raise CapabilityError(f"modalities: only ['text'] is supported, got {modalities!r}")
    if "messages" not in body:
        raise InvalidArgumentError("messages is missing: give the conversation as a list")
    kwargs: dict[str, Any] = {"messages": _messages(body["messages"])}
    kwargs.update(_common(body))
    max_tokens = _int(body, "max_completion_tokens", low=1)
    if max_tokens is None:
        max_tokens = _int(body, "max_tokens", low=1)
    if max_tokens is not None:
        kwargs["max_tokens"] = max_tokens
    want_logprobs = _bool(body, "logprobs") or False
    top = _int(body, "top_logprobs", low=0, high=20)
    if top is not None and not want_logprobs:
        raise InvalidArgumentError("top_logprobs needs logprobs: true")
    if want_logprobs:
        kwargs["logprobs"] = top or 0
    schema = _response_format(body.get("response_format"))
    if schema is not None:
        kwargs["schema"] = schema
    tools = body.get("tools")
    if tools is not None:
        if not isinstance(tools, list):
            raise InvalidArgumentError(f"tools must be a list of tools, got {_kind(tools)}")
        kwargs["tools"] = tools
    choice = body.get("tool_choice")
    if choice is not None:
        if not isinstance(choice, str | dict):
            raise InvalidArgumentError(
                f"tool_choice must be 'auto', 'none', 'required' or "
                f'{{"type": "function", "function": {{"name": ...}}}}, got {_kind(choice)}')
        kwargs["tool_choice"] = choice
    return ChatCall(kwargs, _model_field(body), bool(_bool(body, "stream")),
                    _include_usage(body), want_logprobs)


def completion_request(body: Any) -> CompletionCall:
    """The ``model.generate`` prompt and keywords of a ``/v1/completions``
    body (errors as :func:`chat_request`)."""
    body = _object(body, _COMPLETION_FIELDS)
    best_of = _int(body, "best_of", low=1)
    if best_of is not None and best_of != 1:
        raise CapabilityError(f"best_of={best_of}: this service makes one completion per request")
    suffix = body.get("suffix")
    if suffix is not None and suffix != "":
        raise CapabilityError("suffix (insertion) is not supported by this service")
    if "prompt" not in body:
        raise InvalidArgumentError("prompt is missing: give a string or a list of token ids")
    prompt = _prompt(body["prompt"])
    kwargs = _common(body)
    max_tokens = _int(body, "max_tokens", low=1)
    kwargs["max_tokens"] = max_tokens if max_tokens is not None else COMPLETION_DEFAULT_MAX_TOKENS
    logprobs = _int(body, "logprobs", low=0, high=20)
    if logprobs is not None:
        kwargs["logprobs"] = logprobs
    echo = bool(_bool(body, "echo"))
    if echo and logprobs is not None:
        raise CapabilityError("echo with logprobs (the prompt's logprobs) is not supported")
    return CompletionCall(prompt, kwargs, _model_field(body), bool(_bool(body, "stream")),
                          _include_usage(body), echo, logprobs)


def _object(body: Any, known: frozenset[str]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidArgumentError(f"the request body must be a JSON object, got {_kind(body)}")
    unknown = sorted(set(body) - known)
    if unknown:
        raise InvalidArgumentError(f"unknown field {unknown[0]!r} in the request")
    return body


def _common(body: Mapping[str, Any]) -> dict[str, Any]:
    """The fields chat and completions share: n, penalties, sampling, stop."""
    n = _int(body, "n", low=1)
    if n is not None and n != 1:
        raise CapabilityError(f"n={n}: this service makes one choice per request")
    for name in ("frequency_penalty", "presence_penalty"):
        if _number(body, name) not in (None, 0):
            raise CapabilityError(
                f"{name} is not supported (only 0); repeat_penalty is this service's penalty")
    bias = body.get("logit_bias")
    if bias is not None and not isinstance(bias, dict):
        raise InvalidArgumentError(f"logit_bias must be an object, got {_kind(bias)}")
    if bias:
        raise CapabilityError("logit_bias is not supported by this service")
    out: dict[str, Any] = {}
    for name in ("temperature", "top_p", "min_p", "repeat_penalty"):
        value = _number(body, name)
        if value is not None:
            out[name] = value
    top_k = _int(body, "top_k", low=0)
    if top_k is not None:
        out["top_k"] = top_k
    seed = _int(body, "seed")
    if seed is not None:
        out["seed"] = seed % 2**64  # OpenAI's seeds may be negative; ours are unsigned
    stop = _stop(body.get("stop"))
    if stop:
        out["stop"] = stop
    return out


def _messages(messages: Any) -> list[Any]:
    """OpenAI's message forms that ``model.chat`` does not take, made plain:
    content as a list of text parts joined, the ``developer`` role as
    ``system``, empty fields of the openai client's message objects dropped.
    Anything else goes to ``model.chat`` as is, to be checked there."""
    if not isinstance(messages, list):
        raise InvalidArgumentError(f"messages must be a list of messages, got {_kind(messages)}")
    return [_message(i, m) if isinstance(m, dict) else m for i, m in enumerate(messages)]


def _message(index: int, message: dict[str, Any]) -> dict[str, Any]:
    out = dict(message)
    for key in _EMPTY_MESSAGE_KEYS:
        if key in out and not out[key]:
            del out[key]
    if out.get("role") == "developer":
        out["role"] = "system"
    if isinstance(out.get("content"), list):
        out["content"] = _text_parts(f"messages[{index}].content", out["content"])
    calls = out.get("tool_calls")
    if isinstance(calls, list):  # a streamed call's "index" is no part of a message
        out["tool_calls"] = [{k: v for k, v in c.items() if k != "index"}
                             if isinstance(c, dict) else c for c in calls]
    return out


def _text_parts(where: str, parts: list[Any]) -> str:
    """Content given as parts: their texts joined (a refusal part's text
    too); a media part is 501, anything else 400."""
    texts: list[str] = []
    for i, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("image_url", "input_audio", "file", "input_image"):
            raise CapabilityError(f"{where}[{i}]: {kind} parts are not supported (text only)")
        text = part.get(kind) if kind in ("text", "refusal") else None
        if not isinstance(text, str):
            raise InvalidArgumentError(
                f'{where}[{i}] must be {{"type": "text", "text": str}}, got {_kind(part)}')
        texts.append(text)
    return "".join(texts)


def _response_format(value: Any) -> Any:
    """The schema of ``response_format``, or None for plain text."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise InvalidArgumentError(f"response_format must be an object, got {_kind(value)}")
    kind = value.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return {"type": "object"}
    if kind != "json_schema":
        raise InvalidArgumentError(
            f"response_format.type must be 'text', 'json_object' or 'json_schema', got {kind!r}")
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise InvalidArgumentError(
            'response_format.json_schema must be an object {"name", "schema"}, got '
            f"{_kind(spec)}")
    schema = spec.get("schema", {"type": "object"})
    if not isinstance(schema, dict):
        raise InvalidArgumentError(
            f"response_format.json_schema.schema must be a JSON Schema object, got {_kind(schema)}")
    return schema


def _prompt(prompt: Any) -> str | list[int]:
    """A string or a list of token ids; a list of one of those is taken as
    that one (several prompts: 501)."""
    if isinstance(prompt, list) and prompt and all(isinstance(p, str | list) for p in prompt):
        if len(prompt) != 1:
            raise CapabilityError(
                f"prompt has {len(prompt)} prompts: this service completes one per request")
        prompt = prompt[0]
    if isinstance(prompt, str):
        return prompt
    if isinstance(prompt, list) and prompt and all(
            isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return prompt
    raise InvalidArgumentError(
        f"prompt must be a string or a non-empty list of token ids, got {_kind(prompt)}")


def _stop(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value] if value else []
    if isinstance(value, list) and all(isinstance(s, str) for s in value):
        return [s for s in value if s]
    raise InvalidArgumentError(f"stop must be a string or a list of strings, got {_kind(value)}")


def _model_field(body: Mapping[str, Any]) -> str | None:
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise InvalidArgumentError(f"model must be a string, got {_kind(model)}")
    return model or None


def _include_usage(body: Mapping[str, Any]) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise InvalidArgumentError(f"stream_options must be an object, got {_kind(options)}")
    value = options.get("include_usage")
    if value is not None and not isinstance(value, bool):
        raise InvalidArgumentError(
            f"stream_options.include_usage must be a boolean, got {_kind(value)}")
    return bool(value)


def _number(body: Mapping[str, Any], name: str) -> float | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidArgumentError(f"{name} must be a number, got {_kind(value)}")
    return float(value)


def _int(body: Mapping[str, Any], name: str, *, low: int | None = None,
         high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {_kind(value)}")
    if (low is not None and value < low) or (high is not None and value > high):
        bounds = f">= {low}" if high is None else f"in {low}..{high}"
        raise InvalidArgumentError(f"{name} must be {bounds}, got {value}")
    return value


def _bool(body: Mapping[str, Any], name: str) -> bool | None:
    value = body.get(name)
    if value is not None and not isinstance(value, bool):
        raise InvalidArgumentError(f"{name} must be true or false, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def check_model(asked: str | None, served: str) -> None:
    """400 when the request names a model that this service does not serve."""
    if asked is not None and asked != served:
        raise InvalidArgumentError(
            f"model {asked!r} is not served here; this service serves {served!r}")


# ---------------------------------------------------------------------------
# Answers: ChatResponse / generation -> OpenAI JSON
# ---------------------------------------------------------------------------

def new_id(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(12)}"


def models_json(name: str) -> dict[str, Any]:
    """``GET /v1/models``: the one model served."""
    return {"object": "list",
            "data": [{"id": name, "object": "model", "created": 0, "owned_by": "adil"}]}


def usage_json(usage: Usage) -> dict[str, int]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens}


def finish_reason(reason: str) -> str:
    """OpenAI's finish_reason for ours: a cancelled run (its client gone,
    so nobody reads it) reads as ``stop``."""
    return "stop" if reason == "cancelled" else reason


def chat_logprobs_json(logprobs: Sequence[TokenLogprob] | None) -> dict[str, Any] | None:
    """``choices[].logprobs`` of a chat answer: ``{"content": [{"token",
    "logprob", "bytes", "top_logprobs": [...]}], "refusal": null}``."""
    if logprobs is None:
        return None
    return {"content": [_token_logprob(lp) for lp in logprobs], "refusal": None}


def _token_logprob(lp: TokenLogprob) -> dict[str, Any]:
    return {"token": lp.text, "logprob": lp.logprob, "bytes": list(lp.text.encode("utf-8")),
            "top_logprobs": [{"token": text, "logprob": value,
                              "bytes": list(text.encode("utf-8"))}
                             for _, text, value in lp.top]}


def message_json(response: ChatResponse) -> dict[str, Any]:
    """The assistant message: ``tool_calls`` (arguments as JSON text) only
    when there are calls, as OpenAI writes it."""
    out: dict[str, Any] = {"role": "assistant", "content": response.message.content,
                           "refusal": None}
    if response.tool_calls:
        out["tool_calls"] = [call.to_dict() for call in response.tool_calls]
    return out


def chat_json(response: ChatResponse, *, ident: str, created: int, model: str,
              logprobs: bool = False) -> dict[str, Any]:
    """A ``chat.completion`` object."""
    return {
        "id": ident, "object": "chat.completion", "created": created, "model": model,
        "choices": [{"index": 0, "message": message_json(response),
                     "logprobs": chat_logprobs_json(response.logprobs) if logprobs else None,
                     "finish_reason": finish_reason(response.finish_reason)}],
        "usage": usage_json(response.usage),
    }


@dataclass(frozen=True)
class ChatChunks:
    """The ``chat.completion.chunk`` objects of one streamed answer (same
    id, created and model in each)."""

    ident: str
    created: int
    model: str

    def chunk(self, delta: dict[str, Any], finish: str | None = None,
              logprobs: dict[str, Any] | None = None) -> dict[str, Any]:
        return {"id": self.ident, "object": "chat.completion.chunk", "created": self.created,
                "model": self.model,
                "choices": [{"index": 0, "delta": delta, "logprobs": logprobs,
                             "finish_reason": finish}]}

    def start(self) -> dict[str, Any]:
        """The first chunk: the role, and empty content (as OpenAI sends)."""
        return self.chunk({"role": "assistant", "content": ""})

    def content(self, text: str) -> dict[str, Any]:
        return self.chunk({"content": text})

    def end(self, response: ChatResponse, *, logprobs: bool = False,
            include_usage: bool = False) -> list[dict[str, Any]]:
        """The last chunks: the tool calls (each whole, with its index), the
        finish reason (and with ``logprobs``, every token's), then with
        ``include_usage`` a chunk of no choices and the usage."""
        out: list[dict[str, Any]] = []
        if response.tool_calls:
            calls = [{"index": i, **call.to_dict()} for i, call in enumerate(response.tool_calls)]
            out.append(self.chunk({"tool_calls": calls}))
        out.append(self.chunk({}, finish_reason(response.finish_reason),
                              chat_logprobs_json(response.logprobs) if logprobs else None))
        if include_usage:
            out.append({"id": self.ident, "object": "chat.completion.chunk",
                        "created": self.created, "model": self.model, "choices": [],
                        "usage": usage_json(response.usage)})
        return out


def completion_logprobs_json(logprobs: Sequence[TokenLogprob] | None,
                             offset: int = 0) -> dict[str, Any] | None:
    """A completion's ``logprobs``: ``tokens``, ``token_logprobs``,
    ``top_logprobs`` (text -> logprob per token) and ``text_offset`` (each
    token's character offset, counted from `offset`)."""
    if logprobs is None:
        return None
    offsets: list[int] = []
    for lp in logprobs:
        offsets.append(offset)
        offset += len(lp.text)
    return {"tokens": [lp.text for lp in logprobs],
            "token_logprobs": [lp.logprob for lp in logprobs],
            "top_logprobs": [{text: value for _, text, value in lp.top} for lp in logprobs],
            "text_offset": offsets}


def completion_finish_reason(stop_reason: str) -> str:
    return "length" if stop_reason == "max_tokens" else "stop"


def completion_json(*, text: str, stop_reason: str, usage: dict[str, int],
                    ident: str, created: int, model: str,
                    logprobs: Sequence[TokenLogprob] | None = None,
                    offset: int = 0) -> dict[str, Any]:
    """A ``text_completion`` object."""
    return {
        "id": ident, "object": "text_completion", "created": created, "model": model,
        "choices": [{"text": text, "index": 0,
                     "logprobs": completion_logprobs_json(logprobs, offset),
                     "finish_reason": completion_finish_reason(stop_reason)}],
        "usage": usage,
    }


def completion_chunk(text: str, *, ident: str, created: int, model: str,
                     finish: str | None = None, logprobs: dict[str, Any] | None = None
                     ) -> dict[str, Any]:
    """One streamed ``text_completion`` chunk."""
    return {"id": ident, "object": "text_completion", "created": created, "model": model,
            "choices": [{"text": text, "index": 0, "logprobs": logprobs,
                         "finish_reason": finish}]}


# ---------------------------------------------------------------------------
# Handlers
# ---------------------------------------------------------------------------

routes = Router()


async def list_models(request: Request) -> Response:
    return Response.json(models_json(request.service.model_name))


async def chat_completions(request: Request) -> Response | StreamingResponse:
    call = chat_request(request.json())
    served = request.service.model_name
    check_model(call.model, served)
    model = request.model
    request.take_slot()
    ident, created = new_id("chatcmpl"), int(time.time())
    token = model.cancel_token()
    # Always a ChatStream (also for a whole answer): its steps run one at a
    # time in the worker, so a client gone cancels before the next token.
    run: _Run[ChatStream] = _Run(
        request, lambda: model.chat(**call.kwargs, stream=True, cancel=token),
        cancel=token.cancel, close=lambda stream: stream.close(), outcome=_chat_outcome)
    stream = await run.start()
    first = await run.first()  # before the headers: a prefill error gets its own status
    if not call.stream:
        async with run:
            while first is not None:
                first = await run.next()
        return Response.json(chat_json(stream.response, ident=ident, created=created,
                                       model=served, logprobs=call.logprobs))
    chunks = ChatChunks(ident, created, served)

    async def body() -> AsyncIterator[bytes]:
        head = sse_event(chunks.start())
        async for item in run.items(first):
            if item is PING:
                yield item
            elif not call.forced:
                yield head + sse_event(chunks.content(item.text))
                head = b""
        await run.aclose()  # the slot is free before [DONE]: the client's next request runs
        yield head + b"".join(sse_event(chunk) for chunk in chunks.end(
            stream.response, logprobs=call.logprobs, include_usage=call.include_usage)) + DONE

    return _streaming(body(), request, run)


def _chat_outcome(stream: ChatStream) -> dict[str, Any]:
    try:
        response = stream.response
    except InvalidArgumentError:  # the run failed before its answer was read
        return {"stop_reason": "error", "cancel_acknowledged": False}
    return {"stop_reason": response.finish_reason,
            "cancel_acknowledged": response.finish_reason == "cancelled",
            "n_tokens": response.usage.completion_tokens}


async def completions(request: Request) -> Response | StreamingResponse:
    call = completion_request(request.json())
    served = request.service.model_name
    check_model(call.model, served)
    model = request.model
    request.take_slot()
    ident, created = new_id("cmpl"), int(time.time())
    token = model.cancel_token()
    prompt, echo = call.prompt, ""
    if call.echo:  # before the run: from its start to its close, nothing else awaits
        echo = prompt if isinstance(prompt, str) else await request.call(
            lambda: model.detokenize(prompt))
    run: _Run[Generation] = _Run(
        request, lambda: model.generate(prompt, cancel=token, **call.kwargs),
        cancel=token.cancel, close=lambda generation: generation.close(),
        outcome=lambda generation: {"stop_reason": generation.stop_reason,
                                    "cancel_acknowledged": generation.cancel_acknowledged,
                                    "n_tokens": len(generation.tokens)})
    generation = await run.start()
    first = await run.first()

    def usage() -> dict[str, int]:
        n_prompt, n_generated = generation.stats.n_prompt_tokens, len(generation.tokens)
        return {"prompt_tokens": n_prompt, "completion_tokens": n_generated,
                "total_tokens": n_prompt + n_generated}

    if not call.stream:
        async with run:
            while first is not None:
                first = await run.next()
        return Response.json(completion_json(
            text=echo + generation.text, stop_reason=generation.stop_reason, usage=usage(),
            ident=ident, created=created, model=served, logprobs=generation.logprobs,
            offset=len(echo)))

    def chunk(text: str, **kw: Any) -> bytes:
        return sse_event(completion_chunk(text, ident=ident, created=created, model=served, **kw))

    async def body() -> AsyncIterator[bytes]:
        head = chunk(echo) if echo else b""
        offset = len(echo)
        async for item in run.items(first):
            if item is PING:
                yield item
                continue
            lps = completion_logprobs_json(item.logprobs, offset)
            offset += len(item.text)
            yield head + chunk(item.text, logprobs=lps)
            head = b""
        await run.aclose()  # the slot is free before [DONE]: the client's next request runs
        tail = head + chunk("", finish=completion_finish_reason(generation.stop_reason))
        if call.include_usage:
            tail += sse_event({"id": ident, "object": "text_completion", "created": created,
                               "model": served, "choices": [], "usage": usage()})
        yield tail + DONE

    return _streaming(body(), request, run)


def _streaming(body: AsyncIterator[bytes], request: Request, run: _Run[Any]
               ) -> StreamingResponse:
    """The response of a streamed run: self-paced (the run's pump stops it
    when the client goes away; the body sends its own pings), its first
    chunk at hand (the first item was taken before the head) so it goes out
    with the head."""
    return StreamingResponse(_errors_as_events(body, request), on_close=run.aclose, ping=None,
                             self_paced=True, ready=_at_hand)


async def _at_hand() -> bool:
    return True


async def _errors_as_events(body: AsyncIterator[bytes], request: Request
                            ) -> AsyncIterator[bytes]:
    """`body`, and an error raised after the stream started as one last
    ``data: {"error": {...}}`` event (the openai client raises it)."""
    try:
        async for chunk in body:
            yield chunk
    except AdilError as exc:
        yield sse_event(error_body(exc, request.request_id, openai=True))


class _Run(Generic[R]):
    """One engine run of a request, started and stepped by one worker
    thread (:class:`~adil.service.app.RunPump`: a ChatStream's chunks or a
    Generation's pieces handed to the loop as they come, no worker round
    trip per token); a client gone meanwhile cancels it.  ``aclose()``
    (idempotent; a StreamingResponse's ``on_close``, or leaving ``async
    with``) cancels the run if still going, waits until the worker closed
    it (the engine has stopped), and reports the outcome to the service."""

    def __init__(self, request: Request, start: Callable[[], R], *, cancel: Callable[[], None],
                 close: Callable[[R], None], outcome: Callable[[R], dict[str, Any]]) -> None:
        self._request = request
        self._pump: RunPump[R] = RunPump(request, start, cancel=cancel,
                                         close=lambda run: _quietly(lambda: close(run)))
        self._outcome = outcome
        self._run: R | None = None
        self._closed = False

    async def start(self) -> R:
        """What `start` returned (in the worker); raises what it raised."""
        try:
            self._run = await self._pump.started()
        except BaseException:
            self._closed = True
            await self._pump.aclose()
            raise
        self._request.service.run_started(self._request)
        return self._run

    async def next(self) -> Any:
        """The next item, None at the end."""
        return await self._pump.next()

    async def first(self) -> Any:
        """The first item; on an error the run is closed before it is raised."""
        try:
            return await self.next()
        except BaseException:
            await self.aclose()
            raise

    async def items(self, first: Any) -> AsyncIterator[Any]:
        """`first`, then the run's other items; :data:`PING` after every
        silence of the ping interval (the run goes on)."""
        item = first
        while item is not None:
            yield PING if item is RunPump.IDLE else item
            item = await self._pump.next(idle=PING_INTERVAL)

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            await self._pump.aclose()
        finally:
            assert self._run is not None
            self._request.service.run_finished(self._request, self._outcome(self._run))

    async def __aenter__(self) -> _Run[R]:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _quietly(close: Callable[[], None]) -> None:
    """`close`, whose own error is not the one to report: the run already
    ended, failed or was cancelled (a ChatStream closed inside a tool call
    reads its answer and may refuse it)."""
    try:
        close()
    except AdilError:
        pass


routes.add("GET", "/v1/models", list_models)
routes.add("POST", "/v1/chat/completions", chat_completions)
routes.add("POST", "/v1/completions", completions)
