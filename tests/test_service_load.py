"""Load on adil serve (stub engine, loopback): 50 clients x 20 requests,
retrying on busy: exactly one run at a time, none lost, none hang; 100
clients that leave mid-stream: every run cancelled, the next request served
at once, memory stable.  Bounded: every request has a timeout and every
retry loop a cap."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

import adil
from adil.service import Server

psutil = pytest.importorskip("psutil")

WAIT = 60.0
MAX_TRIES = 5000


@pytest.fixture(params=[0])
def server(write_script: Callable[..., str], request: pytest.FixtureRequest) -> Iterator[Server]:
    """A stub whose tokens each take `param` ms."""
    script = write_script({"turns": [{"text": "x" * 400}] * 1200,
                           "token_delay_ms": request.param})
    server = Server(script, library=adil.STUB_LIBRARY, port=0).start()
    assert server.host.wait_loaded(WAIT) == "ready"
    yield server
    server.stop()


def until_served(http: httpx.Client, send: Callable[[httpx.Client], httpx.Response | None]
                 ) -> int:
    """Retries on busy; the number of busy answers met."""
    for busy in range(MAX_TRIES):
        response = send(http)
        if response is None or response.status_code == 200:
            return busy
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert response.json()["error"]["code"] == "busy"
        threading.Event().wait(0.03)
    raise AssertionError("never served")


def test_fifty_clients_twenty_requests_each(server: Server) -> None:
    def one_client(index: int) -> tuple[int, int]:
        served = busy = 0
        with httpx.Client(base_url=server.url, timeout=WAIT) as http:
            for _ in range(20):
                busy += until_served(http, lambda h: h.post(
                    "/adil/v1/generate", json={"prompt": "p", "max_tokens": 2}))
                served += 1
        return served, busy

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(one_client, range(50)))
    assert sum(served for served, _ in results) == 1000
    assert server.host.max_active_runs == 1
    assert len(server.host.outcomes) == 1000
    assert all(o["stop_reason"] == "max_tokens" for o in server.host.outcomes)


@pytest.mark.parametrize("server", [1], indirect=True)
def test_hundred_clients_leaving_mid_stream(server: Server) -> None:
    process = psutil.Process()

    def leave_mid_stream(http: httpx.Client) -> httpx.Response | None:
        with http.stream("POST", "/adil/v1/generate",
                         json={"prompt": "p", "stream": True, "max_tokens": None,
                               }) as response:
            if response.status_code != 200:
                response.read()
                return response
            lines = response.iter_lines()
            assert next(lines) == "event: piece"
        return None  # closed: the client went away mid-stream

    def one_client(index: int) -> str:
        with httpx.Client(base_url=server.url, timeout=WAIT) as http:
            until_served(http, leave_mid_stream)
        return "left"

    def wave() -> None:
        with ThreadPoolExecutor(max_workers=100) as pool:
            assert list(pool.map(one_client, range(100))) == ["left"] * 100

    wave()  # warm-up: threads, buffers and caches reach their size
    before = process.memory_info().rss
    wave()
    after = process.memory_info().rss
    assert len(server.host.outcomes) == 200
    assert all(o["stop_reason"] == "cancelled" for o in server.host.outcomes)
    assert server.host.max_active_runs == 1
    with httpx.Client(base_url=server.url, timeout=WAIT) as http:  # served at once
        response = http.post("/adil/v1/generate", json={"prompt": "p", "max_tokens": 2})
        assert response.status_code == 200
    assert after - before < 64 * 1024 * 1024, (before, after)
