"""The model behind an ``adil serve`` service, with an in-process model's
interface: :class:`RemoteModel` fits the agent's ``ModelLike`` protocol
(:mod:`adil.agent.protocol`), so ``adil.Agent(client.model(), tools=[...])``
runs unchanged — tools, confirmations and display stay in this process; only
rendering, tokenizing and generating go over HTTP.

``generate`` streams over server-sent events (``/adil/v1/generate`` with
``stream: true``) and returns a :class:`RemoteGeneration`, an iterator of
:class:`adil.Piece` like :class:`adil.Generation`.  Cancelling its token
(:meth:`RemoteModel.cancel_token`), ``cancel()``, ``close()`` or the total
deadline closes the HTTP stream, and the server cancels exactly that run.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import numpy.typing as npt

from ..engine import ModelInfo
from ..errors import (
    CapabilityError,
    InvalidArgumentError,
    ServiceConnectionError,
)
from ..generation import Completion, Piece, Stats, StopReason, TokenLogprob
from ..sampling import Sampling, resolve_sampling
from ..timeouts import Deadline, Timeout, as_timeout
from .transport import EventStream, Stopped, Transport, error_from_body

if TYPE_CHECKING:
    from ..chat_api import ChatResponse, ChatStream
    from ..constraints import Constraint
    from ..structured import OutputSchema
    from ..tools import Tool

__all__ = ["RemoteCancelToken", "RemoteGeneration", "RemoteModel"]

GENERATE = "/adil/v1/generate"
_STOP_REASONS: frozenset[str] = frozenset(
    {"end_of_text", "max_tokens", "stop_sequence", "cancelled", "deadline", "error"})


class RemoteCancelToken:
    """A cancel flag of this process (``cancel()`` from any thread); a
    stream started with it closes as soon as it is set, which cancels the
    run on the server."""

    def __init__(self) -> None:
        self._set = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    def cancel(self) -> None:
        with self._lock:
            self._set.set()
            callbacks = list(self._callbacks)
        for callback in callbacks:
            callback()

    def cancelled(self) -> bool:
        return self._set.is_set()

    def add_callback(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Calls `callback` once cancelled (at once when it already is);
        returns a function that unregisters it."""
        with self._lock:
            self._callbacks.append(callback)
            already = self._set.is_set()
        if already:
            callback()

        def remove() -> None:
            with self._lock:
                if callback in self._callbacks:
                    self._callbacks.remove(callback)

        return remove


class RemoteModel:
    """A model served by ``adil serve`` (see the module docstring).  Made by
    :meth:`adil.Client.model`."""

    def __init__(self, transport: Transport) -> None:
        self._transport = transport
        self._info: ModelInfo | None = None
        self._capabilities: tuple[str, ...] | None = None

    # -- what the model is ------------------------------------------------
    @property
    def info(self) -> ModelInfo:
        """The model's :class:`adil.ModelInfo` (asked once, then kept)."""
        if self._info is None:
            body = self._transport.request("GET", "/adil/v1/info")
            fields = {f.name for f in dataclasses.fields(ModelInfo)}
            raw = body.get("model", {}) if isinstance(body, dict) else {}
            self._info = ModelInfo(**{k: v for k, v in raw.items() if k in fields})
        return self._info

    @property
    def capabilities(self) -> tuple[str, ...]:
        """The engine's optional features as ``/health`` reports them
        (asked until the engine is open, then kept)."""
        if self._capabilities is None:
            health = self._transport.request("GET", "/health")
            components = health.get("components") if isinstance(health, dict) else None
            if not isinstance(components, dict):
                return ()
            self._capabilities = tuple(str(c) for c in components.get("capabilities") or ())
        return self._capabilities

    @property
    def n_vocab(self) -> int:
        return self.info.n_vocab

    def ready(self) -> bool:
        """True when the service's model can serve a generation now."""
        health = self._transport.request("GET", "/health")
        return isinstance(health, dict) and health.get("status") == "ready"

    def cancel_token(self) -> RemoteCancelToken:
        """A new cancel flag for :meth:`generate`'s ``cancel=``."""
        return RemoteCancelToken()

    # -- tokens -------------------------------------------------------------
    def tokenize(self, text: str | bytes, *, add_bos: bool | None = None, special: bool = True,
                 timeout: Timeout | float | None = None) -> npt.NDArray[np.int32]:
        body = self._transport.request(
            "POST", "/adil/v1/tokenize",
            {"text": _text("text", text), "add_bos": add_bos, "special": special},
            timeout=as_timeout(timeout))
        return np.asarray(body["tokens"], dtype=np.int32)

    def detokenize(self, ids: Sequence[int] | npt.NDArray[np.int32], *, special: bool = False,
                   timeout: Timeout | float | None = None) -> str:
        body = self._transport.request(
            "POST", "/adil/v1/detokenize", {"tokens": _ids(ids), "special": special},
            timeout=as_timeout(timeout))
        return str(body["text"])

    def render_chat(
        self, messages: Sequence[Mapping[str, Any] | Any], *, add_generation_prompt: bool = True,
        tools: Sequence[Tool | Mapping[str, Any]] | None = None,
        deadline: Deadline | None = None,
    ) -> str:
        """The prompt the service's model renders for `messages` (and
        `tools`), within what is left of `deadline`."""
        timeout = None
        if deadline is not None:
            timeout = Timeout(connect=deadline.timeout.connect, read=deadline.timeout.read,
                              total=_left(deadline))
        body = self._transport.request("POST", "/adil/v1/render_chat", {
            "messages": [_message(m) for m in messages],
            "add_generation_prompt": add_generation_prompt,
            "tools": None if tools is None else [_tool(t) for t in tools],
        }, timeout=timeout)
        return str(body["prompt"])

    def logits(self, ids: Sequence[int] | npt.NDArray[np.int32], *,
               timeout: Timeout | float | None = None) -> npt.NDArray[np.float32]:
        """Teacher-forced logits, (len(ids), n_vocab) float32."""
        body = self._transport.request("POST", "/adil/v1/logits", {"tokens": _ids(ids)},
                                       timeout=as_timeout(timeout))
        data = np.frombuffer(base64.b64decode(body["data"]), dtype="<f4").astype(np.float32)
        rows, columns = (int(n) for n in body["shape"])
        return data.reshape(rows, columns)

    # -- generation -------------------------------------------------------
    def generate(
        self,
        prompt: str | bytes | Sequence[int] | npt.NDArray[np.int32],
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
        stop_tokens: Sequence[int] | npt.NDArray[np.int32] = (),
    ) -> RemoteGeneration:
        """Starts a generation on the service and returns its stream of
        pieces; the same arguments and errors as :meth:`adil.Model.generate`,
        plus ServiceConnectionError and DeadlineError ``connect``.  Busy,
        not ready and refused connections are retried by the client's
        policy before the stream starts, never after."""
        if n != 1:
            raise CapabilityError(f"the service produces one choice per request; n={n} asked")
        if images:
            raise CapabilityError("the service's engine and model cannot take images")
        if cancel is not None and not callable(getattr(cancel, "cancelled", None)):
            raise InvalidArgumentError("cancel must be a cancel token (with cancelled())")
        chosen = resolve_sampling(sampling, temperature=temperature, top_p=top_p, top_k=top_k,
                                  min_p=min_p, seed=seed, repeat_penalty=repeat_penalty)
        output = _output_schema(schema)
        if output is not None and constraint is not None:
            raise InvalidArgumentError("give schema or constraint, not both")
        deadline = self._transport.deadline(as_timeout(timeout))
        limits = deadline.timeout
        body: dict[str, Any] = {
            "prompt": (_text("prompt", prompt) if isinstance(prompt, str | bytes)
                       else _ids(prompt)),
            "max_tokens": max_tokens,
            "sampling": dataclasses.asdict(chosen),
            "stop": [stop] if isinstance(stop, str) else list(stop),
            "stop_tokens": _ids(stop_tokens),
            "schema": None if output is None else output.schema,
            "constraint": None if constraint is None else constraint.text,
            "logprobs": logprobs,
            "ignore_eos": ignore_eos,
            # The engine keeps the read limit between tokens; the total is the
            # client's clock (closing the stream cancels the run).
            "timeout": {"read": limits.read, "total": None},
            "stream": True,
        }
        stream = self._transport.stream(GENERATE, body, deadline, cancel=cancel)
        return RemoteGeneration(stream, output)

    def chat(self, messages: Any, **options: Any) -> ChatResponse | ChatStream:
        """One assistant turn, as :meth:`adil.Model.chat` (the same keywords):
        the conversation is rendered here with the service model's template
        and generated over :meth:`generate`; tools come back as calls."""
        from ..chat_api import chat

        answer: ChatResponse | ChatStream = chat(cast(Any, self), messages, **options)
        return answer

    def complete(self, prompt: str | bytes | Sequence[int] | npt.NDArray[np.int32],
                 **kwargs: Any) -> Completion:
        """Runs a generation to its end (the arguments of :meth:`generate`)."""
        with self.generate(prompt, **kwargs) as generation:
            return generation.completion()


class RemoteGeneration(Iterator[Piece]):
    """An iterator of :class:`adil.Piece` from the service; after it ends,
    ``text``, ``tokens``, ``stop_reason``, ``stats``, ``cancel_acknowledged``,
    ``value`` and ``logprobs`` describe it, as :class:`adil.Generation`'s
    do.  A cancelled or closed stream just ends (stop reason ``cancelled``);
    a deadline raises DeadlineError after the pieces before it; a dropped
    connection raises ServiceConnectionError; an error the server sends
    raises its class."""

    def __init__(self, stream: EventStream, output: OutputSchema | None) -> None:
        self._stream = stream
        self._output = output
        self._parts: list[str] = []
        self._tokens: list[int] = []
        self._logprobs: list[TokenLogprob] | None = None
        self._final: dict[str, Any] | None = None
        self._value: Any = None
        self._lock = threading.Lock()
        self.stop_reason: StopReason = "running"
        self.stats = Stats()
        self.cancel_acknowledged = False

    @property
    def request_id(self) -> str | None:
        """The service's id of this request (``x-request-id``)."""
        return self._stream.request_id

    @property
    def text(self) -> str:
        return "".join(self._parts)

    @property
    def tokens(self) -> tuple[int, ...]:
        return tuple(self._tokens)

    @property
    def logprobs(self) -> tuple[TokenLogprob, ...] | None:
        return None if self._logprobs is None else tuple(self._logprobs)

    @property
    def value(self) -> Any:
        return self._value

    def __iter__(self) -> RemoteGeneration:
        return self

    def __next__(self) -> Piece:
        if self.stop_reason != "running":
            raise StopIteration
        if not self._lock.acquire(blocking=False):
            from ..errors import BusyError

            raise BusyError("another thread reads this generation")
        try:
            return self._step()
        finally:
            self._lock.release()

    def _step(self) -> Piece:
        try:
            event = self._stream.next_event()
        except Stopped:
            self._end("cancelled", acknowledged=True)
            raise StopIteration from None
        except BaseException as exc:
            self._fail(exc)
            raise
        if event is None:
            self._fail(None)
            raise ServiceConnectionError("the stream ended without its result",
                                         request_id=self.request_id)
        data = _json(event.data, self.request_id)
        if event.name == "done":
            self._done(data)
            raise StopIteration
        if event.name == "error":
            error = error_from_body(data, None, self.request_id)
            self._fail(error)
            raise error
        piece = _piece(data)
        self._parts.append(piece.text)
        self._tokens.extend(piece.tokens)
        if piece.logprobs is not None:
            self._logprobs = (self._logprobs or []) + list(piece.logprobs)
        return piece

    def _done(self, data: dict[str, Any]) -> None:
        text = data.get("text")
        if isinstance(text, str) and text != self.text:
            self._parts = [text]  # the server's final text wins (stop strings cut)
        tokens = data.get("tokens")
        if isinstance(tokens, list):
            self._tokens = [int(t) for t in tokens]
        if data.get("logprobs") is not None:
            self._logprobs = [_logprob(x) for x in data["logprobs"]]
        self._stream.finish()  # the connection is reused by the next request
        reason = data.get("stop_reason")
        self._stats(data.get("stats"))
        self._end(reason if reason in _STOP_REASONS else "end_of_text",
                  acknowledged=bool(data.get("cancel_acknowledged")))
        if self._output is not None:
            self._value = self._output.read(self.text)
        else:
            self._value = data.get("value")

    def _stats(self, raw: Any) -> None:
        if isinstance(raw, dict):
            names = {f.name for f in dataclasses.fields(Stats)}
            self.stats = Stats(**{k: v for k, v in raw.items() if k in names})

    def _fail(self, error: BaseException | None) -> None:
        from ..errors import DeadlineError

        reason: StopReason = "deadline" if isinstance(error, DeadlineError) else "error"
        self._end(reason)

    def _end(self, reason: StopReason, *, acknowledged: bool = False) -> None:
        self.stop_reason = reason
        self.cancel_acknowledged = self.cancel_acknowledged or acknowledged
        if self.stats == Stats():
            self.stats = Stats(n_generated=len(self._tokens))
        self._stream.close()

    def cancel(self) -> None:
        """Stops the run (any thread): the stream closes, the server cancels."""
        self._stream.abort("cancelled")

    def close(self) -> None:
        """Cancels the run if it still goes on and frees the connection."""
        if self.stop_reason == "running":
            self._stream.abort("closed")
            with self._lock:
                if self.stop_reason == "running":
                    self._end("cancelled", acknowledged=True)
        self._stream.close()

    def __del__(self) -> None:
        # A generation dropped unread still frees the service's run slot.
        try:
            if getattr(self, "stop_reason", None) == "running":
                self.close()
        except Exception:  # noqa: BLE001 - nothing may escape a finalizer
            pass

    def __enter__(self) -> RemoteGeneration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def completion(self) -> Completion:
        """Reads the rest and returns the finished :class:`adil.Completion`."""
        for _ in self:
            pass
        return Completion(self.text, self.tokens, self.stop_reason, self.stats,
                          self.cancel_acknowledged, self._value, self.logprobs)


# -- wire helpers ------------------------------------------------------------


def _ids(ids: Sequence[int] | npt.NDArray[Any]) -> list[int]:
    if isinstance(ids, str | bytes):
        raise InvalidArgumentError("token ids must be a sequence of ints, not text")
    try:
        return [int(t) for t in ids]
    except (TypeError, ValueError) as exc:
        raise InvalidArgumentError(f"token ids must be ints: {exc}") from exc


def _text(name: str, text: object) -> str:
    """`text` as a str (bytes must be UTF-8: the wire carries JSON text)."""
    if isinstance(text, bytes):
        try:
            return text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError(
                f"{name}: the service takes UTF-8 text; these bytes are not: {exc}") from exc
    if not isinstance(text, str):
        raise InvalidArgumentError(f"{name} must be a str, got {type(text).__name__}")
    return text


def _left(deadline: Deadline) -> float | None:
    left = deadline.remaining()
    if left is None:
        return None
    deadline.check()
    return max(left, 1e-6)


def _message(message: Any) -> Any:
    to_dict = getattr(message, "to_dict", None)
    return to_dict() if callable(to_dict) else dict(message)


def _tool(tool: Any) -> Any:
    to_openai = getattr(tool, "to_openai", None)
    return to_openai() if callable(to_openai) else dict(tool)


def _output_schema(schema: Any) -> OutputSchema | None:
    if schema is None:
        return None
    from ..structured import output_schema

    return output_schema(schema)


def _json(text: str, request_id: str | None) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ServiceConnectionError("the service sent an event that is not JSON",
                                     request_id=request_id) from exc
    if not isinstance(data, dict):
        raise ServiceConnectionError("the service sent an event that is not a JSON object",
                                     request_id=request_id)
    return data


def _logprob(raw: Any) -> TokenLogprob:
    top = tuple((int(t), str(s), float(lp)) for t, s, lp in raw.get("top") or ())
    logprob = raw.get("logprob")
    return TokenLogprob(int(raw["token"]), str(raw.get("text", "")),
                        float("nan") if logprob is None else float(logprob), top)


def _piece(data: dict[str, Any]) -> Piece:
    raw = data.get("logprobs")
    logprobs = None if raw is None else tuple(_logprob(x) for x in raw)
    return Piece(str(data.get("text", "")), tuple(int(t) for t in data.get("tokens") or ()),
                 logprobs)
