"""``adil serve``: the HTTP server (asyncio + h11).

Why asyncio + h11 rather than uvicorn: h11 (a pure-Python HTTP/1.1 state
machine, already installed with httpx) parses and frames every message, so
there is no hand-written HTTP parsing, while owning the accept loop gives
this service what it needs directly and with no further dependency: a
deadline for a request's head and one for its body (slow senders), the body
cap before reading it (413), a 431 for oversized heads, and a watch on the
connection while the engine works, so that a client that goes away cancels
exactly its own run, prefill included.  One model serves one run at a time,
so the throughput of a multi-worker server would buy nothing.

Per request, in order: Host (DNS rebinding) -> Origin (allow-list; CORS
preflights answered here) -> API key -> route (404/405) -> body (cap,
deadline, then the handler parses it) -> model ready -> run slot.  Every
response carries ``x-request-id``.  Engine calls run in worker threads.

    with adil.service.Server("model.gguf", port=0) as server:
        httpx.get(server.url + "/health")
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl, urlsplit

import h11

from ..errors import AdilError, DeadlineError, EngineInternalError, InvalidArgumentError
from .app import JSON_TYPE, Request, Response, Route, Router, StreamingResponse, to_json_bytes
from .config import DEFAULT_PORT, ServiceConfig, is_loopback
from .errors_http import error_body, error_headers, status_of
from .model_host import ModelHost
from .security import PREFLIGHT_HEADERS, Gate, request_id_of

__all__ = ["Server"]

log = logging.getLogger("adil.service")

_READ_SIZE = 65536
# After an early answer (413...): how long and how much of the unread body
# is read and dropped before the connection closes.
_LINGER_SECONDS = 2.0
_LINGER_BYTES = 64 << 20
SERVER_HEADER = ("server", "adil")
T = TypeVar("T")


if sys.version_info >= (3, 11):
    async def _within(awaitable: Awaitable[T], seconds: float) -> T:
        """`awaitable` in this task under a deadline (asyncio.TimeoutError).
        Not asyncio.wait_for: before 3.12 it runs `awaitable` as a task of
        its own (loop iterations on every request's path) and drops a
        cancellation that comes as `awaitable` ends, so a server stopping
        while a response is written went on streaming."""
        async with asyncio.timeout(seconds):
            return await awaitable
else:  # pragma: no cover - Python 3.10
    _within = asyncio.wait_for


class _Close(Exception):
    """End this connection now (nothing more to send)."""


class Server:
    """One model served over HTTP.  ``start()`` listens (in a background
    thread with its own event loop) and returns at once, while the model
    loads in the background; ``stop()`` closes connections (cancelling
    their runs), then the model.  A context manager: start ... stop.

    ``port=0`` picks a free port (``.port`` tells which).  A non-loopback
    `host` needs ``public=True``.  See :class:`~adil.service.config.
    ServiceConfig` for the other settings; `routes` adds handlers."""

    def __init__(
        self,
        model: str,
        *,
        library: str | None = None,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        allow_origins: Sequence[str] = (),
        allow_hosts: Sequence[str] = (),
        api_key: str | None = None,
        threads: int | None = None,
        context_length: int | None = None,
        max_body_bytes: int = 1 << 20,
        head_timeout: float = 10.0,
        body_timeout: float = 30.0,
        idle_timeout: float = 60.0,
        write_timeout: float = 60.0,
        public: bool = False,
        model_name: str | None = None,
        routes: Router | None = None,
    ) -> None:
        self.config = ServiceConfig(
            model=str(model), library=None if library is None else str(library), host=host,
            port=port, allow_origins=tuple(allow_origins), allow_hosts=tuple(allow_hosts),
            api_key=api_key, threads=threads, context_length=context_length,
            max_body_bytes=max_body_bytes, head_timeout=head_timeout, body_timeout=body_timeout,
            idle_timeout=idle_timeout, write_timeout=write_timeout, public=public,
            model_name=model_name)
        if not is_loopback(host):
            log.warning("warning: binding %s: anyone who can reach this machine can use the "
                        "model%s", host, "" if api_key else " (no API key set)")
        self.host = ModelHost(self.config)
        self.router = default_router()
        if routes is not None:
            self.router.include(routes)
        self._gate = Gate(self.config)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._listening = threading.Event()
        self._start_error: BaseException | None = None
        self._stopped: asyncio.Event | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._port = port

    # -- lifecycle ----------------------------------------------------------
    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        host = self.config.host
        shown = f"[{host}]" if ":" in host else host
        return f"http://{shown}:{self._port}"

    def start(self) -> Server:
        """Listen (returns once listening; raises OSError when the address
        is taken) and start loading the model."""
        if self._thread is not None:
            raise InvalidArgumentError("the server is already started")
        self._thread = threading.Thread(target=self._run_loop, name="adil-service", daemon=True)
        self._thread.start()
        self._listening.wait()
        if self._start_error is not None:
            self._thread.join()
            raise self._start_error
        self.host.start_loading()
        return self

    def stop(self) -> None:
        """Stop listening, end every connection (their runs cancelled, their
        engines stopped), close the model.  Idempotent."""
        loop, thread = self._loop, self._thread
        if loop is not None and thread is not None and thread.is_alive():
            stopped = self._stopped
            if stopped is not None:
                loop.call_soon_threadsafe(stopped.set)
            thread.join()
        self.host.close()

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run_loop(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            loop.run_until_complete(loop.shutdown_default_executor())
            loop.close()

    async def _main(self) -> None:
        self._stopped = asyncio.Event()
        try:
            listener = await asyncio.start_server(
                self._accept, self.config.host, self.config.port,
                limit=self.config.max_head_bytes)
        except OSError as exc:
            self._start_error = exc
            self._listening.set()
            return
        self._port = int(listener.sockets[0].getsockname()[1])
        self._listening.set()
        async with listener:
            await self._stopped.wait()
            listener.close()
            for task in list(self._connections):
                task.cancel()
            if self._connections:
                await asyncio.wait(set(self._connections))

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        try:
            await _Connection(self, reader, writer).serve()
        except asyncio.CancelledError:
            pass  # the server stops
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(OSError, asyncio.CancelledError):
                await writer.wait_closed()


def default_router() -> Router:
    """The native routes, and the OpenAI-compatible ones when their module
    is present (``adil.service.openai_compat``: ``routes`` or
    ``register(router)``)."""
    from . import native

    router = Router()
    router.include(native.routes)
    try:
        from . import openai_compat  # type: ignore[attr-defined, unused-ignore]
    except ImportError:
        return router
    extra = getattr(openai_compat, "routes", None)
    if isinstance(extra, Router):
        router.include(extra)
    register = getattr(openai_compat, "register", None)
    if callable(register):
        register(router)
    return router


class _Connection:
    """One client connection: requests one after another (keep-alive)."""

    def __init__(self, server: Server, reader: asyncio.StreamReader,
                 writer: asyncio.StreamWriter) -> None:
        self.server = server
        self.config = server.config
        self.reader = reader
        self.writer = writer
        self.conn = h11.Connection(h11.SERVER, max_incomplete_event_size=self.config.max_head_bytes)
        self.eof = False
        self.keep_alive = True

    async def serve(self) -> None:
        first = True
        while True:
            try:
                await self._one_request(first)
            except _Close:
                await self._linger()
                return
            except (OSError, h11.ProtocolError):
                return  # the client went away, or the exchange cannot go on
            first = False
            reusable = self.conn.our_state is h11.DONE and self.conn.their_state is h11.DONE
            if not (self.keep_alive and reusable):
                return
            try:
                self.conn.start_next_cycle()
            except h11.LocalProtocolError:
                return

    async def _linger(self) -> None:
        """Closing with a request body still coming (413, 401...): read and
        drop what the client still sends, for a little while, so that it
        reads the answer instead of a connection reset."""
        if self.conn.their_state is not h11.SEND_BODY or self.eof:
            return
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            self.writer.write_eof()
            await _within(self._discard(_LINGER_BYTES), _LINGER_SECONDS)

    async def _discard(self, limit: int) -> None:
        while limit > 0 and (data := await self.reader.read(_READ_SIZE)):
            limit -= len(data)

    # -- receiving ----------------------------------------------------------
    async def _receive(self) -> Any:
        """The next h11 event, reading from the socket as needed."""
        while True:
            event = self.conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            data = await self.reader.read(_READ_SIZE)
            if not data:
                self.eof = True
            self.conn.receive_data(data)

    async def _read_head(self, first: bool) -> h11.Request:
        # An idle kept-alive connection may wait for its next request longer
        # than a started head may take to arrive.
        if not first:
            try:
                await _within(self._wait_readable(), self.config.idle_timeout)
            except asyncio.TimeoutError:
                raise _Close from None
        try:
            event = await _within(self._receive(), self.config.head_timeout)
        except asyncio.TimeoutError:
            if self.conn.their_state is h11.IDLE:
                await self._fail_early(DeadlineError(
                    "the request head did not arrive in time", limit="read", status=408))
            raise _Close from None
        except h11.RemoteProtocolError as exc:
            await self._fail_early(InvalidArgumentError(
                f"malformed HTTP request: {exc}", status=exc.error_status_hint))
            raise _Close from None
        if isinstance(event, h11.Request):
            return event
        raise _Close  # ConnectionClosed (or a client that went away)

    async def _wait_readable(self) -> None:
        if self.conn.trailing_data[0]:
            return
        data = await self.reader.read(_READ_SIZE)
        if not data:
            raise _Close
        self.conn.receive_data(data)

    async def _read_body(self, head: h11.Request) -> bytes:
        cap = self.config.max_body_bytes
        length = _header(head, b"content-length")
        if length is not None and length.isdigit() and int(length) > cap:
            raise InvalidArgumentError(f"the request body is over the {cap}-byte limit",
                                       status=413)
        if self.conn.they_are_waiting_for_100_continue:  # curl, for bodies over 1 KiB
            with contextlib.suppress(h11.LocalProtocolError):
                await self._write(h11.InformationalResponse(status_code=100, headers=[]))
        try:
            return await _within(self._body_events(cap), self.config.body_timeout)
        except asyncio.TimeoutError:
            raise DeadlineError("the request body did not arrive in time", limit="read",
                                status=408) from None
        except h11.RemoteProtocolError as exc:
            raise InvalidArgumentError(f"malformed HTTP request body: {exc}",
                                       status=exc.error_status_hint) from None

    async def _body_events(self, cap: int) -> bytes:
        chunks: list[bytes] = []
        size = 0
        while True:
            event = await self._receive()
            if isinstance(event, h11.Data):
                size += len(event.data)
                if size > cap:
                    raise InvalidArgumentError(
                        f"the request body is over the {cap}-byte limit", status=413)
                chunks.append(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                return b"".join(chunks)
            else:  # ConnectionClosed mid-body
                raise _Close

    # -- one request ----------------------------------------------------------
    async def _one_request(self, first: bool) -> None:
        head = await self._read_head(first)
        request_id = request_id_of(_header(head, b"x-request-id"))
        origin = _header(head, b"origin")
        gate = self.server._gate
        method = head.method.decode("ascii", "replace").upper()
        target = head.target.decode("latin-1")
        cors: list[tuple[str, str]] = []
        route: Route | None = None
        try:
            gate.check_host(_header(head, b"host"))
            gate.check_origin(origin)
            cors = gate.cors_headers(origin)
            parts = urlsplit(target)
            if method == "OPTIONS":
                await self._drain_body(head)
                await self._send(Response(b"", 204, "", PREFLIGHT_HEADERS), request_id, cors)
                return
            gate.check_key(_header(head, b"authorization"))
            route = self._route(method, parts.path)
            body = await self._read_body(head)
        except AdilError as exc:
            # The body was not read: this connection cannot carry another request.
            openai = route.openai if route is not None else target.startswith("/v1/")
            await self._send_error(exc, request_id, cors, openai, close=True)
            return
        request = Request(
            method=method, path=parts.path,
            query=dict(parse_qsl(parts.query, keep_blank_values=True)),
            headers=_headers(head), body=body, request_id=request_id,
            service=self.server.host)
        try:
            await self._dispatch(route, request, cors)
        finally:
            self.server.host.release_slot(request)

    def _route(self, method: str, path: str) -> Route:
        router = self.server.router
        route = router.find(method, path)
        if route is not None:
            return route
        allowed = router.methods(path)
        if allowed:
            raise InvalidArgumentError(
                f"{method} is not allowed on {path} (allowed: {', '.join(allowed)})", status=405)
        raise InvalidArgumentError(f"no route {path}", status=404)

    async def _dispatch(self, route: Route, request: Request,
                        cors: list[tuple[str, str]]) -> None:
        watch = asyncio.ensure_future(self._watch(request))
        try:
            try:
                response = await route.handler(request)
            except AdilError as exc:
                self.server.host.release_slot(request)
                await self._send_error(exc, request.request_id, cors, route.openai)
                return
            except Exception as exc:  # noqa: BLE001 - a bug answers 500, the server stays up
                log.exception("handler %s %s failed", route.method, route.path)
                self.server.host.release_slot(request)
                await self._send_error(EngineInternalError(f"internal error: {exc!r}"),
                                       request.request_id, cors, route.openai)
                return
            if isinstance(response, StreamingResponse):
                await self._stream(response, request, cors)
            else:
                # The handler's engine work is over: free the slot before the
                # client can read the answer and send its next request.
                self.server.host.release_slot(request)
                await self._send(response, request.request_id, cors)
        finally:
            watch.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watch

    async def _watch(self, request: Request) -> None:
        """While the request is served: the client closing its connection
        sets ``request.disconnected`` (which cancels its run).  Bytes sent
        meanwhile (a pipelined request) are kept for h11."""
        if self.eof:
            request.disconnected.set()
            return
        with contextlib.suppress(OSError):
            while True:
                data = await self.reader.read(_READ_SIZE)
                if not data:
                    break
                if len(self.conn.trailing_data[0]) <= self.config.max_body_bytes:
                    self.conn.receive_data(data)
                else:  # too much sent ahead: this connection ends after the answer
                    self.keep_alive = False
        self.eof = True
        request.disconnected.set()

    async def _drain_body(self, head: h11.Request) -> None:
        with contextlib.suppress(AdilError):
            await self._read_body(head)

    # -- sending --------------------------------------------------------------
    def _base_headers(self, request_id: str, cors: list[tuple[str, str]],
                      media_type: str) -> list[tuple[str, str]]:
        headers = [SERVER_HEADER, ("x-request-id", request_id)]
        if media_type:
            headers.append(("content-type", media_type))
        return headers + cors

    async def _send(self, response: Response, request_id: str, cors: list[tuple[str, str]],
                    *, close: bool = False) -> None:
        headers = self._base_headers(request_id, cors, response.media_type) + response.headers
        headers.append(("content-length", str(len(response.body))))
        if close:
            headers.append(("connection", "close"))
        events: list[Any] = [h11.Response(status_code=response.status, headers=headers)]
        if response.body:
            events.append(h11.Data(data=response.body))
        events.append(h11.EndOfMessage())
        try:
            await self._write(*events)  # one write: one segment, one wake-up of the reader
        except (OSError, h11.LocalProtocolError):
            raise _Close from None
        if close:
            raise _Close

    async def _send_error(self, error: AdilError, request_id: str, cors: list[tuple[str, str]],
                          openai: bool, *, close: bool = False) -> None:
        body = to_json_bytes(error_body(error, request_id, openai=openai))
        response = Response(body, status_of(error), JSON_TYPE, error_headers(error))
        await self._send(response, request_id, cors, close=close)

    async def _fail_early(self, error: AdilError) -> None:
        """An error before a request head was understood (h11 may refuse to
        send a response then: the connection just closes)."""
        with contextlib.suppress(_Close, h11.LocalProtocolError):
            await self._send_error(error, request_id_of(None), [], False, close=True)

    async def _write(self, *events: Any) -> None:
        data = b"".join(self.conn.send(event) or b"" for event in events)
        if data:
            self.writer.write(data)
            if not self.writer.transport.get_write_buffer_size():
                # The socket took it all: drain() only checks that the
                # connection is still there, without waiting (no timer, no
                # task, no loop iteration on every event's path).
                await self.writer.drain()
                return
            try:
                await _within(self.writer.drain(), self.config.write_timeout)
            except asyncio.TimeoutError:
                raise ConnectionError("the client reads nothing of its answer") from None

    async def _stream(self, response: StreamingResponse, request: Request,
                      cors: list[tuple[str, str]]) -> None:
        body = response.body
        gone = None if response.self_paced else request.disconnected.future()
        try:
            headers = self._base_headers(request.request_id, cors, response.media_type)
            headers += response.headers + [("cache-control", "no-cache")]
            head = h11.Response(status_code=response.status, headers=headers)
            if gone is None:
                await self._write(head, *await self._ready_chunk(response))
                async for data in body:
                    await self._write(h11.Data(data=data))
            else:
                await self._write(head)
                while (chunk := await self._next_chunk(body, gone, response)) is not None:
                    await self._write(h11.Data(data=chunk))
            if not request.disconnected.is_set():
                await self._write(h11.EndOfMessage())
        except (OSError, h11.LocalProtocolError):
            request.disconnected.set()
            raise _Close from None
        except AdilError as exc:  # after the head went out: the stream just ends
            log.warning("stream %s ended by %s: %s", request.request_id, exc.code, exc.message)
            raise _Close from None
        except Exception:  # noqa: BLE001 - a bug ends its stream, the server stays up
            log.exception("stream %s failed", request.request_id)
            raise _Close from None
        finally:
            if gone is not None:
                gone.cancel()
            await _close_iterator(body)
            if response.on_close is not None:
                await response.on_close()
        if request.disconnected.is_set():
            raise _Close

    @staticmethod
    async def _ready_chunk(response: StreamingResponse) -> list[h11.Data]:
        """The self-paced body's first chunk when it is at hand already (to
        go out with the head), else nothing."""
        if response.ready is None or not await response.ready():
            return []
        with contextlib.suppress(StopAsyncIteration):
            return [h11.Data(data=await anext(response.body))]
        return []

    async def _next_chunk(self, body: AsyncIterator[bytes], gone: asyncio.Future[Any],
                          response: StreamingResponse) -> bytes | None:
        """The next chunk of `body` (a ping after each silence); None at its
        end or when the client went away (then the pending chunk is
        cancelled, which stops the body's run)."""
        pending = asyncio.ensure_future(body.__anext__())
        waiters: set[asyncio.Future[Any]] = {pending, gone}
        interval = response.ping_interval if response.ping is not None else None
        try:
            while True:
                await asyncio.wait(waiters, timeout=interval, return_when=asyncio.FIRST_COMPLETED)
                if pending.done() or gone.done():
                    break
                assert response.ping is not None
                await self._write(h11.Data(data=response.ping))
        except BaseException:  # the server stops, or the ping could not be sent
            await _cancel_and_wait(pending)
            raise
        if not pending.done():
            pending.cancel()
            await asyncio.wait({pending})
            return None
        try:
            return pending.result()
        except StopAsyncIteration:
            return None


async def _cancel_and_wait(task: asyncio.Future[Any]) -> None:
    task.cancel()
    await asyncio.wait({task})


async def _close_iterator(body: AsyncIterator[bytes]) -> None:
    aclose = getattr(body, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:  # noqa: BLE001 - closing must not hide the response's fate
            log.exception("closing a response stream failed")


def _header(head: h11.Request, name: bytes) -> str | None:
    values = [v for (n, v) in head.headers if n == name]
    if not values:
        return None
    return ", ".join(v.decode("latin-1") for v in values)


def _headers(head: h11.Request) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in head.headers:
        key = name.decode("latin-1")
        text = value.decode("latin-1")
        out[key] = f"{out[key]}, {text}" if key in out else text
    return out
