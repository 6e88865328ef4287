"""model.chat: messages checked, answers, tool calls, streaming, finish
reasons, usage, BOS never doubled, keywords passed to generate; on the stub
(scripted outputs), tiny GGUFs, and the real SmolLM2-135M-Instruct."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.chat_api import ChatChunk, ChatResponse, ChatStream
from adil.chat_templates import CHATML
from adil.messages import ChatMessage, ChatToolCall, Usage, normalize_messages

LoadScript = Callable[..., adil.Model]
USER = [{"role": "user", "content": "Weather in Oslo?"}]
WEATHER = adil.Tool(
    name="get_weather", handler=lambda args, ctx: {"temp_c": 21}, effect="read_only",
    description="The weather in a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}},
                "required": ["city"], "additionalProperties": False})
WEATHER_DICT = WEATHER.to_openai()
CALL_TURN = {"text": "Checking. ", "tool_call": {"name": "get_weather",
                                                 "arguments": {"city": "Oslo"}}}


class Spy:
    """Wraps model.generate to record the prompt ids and keywords."""

    def __init__(self, model: adil.Model) -> None:
        self.calls: list[tuple[list[int], dict[str, Any]]] = []
        self.original = model.generate
        model.generate = self  # type: ignore[method-assign]

    def __call__(self, prompt: Any, *, stop_tokens: Any = (), **kwargs: Any) -> Any:
        if stop_tokens:
            kwargs["stop_tokens"] = stop_tokens
        self.calls.append(([int(t) for t in prompt], kwargs))
        return self.original(prompt, **kwargs)


# -- messages -------------------------------------------------------------------

@pytest.mark.parametrize(("messages", "match"), [
    ("hi", "must be a list"),
    ([], "empty"),
    ([{"role": "robot", "content": "x"}], r"messages\[0\]\.role"),
    ([{"role": "user", "content": "x"}, {"role": "user", "content": 3}],
     r"messages\[1\]\.content must be a str"),
    ([{"role": "user"}], r"messages\[0\]\.content is missing"),
    ([{"role": "user", "content": "x", "colour": 1}], "unknown field 'colour'"),
    ([{"role": "tool", "content": "x"}], r"messages\[0\]\.tool_call_id is missing"),
    ([{"role": "user", "content": "x", "tool_call_id": "a"}], "only tool messages"),
    ([{"role": "user", "content": "x", "tool_calls": [{"id": "a", "function": {"name": "f"}}]}],
     "only assistant messages"),
    ([{"role": "assistant", "tool_calls": "f()"}], r"tool_calls must be a list"),
    ([{"role": "assistant", "tool_calls": [{"function": {"name": "f"}}]}],
     r"tool_calls\[0\]\.id"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "type": "code", "function": {}}]}],
     r"tool_calls\[0\]\.type"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"arguments": "{}"}}]}],
     r"tool_calls\[0\]\.function\.name"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f",
                                                                     "arguments": "{oops"}}]}],
     r"tool_calls\[0\]\.function\.arguments is not valid JSON"),
    ([{"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f",
                                                                     "arguments": "[1]"}}]}],
     r"arguments must be a JSON object"),
    ([42], r"messages\[0\] must be a dict"),
])
def test_messages_are_checked(messages: Any, match: str) -> None:
    with pytest.raises(adil.InvalidArgumentError, match=match):
        normalize_messages(messages)


def test_messages_in_every_shape() -> None:
    call = {"id": "call_1", "type": "function",
            "function": {"name": "f", "arguments": '{"a": [1, "é"]}'}}

    class Dumped:  # the openai client's message objects
        def model_dump(self, exclude_none: bool = False) -> dict[str, Any]:
            return {"role": "user", "content": "hi"}

    checked = normalize_messages([
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1", "name": "f"},
        ChatMessage("assistant", "ok"), Dumped(),
    ])
    assert checked[0].tool_calls == (ChatToolCall("call_1", "f", {"a": [1, "é"]}),)
    assert checked[0].to_dict()["tool_calls"][0] == {
        "id": "call_1", "type": "function",
        "function": {"name": "f", "arguments": '{"a": [1, "é"]}'}}
    assert checked[1].to_dict() == {"role": "tool", "content": "1", "tool_call_id": "call_1",
                                    "name": "f"}
    assert checked[2:] == (ChatMessage("assistant", "ok"), ChatMessage("user", "hi"))
    # Arguments given as a dict are copied: the caller's dict may change later.
    arguments = {"a": 1}
    message = normalize_messages([{"role": "assistant", "tool_calls": [
        {"id": "x", "function": {"name": "f", "arguments": arguments}}]}])[0]
    arguments["a"] = 2
    assert message.tool_calls[0].arguments == {"a": 1}
    assert Usage(3, 4).total_tokens == 7


# -- answers on the stub ----------------------------------------------------------

def test_a_plain_answer(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hello there."}]})
    spy = Spy(model)
    resp = model.chat([{"role": "user", "content": "Hi"}])
    assert isinstance(resp, ChatResponse)
    assert resp.message == ChatMessage("assistant", "Hello there.")
    assert (resp.text, resp.finish_reason, resp.tool_calls, resp.value) == (
        "Hello there.", "stop", (), None)
    prompt = model.render_chat([{"role": "user", "content": "Hi"}])
    assert spy.calls[0][0] == list(model.tokenize(prompt, add_bos=False))
    assert resp.usage == Usage(len(spy.calls[0][0]), len("Hello there."))
    assert resp.stats.n_generated == resp.usage.completion_tokens


def test_length_and_stop_strings(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hello there."}, {"text": "One. Two."}]})
    resp = model.chat(USER, max_tokens=3)
    assert (resp.text, resp.finish_reason, resp.usage.completion_tokens) == ("Hel", "length", 3)
    resp = model.chat(USER, stop=". ")
    assert (resp.text, resp.finish_reason) == ("One", "stop")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(adil.InvalidArgumentError, match="max_tokens"):
            model.chat(USER, max_tokens=bad)


def test_a_tool_call(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [CALL_TURN, {"text": "It is 21 degrees in Oslo."}]})
    spy = Spy(model)
    resp = model.chat(USER, tools=[WEATHER_DICT])
    assert resp.finish_reason == "tool_calls"
    assert resp.message.content == "Checking."
    (call,) = resp.tool_calls
    assert call.id.startswith("call_") and len(call.id) > 12
    assert (call.name, call.arguments) == ("get_weather", {"city": "Oslo"})
    assert json.loads(call.to_dict()["function"]["arguments"]) == {"city": "Oslo"}
    options = spy.calls[0][1]
    assert options["constraint"].kind == "lazy_tool_call"  # the stub has a grammar
    assert "<tool_result" in options["stop"]
    # The conversation goes on with the message and the tool's result.
    messages = [*USER, resp.message,
                {"role": "tool", "tool_call_id": call.id, "content": '{"temp_c": 21}'}]
    follow = model.chat(messages, tools=[WEATHER])
    assert (follow.text, follow.finish_reason) == ("It is 21 degrees in Oslo.", "stop")
    prompt = model.tokenize(model.render_chat(messages, tools=[WEATHER]), add_bos=False)
    assert spy.calls[1][0] == list(prompt)
    text = model.render_chat(messages, tools=[WEATHER])
    assert f'<tool_result call_id="{call.id}" name="get_weather">' in text
    assert "You can call tools." in text


def test_tool_choice(stub_model: LoadScript) -> None:
    envelope = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    model = stub_model({"turns": [{"text": envelope}, {"text": "No tools."}]})
    spy = Spy(model)
    resp = model.chat(USER, tools=[WEATHER], tool_choice="get_weather")
    assert resp.finish_reason == "tool_calls" and resp.message.content is None
    assert resp.tool_calls[0].arguments == {"city": "Oslo"}
    assert spy.calls[0][1]["constraint"].kind == "tool_call"
    resp = model.chat(USER, tools=[WEATHER], tool_choice="none")
    assert (resp.text, resp.finish_reason) == ("No tools.", "stop")
    assert "constraint" not in spy.calls[1][1]
    assert "You can call tools" not in model.detokenize(spy.calls[1][0])
    for choice, match in [("get_time", "not 'auto'"), (3, "tool_choice must be"),
                          ({"type": "function"}, "as a dict")]:
        with pytest.raises(adil.InvalidArgumentError, match=match):
            model.chat(USER, tools=[WEATHER], tool_choice=choice)
    with pytest.raises(adil.InvalidArgumentError, match="needs tools"):
        model.chat(USER, tool_choice="required")
    with pytest.raises(adil.InvalidArgumentError, match="schema= or tools="):
        model.chat(USER, tools=[WEATHER], schema={"type": "object"})
    with pytest.raises(adil.InvalidArgumentError, match="second tool"):
        model.chat(USER, tools=[WEATHER, WEATHER_DICT])


def test_an_invalid_call_is_an_error(stub_model: LoadScript) -> None:
    turn = {"text": "", "tool_call": {"name": "get_weather", "arguments_json": '{"city": 5}'}}
    model = stub_model({"turns": [turn]})
    with pytest.raises(adil.OutputValidationError):
        model.chat(USER, tools=[WEATHER])


def test_a_call_cut_by_max_tokens_is_length(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [CALL_TURN]})
    resp = model.chat(USER, tools=[WEATHER], max_tokens=25)
    assert resp.finish_reason == "length"
    assert resp.tool_calls == () and resp.message.content == "Checking."


def test_structured_output(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": '{"name": "Ada", "age": 36}'}]})
    schema = {"type": "object", "properties": {"name": {"type": "string"},
                                               "age": {"type": "integer"}},
              "required": ["name", "age"], "additionalProperties": False}
    resp = model.chat(USER, schema=schema)
    assert resp.value == {"name": "Ada", "age": 36} and resp.finish_reason == "stop"


def test_keywords_reach_generate(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "a"}]})
    spy = Spy(model)
    model.chat(USER, sampling=adil.Sampling(top_k=5, temperature=0.5), temperature=0.0,
               seed=7, timeout=2.5)
    options = spy.calls[0][1]
    assert (options["sampling"].temperature, options["sampling"].top_k,
            options["sampling"].seed) == (0.0, 5, 7)
    assert options["timeout"].total == 2.5
    # max_tokens=None: what the context has left after the prompt.
    assert options["max_tokens"] == model.info.context_length - len(spy.calls[0][0])
    for bad in (0, -1.0, "1"):
        with pytest.raises(adil.InvalidArgumentError, match="timeout"):
            model.chat(USER, timeout=bad)


# -- streaming --------------------------------------------------------------------

def test_streaming_holds_back_tool_call_text(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [CALL_TURN]})
    with model.chat(USER, tools=[WEATHER], stream=True) as stream:
        assert isinstance(stream, ChatStream)
        with pytest.raises(adil.InvalidArgumentError, match="once the stream has ended"):
            _ = stream.response
        chunks = list(stream)
    assert all(isinstance(c, ChatChunk) for c in chunks)
    assert "".join(c.text for c in chunks) == "Checking. "
    assert not any("<" in c.text for c in chunks)
    assert stream.response.finish_reason == "tool_calls"
    assert stream.response.tool_calls[0].name == "get_weather"


def test_streaming_a_forced_call_shows_no_content(stub_model: LoadScript) -> None:
    """With tool_choice forcing a call the whole answer is the call: the
    stream yields no chunk of its JSON, and the response holds the call."""
    envelope = '{"name": "get_weather", "arguments": {"city": "Oslo"}}'
    for choice in ("required", "get_weather"):
        model = stub_model({"turns": [{"text": envelope}]})
        with model.chat(USER, tools=[WEATHER], tool_choice=choice, stream=True) as stream:
            assert list(stream) == []
        assert stream.response.finish_reason == "tool_calls"
        assert stream.response.message.content is None
        assert stream.response.tool_calls[0].arguments == {"city": "Oslo"}


def test_streaming_plain_text_and_a_lone_angle(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "1 < 2 and <b>"}, {"text": "x <"}]})
    chunks = [c.text for c in model.chat(USER, tools=[WEATHER], stream=True)]
    assert "".join(chunks) == "1 < 2 and <b>"
    stream = model.chat(USER, tools=[WEATHER], stream=True)
    assert "".join(c.text for c in stream) == "x <"
    assert stream.response.text == "x <" and stream.response.finish_reason == "stop"


def test_streaming_cancel_and_close(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": c * 200} for c in "abc"], "token_delay_ms": 5})
    stream = model.chat(USER, stream=True)
    first = next(stream)
    stream.cancel()
    rest = "".join(c.text for c in stream)
    assert stream.response.finish_reason == "cancelled"
    assert stream.response.text == first.text + rest and len(stream.response.text) < 200
    with model.chat(USER, stream=True) as stream:
        next(stream)
    assert stream.response.finish_reason == "cancelled"
    token = model.cancel_token()
    token.cancel()  # before the run starts: it stops at once
    resp = model.chat(USER, cancel=token)
    assert resp.finish_reason == "cancelled" and len(resp.text) < 200


# -- BOS, templates, real models ---------------------------------------------------

def test_bos_is_never_doubled(tmp_path: Path) -> None:
    with_bos, without = tmp_path / "with.gguf", tmp_path / "without.gguf"
    write_tiny_model(with_bos, "llama", T.Q8_0,
                     chat_template="{{ bos_token }}{% for m in messages %}{{ m.content }}"
                                   "{% endfor %}")
    write_tiny_model(without, "llama", T.Q8_0,
                     chat_template="{% for m in messages %}{{ m.content }}{% endfor %}")
    with adil.Engine.open() as engine:
        for path in (with_bos, without):
            with engine.load_model(path, context_length=64) as model:
                assert model.info.add_bos
                bos = model.info.bos_token
                spy = Spy(model)
                resp = model.chat([{"role": "user", "content": "the cat"}], max_tokens=2,
                                  temperature=0)
                ids = spy.calls[0][0]
                assert ids[0] == bos and ids[1] != bos, (path.name, ids)
                assert resp.usage.prompt_tokens == len(ids)


def test_a_builtin_template_warns_and_stops_at_its_end_token(tmp_path: Path) -> None:
    path = tmp_path / "gemma.gguf"
    write_tiny_model(path, "gemma3", T.Q8_0)
    with adil.Engine.open() as engine, engine.load_model(path, context_length=64) as model:
        spy = Spy(model)
        with pytest.warns(adil.chat_templates.ChatTemplateWarning, match="gemma"):
            resp = model.chat([{"role": "user", "content": "hello"}], max_tokens=3,
                              temperature=0)
        assert resp.finish_reason in ("stop", "length")
        # <end_of_turn> is the model's EOT, which stops a run anyway.
        end = int(model.tokenize("<end_of_turn>", add_bos=False)[0])
        assert end == model.info.eot_token and "stop_tokens" not in spy.calls[0][1]


def test_end_of_turn_tokens_reach_generate(stub_model: LoadScript,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    model = stub_model({"turns": [{"text": "ab\x07cd"}]})
    spy = Spy(model)
    monkeypatch.setattr(adil.chat_api, "end_tokens", lambda *a, **k: ((7,), ("<x>",)))
    resp = model.chat(USER)
    options = spy.calls[0][1]
    assert options["stop_tokens"] == (7,) and "<x>" in options["stop"]
    assert (resp.text, resp.finish_reason) == ("ab", "stop")


def test_chat_on_stub_with_a_given_template(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hi."}]})
    spy = Spy(model)
    assert model.chat(USER, chat_template=CHATML.template).text == "Hi."
    assert model.detokenize(spy.calls[0][0]) == (
        "<|im_start|>user\nWeather in Oslo?<|im_end|>\n<|im_start|>assistant\n")


def _smollm2(engine: adil.Engine) -> adil.Model:
    try:
        path = adil.models.path("smollm2-135m-instruct", progress=False)
        return engine.load_model(path, context_length=512)
    except adil.AdilError as exc:
        pytest.skip(f"SmolLM2-135M-Instruct is not available here: {exc}")


def test_smollm2_answers_the_capital_of_france() -> None:
    with adil.Engine.open() as engine, _smollm2(engine) as model:
        messages = [{"role": "user", "content": "Name the capital of France."}]
        resp = model.chat(messages, temperature=0, max_tokens=48)
        assert "Paris" in resp.text, resp.text
        assert resp.finish_reason == "stop"
        prompt = model.render_chat(messages)
        n_prompt = len(model.tokenize(prompt, add_bos=False))
        assert resp.usage == Usage(n_prompt, resp.stats.n_generated)
        assert resp.stats.n_prompt_tokens == n_prompt
        streamed = model.chat(messages, temperature=0, max_tokens=48, stream=True)
        assert "".join(c.text for c in streamed) == resp.text


def test_logprobs(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hi."}, {"text": "Yo"}]})
    if "logprobs" not in model.capabilities:
        pytest.skip("this stub build has no logprobs (ABI 2.2)")
    resp = model.chat(USER, logprobs=1)
    assert resp.logprobs is not None and len(resp.logprobs) == resp.usage.completion_tokens == 3
    assert [lp.token for lp in resp.logprobs] == list(b"Hi.")
    assert model.chat(USER).logprobs is None
