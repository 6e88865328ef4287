"""The HTTP transport of :class:`adil.Client`: one httpx client, the
deadlines httpx does not have, retries, and errors mapped onto
:mod:`adil.errors`.

Deadlines.  ``connect`` and ``read`` become httpx's connect and read
timeouts, each cut down to what is left of ``total``.  httpx has no total
timeout, so streamed responses are watched by a watchdog thread (one per
transport, started with its first stream, not one per stream: starting a
thread waits for it to run, on every call's path): when a stream's total
deadline passes (or its request's cancel token is set) it shuts that
stream's socket down, which wakes the reading thread at once, and the
server, seeing the connection close, cancels exactly that run.  The same
reader notices a read deadline across the server's ``: ping`` comments (a
ping is not a token).

Retries (:class:`adil.retry.RetryPolicy`): only busy, model not ready and a
refused connection, only before a response body was read — a stream that
delivered a piece is never retried — and never past the total deadline.

Errors.  An error response ``{"error": {"code", "message", "request_id",
"status"}}`` becomes the class of its code (:func:`adil.errors.error_for_code`)
with ``.status`` and ``.request_id``; a refused connection is
``ServiceConnectionError(refused=True)``, any other transport failure
(a connection dropped mid-stream) ``ServiceConnectionError``; timeouts are
``DeadlineError`` with ``limit`` ``connect``, ``read`` or ``total``.
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import math
import secrets
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from ..errors import (
    AdilError,
    ComponentRefusedError,
    DeadlineError,
    DeadlineLimit,
    InvalidArgumentError,
    OutputValidationError,
    ServiceConnectionError,
    error_for_code,
)
from ..retry import RetryPolicy
from ..timeouts import Deadline, Timeout

__all__ = ["AbortReason", "ErrorMapper", "Event", "EventStream", "Stopped", "Transport",
           "error_from_body"]

AbortReason = Literal["total", "read", "cancelled", "closed"]
# A timeout that expires this close to the total deadline counts as the total.
_SLACK = 0.005
# How often the watchdog looks at a cancel token that cannot call it back.
_POLL = 0.05
# How many lines past its last event a stream may still hold before it is
# closed rather than read to its end (a server that goes on is not waited for).
_TRAILING_LINES = 8
# Parsed URLs kept per path (paths with queries could be many: bounded).
_URL_CACHE = 64


@dataclass(frozen=True)
class Event:
    """One server-sent event: its name (``message`` when unnamed) and data."""

    name: str
    data: str


def error_from_body(body: Any, status: int | None, request_id: str | None) -> AdilError:
    """The SDK error for an error object ``{"error": {...}}`` (or the inner
    object itself), falling back to the HTTP status when there is no code."""
    inner = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(inner, dict):
        inner = {"message": str(body) if body else ""}
    code = inner.get("code") or inner.get("type")
    message = str(inner.get("message") or f"HTTP {status}")
    rid = inner.get("request_id") if isinstance(inner.get("request_id"), str) else request_id
    status = inner["status"] if isinstance(inner.get("status"), int) else status
    cls = error_for_code(code) if isinstance(code, str) else AdilError
    common: dict[str, Any] = {"status": status, "request_id": rid}
    if cls is ComponentRefusedError:
        if code == "host_refused":
            return ComponentRefusedError(message, code="host_refused", **common)
        return ComponentRefusedError(message, code="library_refused", **common)
    if cls is DeadlineError:
        limit = inner.get("limit")
        return DeadlineError(message, limit=limit if limit in ("connect", "read") else "total",
                             **common)
    if cls is OutputValidationError:
        location, text = inner.get("location"), inner.get("text")
        return OutputValidationError(
            message, location=location if isinstance(location, str) else None,
            text=text if isinstance(text, str) else None, **common)
    if cls is AdilError and isinstance(code, str):
        return AdilError(f"{message} (code {code})", **common)
    return cls(message, **common)


def _refused(exc: BaseException) -> bool:
    """True when `exc` (or what caused it) is a refused TCP connection."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError):
            return True
        if isinstance(current, OSError) and current.errno == errno.ECONNREFUSED:
            return True
        current = current.__cause__ or current.__context__
    return "connection refused" in str(exc).lower()


# An error body, its HTTP status and request id -> the SDK error.
ErrorMapper = Callable[[Any, int | None, str | None], AdilError]


class Transport:
    """One service's base URL, headers, default timeout and retry policy;
    `errors` reads error bodies (an adil service's by default; the OpenAI
    client's reads other servers' envelopes too)."""

    def __init__(self, base_url: str, *, timeout: Timeout, retry: RetryPolicy | None,
                 headers: Mapping[str, str], errors: ErrorMapper = error_from_body) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retry = retry
        self.errors = errors
        self._headers = httpx.Headers({"user-agent": f"adil-python/{_version()}"})
        self._headers.update(headers)
        # httpx's transport (its connection pool over httpcore), not an
        # httpx.Client: the client's per-request layers (URL merging,
        # cookies, auth and redirect flows, event hooks) cost about 0.5 ms
        # a request on the time to first token, and this client needs none
        # of them (no redirects are followed, no proxies or .netrc read).
        self._http = httpx.HTTPTransport(trust_env=False)
        self._urls: dict[str, httpx.URL] = {}
        self._watchdog = Watchdog()

    def close(self) -> None:
        self._watchdog.close()
        self._http.close()

    # -- deadlines ------------------------------------------------------
    def deadline(self, timeout: Timeout | None) -> Deadline:
        """A running clock for one call: the client's timeout with the
        call's fields replaced."""
        return Deadline.start(self.timeout.merged(timeout))

    @staticmethod
    def _httpx_timeout(deadline: Deadline) -> dict[str, float | None]:
        """httpcore's timeouts (the ``timeout`` request extension)."""
        limits = deadline.timeout
        connect = deadline.bounded(limits.connect)
        read = deadline.bounded(limits.read)
        return {"connect": connect, "read": read, "write": read, "pool": connect}

    @staticmethod
    def _deadline_error(limit: DeadlineLimit, deadline: Deadline,
                        cause: BaseException | None = None) -> DeadlineError:
        left = deadline.remaining()
        if left is not None and left <= _SLACK:
            limit = "total"
        seconds = getattr(deadline.timeout, limit)
        error = DeadlineError(f"{limit} timeout of {seconds} s expired", limit=limit)
        error.__cause__ = cause
        return error

    # -- one attempt ----------------------------------------------------
    def _send(self, method: str, path: str, body: Any, deadline: Deadline) -> httpx.Response:
        """Sends one request and returns its response with the head read and
        the body not; an error status raises its error (body read)."""
        deadline.check()
        try:
            content = None if body is None else json.dumps(body, ensure_ascii=False)
        except (TypeError, ValueError) as exc:
            raise InvalidArgumentError(f"the request is not JSON-serialisable: {exc}") from exc
        # Our own id, so that an error before any answer (a timeout, a
        # refused connection) names the request the service may have logged.
        rid = "req_" + secrets.token_hex(12)
        headers = self._headers.copy()
        headers["x-request-id"] = rid
        if content is not None:
            headers["content-type"] = "application/json"
        request = httpx.Request(method, self._url(path), content=content, headers=headers,
                                extensions={"timeout": self._httpx_timeout(deadline)})
        try:
            return self._checked(self._open(request, deadline), deadline)
        except AdilError as exc:
            if exc.request_id is None:
                exc.request_id = rid
            raise

    def _url(self, path: str) -> httpx.URL:
        """The URL of `path`, parsed once (parsing it cost ~40 us a request)."""
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= _URL_CACHE:
                self._urls.clear()
            url = self._urls[path] = httpx.URL(self.base_url + path)
        return url

    def _checked(self, response: httpx.Response, deadline: Deadline) -> httpx.Response:
        if response.status_code >= 400:
            raise self._error_response(response, deadline)
        return response

    def _open(self, request: httpx.Request, deadline: Deadline) -> httpx.Response:
        try:
            response = self._http.handle_request(request)
        except httpx.ConnectTimeout as exc:
            raise self._deadline_error("connect", deadline, exc) from exc
        except httpx.PoolTimeout as exc:
            raise self._deadline_error("connect", deadline, exc) from exc
        except httpx.TimeoutException as exc:
            raise self._deadline_error("read", deadline, exc) from exc
        except httpx.ConnectError as exc:
            refused = _refused(exc)
            what = "refused" if refused else "failed"
            raise ServiceConnectionError(f"connecting to {self.base_url} {what}: {exc}",
                                         refused=refused) from exc
        except httpx.TransportError as exc:
            raise ServiceConnectionError(
                f"the connection to {self.base_url} failed: {exc}") from exc
        response.request = request
        return response

    def _error_response(self, response: httpx.Response, deadline: Deadline) -> AdilError:
        rid = response.headers.get("x-request-id")
        try:
            response.read()
        except httpx.TimeoutException as exc:
            return self._deadline_error("read", deadline, exc)
        except httpx.TransportError as exc:
            return ServiceConnectionError(f"the connection dropped: {exc}", request_id=rid)
        finally:
            response.close()
        try:
            body: Any = json.loads(response.content)
        except ValueError:
            body = response.text[:200]
        return self.errors(body, response.status_code, rid)

    def _attempts(self, attempt: Callable[[], Any], deadline: Deadline,
                  should_stop: Callable[[], bool] | None) -> Any:
        if self.retry is None:
            return attempt()
        return self.retry.call(attempt, deadline=deadline, should_stop=should_stop)

    # -- requests -------------------------------------------------------
    def request(self, method: str, path: str, body: Any = None, *,
                timeout: Timeout | None = None) -> Any:
        """One JSON request (retried as the policy says): the response's JSON."""
        deadline = self.deadline(timeout)

        def attempt() -> Any:
            response = self._send(method, path, body, deadline)
            try:
                response.read()
            except httpx.TimeoutException as exc:
                error = self._deadline_error("read", deadline, exc)
                error.request_id = response.headers.get("x-request-id")
                raise error from exc
            except httpx.TransportError as exc:
                raise ServiceConnectionError(
                    f"the connection dropped: {exc}",
                    request_id=response.headers.get("x-request-id")) from exc
            finally:
                response.close()
            try:
                return json.loads(response.content)
            except ValueError as exc:
                raise ServiceConnectionError(
                    f"{path}: the service answered with something that is not JSON",
                    status=response.status_code,
                    request_id=response.headers.get("x-request-id")) from exc

        return self._attempts(attempt, deadline, None)

    def stream(self, path: str, body: Any, deadline: Deadline, *,
               cancel: Any = None) -> EventStream:
        """A POST whose response is a stream of server-sent events, once its
        head arrived (busy, not ready and refused retried before that)."""
        should_stop = None if cancel is None else cancel.cancelled

        def attempt() -> EventStream:
            response = self._send("POST", path, body, deadline)
            kind = response.headers.get("content-type", "")
            if not kind.startswith("text/event-stream"):
                response.close()
                raise ServiceConnectionError(
                    f"{path}: the service answered {kind or 'without a content type'}, not a "
                    "stream of events (is this the right server?)", status=response.status_code,
                    request_id=response.headers.get("x-request-id"))
            return EventStream(response, deadline, cancel, self._watchdog)

        stream: EventStream = self._attempts(attempt, deadline, should_stop)
        return stream


def _version() -> str:
    from .. import __version__

    return __version__


class EventStream:
    """The events of one streamed response, read under the call's deadlines;
    ``abort()`` (any thread) ends it at once."""

    def __init__(self, response: httpx.Response, deadline: Deadline, cancel: Any,
                 watchdog: Watchdog) -> None:
        self.response = response
        self.request_id: str | None = response.headers.get("x-request-id")
        self.deadline = deadline
        self.reason: AbortReason | None = None
        self._cancel = cancel
        self._lock = threading.Lock()
        self._done = False
        self._lines: Iterator[str] = response.iter_lines()
        self._socket = _socket_of(response)
        self._watchdog: Watchdog | None = None
        self._remove: Callable[[], None] = lambda: None
        if deadline.timeout.total is not None or cancel is not None:
            self._watchdog = watchdog
            watchdog.watch(self)
            self._remove = _subscribe(cancel, watchdog.wake)

    # -- ending -----------------------------------------------------------
    def abort(self, reason: AbortReason) -> None:
        """Ends the stream: shuts the socket down (a blocked read returns at
        once); the server sees the connection close and cancels the run."""
        with self._lock:
            if self.reason is not None or self._done:
                return
            self.reason = reason
            sock = self._socket
        try:
            if sock is not None:
                sock.shutdown(socket.SHUT_RDWR)
            else:  # a transport that hides its socket: close what we can
                self.response.close()
        except (OSError, httpx.HTTPError):
            pass

    def finish(self) -> None:
        """After the stream's last event: reads what is left of the body (the
        end of the chunked body follows the last event at once), so that
        the connection goes back to the pool for the next request instead of
        being closed (a new connection per request costs both sides a TCP
        handshake and the server a new connection task), then closes."""
        if self.reason is None and not self._done:
            with contextlib.suppress(httpx.HTTPError, httpx.StreamError):
                for _ in itertools.islice(self._lines, _TRAILING_LINES):
                    pass
        self.close()

    def close(self) -> None:
        """Leaves the watchdog and frees the connection (idempotent)."""
        with self._lock:
            already = self._done
            self._done = True
        if already:
            return
        self._remove()
        if self._watchdog is not None:
            self._watchdog.forget(self)
        self.response.close()

    def first_look(self) -> float | None:
        """In how many seconds the watchdog must first look at this new
        stream (None: only when woken, by its cancel token)."""
        left = self.deadline.remaining()
        if self._cancel is not None and not hasattr(self._cancel, "add_callback"):
            return _POLL if left is None else min(left, _POLL)
        return left

    def check(self) -> float | None:
        """The watchdog's look at this stream: aborts it when its cancel
        token is set or its total deadline passed; else how long the
        watchdog may wait before looking again (None: until woken)."""
        with self._lock:
            if self._done or self.reason is not None:
                return None
        if self._cancel is not None and self._cancel.cancelled():
            self.abort("cancelled")
            return None
        left = self.deadline.remaining()
        if left is not None and left <= 0:
            self.abort("total")
            return None
        if self._cancel is not None and not hasattr(self._cancel, "add_callback"):
            return _POLL if left is None else min(left, _POLL)  # a token that cannot call back
        return left

    # -- reading ----------------------------------------------------------
    def next_event(self) -> Event | None:
        """The next event, or None at the end of the stream.  Raises
        DeadlineError (read or total), ServiceConnectionError (dropped)."""
        name, last = "message", self.deadline.clock()
        data: list[str] = []
        read_limit = self.deadline.timeout.read
        while True:
            try:
                line = next(self._lines)
            except StopIteration:
                self._check_aborted(None)
                if data:
                    return Event(name, "\n".join(data))
                return None
            except httpx.TimeoutException as exc:
                self._check_aborted(exc)
                error = Transport._deadline_error("read", self.deadline, exc)
                error.request_id = self.request_id
                raise error from exc
            except (httpx.TransportError, httpx.StreamError) as exc:
                self._check_aborted(exc)
                raise ServiceConnectionError(
                    f"the connection dropped mid-stream: {exc}", request_id=self.request_id
                ) from exc
            if self.reason is not None:
                self._check_aborted(None)
            if line == "":
                if data:
                    return Event(name, "\n".join(data))
                name = "message"
                continue
            if line.startswith(":"):  # a ping: not a token, the read clock runs on
                if read_limit is not None and self.deadline.clock() - last > read_limit:
                    self.abort("read")
                    self._check_aborted(None)
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
            elif field == "error":  # llama.cpp's server once sent `error: {...}` lines
                name = "error"
                data.append(value)

    def _check_aborted(self, cause: BaseException | None) -> None:
        """Raises what an abort stands for; returns when not aborted (or
        cancelled/closed: the caller ends the stream quietly)."""
        reason = self.reason
        if reason is None:
            return
        if reason in ("total", "read"):
            error = Transport._deadline_error(reason, self.deadline, cause)
            error.request_id = self.request_id
            raise error
        raise Stopped(reason)


class Watchdog:
    """One thread that watches the open streams of a transport: ends each
    one whose total deadline passed or whose cancel token was set
    (:meth:`EventStream.check`).  Started with the first stream; ``close()``
    stops it."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._streams: set[EventStream] = set()
        self._woken = False
        self._closed = False
        self._thread: threading.Thread | None = None
        # When the sleeping thread looks again by itself (monotonic seconds,
        # inf: only when woken); None while it is not asleep.
        self._asleep_until: float | None = None

    def watch(self, stream: EventStream) -> None:
        with self._cond:
            self._streams.add(stream)
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="adil-client-watchdog")
                self._thread.start()
            # Woken only when this stream needs a look before the thread
            # looks anyway: waking it on every stream put a thread switch on
            # each call's way to its first token.
            look = stream.first_look()
            asleep_until = self._asleep_until
            if asleep_until is None or (look is not None
                                        and time.monotonic() + look < asleep_until):
                self._wake_locked()

    def forget(self, stream: EventStream) -> None:
        with self._cond:
            self._streams.discard(stream)

    def wake(self) -> None:
        """Look at every stream now (a cancel token was set; any thread)."""
        with self._cond:
            self._wake_locked()

    def _wake_locked(self) -> None:
        self._woken = True
        self._cond.notify()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._wake_locked()
            thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                self._woken = False
                streams = list(self._streams)
                self._cond.release()  # aborting shuts sockets down: not under the lock
                try:
                    waits = [w for w in (s.check() for s in streams) if w is not None]
                finally:
                    self._cond.acquire()
                if not self._woken:
                    wait = min(waits) if waits else None
                    self._asleep_until = math.inf if wait is None else time.monotonic() + wait
                    self._cond.wait(wait)
                    self._asleep_until = None


class Stopped(Exception):
    """The stream was cancelled or closed on purpose."""

    def __init__(self, reason: AbortReason) -> None:
        super().__init__(reason)
        self.reason = reason


def _socket_of(response: httpx.Response) -> socket.socket | None:
    stream = response.extensions.get("network_stream")
    get = getattr(stream, "get_extra_info", None)
    sock = get("socket") if callable(get) else None
    return sock if isinstance(sock, socket.socket) else None


def _subscribe(cancel: Any, wake: Callable[[], None]) -> Callable[[], None]:
    """Asks `cancel` to call `wake` when set, if it can; returns the undo."""
    add = getattr(cancel, "add_callback", None)
    if not callable(add):
        return lambda: None
    remove: Callable[[], None] = add(wake)
    return remove
