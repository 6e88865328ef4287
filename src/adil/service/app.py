"""The routing layer of ``adil serve``: requests, responses and the router.

Route modules (the native routes in :mod:`adil.service.native`, the
OpenAI-compatible ones in ``adil.service.openai_compat``) register async
handlers on a :class:`Router`::

    routes = Router()

    async def tokenize(request: Request) -> Response:
        body = request.json()                       # 400 on bad JSON / UTF-8
        model = request.model                       # 503 while loading
        tokens = await request.call(lambda: model.tokenize(body["text"]))
        return Response.json({"tokens": tokens})

    routes.add("POST", "/adil/v1/tokenize", tokenize)

A handler raises an :class:`~adil.errors.AdilError` for an error response:
the server turns it into the JSON error body and the status of
:mod:`adil.service.errors_http` (OpenAI-style routes, ``openai=True``, also
get ``"type"`` and ``"param"``).  Host, Origin, API-key checks, request ids,
the body cap and deadlines are the server's; a handler sees a complete,
permitted request.

Operations that use the model's run slot (generate, logits, chat,
completions) call :meth:`Request.take_slot` first: it answers ``busy`` at
once when another request holds it; the server frees it when the response
has been sent completely, a stream closed, or the client went away (after
the handler's engine work has stopped).

Disconnects: :attr:`Request.disconnected` is set when the client goes away
(or its connection dropped); :meth:`Request.call` runs blocking engine work
in a worker thread and calls its `cancel` callback on a disconnect, then
waits for the work to stop.  A :class:`StreamingResponse`'s body iterator
is closed (``aclose``) when the client goes away; its ``finally`` cancels the
run and waits for the engine.

Runs whose items are streamed (a generation's pieces) use :class:`RunPump`:
one worker thread starts the run and steps it, handing every item to the
event loop as it comes, instead of one :meth:`Request.call` per step (a
round trip between the loop and a worker thread per token, and two on the
first token's path).
"""

from __future__ import annotations

import asyncio
import collections
import json
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from ..errors import InvalidArgumentError

if TYPE_CHECKING:
    from ..engine import Model

__all__ = [
    "Handler",
    "Request",
    "Response",
    "Route",
    "Router",
    "RunPump",
    "ServiceContext",
    "StreamingResponse",
]

T = TypeVar("T")
R = TypeVar("R", bound=Iterator[Any])

JSON_TYPE = "application/json"
# An SSE comment sent on a stream silent for PING_INTERVAL seconds (proxies
# keep the connection open; a client's read clock runs on).
PING = b": ping\n\n"
PING_INTERVAL = 10.0


class ServiceContext(Protocol):
    """What a handler may ask the server for (the server implements it)."""

    @property
    def model_name(self) -> str:
        """The model's name as the service announces it (alias or file name)."""
        ...

    def ready_model(self) -> Model:
        """The loaded model; raises ``ModelNotReadyError`` while it loads and
        the load's error (status 503) after a failed load."""
        ...

    def components(self) -> dict[str, Any] | None:
        """The component set for /health (None until the engine opened)."""
        ...

    def take_slot(self, request: Request) -> None:
        """Reserve the run slot for `request` or raise ``BusyError``."""
        ...

    def run_started(self, request: Request) -> None:
        """An engine run of `request` began (bookkeeping: runs at once)."""
        ...

    def run_finished(self, request: Request, outcome: dict[str, Any]) -> None:
        """That run ended and its engine stopped: frees the slot at once (call
        it before the response's last bytes, so that a client which reads
        them and sends its next request does not meet ``busy``); `outcome`:
        at least ``stop_reason`` and ``cancel_acknowledged`` (kept for the
        log and tests)."""
        ...


class Disconnect:
    """Whether a request's client went away: ``is_set``/``set``/``wait`` as
    an :class:`asyncio.Event`'s, and :meth:`future`, a future done once set
    — for ``asyncio.wait`` and done-callbacks without a task wrapped around
    ``wait()`` for every watcher (each such task costs loop iterations on
    every request's path).  Used on the event loop's thread only."""

    def __init__(self) -> None:
        self._set = False
        self._futures: list[asyncio.Future[None]] = []

    def is_set(self) -> bool:
        return self._set

    def set(self) -> None:
        if self._set:
            return
        self._set = True
        futures, self._futures = self._futures, []
        for future in futures:
            if not future.done():
                future.set_result(None)

    def future(self) -> asyncio.Future[None]:
        """A new future, done once the client went away (cancel it to stop
        watching)."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if self._set:
            future.set_result(None)
        else:
            self._futures = [f for f in self._futures if not f.done()]
            self._futures.append(future)
        return future

    async def wait(self) -> None:
        if not self._set:
            await self.future()


@dataclass
class Request:
    """One complete HTTP request.  ``headers``: lower-case names, repeated
    headers joined with ", "; ``query``: the last value of each parameter."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    body: bytes
    request_id: str
    service: ServiceContext
    disconnected: Disconnect = field(default_factory=Disconnect)
    holds_slot: bool = False

    def json(self) -> Any:
        """The body as JSON; :class:`InvalidArgumentError` (400) for an
        empty body, invalid UTF-8 or malformed JSON."""
        if not self.body:
            raise InvalidArgumentError("the request body is empty; send a JSON object")
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidArgumentError(
                f"the request body is not valid UTF-8 (byte {exc.start})") from None
        try:
            return json.loads(text, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise InvalidArgumentError(f"the request body is not valid JSON: {exc}") from None
        except RecursionError:
            raise InvalidArgumentError("the request body nests too deeply") from None
        except ValueError as exc:  # an integer of more digits than Python converts
            raise InvalidArgumentError(f"the request body is not usable JSON: {exc}") from None

    def json_object(self) -> dict[str, Any]:
        """:meth:`json`, which must be an object."""
        value = self.json()
        if not isinstance(value, dict):
            raise InvalidArgumentError("the request body must be a JSON object")
        return value

    @property
    def model(self) -> Model:
        """The loaded model (503 ``model_not_ready`` or the load's error
        otherwise)."""
        return self.service.ready_model()

    def take_slot(self) -> None:
        """Reserve the model's run slot for this request, or raise
        ``BusyError`` (503, Retry-After) at once.  Freed by the server when
        this request's response is done."""
        if not self.holds_slot:
            self.service.take_slot(self)

    async def call(self, work: Callable[[], T], *,
                   cancel: Callable[[], None] | None = None) -> T:
        """``work()`` in a worker thread (the event loop never blocks).  When
        the client disconnects meanwhile, ``cancel()`` is called (from the
        loop thread; it must be thread-safe, e.g. a CancelToken's or a
        Generation's cancel) and the call still waits for `work` to end
        before returning or raising, so the engine has stopped."""
        loop = asyncio.get_running_loop()
        future = loop.run_in_executor(None, work)
        if cancel is None:
            return await asyncio.shield(future)
        gone = self.disconnected.future()
        waiters: set[asyncio.Future[Any]] = {future, gone}
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
            if not future.done():
                cancel()
            # Shielded: a cancelled handler task must not leave the engine busy.
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            cancel()
            await asyncio.wait({future})
            raise
        finally:
            gone.cancel()


class _Idle:
    """The marker :meth:`RunPump.next` answers when nothing came in time."""


class RunPump(Generic[R]):
    """An engine run started and stepped in one worker thread, ahead of the
    event loop: ``start()`` there (e.g. ``model.generate``), then ``next()``
    of what it returned until the end, each result handed to the loop as it
    comes; ``close(run)`` runs there too once the stepping stopped.  Why:
    asking a worker for every step costs a thread round trip per token, two
    on the first token's path (start, then the first step); here the worker
    never waits for the loop, and the response head goes out while the first
    step runs.

    The worker runs at most ``AHEAD`` items ahead of the loop, so that a
    client that stops reading holds its run back (and its write deadline
    ends it), not the server's memory.

    `cancel` (thread-safe, e.g. a CancelToken's) is called when the client
    goes away and by :meth:`aclose` while the run still goes; the worker
    stops stepping at its next item.  :meth:`aclose` (idempotent) always
    waits until the worker has stopped — the engine is idle after it — and
    raises what `close` raised.  Created on the event loop's thread; every
    method there too."""

    AHEAD = 4
    IDLE: Any = _Idle()  # next(idle=...): nothing came for that long

    def __init__(self, request: Request, start: Callable[[], R], *,
                 cancel: Callable[[], None], close: Callable[[R], None]) -> None:
        self._loop = asyncio.get_running_loop()
        self._cancel = cancel
        self._close = close
        self._results: collections.deque[tuple[str, Any]] = collections.deque()
        self._waiter: asyncio.Future[bool] | None = None
        self._stop = threading.Event()  # the loop asks the worker to stop stepping
        self._credits = threading.Semaphore(self.AHEAD)  # items the worker may still post
        self._ended = False  # the last result ("end" or "error") was taken
        self._ran_out = False  # the worker stepped to the end (nothing left to cancel)
        self._close_error: BaseException | None = None
        self._worker = self._loop.run_in_executor(None, self._work, start)
        # One watcher for the whole run (not one per step).
        self._gone = request.disconnected.future()
        self._gone.add_done_callback(self._on_gone)

    # -- the worker thread ----------------------------------------------
    def _work(self, start: Callable[[], R]) -> None:
        try:
            run = start()
        except BaseException as exc:  # noqa: BLE001 - handed to the loop, raised there
            self._post("error", exc)
            return
        self._post("started", run)
        try:
            while self._credits.acquire() and not self._stop.is_set():
                item = next(run, None)
                if item is None:
                    break
                self._post("item", item)
        except BaseException as exc:  # noqa: BLE001 - as above
            self._ran_out = True
            self._post("error", exc)
        else:
            self._ran_out = True
            self._post("end", None)
        finally:
            try:
                self._close(run)
            except BaseException as exc:  # noqa: BLE001 - raised by aclose()
                self._close_error = exc

    def _post(self, kind: str, value: Any) -> None:
        # Straight into the queue (deque appends are atomic), so the loop
        # sees a result as soon as it looks (ready(); a _take that finds one
        # does not wait), even before it ran the wake-up below.
        self._results.append((kind, value))
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:  # the loop is closed: the server stopped, nobody reads
            pass

    # -- the event loop -------------------------------------------------
    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(True)

    async def ready(self, within: float) -> bool:
        """True once a result is at hand (the next ``next()`` does not
        wait), False when none came within `within` seconds."""
        return self._ended or await self._wait(within)

    async def _wait(self, idle: float | None) -> bool:
        """Until a result is at hand; False when none came for `idle` seconds."""
        while not self._results:
            waiter = self._waiter = self._loop.create_future()
            timer = None if idle is None else self._loop.call_later(idle, _time_out, waiter)
            try:
                await waiter
            finally:
                self._waiter = None
                if timer is not None:
                    timer.cancel()
            if not self._results and not waiter.result():
                return False
        return True

    async def _take(self, idle: float | None = None) -> tuple[str, Any] | None:
        """The next result; None when none came for `idle` seconds."""
        if not await self._wait(idle):
            return None
        return self._results.popleft()

    async def started(self) -> R:
        """What `start` returned; raises what it raised."""
        taken = await self._take()
        assert taken is not None
        kind, value = taken
        if kind == "error":
            self._ended = True
            raise value
        return value  # type: ignore[no-any-return]

    async def next(self, idle: float | None = None) -> Any:
        """The next item; None at the end (or once stopped); :attr:`IDLE`
        when none came for `idle` seconds (the run goes on); raises what a
        step raised."""
        if self._ended:
            return None
        taken = await self._take(idle)
        if taken is None:
            return RunPump.IDLE
        kind, value = taken
        if kind == "item":
            self._credits.release()
            return value
        self._ended = True
        if kind == "error":
            raise value
        return None

    def _on_gone(self, watcher: asyncio.Future[Any]) -> None:
        if not watcher.cancelled():
            self._stop_run()

    def _stop_run(self) -> None:
        self._stop.set()
        self._credits.release()  # a worker waiting for the loop wakes and stops
        if not (self._ran_out or self._worker.done()):
            self._cancel()

    async def aclose(self) -> None:
        """Cancels the run if still going and waits for the worker (shielded
        from this task's cancellation: the engine must be idle after it)."""
        self._gone.cancel()
        self._stop_run()
        if not self._worker.done():
            try:
                await asyncio.shield(self._worker)
            except asyncio.CancelledError:
                await asyncio.wait({self._worker})
                raise
        error, self._close_error = self._close_error, None
        if error is not None:
            raise error


@dataclass
class Response:
    """A complete response (``headers``: extra headers as name/value pairs)."""

    body: bytes = b""
    status: int = 200
    media_type: str = JSON_TYPE
    headers: list[tuple[str, str]] = field(default_factory=list)

    @classmethod
    def json(cls, value: Any, *, status: int = 200,
             headers: Iterable[tuple[str, str]] = ()) -> Response:
        """A JSON response (UTF-8, no NaN: a NaN or infinity becomes null
        upstream, see :func:`to_json_bytes`)."""
        return cls(to_json_bytes(value), status, JSON_TYPE, list(headers))


@dataclass
class StreamingResponse:
    """A response whose body comes from `body` chunk by chunk (``text/
    event-stream`` by default, sent chunked).  When no chunk came for
    ``ping_interval`` seconds, ``ping`` is sent (an SSE comment) to keep
    proxies open; ``ping=None`` disables it.  `body` is closed (``aclose``)
    when the client goes away, and in every case before the slot is freed;
    then ``on_close()`` is awaited, always (even if `body` never started):
    the place to close the run and wait for the engine."""

    body: AsyncIterator[bytes]
    status: int = 200
    media_type: str = "text/event-stream"
    headers: list[tuple[str, str]] = field(default_factory=list)
    ping: bytes | None = PING
    ping_interval: float = PING_INTERVAL
    on_close: Callable[[], Awaitable[None]] | None = None
    # True: `body` sends its own pings and ends by itself soon after the
    # client goes away (a RunPump's stream: the pump stops its run then), so
    # the server reads it chunk by chunk directly, without a task raced
    # against the disconnect and a ping timer for every chunk.
    self_paced: bool = False
    # For a self-paced body, awaited before the head goes out: True when its
    # first chunk is at hand, which then goes out with the head in one write
    # (a first token that comes at once costs the client one read, not two).
    # Waiting a little for it costs nothing: the head alone tells the
    # client nothing it can act on.
    ready: Callable[[], Awaitable[bool]] | None = None


Handler = Callable[[Request], Awaitable[Response | StreamingResponse]]


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    handler: Handler
    openai: bool  # error bodies carry "type" and "param" (OpenAI's shape)


class Router:
    """Exact-path routes: ``add("POST", "/v1/chat/completions", handler)``.
    An unknown path is 404, a known path with another method 405."""

    def __init__(self) -> None:
        self._routes: dict[tuple[str, str], Route] = {}

    def add(self, method: str, path: str, handler: Handler, *,
            openai: bool | None = None) -> None:
        """Register `handler`; `openai` (default: path starts with ``/v1/``)
        selects OpenAI-shaped error bodies."""
        method = method.upper()
        if (method, path) in self._routes:
            raise InvalidArgumentError(f"route {method} {path} is already registered")
        if openai is None:
            openai = path.startswith("/v1/")
        self._routes[(method, path)] = Route(method, path, handler, openai)

    def include(self, other: Router) -> None:
        """Add every route of `other`."""
        for route in other.routes():
            self.add(route.method, route.path, route.handler, openai=route.openai)

    def routes(self) -> list[Route]:
        return list(self._routes.values())

    def find(self, method: str, path: str) -> Route | None:
        return self._routes.get((method.upper(), path))

    def methods(self, path: str) -> list[str]:
        """The methods registered for `path` (empty: no such path)."""
        return sorted(m for (m, p) in self._routes if p == path)


def _time_out(waiter: asyncio.Future[bool]) -> None:
    if not waiter.done():
        waiter.set_result(False)


def to_json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON; NaN and infinities (logprobs of forced tokens)
    become null, since JSON has no such numbers."""
    return json.dumps(_finite(value), ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def sse_event(data: Any, event: str | None = None) -> bytes:
    """One server-sent event: ``event: NAME`` (when given) and ``data:`` with
    `data` as compact JSON (a str is sent as is, e.g. ``[DONE]``)."""
    payload = data if isinstance(data, str) else to_json_bytes(data).decode("utf-8")
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {payload}\n\n".encode()


def _no_constant(name: str) -> Any:
    raise InvalidArgumentError(f"the request body is not valid JSON: {name} is not a JSON value")


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, Mapping):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value
