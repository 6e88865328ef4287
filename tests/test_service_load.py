"""Load on adil serve (stub engine, loopback), issue 12 "Tests": 50 clients x
20 requests, each retrying on busy: exactly one run at a time, none lost
(every request a success or a busy answer; with retries every one served,
each run reported once), none hang (every client bounded by a deadline);
100 clients that leave mid-stream: every run cancelled, the next request
served at once, memory stable over a second wave.

ADIL_LOAD_SCALE (default 1) scales the number of clients for a slow CI
(e.g. 0.2: 10 x 20 and 20 leaving).  Bounded: every request has a timeout,
every client a deadline; no timing asserts."""

from __future__ import annotations

import gc
import os
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import adil
from adil.service import Server

psutil = pytest.importorskip("psutil")

SCALE = float(os.environ.get("ADIL_LOAD_SCALE", "1"))
CLIENTS = max(2, round(50 * SCALE))
REQUESTS = 20
LEAVING = max(2, round(100 * SCALE))
WAIT = 20.0  # seconds: the bound of one request
DEADLINE = 240.0  # seconds: the bound of one client's whole work (never reached when it works)
RSS_GROWTH = 32 * 1024 * 1024  # bytes: a leak guard over a wave, not a measurement


@pytest.fixture
def serve(write_script: Callable[..., str]) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(script: dict[str, Any]) -> Server:
        server = Server(write_script(script), library=adil.STUB_LIBRARY, port=0).start()
        servers.append(server)
        assert server.host.wait_loaded(WAIT) == "ready"
        return server

    yield start
    for server in servers:
        server.stop()


def until_served(send: Callable[[str], httpx.Response | None], name: str,
                 deadline: float) -> tuple[str, int, httpx.Response | None]:
    """Sends (with request id name.N for attempt N) until an attempt is not
    answered busy; (the served attempt's request id, busy answers met, its
    response)."""
    attempt = 0
    while True:
        request_id = f"{name}.{attempt}"
        response = send(request_id)
        if response is None or response.status_code == 200:
            return request_id, attempt, response
        assert response.status_code == 503, response.text  # busy, nothing else
        assert response.headers["retry-after"] == "1"
        assert response.headers["x-request-id"] == request_id
        assert response.json()["error"]["code"] == "busy"
        assert time.monotonic() < deadline, f"{name}: still busy at its deadline (hung?)"
        attempt += 1
        # a short sleep (not Retry-After's second); spread, so that waiting
        # clients do not crowd out the one being served
        time.sleep(random.uniform(0.05, 0.2))


def run_clients(count: int, client: Callable[[int], list[str]]) -> list[str]:
    """Runs `client(i)` for i < count, all at once; the served request ids."""
    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(client, index) for index in range(count)]
        served: list[str] = []
        for future in futures:  # none hangs: each bounded by its deadline
            served.extend(future.result(timeout=DEADLINE + 2 * WAIT))
    return served


def outcomes_by_id(server: Server, count: int) -> dict[str, dict[str, Any]]:
    """The outcomes of the last `count` runs, once that many were reported."""
    end = time.monotonic() + WAIT
    while len(server.host.outcomes) < count and time.monotonic() < end:
        time.sleep(0.01)
    outcomes = list(server.host.outcomes)
    assert len(outcomes) == count, (len(outcomes), count)
    return {o["request_id"]: o for o in outcomes}


def test_fifty_clients_twenty_requests_each(serve: Callable[..., Server]) -> None:
    server = serve({"turns": [{"text": "abcdefgh"}] * (CLIENTS * REQUESTS)})
    busy_met = 0
    lock = threading.Lock()

    def one_client(index: int) -> list[str]:
        nonlocal busy_met
        deadline = time.monotonic() + DEADLINE
        served = []
        with httpx.Client(base_url=server.url, timeout=WAIT) as http:
            def send(request_id: str) -> httpx.Response:
                return http.post("/adil/v1/generate", json={"prompt": "p", "max_tokens": 4},
                                 headers={"x-request-id": request_id})

            for number in range(REQUESTS):
                request_id, busy, response = until_served(send, f"c{index}-r{number}",
                                                          deadline)
                assert response is not None
                body = response.json()
                assert (body["text"], body["stop_reason"]) == ("abcd", "max_tokens")
                served.append(request_id)
                with lock:
                    busy_met += busy
        return served

    served = run_clients(CLIENTS, one_client)
    assert len(served) == len(set(served)) == CLIENTS * REQUESTS  # none lost
    outcomes = outcomes_by_id(server, CLIENTS * REQUESTS)
    assert set(outcomes) == set(served)  # each served request ran once; no busy one ran
    assert all(o["stop_reason"] == "max_tokens" and o["n_tokens"] == 4
               for o in outcomes.values())
    assert server.host.max_active_runs == 1  # never two runs at once
    assert not server.host.slot_taken
    if CLIENTS >= 10:
        assert busy_met > 0  # the clients did contend


def test_hundred_clients_leaving_mid_stream(serve: Callable[..., Server]) -> None:
    # runs long enough (about 20 s each) that only a client leaving ends them
    server = serve({"turns": [{"text": "x" * 4000}] * (2 * LEAVING + 1), "token_delay_ms": 5})
    process = psutil.Process()

    def wave(label: str) -> list[str]:
        def one_client(index: int) -> list[str]:
            deadline = time.monotonic() + DEADLINE
            with httpx.Client(base_url=server.url, timeout=WAIT) as http:
                def leave_mid_stream(request_id: str) -> httpx.Response | None:
                    with http.stream("POST", "/adil/v1/generate",
                                     json={"prompt": "p", "stream": True, "max_tokens": None},
                                     headers={"x-request-id": request_id}) as response:
                        if response.status_code != 200:
                            response.read()
                            return response
                        lines = response.iter_lines()
                        assert next(lines) == "event: piece"
                    return None  # closed: the client went away mid-stream

                request_id, _, _ = until_served(leave_mid_stream, f"{label}-c{index}", deadline)
            return [request_id]

        return run_clients(LEAVING, one_client)

    first = wave("w1")  # warm-up: threads, buffers and caches reach their size
    outcomes_by_id(server, LEAVING)
    gc.collect()
    before = process.memory_info().rss
    second = wave("w2")
    outcomes = outcomes_by_id(server, 2 * LEAVING)
    gc.collect()
    after = process.memory_info().rss

    assert set(outcomes) == set(first) | set(second)  # every client's run, once
    assert all(o["stop_reason"] == "cancelled" for o in outcomes.values()), [
        o for o in outcomes.values() if o["stop_reason"] != "cancelled"][:3]
    assert server.host.max_active_runs == 1
    # every run reported (the slot is free): the next request is served at once
    with httpx.Client(base_url=server.url, timeout=WAIT) as http:
        response = http.post("/adil/v1/generate", json={"prompt": "p", "max_tokens": 2})
        assert response.status_code == 200, response.text
        assert response.json()["stop_reason"] == "max_tokens"
    assert after - before < RSS_GROWTH, (before, after)
