"""The router that route modules mount on (adil.service.app): handlers added
with Server(routes=...), JSON and streaming responses, pings in a silent
stream, error bodies (OpenAI-shaped under /v1/), a handler's bug -> 500 with
the server still up, Server.stop() with a stream open.  Stub engine,
loopback, bounded waits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import httpx
import pytest

import adil
from adil.service import Request, Response, Router, Server, StreamingResponse, sse_event

WAIT = 20.0


@pytest.fixture
def script(write_script: Callable[..., str]) -> str:
    return write_script({"turns": [{"text": "hi"}]})


def start(script: str, routes: Router) -> Server:
    server = Server(script, library=adil.STUB_LIBRARY, port=0, routes=routes).start()
    assert server.host.wait_loaded(WAIT) == "ready"
    return server


def test_mounted_routes_and_error_shapes(script: str) -> None:
    routes = Router()

    async def echo(request: Request) -> Response:
        body = request.json_object()
        return Response.json({"got": body, "model": request.service.model_name,
                              "id": request.request_id, "q": request.query}, status=201)

    async def refuse(request: Request) -> Response:
        raise adil.CapabilityError("not here")

    async def broken(request: Request) -> Response:
        raise RuntimeError("a bug")

    routes.add("POST", "/v1/echo", echo)
    routes.add("GET", "/v1/refuse", refuse)
    routes.add("GET", "/native/refuse", refuse)
    routes.add("GET", "/v1/broken", broken)
    with pytest.raises(adil.InvalidArgumentError):
        routes.add("post", "/v1/echo", echo)
    server = start(script, routes)
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as http:
            response = http.post("/v1/echo?a=1&b=", json={"x": [1, "ü"]},
                                 headers={"x-request-id": "r1"})
            assert response.status_code == 201
            assert response.json() == {"got": {"x": [1, "ü"]}, "model": server.host.model_name,
                                       "id": "r1", "q": {"a": "1", "b": ""}}
            openai = http.get("/v1/refuse").json()["error"]
            assert openai["type"] == openai["code"] == "unsupported_capability"
            assert openai["param"] is None and openai["status"] == 501
            native = http.get("/native/refuse").json()["error"]
            assert "type" not in native and native["code"] == "unsupported_capability"
            bug = http.get("/v1/broken")
            assert bug.status_code == 500 and bug.json()["error"]["code"] == "internal_error"
            assert http.get("/health").status_code == 200
    finally:
        server.stop()


def test_silent_stream_gets_pings(script: str) -> None:
    """A stream with nothing to say for a while sends ': ping' comments."""
    pinged = threading.Event()
    routes = Router()

    async def slow(request: Request) -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            # speaks once the client saw a ping (no timing in the test)
            assert await asyncio.to_thread(pinged.wait, WAIT)
            yield sse_event({"text": "late"}, "piece")

        return StreamingResponse(body(), ping_interval=0.05)

    routes.add("GET", "/slow", slow)
    server = start(script, routes)
    try:
        with httpx.Client(base_url=server.url, timeout=WAIT) as http, http.stream(
                "GET", "/slow") as response:
            lines: list[str] = []
            for line in response.iter_lines():
                lines.append(line)
                if line == ": ping":
                    pinged.set()
        assert ": ping" in lines and 'data: {"text":"late"}' in lines
    finally:
        pinged.set()
        server.stop()


def test_stop_with_an_open_stream_cancels_its_run(write_script: Callable[..., str]) -> None:
    script = write_script({"turns": [{"text": "x" * 2000}], "token_delay_ms": 20})
    server = start(script, Router())
    http = httpx.Client(base_url=server.url, timeout=WAIT)
    try:
        with http.stream("POST", "/adil/v1/generate",
                         json={"prompt": "x", "stream": True, "max_tokens": None}) as response:
            lines: Iterator[str] = response.iter_lines()
            assert next(lines) == "event: piece"
            request_id = response.headers["x-request-id"]
            server.stop()
            with pytest.raises(httpx.HTTPError):
                for _ in lines:
                    pass
        outcome = server.host.wait_outcome(request_id, WAIT)
        assert outcome is not None and outcome["stop_reason"] == "cancelled"
    finally:
        http.close()
        server.stop()
