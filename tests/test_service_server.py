"""adil.service.Server on the stub engine, spoken to with raw httpx
requests and raw sockets: every row of the server side of issue 12 (busy,
not ready, failed load, Host/Origin/CORS/preflight, API key, body cap,
malformed bodies, request ids, deadlines for slow senders, disconnects that
cancel exactly their own run, many concurrent clients).  Loopback only;
every wait is bounded; no timing asserts."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pytest

import adil
from adil.service import Server, model_host

REQUEST_ID = re.compile(r"req_[0-9a-f]{24}")
LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 20  # 900 chars
WAIT = 20.0  # seconds: the bound of every wait (never reached when things work)


@pytest.fixture
def serve(write_script: Callable[..., str]) -> Iterator[Callable[..., Server]]:
    """serve(script, **Server kwargs) -> a started Server whose model loaded."""
    servers: list[Server] = []

    def start(script: dict[str, Any] | None = None, *, wait: bool = True,
              model: str | None = None, **kwargs: Any) -> Server:
        path = model if model is not None else write_script(script or {"turns": [{"text": "hi"}]})
        server = Server(path, library=adil.STUB_LIBRARY, port=0, **kwargs)
        servers.append(server)
        server.start()
        if wait:
            assert server.host.wait_loaded(WAIT) in ("ready", "failed")
        return server

    yield start
    for server in servers:
        server.stop()


def client(server: Server, **kwargs: Any) -> httpx.Client:
    return httpx.Client(base_url=server.url, timeout=WAIT, **kwargs)


def turns(*texts: str, delay_ms: int = 0) -> dict[str, Any]:
    return {"turns": [{"text": t} for t in texts], "token_delay_ms": delay_ms}


def assert_error(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert error["code"] == code
    assert error["status"] == status
    assert error["request_id"] == response.headers["x-request-id"]
    assert isinstance(error["message"], str) and error["message"]
    return dict(error)


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    event = None
    for line in lines:
        if line.startswith("event: "):
            event = line[len("event: "):]
        elif line.startswith("data: "):
            assert event is not None
            yield event, json.loads(line[len("data: "):])
            event = None


# -- health, info, native routes -------------------------------------------------


def test_health_ready_with_components(serve: Callable[..., Server]) -> None:
    server = serve(turns("hi"), model_name="tiny")
    with client(server) as http:
        response = http.get("/health")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ready" and body["error"] is None and body["model"] == "tiny"
    components = body["components"]
    assert components["engine_name"] == "adil-stub" and components["abi_major"] == 2
    assert components["host_major"] == 2 and "grammar" in components["capabilities"]
    assert REQUEST_ID.fullmatch(response.headers["x-request-id"])


def test_native_routes(serve: Callable[..., Server]) -> None:
    server = serve(turns("Hello.", "again"))
    with client(server) as http:
        info = http.get("/adil/v1/info").json()
        assert info["model"]["architecture"] == "stub" and info["components"]
        tokens = http.post("/adil/v1/tokenize", json={"text": "hi"}).json()["tokens"]
        assert http.post("/adil/v1/detokenize", json={"tokens": tokens}).json() == {"text": "hi"}
        prompt = http.post("/adil/v1/render_chat", json={
            "messages": [{"role": "user", "content": "yo"}]}).json()["prompt"]
        assert "yo" in prompt and prompt.endswith("<|assistant|>\n")
        result = http.post("/adil/v1/generate", json={"prompt": "hi", "max_tokens": 50,
                                                      "sampling": {"seed": 1}}).json()
        assert result["text"] == "Hello." and result["stop_reason"] == "end_of_text"
        assert result["stats"]["n_generated"] == len(result["tokens"])
        assert result["cancel_acknowledged"] is False and result["logprobs"] is None
        # the stub has no logits: unsupported_capability
        no_logits = http.post("/adil/v1/logits", json={"tokens": [1]})
        assert_error(no_logits, 501, "unsupported_capability")
        assert no_logits.headers["x-should-retry"] == "false"


def test_generate_stream_events_and_request_id(serve: Callable[..., Server]) -> None:
    server = serve(turns("Hello stream."))
    with client(server) as http, http.stream(
            "POST", "/adil/v1/generate", json={"prompt": "x", "stream": True, "logprobs": 1},
            headers={"x-request-id": "mine-1.2:3"}) as response:
        assert response.status_code == 200
        assert response.headers["x-request-id"] == "mine-1.2:3"
        assert response.headers["content-type"].startswith("text/event-stream")
        events = list(sse_events(response.iter_lines()))
    names = [name for name, _ in events]
    assert names[-1] == "done" and set(names[:-1]) == {"piece"}
    done = events[-1][1]
    assert "".join(data["text"] for _, data in events[:-1]) == done["text"] == "Hello stream."
    assert len(done["logprobs"]) == len(done["tokens"])


def test_stream_error_event_after_start(serve: Callable[..., Server]) -> None:
    """A deadline that expires mid-stream: pieces, then one error event."""
    server = serve(turns(LONG_TEXT, delay_ms=20))
    with client(server) as http, http.stream(
            "POST", "/adil/v1/generate",
            json={"prompt": "x", "stream": True, "max_tokens": None,
                  "timeout": {"total": 0.3}}) as response:
        events = list(sse_events(response.iter_lines()))
    assert events[-1][0] == "error"
    error = events[-1][1]["error"]
    assert error["code"] == "timeout" and error["request_id"] == response.headers["x-request-id"]


def test_request_ids_on_errors(serve: Callable[..., Server]) -> None:
    server = serve()
    with client(server) as http:
        kept = http.get("/nowhere", headers={"x-request-id": "abc_DEF-9"})
        assert_error(kept, 404, "invalid_argument")
        assert kept.headers["x-request-id"] == "abc_DEF-9"
        replaced = http.get("/health", headers={"x-request-id": "bad id with spaces"})
        assert REQUEST_ID.fullmatch(replaced.headers["x-request-id"])
        too_long = http.get("/health", headers={"x-request-id": "a" * 129})
        assert REQUEST_ID.fullmatch(too_long.headers["x-request-id"])
        assert_error(http.get("/adil/v1/generate"), 405, "invalid_argument")
        # under /v1/, errors before a route was found are OpenAI-shaped too
        unknown = assert_error(http.post("/v1/nowhere", json={}), 404, "invalid_argument")
        assert unknown["type"] == "invalid_argument" and unknown["param"] is None


# -- bodies -------------------------------------------------------------------------


def test_malformed_bodies_are_400(serve: Callable[..., Server]) -> None:
    server = serve(turns("first", "second"))
    url = "/adil/v1/generate"
    with client(server) as http:
        assert_error(http.post(url, content=b"{not json"), 400, "invalid_argument")
        invalid = http.post(url, content=b'{"prompt": "\xff\xfe"}')
        assert "UTF-8" in assert_error(invalid, 400, "invalid_argument")["message"]
        assert_error(http.post(url, content=b""), 400, "invalid_argument")
        assert_error(http.post(url, json=[1, 2]), 400, "invalid_argument")
        assert_error(http.post(url, json={"prompt": 5}), 400, "invalid_argument")
        assert_error(http.post(url, json={"prompt": "x", "max_tokens": "9"}), 400,
                     "invalid_argument")
        assert_error(http.post(url, json={"prompt": "x", "bogus": 1}), 400, "invalid_argument")
        assert_error(http.post(url, json={"prompt": "x", "sampling": {"temperature": -1}}),
                     400, "invalid_argument")
        assert_error(http.post(url, content=b"[" * 100000), 400, "invalid_argument")
        assert_error(http.post(url, content=b'{"prompt": "x", "max_tokens": NaN}'), 400,
                     "invalid_argument")
        assert_error(http.post(url, content=b'{"prompt": [' + b"9" * 5000 + b"]}"), 400,
                     "invalid_argument")
        # nothing ran: the first turn is still next
        assert http.post(url, json={"prompt": "x"}).json()["text"] == "first"


def test_oversized_body_is_413(serve: Callable[..., Server]) -> None:
    server = serve(max_body_bytes=1000)
    with client(server) as http:
        big = {"prompt": "x" * 2000}
        assert_error(http.post("/adil/v1/generate", json=big), 413, "invalid_argument")

        def chunks() -> Iterator[bytes]:  # chunked: no Content-Length to refuse up front
            yield b'{"prompt": "'
            for _ in range(10):
                yield b"y" * 200
            yield b'"}'

        assert_error(http.post("/adil/v1/generate", content=chunks()), 413, "invalid_argument")
        # a large body still being sent is read and dropped: the client gets its 413
        assert_error(http.post("/adil/v1/generate", content=b"z" * (8 << 20)), 413,
                     "invalid_argument")
        assert http.get("/health").status_code == 200


def test_context_length_is_400(serve: Callable[..., Server]) -> None:
    server = serve({"turns": [{"text": "hi"}], "context_length": 16})
    with client(server) as http:
        response = http.post("/adil/v1/generate", json={"prompt": "x" * 100})
    assert_error(response, 400, "context_length_exceeded")


# -- loading ------------------------------------------------------------------------


def test_not_ready_while_loading(serve: Callable[..., Server],
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real_open = model_host.open_model

    def slow_open(config: Any, on_engine: Any) -> Any:
        assert release.wait(WAIT)
        return real_open(config, on_engine)

    monkeypatch.setattr(model_host, "open_model", slow_open)
    server = serve(turns("loaded"), wait=False)
    try:
        with client(server) as http:
            health = http.get("/health").json()
            assert health["status"] == "loading" and health["components"] is None
            for response in (http.post("/adil/v1/generate", json={"prompt": "x"}),
                             http.get("/adil/v1/info"),
                             http.post("/adil/v1/tokenize", json={"text": "x"})):
                assert_error(response, 503, "model_not_ready")
                assert response.headers["retry-after"] == "1"
                assert response.headers["x-should-retry"] == "true"
            # the body is checked before readiness
            assert_error(http.post("/adil/v1/generate", content=b"{"), 400, "invalid_argument")
            release.set()
            assert server.host.wait_loaded(WAIT) == "ready"
            assert http.get("/health").json()["status"] == "ready"
            assert http.post("/adil/v1/generate", json={"prompt": "x"}).json()["text"] == "loaded"
    finally:
        release.set()


def test_failed_load_reports_its_error(serve: Callable[..., Server], tmp_path: Any) -> None:
    server = serve(model=str(tmp_path / "missing.json"))
    assert server.host.wait_loaded(WAIT) == "failed"
    with client(server) as http:
        health = http.get("/health")
        assert health.status_code == 200
        body = health.json()
        assert body["status"] == "failed"
        assert body["error"]["code"] == "model_file_unreadable"
        assert body["components"]["engine_name"] == "adil-stub"  # the engine did open
        response = http.post("/adil/v1/generate", json={"prompt": "x"})
        assert_error(response, 503, "model_file_unreadable")
        assert "retry-after" not in response.headers  # permanent
        assert response.headers["x-should-retry"] == "false"  # the openai client would retry


def test_bad_script_fails_with_model_format_invalid(serve: Callable[..., Server]) -> None:
    server = serve({"turns": "not a list"})
    with client(server) as http:
        assert http.get("/health").json()["error"]["code"] == "model_format_invalid"


# -- who may call ---------------------------------------------------------------------


def test_forbidden_origin_is_403_and_nothing_runs(serve: Callable[..., Server]) -> None:
    server = serve(turns("first", "second"), allow_origins=["http://good.example"])
    with client(server) as http:
        bad = {"origin": "http://evil.example"}
        response = http.post("/adil/v1/generate", json={"prompt": "x"}, headers=bad)
        error = assert_error(response, 403, "permission_denied")
        assert "http://evil.example" in error["message"]
        assert "access-control-allow-origin" not in response.headers
        assert_error(http.get("/health", headers=bad), 403, "permission_denied")
        assert_error(http.post("/adil/v1/generate", json={"prompt": "x"},
                               headers={"origin": "null"}), 403, "permission_denied")
        assert http.post("/adil/v1/generate", json={"prompt": "x"}).json()["text"] == "first"
        assert len(server.host.outcomes) == 1


def test_allowed_origin_gets_cors_headers(serve: Callable[..., Server]) -> None:
    origin = "http://good.example:3000"
    server = serve(turns("ok"), allow_origins=[origin])
    with client(server) as http:
        response = http.post("/adil/v1/generate", json={"prompt": "x"},
                             headers={"origin": origin})
        assert response.status_code == 200
        assert response.headers["access-control-allow-origin"] == origin
        assert response.headers["vary"] == "Origin"
        assert "x-request-id" in response.headers["access-control-expose-headers"]
        # errors to an allowed origin carry CORS too, so the page can read them
        error = http.post("/adil/v1/generate", content=b"{", headers={"origin": origin})
        assert error.status_code == 400
        assert error.headers["access-control-allow-origin"] == origin


def test_preflight(serve: Callable[..., Server]) -> None:
    origin = "http://good.example"
    server = serve(allow_origins=[origin], api_key="k")
    preflight = {"origin": origin, "access-control-request-method": "POST",
                 "access-control-request-headers": "content-type, authorization"}
    with client(server) as http:
        response = http.options("/adil/v1/generate", headers=preflight)
        assert response.status_code == 204
        assert response.headers["access-control-allow-origin"] == origin
        assert response.headers["access-control-allow-methods"] == "GET, POST"
        allowed = response.headers["access-control-allow-headers"]
        assert {"content-type", "authorization", "x-request-id"} <= {
            h.strip() for h in allowed.split(",")}
        assert response.headers["access-control-max-age"] == "600"
        refused = http.options("/adil/v1/generate",
                               headers={**preflight, "origin": "http://evil.example"})
        assert_error(refused, 403, "permission_denied")


def test_rebinding_host_is_403(serve: Callable[..., Server]) -> None:
    server = serve(turns("first"), allow_hosts=["my-box.lan"])
    with client(server) as http:
        for host in ("evil.example", "evil.example:8765", "127.0.0.1.evil.example"):
            assert_error(http.get("/health", headers={"host": host}), 403, "permission_denied")
        for host in ("localhost", f"localhost:{server.port}", "127.0.0.1", "[::1]:80",
                     "my-box.lan:1234", "app.localhost"):
            assert http.get("/health", headers={"host": host}).status_code == 200, host
        response = http.post("/adil/v1/generate", json={"prompt": "x"},
                             headers={"host": "attacker.example"})
        assert_error(response, 403, "permission_denied")
        assert http.post("/adil/v1/generate", json={"prompt": "x"}).json()["text"] == "first"


def test_api_key(serve: Callable[..., Server]) -> None:
    server = serve(turns("first"), api_key="s3cret")
    with client(server) as http:
        assert_error(http.get("/health"), 401, "permission_denied")
        wrong = http.post("/adil/v1/generate", json={"prompt": "x"},
                          headers={"authorization": "Bearer nope"})
        assert_error(wrong, 401, "permission_denied")
        assert wrong.headers["www-authenticate"].startswith("Bearer")
        assert_error(http.get("/health", headers={"authorization": "Basic s3cret"}), 401,
                     "permission_denied")
        good = {"authorization": "Bearer s3cret"}
        assert http.get("/health", headers=good).status_code == 200
        assert http.post("/adil/v1/generate", json={"prompt": "x"},
                         headers=good).json()["text"] == "first"


def test_public_bind_needs_the_flag() -> None:
    with pytest.raises(adil.InvalidArgumentError, match="public"):
        Server("x.json", host="0.0.0.0", port=0)


# -- slow and broken senders (raw sockets) ---------------------------------------------


def raw_exchange(server: Server, data: bytes, *, close_write: bool = False) -> bytes:
    """Send `data`, then read until the server closes (bounded)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(data)
        if close_write:
            sock.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_slow_head_is_cut_off(serve: Callable[..., Server]) -> None:
    server = serve(head_timeout=0.3)
    answer = raw_exchange(server, b"GET /health HTTP/1.1\r\nHost: localhost\r\n")
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b'"code":"timeout"' in answer and b"x-request-id: req_" in answer


def test_slow_body_is_cut_off(serve: Callable[..., Server]) -> None:
    server = serve(body_timeout=0.3)
    head = (b"POST /adil/v1/generate HTTP/1.1\r\nHost: localhost\r\n"
            b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"pro")
    answer = raw_exchange(server, head)
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b'"code":"timeout"' in answer


def test_malformed_http_and_huge_headers(serve: Callable[..., Server]) -> None:
    server = serve()
    assert raw_exchange(server, b"NOT HTTP AT ALL\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    huge = b"GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 100_000 + b"\r\n\r\n"
    assert raw_exchange(server, huge).startswith(b"HTTP/1.1 431 ")
    with client(server) as http:
        assert http.get("/health").status_code == 200


# -- one run at a time, busy, cancellation ----------------------------------------------


def test_busy_while_another_runs_health_never_busy(serve: Callable[..., Server]) -> None:
    server = serve(turns(LONG_TEXT, "after", delay_ms=20))
    with client(server) as http, client(server) as other:
        with http.stream("POST", "/adil/v1/generate",
                         json={"prompt": "x", "stream": True, "max_tokens": None}) as running:
            # (the iterator is kept: dropping it would close the stream)
            events = sse_events(running.iter_lines())
            assert next(events)[0] == "piece"
            busy = other.post("/adil/v1/generate", json={"prompt": "y"})
            assert_error(busy, 503, "busy")
            assert busy.headers["retry-after"] == "1"
            assert busy.headers["x-should-retry"] == "true"
            stream_busy = other.post("/adil/v1/generate", json={"prompt": "y", "stream": True})
            assert_error(stream_busy, 503, "busy")
            assert_error(other.post("/adil/v1/logits", json={"tokens": [1]}), 503, "busy")
            assert other.get("/health").status_code == 200
            assert other.get("/adil/v1/info").status_code == 200
            assert other.post("/adil/v1/tokenize", json={"text": "z"}).status_code == 200
            running_id = running.headers["x-request-id"]
        # closing the stream cancelled its run; the slot is free again
        outcome = server.host.wait_outcome(running_id, WAIT)
        assert outcome is not None and outcome["stop_reason"] == "cancelled"
        assert outcome["n_tokens"] < len(LONG_TEXT)
        assert other.post("/adil/v1/generate", json={"prompt": "y"}).json()["text"] == "after"
    assert server.host.max_active_runs == 1


def test_disconnect_cancels_only_its_own_run(serve: Callable[..., Server]) -> None:
    text = "A short answer that keeps going for a while."
    # 44 tokens at 40 ms: the run outlasts the three clients below (each a new
    # httpx.Client, 0.1-0.3 s apiece on a busy machine)
    server = serve(turns(text, "next", delay_ms=40))
    with client(server) as http, http.stream(
            "POST", "/adil/v1/generate",
            json={"prompt": "x", "stream": True}) as kept:
        stream = sse_events(kept.iter_lines())
        assert next(stream)[0] == "piece"
        # other clients come and go, busy, while it runs: it is not touched
        for _ in range(3):
            with client(server) as other, other.stream(
                    "POST", "/adil/v1/generate", json={"prompt": "y", "stream": True}) as gone:
                assert gone.status_code == 503
        raw = socket.create_connection(("127.0.0.1", server.port), timeout=WAIT)
        raw.sendall(b"POST /adil/v1/generate HTTP/1.1\r\nHost: localhost\r\n"
                    b"Content-Length: 30\r\n\r\n{\"prompt\"")
        raw.close()
        events = list(stream)
    done = events[-1][1]
    assert events[-1][0] == "done" and done["stop_reason"] == "end_of_text"
    assert done["text"] == text and done["cancel_acknowledged"] is False


def test_disconnect_before_the_first_piece_cancels(serve: Callable[..., Server]) -> None:
    """The client goes away while the first step (the prefill's) runs."""
    server = serve(turns(LONG_TEXT, "next", delay_ms=20))
    body = json.dumps({"prompt": "x" * 200, "max_tokens": None}).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT) as sock:
        sock.sendall(b"POST /adil/v1/generate HTTP/1.1\r\nHost: localhost\r\n"
                     b"x-request-id: early-leaver\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        # wait until the run began (the slot is taken), then leave
        for _ in range(int(WAIT * 100)):
            if server.host.slot_taken:
                break
            threading.Event().wait(0.01)
        assert server.host.slot_taken
    outcome = server.host.wait_outcome("early-leaver", WAIT)
    assert outcome is not None and outcome["stop_reason"] == "cancelled"
    assert outcome["cancel_acknowledged"] is True
    with client(server) as http:
        assert http.post("/adil/v1/generate", json={"prompt": "y"}).json()["text"] == "next"


def test_twenty_clients_one_run_at_a_time(serve: Callable[..., Server]) -> None:
    server = serve({"turns": [{"text": f"answer {i}"} for i in range(200)],
                    "token_delay_ms": 2})

    def one_client(index: int) -> list[tuple[int, str]]:
        seen = []
        with client(server) as http:
            for _ in range(3):
                stream = index % 2 == 0
                response = http.post("/adil/v1/generate", json={"prompt": "x", "stream": stream})
                code = response.json()["error"]["code"] if response.status_code != 200 else ""
                seen.append((response.status_code, code))
        return seen

    with ThreadPoolExecutor(max_workers=20) as pool:
        results = [r for batch in pool.map(one_client, range(20)) for r in batch]
    assert len(results) == 60
    assert {status for status, _ in results} <= {200, 503}
    assert all(code == "busy" for status, code in results if status == 503)
    ok = sum(1 for status, _ in results if status == 200)
    assert ok >= 1
    assert server.host.max_active_runs == 1
    assert len(server.host.outcomes) == ok
    with client(server) as http:  # nothing left holding the slot
        assert http.post("/adil/v1/generate", json={"prompt": "x"}).status_code == 200


def test_next_request_right_after_the_last_event_is_not_busy(
        serve: Callable[..., Server]) -> None:
    """The slot is free before the last bytes of an answer go out."""
    server = serve({"turns": [{"text": f"t{i}"} for i in range(80)]})
    with client(server) as http, client(server) as other:
        for _ in range(20):
            with http.stream("POST", "/adil/v1/generate",
                             json={"prompt": "x", "stream": True}) as response:
                events = sse_events(response.iter_lines())
                assert [name for name, _ in events][-1] == "done"
                assert other.post("/adil/v1/generate", json={"prompt": "y"}).status_code == 200
            assert http.post("/adil/v1/generate", json={"prompt": "x"}).status_code == 200
            assert other.post("/adil/v1/generate", json={"prompt": "y"}).status_code == 200


def test_stop_while_loading_and_port_in_use(serve: Callable[..., Server],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()
    real_open = model_host.open_model
    loaded: list[Any] = []

    def slow_open(config: Any, on_engine: Any) -> Any:
        assert release.wait(WAIT)
        engine, model = real_open(config, on_engine)
        loaded.append(model)
        return engine, model

    monkeypatch.setattr(model_host, "open_model", slow_open)
    server = serve(turns("x"), wait=False)
    taken = Server("unused.json", library=adil.STUB_LIBRARY, port=server.port)
    with pytest.raises(OSError):
        taken.start()
    server.stop()  # returns while the load still waits
    release.set()
    server.host.wait_loaded(WAIT)
    assert len(loaded) == 1
    with pytest.raises(adil.AdilError):  # closed by the loader: the server had stopped
        loaded[0].tokenize("x")


@pytest.mark.parametrize(("variant", "code"), [("refuses_host", "host_refused"),
                                               ("abi1", "library_refused"),
                                               ("abi3", "library_refused")])
def test_refused_components_fail_the_load(write_script: Callable[..., str],
                                          variant_libraries: dict[str, str], variant: str,
                                          code: str) -> None:
    """A service whose engine is not of the version-2 set: /health says
    failed with the refusal's code; operations get it as a 503."""
    server = Server(write_script({"turns": [{"text": "x"}]}),
                    library=variant_libraries[variant], port=0).start()
    try:
        assert server.host.wait_loaded(WAIT) == "failed"
        with client(server) as http:
            health = http.get("/health").json()
            assert health["status"] == "failed" and health["error"]["code"] == code
            assert health["components"] is None
            response = http.post("/adil/v1/generate", json={"prompt": "x"})
            assert_error(response, 503, code)
            assert "retry-after" not in response.headers  # permanent
    finally:
        server.stop()


def test_a_client_that_stops_reading_is_treated_as_gone(serve: Callable[..., Server]) -> None:
    """Backpressure: a stream nobody reads (socket buffers full) for
    write_timeout seconds is cancelled and the slot freed."""
    server = serve({"turns": [{"text": "w" * 1_000_000}], "context_length": 1 << 20,
                    "token_delay_ms": 0}, write_timeout=0.5, context_length=1 << 20)
    body = json.dumps({"prompt": "x", "max_tokens": None, "stream": True}).encode()
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.settimeout(WAIT)
        sock.connect(("127.0.0.1", server.port))
        sock.sendall(b"POST /adil/v1/generate HTTP/1.1\r\nHost: localhost\r\n"
                     b"x-request-id: sleepy-reader\r\n"
                     b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        outcome = server.host.wait_outcome("sleepy-reader", WAIT)
    assert outcome is not None and outcome["stop_reason"] == "cancelled"
    with client(server) as http:
        assert http.get("/health").status_code == 200
