"""adil.Client against adil.service.Server on the reference stub: every
error row of the product page over HTTP, with ``.status`` and
``.request_id``, deadlines and retries, and ``adil.Agent(client.model())``
running a stub-scripted tool call with a confirmation unchanged."""

from __future__ import annotations

import gc
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_agent_stub import email_tool  # the same send_email tool as in-process

import adil
from adil.client import RemoteModel
from adil.errors import (
    BusyError,
    CapabilityError,
    ComponentRefusedError,
    ContextLengthError,
    DeadlineError,
    ModelNotReadyError,
    OutputValidationError,
    PermissionDeniedError,
    ServiceConnectionError,
)
from adil.retry import RetryPolicy, is_retryable
from adil.service.server import Server
from adil.tools import tool

FAST_RETRY = RetryPolicy(initial_delay=0.02, max_delay=0.1, max_retries=200)
LONG_TEXT = "The quick brown fox jumps over the lazy dog. " * 10
Serve = Callable[..., Server]


def client_of(server: Server, **options: Any) -> adil.Client:
    options.setdefault("timeout", adil.Timeout(connect=5, total=30))
    options.setdefault("retry", None)
    return adil.Client(server.url, **options)


def slow(delay_ms: int = 50, text: str = LONG_TEXT, **more: Any) -> dict[str, Any]:
    return {"turns": [{"text": text}] * 4, "token_delay_ms": delay_ms, **more}


def test_generate_streams_pieces_and_reports_like_a_generation(serve: Serve) -> None:
    server = serve({"turns": [{"text": "Hello there."}], "token_delay_ms": 0})
    model = client_of(server).model()
    assert "grammar" in model.capabilities
    assert model.info.name and model.info.context_length > 0
    generation = model.generate("hi", max_tokens=64)
    pieces = [piece.text for piece in generation]
    assert "".join(pieces) == generation.text == "Hello there."
    assert generation.stop_reason == "end_of_text"
    assert generation.stats.n_generated == len(generation.tokens) > 0
    assert generation.request_id
    assert model.detokenize(model.tokenize("abc", add_bos=False)) == "abc"


def test_requests_share_one_connection(serve: Serve, accepted: list[object]) -> None:
    """Streamed and plain requests of one client go over one kept-alive
    connection: a stream read to its end hands its connection back (a new
    connection per request costs both sides a handshake on every call)."""
    server = serve({"turns": [{"text": "Hello there."}] * 8, "token_delay_ms": 0}, ready=True)
    model = client_of(server).model()
    for _ in range(3):
        assert model.complete("hi", max_tokens=64).text == "Hello there."
        for _piece in model.generate("hi", max_tokens=64):
            pass
        model.tokenize("abc")
    assert len(accepted) == 1


def test_health_and_info(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}]})
    client = client_of(server, retry=FAST_RETRY)
    assert client.health()["components"]["abi_major"] == 2
    assert client.info()["model"]["architecture"] == "stub"


# -- errors by code, with status and request id --------------------------------


def test_context_length(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}], "context_length": 32})
    with pytest.raises(ContextLengthError) as info:
        client_of(server).model().generate("y" * 100, max_tokens=4)
    assert info.value.status == 400 and info.value.request_id


def test_capability(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}]})
    with pytest.raises(CapabilityError) as info:
        client_of(server).model().logits([1, 2])  # the stub computes no logits
    assert info.value.status == 501 and info.value.request_id


def test_output_validation(serve: Serve) -> None:
    server = serve({"turns": [{"text": "not a number"}]})
    with pytest.raises(OutputValidationError) as info:
        client_of(server).model().complete("x", max_tokens=20, schema={"type": "integer"})
    assert info.value.status == 422 and info.value.request_id


def test_api_key(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}]}, api_key="sesame")
    for key in (None, "wrong"):
        with pytest.raises(PermissionDeniedError) as info:
            client_of(server, api_key=key).model().tokenize("a")
        assert info.value.status == 401 and info.value.request_id
    assert list(client_of(server, api_key="sesame").model().tokenize("a", add_bos=False)) == [97]


@pytest.mark.parametrize("header", [{"host": "evil.example"},
                                    {"origin": "http://evil.example"}])
def test_forbidden_host_or_origin(serve: Serve, header: dict[str, str]) -> None:
    server = serve({"turns": [{"text": "x"}]})
    with pytest.raises(PermissionDeniedError) as info:
        client_of(server, headers=header).model().generate("a")
    assert info.value.status == 403 and info.value.request_id


# -- one at a time, not ready, retries -------------------------------------------


def test_busy_then_retry(serve: Serve) -> None:
    server = serve(slow(20))
    first = client_of(server).model().generate("a")
    next(first)  # the first run holds the slot
    with pytest.raises(BusyError) as info:
        client_of(server).model().generate("b", max_tokens=4)
    assert info.value.status == 503 and info.value.request_id
    threading.Timer(0.3, first.close).start()
    retried = client_of(server, retry=FAST_RETRY).model().complete("b", max_tokens=4)
    assert len(retried.tokens) == 4


def test_not_ready_then_retry(serve: Serve) -> None:
    server = serve({"turns": [{"text": "Ready now."}], "faults": [{"not_ready_ms": 600}]})
    with pytest.raises(ModelNotReadyError) as info:
        client_of(server).model().generate("a", max_tokens=4)
    assert info.value.status == 503 and info.value.request_id
    done = client_of(server, retry=FAST_RETRY).model().complete("a", max_tokens=16)
    assert done.text == "Ready now."


def test_engine_busy_and_not_ready_are_retried(serve: Serve) -> None:
    server = serve("busy_then_answer.json")
    assert client_of(server, retry=FAST_RETRY).model().complete("a").text == "Ready now."


def test_no_retry_past_the_total_deadline(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}], "faults": [{"not_ready_ms": 60000}]})
    client = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=0.5))
    with pytest.raises((ModelNotReadyError, DeadlineError)):
        client.model().generate("a", max_tokens=4)


def test_refused_then_retried_until_the_service_listens(serve: Serve, tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = tmp_path / "late.json"
    script.write_text(json.dumps({"turns": [{"text": "up"}]}), encoding="utf-8")
    late = Server(str(script), library=str(adil.STUB_LIBRARY), port=port)
    timer = threading.Timer(0.3, late.start)
    timer.start()
    try:
        client = adil.Client(f"http://127.0.0.1:{port}", retry=FAST_RETRY,
                             timeout=adil.Timeout(total=20))
        assert client.model().complete("a").text == "up"
    finally:
        timer.join()
        late.stop()


# -- deadlines and cancellation ---------------------------------------------------


def test_read_timeout(serve: Serve) -> None:
    server = serve(slow(1500))
    model = client_of(server, timeout=adil.Timeout(read=0.3, total=20)).model()
    with pytest.raises(DeadlineError) as info:
        model.complete("a", max_tokens=8)
    assert info.value.limit == "read" and info.value.request_id
    after = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=20))
    assert after.model().tokenize("a") is not None


def test_total_timeout_mid_stream_cancels_the_run_on_the_server(serve: Serve) -> None:
    server = serve(slow(50))  # ~450 tokens: 20 s if it ran on
    model = client_of(server, timeout=adil.Timeout(read=5, total=0.5)).model()
    generation = model.generate("a", max_tokens=None)
    pieces = []
    with pytest.raises(DeadlineError) as info:
        for piece in generation:
            pieces.append(piece)
    assert info.value.limit == "total" and pieces
    assert generation.stop_reason == "deadline"
    # the server cancelled that run: the next one is served long before it would have ended
    after = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=8)).model()
    assert len(after.complete("b", max_tokens=3).tokens) == 3


def test_cancel_token_cancels_the_run_on_the_server(serve: Serve) -> None:
    server = serve(slow(50))
    model = client_of(server).model()
    token = model.cancel_token()
    generation = model.generate("a", max_tokens=None, cancel=token)
    next(generation)
    token.cancel()
    list(generation)
    assert generation.stop_reason == "cancelled"
    after = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=8)).model()
    assert len(after.complete("b", max_tokens=3).tokens) == 3


SERVE_CHILD = """
import sys, time
from adil.service.server import Server
server = Server(sys.argv[1], library=sys.argv[2], port=0)
server.start()
print(server.port, flush=True)
time.sleep(120)
"""


def test_server_killed_mid_stream(tmp_path: Path) -> None:
    script = tmp_path / "slow.json"
    script.write_text(json.dumps(slow(50)), encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, "-c", SERVE_CHILD, str(script),
                              str(adil.STUB_LIBRARY)], stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert child.stdout is not None
        port = int(child.stdout.readline())
        model = adil.Client(f"http://127.0.0.1:{port}", retry=FAST_RETRY,
                            timeout=adil.Timeout(total=30)).model()
        generation = model.generate("a", max_tokens=None)
        next(generation)
        child.send_signal(signal.SIGKILL)
        with pytest.raises(ServiceConnectionError) as info:
            for _ in generation:
                pass
        assert info.value.refused is False
        with pytest.raises(ServiceConnectionError) as refused:
            adil.Client(f"http://127.0.0.1:{port}", retry=None).health()
        assert refused.value.refused is True
    finally:
        child.kill()
        child.wait()


# -- the agent over the service ----------------------------------------------------


def test_agent_over_the_client_confirms_a_state_changing_call(serve: Serve) -> None:
    server = serve("send_email.json")
    model = client_of(server, retry=FAST_RETRY).model()
    assert isinstance(model, RemoteModel)
    sent: list[dict[str, Any]] = []
    agent = adil.Agent(model, tools=[email_tool(sent)])
    outcome = agent.run("Email Bob about lunch.")
    assert outcome.status == "awaiting_confirmation", outcome
    assert outcome.proposal is not None and outcome.proposal.tool == "send_email"
    assert sent == []  # nothing runs before a person confirms
    outcome.proposal.approve(confirmed_by="alice")
    final = agent.resume(outcome.proposal)
    assert final.status == "completed", final
    assert sent == [{"to": "bob@example.com", "subject": "Lunch", "by": "alice"}]
    assert final.text == "Done: the email is on its way."


@tool(effect="read_only", display={"temp_c": "number", "city": "quoted_text"})
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city}


def test_agent_over_the_client_runs_a_read_only_tool_with_display_fields(serve: Serve) -> None:
    server = serve("weather.json")
    agent = adil.Agent(client_of(server, retry=FAST_RETRY).model(), tools=[get_weather])
    outcome = agent.run("Weather in Oslo?")
    assert outcome.status == "completed", outcome
    assert [call.status for call in outcome.tool_calls] == ["completed"]
    assert {f.name: f.value for f in outcome.display_fields} == {"temp_c": 21.5, "city": "Oslo"}


def test_agent_cancel_over_the_client_cancels_the_run_on_the_server(serve: Serve) -> None:
    server = serve(slow(50))
    agent = adil.Agent(client_of(server).model(), tools=[get_weather])
    streaming = threading.Event()
    handle = agent.start("Talk.", on_event=lambda event: streaming.set())
    assert streaming.wait(10)
    agent.cancel()
    assert handle.result(timeout=10).status == "cancelled"
    after = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=8)).model()
    assert len(after.complete("b", max_tokens=3).tokens) == 3


@pytest.mark.parametrize(("variant", "code"), [("abi3", "library_refused"),
                                                ("refuses_host", "host_refused")])
def test_component_refusal_over_http_is_not_retried(
        variant_libraries: dict[str, str], tmp_path: Path, variant: str, code: str) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "x"}]}), encoding="utf-8")
    with Server(str(script), library=variant_libraries[variant], port=0) as server:
        client = client_of(server, retry=FAST_RETRY)
        with pytest.raises(ComponentRefusedError) as info:
            for _ in range(200):  # the load runs in the background
                if client.health()["status"] != "loading":
                    break
                time.sleep(0.02)
            client.model().generate("a", max_tokens=4)
        assert info.value.code == code
        assert info.value.status == 503 and info.value.request_id
        assert not is_retryable(info.value)  # a wrong component set is never retried
        assert client.health()["error"]["code"] == code


def test_a_dropped_generation_frees_the_slot(serve: Serve) -> None:
    server = serve(slow(50))
    generation = client_of(server).model().generate("a", max_tokens=None)
    next(generation)
    del generation
    gc.collect()
    after = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=8)).model()
    assert len(after.complete("b", max_tokens=3).tokens) == 3


def test_bytes_prompts_and_invalid_utf8(serve: Serve) -> None:
    server = serve({"turns": [{"text": "ok"}]})
    model = client_of(server).model()
    assert model.complete(b"hi", max_tokens=8).text == "ok"
    with pytest.raises(adil.InvalidArgumentError):
        model.tokenize(b"\xff")
    assert model.ready()


def test_concurrent_clients_all_served_by_retrying_busy(serve: Serve) -> None:
    server = serve({"turns": [{"text": "abcd"}], "token_delay_ms": 1})
    client = client_of(server, retry=FAST_RETRY, timeout=adil.Timeout(total=60))
    results: list[str] = []
    errors: list[BaseException] = []

    def worker() -> None:
        model = client.model()
        try:
            for _ in range(5):
                results.append(model.complete("x", max_tokens=4).text)
        except adil.AdilError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(10)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == [] and len(results) == 50
