"""adil.Client's transport without a real service: a refused connection, a
connect timeout on a listening socket that never accepts, and a tiny
scripted peer (one raw socket, one canned response) for a read timeout, a
total deadline across a trickling stream, and a connection dropped
mid-stream.  The rows against ``adil serve`` itself are in
test_client_service.py."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import adil
from adil.client.transport import error_from_body
from adil.errors import (
    BusyError,
    ComponentRefusedError,
    DeadlineError,
    OutputValidationError,
    ServiceConnectionError,
)
from adil.retry import RetryPolicy

NO_RETRY = None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_refused_connection_is_a_refused_service_connection_error() -> None:
    client = adil.Client(f"http://127.0.0.1:{free_port()}", retry=NO_RETRY,
                         timeout=adil.Timeout(connect=2, total=5))
    with pytest.raises(ServiceConnectionError) as info:
        client.health()
    assert info.value.refused is True
    assert info.value.code == "connection_error"
    assert info.value.request_id  # the client's own id of the request


def test_refused_connections_are_retried_within_the_total_deadline() -> None:
    policy = RetryPolicy(max_retries=100, initial_delay=0.05, max_delay=0.1)
    client = adil.Client(f"http://127.0.0.1:{free_port()}", retry=policy,
                         timeout=adil.Timeout(total=0.5))
    started = time.monotonic()
    with pytest.raises(ServiceConnectionError) as info:
        client.model().tokenize("x")
    assert info.value.refused is True
    assert time.monotonic() - started < 5  # gave up at the total deadline, not after 100 tries


@pytest.fixture
def blackhole() -> Iterator[int]:
    """A listening socket whose backlog is full and that never accepts: a
    further connect is never answered (its SYN is dropped)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # Linux lets backlog + 1 connections wait; fill them all
        filler = socket.socket()
        filler.setblocking(False)
        try:
            filler.connect(("127.0.0.1", port))
        except BlockingIOError:
            pass
        fillers.append(filler)
    time.sleep(0.1)
    yield port
    for filler in fillers:
        filler.close()
    server.close()


def test_connect_timeout_on_a_socket_that_never_accepts(blackhole: int) -> None:
    client = adil.Client(f"http://127.0.0.1:{blackhole}", retry=NO_RETRY,
                         timeout=adil.Timeout(connect=0.3, total=10))
    with pytest.raises(DeadlineError) as info:
        client.health()
    assert info.value.limit == "connect" and info.value.request_id


def test_connect_cut_by_the_total_deadline_is_a_total_timeout(blackhole: int) -> None:
    client = adil.Client(f"http://127.0.0.1:{blackhole}", retry=NO_RETRY,
                         timeout=adil.Timeout(connect=10, total=0.3))
    with pytest.raises(DeadlineError) as info:
        client.health()
    assert info.value.limit == "total"


# -- a scripted peer ---------------------------------------------------------

SSE_HEAD = (b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
            b"x-request-id: req_scripted\r\ntransfer-encoding: chunked\r\n\r\n")


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


def piece(text: str) -> bytes:
    body = json.dumps({"text": text, "tokens": [1], "logprobs": None}).encode()
    return chunk(b"event: piece\ndata: " + body + b"\n\n")


class Peer:
    """Accepts one connection, reads the request head and body, then runs
    `script(connection)`; records when the client closed its side."""

    def __init__(self, script: Callable[[socket.socket], None]) -> None:
        self.script = script
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(4)
        self.port = self.server.getsockname()[1]
        self.client_closed = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection:
            data = b""
            while b"\r\n\r\n" not in data:
                data += connection.recv(65536)
            head, _, body = data.partition(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            while len(body) < length:
                body += connection.recv(65536)
            try:
                self.script(connection)
            except OSError:  # the client went away while we wrote
                self.client_closed.set()
                return
            connection.settimeout(10)
            try:
                while connection.recv(65536):
                    pass
            except OSError:
                pass
            self.client_closed.set()

    def close(self) -> None:
        self.server.close()


def trickle(connection: socket.socket) -> None:
    """A piece every 50 ms, for ever (until the client closes)."""
    connection.sendall(SSE_HEAD)
    while True:
        connection.sendall(piece("a"))
        time.sleep(0.05)


def silent(connection: socket.socket) -> None:
    connection.sendall(SSE_HEAD + piece("a"))
    time.sleep(3)


def dropped(connection: socket.socket) -> None:
    connection.sendall(SSE_HEAD + piece("a") + piece("b"))
    connection.shutdown(socket.SHUT_RDWR)


@pytest.fixture
def peer() -> Iterator[Callable[[Callable[[socket.socket], None]], Peer]]:
    made: list[Peer] = []

    def make(script: Callable[[socket.socket], None]) -> Peer:
        made.append(Peer(script))
        return made[-1]

    yield make
    for p in made:
        p.close()


def model_of(peer: Peer, timeout: adil.Timeout) -> Any:
    return adil.Client(f"http://127.0.0.1:{peer.port}", retry=NO_RETRY, timeout=timeout).model()


def test_total_deadline_across_a_trickling_stream_closes_it(peer: Any) -> None:
    p = peer(trickle)
    generation = model_of(p, adil.Timeout(read=5, total=0.4)).generate("x")
    pieces = []
    with pytest.raises(DeadlineError) as info:
        for item in generation:
            pieces.append(item)
    assert info.value.limit == "total"
    assert info.value.request_id == "req_scripted"
    assert pieces and generation.stop_reason == "deadline"
    assert p.client_closed.wait(5)  # the server saw the connection close


def test_read_timeout_on_silence(peer: Any) -> None:
    p = peer(silent)
    generation = model_of(p, adil.Timeout(read=0.3, total=20)).generate("x")
    assert next(generation).text == "a"
    with pytest.raises(DeadlineError) as info:
        next(generation)
    assert info.value.limit == "read"


def test_a_connection_dropped_mid_stream(peer: Any) -> None:
    p = peer(dropped)
    generation = model_of(p, adil.Timeout(total=20)).generate("x")
    with pytest.raises(ServiceConnectionError) as info:
        for _ in generation:
            pass
    assert info.value.refused is False
    assert generation.text == "ab"


def test_cancel_token_closes_the_stream(peer: Any) -> None:
    p = peer(trickle)
    model = model_of(p, adil.Timeout(total=20))
    token = model.cancel_token()
    generation = model.generate("x", cancel=token)
    assert next(generation).text == "a"
    threading.Timer(0.2, token.cancel).start()
    rest = list(generation)  # ends quietly
    assert generation.stop_reason == "cancelled"
    assert generation.text == "a" * (1 + len(rest))
    assert p.client_closed.wait(5)


# -- error bodies ------------------------------------------------------------


def test_error_bodies_map_by_code() -> None:
    busy = error_from_body({"error": {"code": "busy", "message": "m", "request_id": "r1",
                                      "status": 503}}, 503, None)
    assert isinstance(busy, BusyError) and busy.status == 503 and busy.request_id == "r1"
    late = error_from_body({"error": {"code": "timeout", "message": "m", "limit": "read"}},
                           None, "r2")
    assert isinstance(late, DeadlineError) and late.limit == "read" and late.request_id == "r2"
    bad = error_from_body({"error": {"code": "output_validation_failed", "message": "m",
                                     "text": "{", "location": "/a"}}, 422, None)
    assert isinstance(bad, OutputValidationError) and bad.text == "{" and bad.location == "/a"
    host = error_from_body({"error": {"code": "host_refused", "message": "m"}}, 503, None)
    assert isinstance(host, ComponentRefusedError) and host.code == "host_refused"
    other = error_from_body("<html>", 502, "r3")
    assert type(other) is adil.AdilError and other.status == 502


def pinging(connection: socket.socket) -> None:
    """One piece, then only ``: ping`` comments (the socket is never silent)."""
    connection.sendall(SSE_HEAD + piece("a"))
    while True:
        connection.sendall(chunk(b": ping\n\n"))
        time.sleep(0.05)


def test_pings_are_not_tokens_for_the_read_limit(peer: Any) -> None:
    p = peer(pinging)
    generation = model_of(p, adil.Timeout(read=0.3, total=20)).generate("x")
    assert next(generation).text == "a"
    with pytest.raises(DeadlineError) as info:
        next(generation)
    assert info.value.limit == "read" and info.value.request_id == "req_scripted"
    assert p.client_closed.wait(5)
