"""The OpenAI-compatible routes (adil.service.openai_compat): request JSON
read into model.chat / model.generate keywords (400 naming the field, 501
for what the service does not do), answers in OpenAI's shapes, SSE framing;
the routes served by adil.service.Server on the stub, driven with the
official ``openai`` client and raw httpx; one end-to-end check on
SmolLM2-135M-Instruct."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

import adil
from adil.chat_api import ChatResponse
from adil.generation import Stats, TokenLogprob
from adil.messages import ChatMessage, ChatToolCall, Usage
from adil.service.app import Request, Response, StreamingResponse
from adil.service.openai_compat import (
    ChatChunks,
    chat_json,
    chat_request,
    completion_json,
    completion_request,
    models_json,
    routes,
)

WriteScript = Callable[..., str]
Serve = Callable[..., tuple[Any, str]]
USER = [{"role": "user", "content": "Weather in Oslo?"}]
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                   "required": ["city"], "additionalProperties": False}}}
CALL_TURN = {"text": "Checking. ", "tool_call": {"name": "get_weather",
                                                 "arguments": {"city": "Oslo"}}}
CITY_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}},
               "required": ["city"], "additionalProperties": False}


# -- reading requests -------------------------------------------------------------

def test_a_chat_request_becomes_chat_keywords() -> None:
    call = chat_request({
        "model": "m", "messages": USER, "temperature": 0, "top_p": 0.5, "seed": -1,
        "max_tokens": 9, "stop": "\n", "logprobs": True, "top_logprobs": 3,
        "tools": [WEATHER], "tool_choice": "required", "stream": True,
        "stream_options": {"include_usage": True}, "user": "u", "n": 1, "top_k": 5,
        "frequency_penalty": 0, "logit_bias": {}})
    assert call.kwargs == {
        "messages": USER, "temperature": 0.0, "top_p": 0.5, "seed": 2**64 - 1, "max_tokens": 9,
        "stop": ["\n"], "logprobs": 3, "tools": [WEATHER], "tool_choice": "required",
        "top_k": 5}
    assert (call.model, call.stream, call.include_usage, call.logprobs) == ("m", True, True, True)
    # max_completion_tokens wins over the older max_tokens
    assert chat_request({"messages": USER, "max_tokens": 3,
                         "max_completion_tokens": 4}).kwargs["max_tokens"] == 4
    assert chat_request({"messages": USER, "logprobs": True}).kwargs["logprobs"] == 0


def test_response_formats_become_schemas() -> None:
    def schema(fmt: Any) -> Any:
        return chat_request({"messages": USER, "response_format": fmt}).kwargs.get("schema")

    assert schema({"type": "text"}) is None
    assert schema({"type": "json_object"}) == {"type": "object"}
    assert schema({"type": "json_schema", "json_schema": {
        "name": "city", "strict": True, "schema": CITY_SCHEMA}}) == CITY_SCHEMA


def test_openai_message_forms_are_made_plain() -> None:
    messages = chat_request({"messages": [
        {"role": "developer", "content": [{"type": "text", "text": "Be "},
                                          {"type": "text", "text": "brief."}]},
        {"role": "assistant", "content": None, "refusal": None, "audio": None,
         "function_call": None, "annotations": [],
         "tool_calls": [{"index": 0, "id": "c1", "type": "function",
                         "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]},
    ]}).kwargs["messages"]
    assert messages == [
        {"role": "system", "content": "Be brief."},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function",
                         "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "1"},
        {"role": "assistant", "content": "No."}]


@pytest.mark.parametrize(("body", "match"), [
    ([], "must be a JSON object"),
    ({}, "messages is missing"),
    ({"messages": "hi"}, "messages must be a list"),
    ({"messages": USER, "colour": 1}, "unknown field 'colour'"),
    ({"messages": USER, "temperature": "hot"}, "temperature must be a number"),
    ({"messages": USER, "temperature": True}, "temperature must be a number"),
    ({"messages": USER, "max_tokens": 0}, "max_tokens must be >= 1"),
    ({"messages": USER, "max_tokens": 2.5}, "max_tokens must be an integer"),
    ({"messages": USER, "seed": "1"}, "seed must be an integer"),
    ({"messages": USER, "stop": [1]}, "stop must be a string or a list"),
    ({"messages": USER, "stream": "yes"}, "stream must be true or false"),
    ({"messages": USER, "top_logprobs": 2}, "top_logprobs needs logprobs"),
    ({"messages": USER, "logprobs": True, "top_logprobs": 21}, r"top_logprobs must be in 0\.\.20"),
    ({"messages": USER, "response_format": {"type": "xml"}}, "response_format.type"),
    ({"messages": USER, "response_format": {"type": "json_schema"}},
     "response_format.json_schema must be"),
    ({"messages": USER, "response_format": {"type": "json_schema",
                                            "json_schema": {"schema": []}}},
     "response_format.json_schema.schema"),
    ({"messages": USER, "tools": {}}, "tools must be a list"),
    ({"messages": USER, "tool_choice": 3}, "tool_choice must be"),
    ({"messages": USER, "model": 3}, "model must be a string"),
    ({"messages": USER, "stream_options": {"include_usage": 1}}, "include_usage"),
    ({"messages": [{"role": "user", "content": [{"type": "txt"}]}]},
     r"messages\[0\]\.content\[0\] must be"),
])
def test_bad_chat_requests_name_the_field(body: Any, match: str) -> None:
    with pytest.raises(adil.InvalidArgumentError, match=match):
        chat_request(body)


@pytest.mark.parametrize(("body", "match"), [
    ({"messages": USER, "n": 2}, "n=2"),
    ({"messages": USER, "presence_penalty": 0.5}, "presence_penalty"),
    ({"messages": USER, "logit_bias": {"1": 5}}, "logit_bias"),
    ({"messages": USER, "audio": {"voice": "x"}}, "audio"),
    ({"messages": USER, "modalities": ["text", "audio"]}, "modalities"),
    ({"messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "x"}}]}]}, "image_url"),
])
def test_what_the_service_does_not_do_is_501(body: Any, match: str) -> None:
    with pytest.raises(adil.CapabilityError, match=match):
        chat_request(body)


def test_completion_requests() -> None:
    call = completion_request({"model": "m", "prompt": "Once", "max_tokens": 5, "logprobs": 2,
                               "stop": ["."], "temperature": 0, "best_of": 1, "suffix": None})
    assert (call.prompt, call.kwargs, call.logprobs) == (
        "Once", {"temperature": 0.0, "stop": ["."], "max_tokens": 5, "logprobs": 2}, 2)
    assert completion_request({"prompt": ["Once"]}).kwargs == {"max_tokens": 16}
    assert completion_request({"prompt": [[1, 2]]}).prompt == [1, 2]
    assert completion_request({"prompt": [1, 2], "echo": True}).echo
    for body, match in [({}, "prompt is missing"), ({"prompt": 3}, "prompt must be"),
                        ({"prompt": []}, "prompt must be"), ({"prompt": [True]}, "prompt must"),
                        ({"prompt": "x", "logprobs": 21}, "logprobs must be in"),
                        ({"prompt": "x", "messages": USER}, "unknown field 'messages'")]:
        with pytest.raises(adil.InvalidArgumentError, match=match):
            completion_request(body)
    for body, match in [({"prompt": ["a", "b"]}, "2 prompts"), ({"prompt": "x", "n": 3}, "n=3"),
                        ({"prompt": "x", "best_of": 2}, "best_of"),
                        ({"prompt": "x", "suffix": "y"}, "suffix"),
                        ({"prompt": "x", "echo": True, "logprobs": 1}, "echo")]:
        with pytest.raises(adil.CapabilityError, match=match):
            completion_request(body)


# -- answers ----------------------------------------------------------------------

LP = TokenLogprob(5, "Hé", -0.25, ((5, "Hé", -0.25), (6, "x", float("nan"))))


def _response(content: str | None, calls: tuple[ChatToolCall, ...] = (),
              reason: Any = "stop") -> ChatResponse:
    return ChatResponse(ChatMessage("assistant", content, calls), reason, Usage(7, 3), Stats(),
                        None, (LP,))


def test_chat_json_has_openai_shape() -> None:
    call = ChatToolCall("call_1", "get_weather", {"city": "Oslo"})
    body = chat_json(_response(None, (call,), "tool_calls"), ident="chatcmpl-1", created=5,
                     model="m", logprobs=True)
    assert body == {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 5, "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": None, "refusal": None,
                                 "tool_calls": [{"id": "call_1", "type": "function",
                                                 "function": {"name": "get_weather",
                                                              "arguments": '{"city": "Oslo"}'}}]},
                     "logprobs": {"refusal": None, "content": [{
                         "token": "Hé", "logprob": -0.25, "bytes": [72, 195, 169],
                         "top_logprobs": [
                             {"token": "Hé", "logprob": -0.25, "bytes": [72, 195, 169]},
                             {"token": "x", "logprob": LP.top[1][2], "bytes": [120]}]}]}}],
        "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}}
    plain = chat_json(_response("Hi", reason="cancelled"), ident="i", created=0, model="m")
    assert plain["choices"][0]["message"] == {"role": "assistant", "content": "Hi",
                                              "refusal": None}
    assert (plain["choices"][0]["logprobs"], plain["choices"][0]["finish_reason"]) == (
        None, "stop")


def test_chunks_have_openai_shape() -> None:
    chunks = ChatChunks("chatcmpl-1", 5, "m")
    head = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 5, "model": "m"}
    assert chunks.start() == {**head, "choices": [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
         "finish_reason": None}]}
    assert chunks.content("Hi")["choices"][0]["delta"] == {"content": "Hi"}
    call = ChatToolCall("call_1", "f", {})
    end = chunks.end(_response("Hi", (call,), "tool_calls"), include_usage=True)
    assert [c["choices"] for c in end] == [
        [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                                "function": {"name": "f", "arguments": "{}"}}]},
          "logprobs": None, "finish_reason": None}],
        [{"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}],
        []]
    assert end[2]["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert all(c["object"] == "chat.completion.chunk" for c in end)


def test_completion_json_and_models() -> None:
    usage = {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
    body = completion_json(text="ab", stop_reason="max_tokens", usage=usage,
                           ident="cmpl-1", created=3, model="m", logprobs=(LP, LP), offset=4)
    assert body["object"] == "text_completion"
    assert body["choices"] == [{"text": "ab", "index": 0, "finish_reason": "length",
                                "logprobs": {"tokens": ["Hé", "Hé"],
                                             "token_logprobs": [-0.25, -0.25],
                                             "top_logprobs": [{"Hé": -0.25, "x": LP.top[1][2]}] * 2,
                                             "text_offset": [4, 6]}}]
    assert body["usage"] == {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
    assert models_json("m") == {"object": "list", "data": [
        {"id": "m", "object": "model", "created": 0, "owned_by": "adil"}]}


# -- the handlers, called directly on the stub --------------------------------------

class FakeService:
    """The ServiceContext a handler sees, without a server."""

    model_name = "stub-model"

    def __init__(self, model: adil.Model) -> None:
        self.model = model
        self.slots = 0
        self.runs: list[dict[str, Any] | None] = []

    def ready_model(self) -> adil.Model:
        return self.model

    def components(self) -> dict[str, Any] | None:
        return None

    def take_slot(self, request: Request) -> None:
        self.slots += 1
        request.holds_slot = True

    def run_started(self, request: Request) -> None:
        self.runs.append(None)

    def run_finished(self, request: Request, outcome: dict[str, Any]) -> None:
        assert self.runs[-1] is None
        self.runs[-1] = outcome


def _handle(model: adil.Model, method: str, path: str, body: Any = None
            ) -> tuple[int, Any]:
    """Runs the route's handler; a stream's body comes back as its list of
    SSE data payloads (JSON read, "[DONE]" kept as text)."""
    async def run() -> tuple[int, Any]:
        route = routes.find(method, path)
        assert route is not None
        raw = b"" if body is None else json.dumps(body).encode()
        service = FakeService(model)
        request = Request(method, path, {}, {}, raw, "req_1", service)
        try:
            answer = await route.handler(request)
            if isinstance(answer, Response):
                return answer.status, json.loads(answer.body)
            assert isinstance(answer, StreamingResponse) and answer.on_close is not None
            data = b"".join([chunk async for chunk in answer.body]).decode()
            await answer.on_close()
            return answer.status, _sse_payloads(data)
        finally:  # every run that started was closed and reported
            assert None not in service.runs and len(service.runs) <= service.slots

    return asyncio.run(run())


def _sse_payloads(text: str) -> list[Any]:
    assert text.endswith("\n\n")
    out: list[Any] = []
    for event in text[:-2].split("\n\n"):
        lines = event.split("\n")
        assert len(lines) == 1 and lines[0].startswith("data: "), event
        payload = lines[0][len("data: "):]
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def test_handlers_on_the_stub(stub_engine: adil.Engine, write_script: WriteScript) -> None:
    model = stub_engine.load_model(write_script({"turns": [
        {"text": "Hello there."}, CALL_TURN, {"text": "One. Two."}, {"text": "Once upon"}]}))
    status, body = _handle(model, "POST", "/v1/chat/completions",
                           {"messages": USER, "model": "stub-model"})
    assert status == 200 and body["choices"][0]["message"]["content"] == "Hello there."
    assert body["id"].startswith("chatcmpl-") and body["model"] == "stub-model"
    status, events = _handle(model, "POST", "/v1/chat/completions",
                             {"messages": USER, "tools": [WEATHER], "stream": True})
    assert events[-1] == "[DONE]"
    text = "".join(e["choices"][0]["delta"].get("content", "") for e in events[:-1])
    assert text == "Checking. "  # streamed as written; the message strips it
    calls = [e["choices"][0]["delta"]["tool_calls"] for e in events[:-1]
             if "tool_calls" in e["choices"][0]["delta"]]
    assert calls[0][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Oslo"}'}
    assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
    status, body = _handle(model, "POST", "/v1/completions",
                           {"prompt": "x", "stop": ". ", "max_tokens": 50})
    assert (body["choices"][0]["text"], body["choices"][0]["finish_reason"]) == ("One", "stop")
    status, events = _handle(model, "POST", "/v1/completions",
                             {"prompt": "x", "max_tokens": 4, "stream": True, "echo": True,
                              "stream_options": {"include_usage": True}})
    assert "".join(e["choices"][0]["text"] for e in events[:-2]) == "xOnce"
    assert events[-3]["choices"][0]["finish_reason"] == "length"
    assert events[-2]["usage"]["completion_tokens"] == 4
    status, body = _handle(model, "POST", "/v1/completions",
                           {"prompt": model.tokenize("ab", add_bos=False).tolist(), "echo": True})
    assert body["choices"][0]["text"] == "ab"  # the script has no turn left: nothing more
    assert _handle(model, "GET", "/v1/models")[1]["data"][0]["id"] == "stub-model"
    with pytest.raises(adil.InvalidArgumentError, match="'gpt-4o' is not served here"):
        _handle(model, "POST", "/v1/chat/completions", {"messages": USER, "model": "gpt-4o"})


def test_an_error_after_the_stream_started_is_an_event(stub_engine: adil.Engine,
                                                       write_script: WriteScript) -> None:
    # The scripted text breaks the schema after its first characters.
    model = stub_engine.load_model(write_script({"turns": [{"text": '{"town": 1}'}]}))
    _, events = _handle(model, "POST", "/v1/chat/completions", {
        "messages": USER, "stream": True,
        "response_format": {"type": "json_schema", "json_schema": {"schema": CITY_SCHEMA}}})
    error = events[-1]["error"]
    assert (error["code"], error["type"], error["status"], error["request_id"]) == (
        "output_validation_failed", "output_validation_failed", 422, "req_1")
    assert "[DONE]" not in events


def test_a_prefill_error_is_a_status_not_a_stream(stub_engine: adil.Engine,
                                                   write_script: WriteScript) -> None:
    model = stub_engine.load_model(write_script({"turns": [{"text": "x"}], "faults": [
        {"on_call": 1, "status": "context_length"}]}))
    with pytest.raises(adil.ContextLengthError):
        _handle(model, "POST", "/v1/chat/completions", {"messages": USER, "stream": True})


# -- over HTTP: adil.service.Server on the stub ------------------------------------------

try:
    import openai
except ImportError:  # the test extra has it
    openai = None
pytestmark_openai = pytest.mark.skipif(openai is None, reason="the openai package is not "
                                       "installed (pip install '.[test]')")


@pytest.fixture
def serve(write_script: WriteScript) -> Iterator[Callable[..., tuple[Any, str]]]:
    """Starts a Server on a stub script; returns (the server, the model's
    name) once the model is loaded."""
    from adil.service.server import Server

    servers: list[Server] = []

    def start(script: dict[str, Any] | None, model: str | None = None,
              **kwargs: Any) -> tuple[Any, str]:
        """`script` on the stub, or `model` (a GGUF path) on the default engine."""
        if script is not None:
            model, kwargs["library"] = write_script(script), adil.STUB_LIBRARY
        assert model is not None
        server = Server(model, port=0, **kwargs)
        servers.append(server.start())
        deadline = time.monotonic() + 120
        key = kwargs.get("api_key")
        headers = {"authorization": f"Bearer {key}"} if key else {}
        while True:
            health = httpx.get(server.url + "/health", headers=headers, timeout=10).json()
            if health["status"] != "loading" or time.monotonic() > deadline:
                break
            time.sleep(0.02)
        assert health["status"] == "ready", health
        return server, health["model"]

    yield start
    for server in servers:
        server.stop()


def _client(server: Any, api_key: str = "unused") -> Any:
    return openai.OpenAI(base_url=server.url + "/v1", api_key=api_key, max_retries=0,
                         timeout=60)


@pytestmark_openai
def test_the_openai_client_chats(serve: Serve) -> None:
    server, name = serve({"turns": [
        {"text": "Hello there."}, {"text": "Hello again."}, CALL_TURN,
        {"text": '{"city": "Oslo"}'}, {"text": "It is 21 degrees."}]})
    client = _client(server)
    assert [m.id for m in client.models.list()] == [name]
    resp = client.chat.completions.create(model=name, messages=USER, temperature=0, seed=1,
                                          max_tokens=50, logprobs=True, top_logprobs=1)
    tokens = resp.choices[0].logprobs.content
    assert "".join(t.token for t in tokens) == "Hello there."
    assert (tokens[0].logprob, tokens[0].bytes, tokens[0].top_logprobs[0].token) == (0.0, [72], "H")
    assert resp.id.startswith("chatcmpl-") and resp.object == "chat.completion"
    assert resp.model == name
    choice = resp.choices[0]
    assert (choice.message.role, choice.message.content, choice.finish_reason) == (
        "assistant", "Hello there.", "stop")
    assert resp.usage is not None and resp.usage.completion_tokens == len("Hello there.")
    assert resp.usage.total_tokens == resp.usage.prompt_tokens + resp.usage.completion_tokens
    # streamed, with usage at the end
    chunks = list(client.chat.completions.create(
        model=name, messages=USER, stream=True, stream_options={"include_usage": True}))
    assert all(c.object == "chat.completion.chunk" and c.id == chunks[0].id for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == \
        "Hello again."
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == 12
    # a tool call, then its result sent back
    resp = client.chat.completions.create(model=name, messages=USER, tools=[WEATHER])
    choice = resp.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content == "Checking."
    call = choice.message.tool_calls[0]
    assert call.id.startswith("call_") and call.type == "function"
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather", {"city": "Oslo"})
    # structured output through response_format
    resp = client.chat.completions.create(
        model=name, messages=USER, response_format={
            "type": "json_schema", "json_schema": {"name": "city", "schema": CITY_SCHEMA}})
    assert json.loads(resp.choices[0].message.content) == {"city": "Oslo"}
    followup = [*USER, choice.message.model_dump(exclude_none=False),
                {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21}'}]
    resp = client.chat.completions.create(model=name, messages=followup, tools=[WEATHER])
    assert resp.choices[0].message.content == "It is 21 degrees."


@pytestmark_openai
def test_the_openai_client_streams_tool_calls(serve: Serve) -> None:
    # forced calls are the bare envelope (no tags), as in test_chat_api
    forced = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    server, name = serve({"turns": [CALL_TURN, {"text": forced}]})
    stream = _client(server).chat.completions.create(model=name, messages=USER, tools=[WEATHER],
                                                  tool_choice="auto", stream=True)
    chunks = list(stream)
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert len(calls) == 1 and calls[0].index == 0 and calls[0].id.startswith("call_")
    assert (calls[0].function.name, json.loads(calls[0].function.arguments)) == (
        "get_weather", {"city": "Oslo"})
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    # a forced call: no content at all, only the call
    chunks = list(_client(server).chat.completions.create(
        model=name, messages=USER, tools=[WEATHER], stream=True,
        tool_choice={"type": "function", "function": {"name": "get_weather"}}))
    assert not "".join(c.choices[0].delta.content or "" for c in chunks)
    calls = [tc for c in chunks for tc in (c.choices[0].delta.tool_calls or [])]
    assert [json.loads(tc.function.arguments) for tc in calls] == [{"city": "Oslo"}]


@pytestmark_openai
def test_the_openai_clients_parse_helper(serve: Serve) -> None:
    """client.chat.completions.parse with a pydantic model: the strict
    json_schema that the client writes is one the grammar takes."""
    import pydantic  # the openai package depends on it

    class Weather(pydantic.BaseModel):
        city: str
        temp: int

    server, name = serve({"turns": [{"text": '{"city": "Oslo", "temp": 21}'}]})
    client = _client(server)
    parse = getattr(client.chat.completions, "parse", None)  # before 1.92: under beta
    parse = parse or client.beta.chat.completions.parse
    resp = parse(model=name, messages=USER, response_format=Weather)
    assert resp.choices[0].message.parsed == Weather(city="Oslo", temp=21)


@pytestmark_openai
def test_the_openai_client_completes(serve: Serve) -> None:
    server, name = serve({"turns": [{"text": "Once upon a time."}, {"text": "Once upon a time."}]})
    client = _client(server)
    resp = client.completions.create(model=name, prompt="Tell me", max_tokens=4, logprobs=1)
    assert resp.object == "text_completion" and resp.id.startswith("cmpl-")
    choice = resp.choices[0]
    assert (choice.text, choice.finish_reason) == ("Once", "length")
    assert choice.logprobs.tokens == ["O", "n", "c", "e"]
    assert choice.logprobs.token_logprobs == [0.0] * 4  # the stub's tokens are certain
    assert resp.usage.completion_tokens == 4
    parts = list(client.completions.create(model=name, prompt="Tell me", stop=[" a"],
                                           stream=True))
    assert "".join(p.choices[0].text for p in parts) == "Once upon"
    assert parts[-1].choices[0].finish_reason == "stop"


@pytestmark_openai
def test_errors_in_openai_envelope(serve: Serve) -> None:
    server, name = serve({"turns": [{"text": "x"}], "context_length": 8})
    client = _client(server)
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model=name, messages=USER, temperature="hot")  # type: ignore[arg-type]
    assert bad.value.status_code == 400 and bad.value.code == "invalid_argument"
    assert "temperature" in bad.value.message
    with pytest.raises(openai.BadRequestError, match="not served here"):
        client.chat.completions.create(model="gpt-4o", messages=USER)
    with pytest.raises(openai.BadRequestError) as long:
        client.chat.completions.create(model=name, messages=USER)
    assert long.value.code == "context_length_exceeded"
    with pytest.raises(openai.APIStatusError) as many:
        client.chat.completions.create(model=name, messages=USER, n=2)
    assert (many.value.status_code, many.value.code) == (501, "unsupported_capability")
    # raw: the whole envelope, the request id kept
    raw = httpx.post(server.url + "/v1/chat/completions", content=b'{"messages": [',
                     headers={"x-request-id": "my-req.1", "content-type": "application/json"})
    assert raw.status_code == 400 and raw.headers["x-request-id"] == "my-req.1"
    error = raw.json()["error"]
    assert error["code"] == error["type"] == "invalid_argument"
    assert (error["param"], error["request_id"], error["status"]) == (None, "my-req.1", 400)
    for body, code, match in [
            ({"messages": [{"role": "robot", "content": "x"}]}, "invalid_argument",
             r"messages\[0\]\.role"),
            ({"messages": USER, "tools": [{"type": "function", "function": {
                "name": "f", "parameters": {"type": "object", "properties": {
                    "x": {"type": "strange"}}}}}]}, "tool_schema_invalid", "strange")]:
        raw = httpx.post(server.url + "/v1/chat/completions", json=body)
        assert (raw.status_code, raw.json()["error"]["code"]) == (400, code), raw.text
        assert re.search(match, raw.json()["error"]["message"]), raw.text
    raw = httpx.post(server.url + "/v1/completions", json={"prompt": "x", "max_tokens": 0})
    assert raw.status_code == 400 and "max_tokens" in raw.json()["error"]["message"]
    assert raw.headers["x-request-id"].startswith("req_")


def test_sse_framing(serve: Serve) -> None:
    server, name = serve({"turns": [{"text": "Hé!"}]})
    with httpx.stream("POST", server.url + "/v1/chat/completions",
                      json={"model": name, "messages": USER, "stream": True}) as resp:
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert resp.headers["x-request-id"].startswith("req_")
        raw = resp.read().decode("utf-8")
    assert raw.endswith("data: [DONE]\n\n")
    payloads = _sse_payloads(raw)
    assert "".join(p["choices"][0]["delta"].get("content", "") for p in payloads[:-1]) == "Hé!"


def test_the_slot_is_free_once_done_is_read(serve: Serve) -> None:
    """A client that reads [DONE] and at once sends its next request is
    never told busy: the run is closed before [DONE] goes out (chat and
    completions streams alike)."""
    rounds = 12
    server, name = serve({"turns": [{"text": "ok"}] * (2 * rounds)})
    bodies = [("/v1/chat/completions", {"model": name, "messages": USER, "stream": True}),
              ("/v1/completions", {"model": name, "prompt": "Hi", "stream": True})]
    with httpx.Client(base_url=server.url, timeout=30) as first, \
            httpx.Client(base_url=server.url, timeout=30) as second:
        for i in range(2 * rounds):
            path, body = bodies[i % 2]
            client = (first, second)[i % 2]
            with client.stream("POST", path, json=body) as resp:
                assert resp.status_code == 200, resp.read()
                for line in resp.iter_lines():
                    if line == "data: [DONE]":
                        break  # the next request goes out before this body has ended


@pytestmark_openai
def test_the_api_key_is_the_openai_clients(serve: Serve) -> None:
    server, name = serve({"turns": [{"text": "ok"}]}, api_key="s3cret")
    with pytest.raises(openai.AuthenticationError) as denied:
        _client(server, "wrong").models.list()
    assert (denied.value.status_code, denied.value.code) == (401, "permission_denied")
    client = _client(server, "s3cret")
    assert [m.id for m in client.models.list()] == [name]
    assert client.chat.completions.create(model=name, messages=USER).choices[0].message.content \
        == "ok"


@pytestmark_openai
def test_a_client_gone_mid_stream_cancels_its_run(serve: Serve) -> None:
    server, name = serve({"turns": [{"text": "a" * 400}, {"text": "next"}], "token_delay_ms": 20})
    client = _client(server)
    stream = client.chat.completions.create(model=name, messages=USER, stream=True,
                                            extra_headers={"x-request-id": "leaver-1"})
    first = next(iter(stream))
    assert first.choices[0].delta.role == "assistant"
    # one run at a time: another request meanwhile is busy, with Retry-After
    with pytest.raises(openai.APIStatusError) as busy:
        client.completions.create(model=name, prompt="x")
    assert (busy.value.status_code, busy.value.code) == (503, "busy")
    assert busy.value.response.headers["retry-after"] == "1"
    stream.close()
    outcome = server.host.wait_outcome("leaver-1", 30)
    assert outcome is not None and outcome["stop_reason"] == "cancelled", outcome
    assert outcome["cancel_acknowledged"] and outcome["n_tokens"] < 400
    # The slot frees once the engine stopped: a later request is served
    # (busy only while the cancelled run winds down).
    deadline = time.monotonic() + 30
    while True:
        try:
            resp = client.chat.completions.create(model=name, messages=USER)
            break
        except openai.APIStatusError as exc:
            assert exc.code == "busy" and time.monotonic() < deadline
            time.sleep(0.05)
    assert resp.choices[0].message.content == "next"


@pytestmark_openai
def test_smollm2_end_to_end(serve: Serve) -> None:
    try:
        path = adil.models.path("smollm2-135m-instruct", progress=False)
    except adil.AdilError as exc:
        pytest.skip(f"SmolLM2-135M-Instruct is not available here: {exc}")
    server, name = serve(None, model=path, context_length=512)
    client = _client(server)
    resp = client.chat.completions.create(
        model=name, messages=[{"role": "user", "content": "Name the capital of France."}],
        temperature=0, max_tokens=24)
    assert "Paris" in resp.choices[0].message.content
    assert resp.choices[0].finish_reason in ("stop", "length")
    resp = client.chat.completions.create(
        model=name, temperature=0, max_tokens=40,
        messages=[{"role": "user", "content": "Give the capital of France as JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "c", "schema": {
            "type": "object", "properties": {"capital": {"type": "string"}},
            "required": ["capital"], "additionalProperties": False}}})
    assert isinstance(json.loads(resp.choices[0].message.content)["capital"], str)
