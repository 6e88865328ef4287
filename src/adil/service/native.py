"""The native routes: what ``adil.Client`` speaks (prefix ``/adil/v1``),
and ``/health``.

Each handler parses its body first (400), then asks for the model (503
while loading), then, for runs (generate, logits), the run slot (503 busy).
Engine calls run in worker threads through :meth:`Request.call`, which
cancels the run when the client goes away; a streamed generation runs in
one worker thread from its start to its end (:class:`~adil.service.app.
RunPump`), its pieces sent as they come.
"""

from __future__ import annotations

import base64
import dataclasses
import json
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..constraints import Constraint
from ..errors import AdilError, InvalidArgumentError
from ..generation import Generation, Piece, TokenLogprob
from ..sampling import DEFAULT_SAMPLING
from ..timeouts import Timeout
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
    from ..engine import Model

__all__ = ["routes"]

routes = Router()
PREFIX = "/adil/v1"
DEFAULT_MAX_TOKENS = 256
# How long a streamed generation's response head waits for the first piece,
# to go out with it in one write (a longer prefill: the head goes alone).
HEAD_WAIT = 0.005
_SAMPLING_FIELDS = frozenset(f.name for f in dataclasses.fields(DEFAULT_SAMPLING))
_GENERATE_FIELDS = frozenset({"prompt", "max_tokens", "sampling", "stop", "stop_tokens", "schema",
                              "constraint", "logprobs", "ignore_eos", "timeout", "stream"})


# -- field readers: a wrong type is a 400 naming the field --------------------

def _field(body: dict[str, Any], name: str, kinds: tuple[type, ...], default: Any,
           *, nullable: bool = False) -> Any:
    if name not in body:
        return default
    value = body[name]
    if value is None and nullable:
        return None
    if isinstance(value, bool) and bool not in kinds:
        kinds_ok = False
    else:
        kinds_ok = isinstance(value, kinds)
    if not kinds_ok:
        names = " or ".join(k.__name__ for k in kinds) + (" or null" if nullable else "")
        raise InvalidArgumentError(f"field {name!r} must be {names}, got {_kind(value)}")
    return value


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _ints(name: str, value: Any) -> list[int]:
    if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise InvalidArgumentError(f"field {name!r} must be an array of integers")
    return value


def _strs(name: str, value: Any) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidArgumentError(f"field {name!r} must be an array of strings")
    return value


def _unknown(body: dict[str, Any], known: frozenset[str]) -> None:
    extra = sorted(set(body) - known)
    if extra:
        raise InvalidArgumentError(f"unknown field(s): {', '.join(extra)}")


# -- JSON shapes ------------------------------------------------------------------

def logprobs_json(items: tuple[TokenLogprob, ...] | None) -> list[dict[str, Any]] | None:
    if items is None:
        return None
    return [{"token": t.token, "text": t.text, "logprob": t.logprob,
             "top": [[tok, text, lp] for (tok, text, lp) in t.top]} for t in items]


def piece_json(piece: Piece) -> dict[str, Any]:
    return {"text": piece.text, "tokens": list(piece.tokens),
            "logprobs": logprobs_json(piece.logprobs)}


def result_json(gen: Generation) -> dict[str, Any]:
    value = gen.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    return {"text": gen.text, "tokens": list(gen.tokens), "stop_reason": gen.stop_reason,
            "stats": dataclasses.asdict(gen.stats),
            "cancel_acknowledged": gen.cancel_acknowledged, "value": _jsonable(value),
            "logprobs": logprobs_json(gen.logprobs)}


def _jsonable(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # a pydantic model
    if callable(dump):
        return dump()
    return value


# -- /health and info ----------------------------------------------------------------

async def health(request: Request) -> Response:
    host = request.service
    state = getattr(host, "state", "ready")
    error = getattr(host, "error", None)
    return Response.json({
        "status": state,
        "error": None if error is None else {"code": error.code, "message": error.message},
        "model": host.model_name,
        "components": host.components(),
    })


async def info(request: Request) -> Response:
    model = request.model
    return Response.json({"model": dataclasses.asdict(model.info),
                          "components": request.service.components()})


# -- tokens and templates --------------------------------------------------------------

async def tokenize(request: Request) -> Response:
    body = request.json_object()
    _unknown(body, frozenset({"text", "add_bos", "special"}))
    text = _field(body, "text", (str,), None)
    if text is None:
        raise InvalidArgumentError("field 'text' is required")
    add_bos = _field(body, "add_bos", (bool,), None, nullable=True)
    special = _field(body, "special", (bool,), True)
    model = request.model
    ids = await request.call(lambda: model.tokenize(text, add_bos=add_bos, special=special))
    return Response.json({"tokens": [int(t) for t in ids]})


async def detokenize(request: Request) -> Response:
    body = request.json_object()
    _unknown(body, frozenset({"tokens", "special"}))
    tokens = _ints("tokens", body.get("tokens"))
    special = _field(body, "special", (bool,), False)
    model = request.model
    text = await request.call(lambda: model.detokenize(tokens, special=special))
    return Response.json({"text": text})


async def render_chat(request: Request) -> Response:
    body = request.json_object()
    _unknown(body, frozenset({"messages", "add_generation_prompt", "tools"}))
    messages = _field(body, "messages", (list,), None)
    if messages is None:
        raise InvalidArgumentError("field 'messages' is required (an array)")
    add = _field(body, "add_generation_prompt", (bool,), True)
    tools = _field(body, "tools", (list,), None, nullable=True)
    model = request.model
    prompt = await request.call(
        lambda: model.render_chat(messages, add_generation_prompt=add, tools=tools))
    return Response.json({"prompt": prompt})


# -- runs -------------------------------------------------------------------------------

def generate_kwargs(body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The prompt and ``Model.generate`` keywords of a /generate body."""
    _unknown(body, _GENERATE_FIELDS)
    prompt = body.get("prompt")
    if isinstance(prompt, list):
        prompt = _ints("prompt", prompt)
    elif not isinstance(prompt, str):
        raise InvalidArgumentError("field 'prompt' must be a string or an array of token ids")
    kwargs: dict[str, Any] = {
        "max_tokens": _field(body, "max_tokens", (int,), DEFAULT_MAX_TOKENS, nullable=True),
        "stop": _strs("stop", body.get("stop", [])),
        "stop_tokens": _ints("stop_tokens", body.get("stop_tokens", [])),
        "ignore_eos": _field(body, "ignore_eos", (bool,), False),
        "logprobs": _field(body, "logprobs", (int,), None, nullable=True),
        "schema": _field(body, "schema", (dict,), None, nullable=True),
    }
    sampling = _field(body, "sampling", (dict,), None, nullable=True)
    if sampling:
        unknown = sorted(set(sampling) - _SAMPLING_FIELDS)
        if unknown:
            raise InvalidArgumentError(f"unknown sampling field(s): {', '.join(unknown)}")
        kwargs["sampling"] = dataclasses.replace(DEFAULT_SAMPLING, **sampling)
    constraint = _field(body, "constraint", (str,), None, nullable=True)
    if constraint is not None:
        try:
            document = json.loads(constraint)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"field 'constraint' is not JSON text: {exc}") from None
        kwargs["constraint"] = Constraint.raw(document)
    timeout = _field(body, "timeout", (dict,), None, nullable=True)
    if timeout:
        unknown = sorted(set(timeout) - {"read", "total"})
        if unknown:
            raise InvalidArgumentError(f"unknown timeout field(s): {', '.join(unknown)}")
        kwargs["timeout"] = Timeout(read=timeout.get("read"), total=timeout.get("total"))
    return prompt, kwargs


async def generate(request: Request) -> Response | StreamingResponse:
    body = request.json_object()
    prompt, kwargs = generate_kwargs(body)
    stream = _field(body, "stream", (bool,), False)
    model = request.model
    request.take_slot()
    if stream:
        return await _stream_generation(request, model, prompt, kwargs)
    gen = await request.call(lambda: model.generate(prompt, **kwargs))
    run = _GenerationRun(request, gen)
    try:
        await request.call(lambda: _drain(gen), cancel=gen.cancel)
    finally:
        await run.close()
    return Response.json(result_json(gen))


def _drain(gen: Generation) -> None:
    for _ in gen:
        pass


class _GenerationRun:
    """A generation of one request; ``close()`` (idempotent) cancels it if
    still going, waits for the engine, and reports the outcome, which frees
    the slot (before the last event goes out: a client that reads ``done``
    and at once sends its next request does not meet ``busy``)."""

    def __init__(self, request: Request, gen: Generation) -> None:
        self.request = request
        self.gen = gen
        self._closed = False
        request.service.run_started(request)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        gen = self.gen
        try:
            await self.request.call(gen.close)
        finally:
            self.request.service.run_finished(self.request, {
                "stop_reason": gen.stop_reason, "cancel_acknowledged": gen.cancel_acknowledged,
                "n_tokens": len(gen.tokens)})


async def _stream_generation(request: Request, model: Model, prompt: Any,
                             kwargs: dict[str, Any]) -> StreamingResponse:
    """A streamed generation: started and stepped by one worker thread
    (:class:`RunPump`), so the response head goes out while the first step
    runs.  An error of ``generate`` itself (context length, capability...)
    is the response's status; a step's error is an ``error`` event."""
    token = model.cancel_token()  # cancels the run from its start, prefill included
    pump: RunPump[Generation] = RunPump(
        request, lambda: model.generate(prompt, cancel=token, **kwargs), cancel=token.cancel,
        close=Generation.close)
    try:
        gen = await pump.started()
    except BaseException:
        await pump.aclose()
        raise
    run = _PumpedRun(request, gen, pump)
    return StreamingResponse(_events(request, run), on_close=run.close, ping=None,
                             self_paced=True, ready=lambda: pump.ready(HEAD_WAIT))


class _PumpedRun:
    """A streamed generation's run (as :class:`_GenerationRun`): ``close()``
    (idempotent) stops it if still going, waits for its worker (which
    closes the generation) and reports the outcome, freeing the slot."""

    def __init__(self, request: Request, gen: Generation, pump: RunPump[Generation]) -> None:
        self.request = request
        self.gen = gen
        self.pump = pump
        self._closed = False
        request.service.run_started(request)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        gen = self.gen
        try:
            await self.pump.aclose()
        finally:
            self.request.service.run_finished(self.request, {
                "stop_reason": gen.stop_reason, "cancel_acknowledged": gen.cancel_acknowledged,
                "n_tokens": len(gen.tokens)})


async def _events(request: Request, run: _PumpedRun) -> AsyncIterator[bytes]:
    """``piece`` events, then one ``done`` or ``error``, sent once the run
    is closed."""
    pump = run.pump
    try:
        while (piece := await pump.next(idle=PING_INTERVAL)) is not None:
            yield PING if piece is RunPump.IDLE else sse_event(piece_json(piece), "piece")
    except AdilError as exc:
        await run.close()
        yield sse_event(error_body(exc, request.request_id), "error")
        return
    await run.close()
    yield sse_event(result_json(run.gen), "done")


async def logits(request: Request) -> Response:
    body = request.json_object()
    _unknown(body, frozenset({"tokens"}))
    tokens = _ints("tokens", body.get("tokens"))
    model = request.model
    request.take_slot()
    request.service.run_started(request)
    try:
        rows = await request.call(lambda: model.logits(tokens))
    finally:
        request.service.run_finished(request, {"stop_reason": "logits",
                                               "cancel_acknowledged": False})
    data = base64.b64encode(rows.astype("<f4", copy=False).tobytes()).decode("ascii")
    return Response.json({"shape": list(rows.shape), "dtype": "float32", "data": data})


routes.add("GET", "/health", health)
routes.add("GET", PREFIX + "/health", health)
routes.add("GET", PREFIX + "/info", info)
routes.add("POST", PREFIX + "/tokenize", tokenize)
routes.add("POST", PREFIX + "/detokenize", detokenize)
routes.add("POST", PREFIX + "/render_chat", render_chat)
routes.add("POST", PREFIX + "/generate", generate)
routes.add("POST", PREFIX + "/logits", logits)
