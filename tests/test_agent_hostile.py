"""Hostile model output and hostile tool results on the reference stub
engine: text that is not Unicode (lone surrogate escapes), nesting deep
enough to exhaust Python's recursion, cut-off tool-call tags.  Each is
reported to the model (or in the outcome) and leaves the agent usable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from nesting import deep_list

import adil
from adil.agent import Agent
from adil.tools import Tool, ToolContext

LoadScript = Callable[..., adil.Model]


def lookup(result: Any = None, log: list[Any] | None = None) -> Tool:
    def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        if log is not None:
            log.append(arguments)
        return {"ok": 1} if result is None else result

    return Tool(name="lookup", handler=handler, effect="read_only",
                parameters={"type": "object", "properties": {"q": {"type": "string"}},
                            "additionalProperties": False})


def raw_call(arguments_json: str, name: str = "lookup") -> dict[str, Any]:
    return {"tool_call": {"name": name, "arguments_json": arguments_json}}


def encodable(agent: Agent) -> None:
    for message in agent.messages:
        message["content"].encode("utf-8")


# -- text that is not Unicode ------------------------------------------------------------


@pytest.mark.parametrize("arguments_json", [
    '{"\\ud800": 1}',                 # a key
    '{"q": "\\udfff"}',               # a value
    '{"q": "a", "\\ud800\\ud800": 2}',
    '{"q": {"\\udc00": 1}}',          # a key one level down
])
def test_a_lone_surrogate_in_arguments_is_an_invalid_call(
    stub_model: LoadScript, arguments_json: str
) -> None:
    log: list[Any] = []
    model = stub_model({"turns": [raw_call(arguments_json), {"text": "Sorry."},
                                  {"text": "Second run."}]})
    # The validator's own refusal (the engine's grammar refuses these earlier: test_agent_grammar).
    agent = Agent(model, [lookup(log=log)], constrain_calls=False)
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "Sorry." and log == []
    (call,) = outcome.tool_calls
    assert call.status == "invalid" and isinstance(call.error, adil.OutputValidationError)
    assert "surrogate" in str(call.error)
    str(call.error).encode("utf-8")
    assert call.error.location is not None
    call.error.location.encode("utf-8")
    encodable(agent)
    assert '"code": "output_validation_failed"' in agent.messages[3]["content"]
    assert agent.run("again").text == "Second run."  # nothing poisons later runs


def test_a_lone_surrogate_in_the_tool_name_is_an_invalid_call(stub_model: LoadScript) -> None:
    written = '<tool_call>{"name": "\\ud800", "arguments": {"q": "a"}}</tool_call>'
    model = stub_model({"turns": [{"text": written}, {"text": "Sorry."},
                                  {"text": "Again."}]})
    agent = Agent(model, [lookup()])
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.tool_calls[0].status == "invalid"
    encodable(agent)
    assert agent.run("y").text == "Again."


def test_a_lone_surrogate_in_a_result_or_an_error_reaches_the_model_escaped(
    stub_model: LoadScript
) -> None:
    def broken(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        raise RuntimeError("bad byte \udcff in a file name")

    tools = [lookup(result={"name": "file-\udcff.txt"}),
             Tool(name="broken", handler=broken, effect="read_only",
                  display={"name": "quoted_text"})]
    model = stub_model({"turns": [{"tool_call": {"name": "lookup", "arguments": {}}},
                                  {"tool_call": {"name": "broken", "arguments": {}}},
                                  {"text": "Done."}, {"text": "Again."}]})
    agent = Agent(model, tools)
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "Done."
    first, second = outcome.tool_calls
    assert first.status == "completed" and first.result == {"name": "file-\udcff.txt"}
    assert first.delivered == '{"name": "file-\\udcff.txt"}'  # the same JSON value, escaped
    assert second.status == "failed"
    encodable(agent)
    assert agent.run("y").text == "Again."


def test_a_quoted_text_display_field_is_never_unencodable(stub_model: LoadScript) -> None:
    t = Tool(name="lookup", handler=lambda a, c: {"name": "x\udcff", "ok": "fine"},
             effect="read_only", display={"name": "quoted_text", "ok": "quoted_text"})
    model = stub_model({"turns": [{"tool_call": {"name": "lookup", "arguments": {}}},
                                  {"text": "Done."}]})
    outcome = Agent(model, [t]).run("x")
    assert [(f.name, f.value) for f in outcome.display_fields] == [("ok", "fine")]


def test_input_and_instructions_must_be_unicode(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Fine."}]})
    with pytest.raises(adil.InvalidArgumentError, match="surrogate"):
        Agent(model, instructions="be \ud800 nice")
    agent = Agent(model)
    with pytest.raises(adil.InvalidArgumentError, match="surrogate"):
        agent.run("hello \udc80")
    assert agent.messages == []
    assert agent.run("hello").text == "Fine."


def test_a_result_hook_that_returns_text_that_is_not_unicode_fails_the_run(
    stub_model: LoadScript
) -> None:
    model = stub_model({"turns": [{"tool_call": {"name": "lookup", "arguments": {}}},
                                  {"text": "never"}, {"text": "Again."}]})
    agent = Agent(model, [lookup()], result_hook=lambda call, text: text + "\ud800")
    outcome = agent.run("x")
    assert outcome.status == "failed"
    assert isinstance(outcome.error, adil.InvalidArgumentError)
    assert "result_hook" in str(outcome.error)
    encodable(agent)


# -- nesting deep enough to exhaust Python's recursion -------------------------------------


@pytest.mark.parametrize("levels", [65, 1000, 100_000])
def test_arguments_nested_too_deep_are_an_invalid_call(stub_model: LoadScript,
                                                        levels: int) -> None:
    log: list[Any] = []
    deep = "[" * levels + "]" * levels
    model = stub_model({"turns": [raw_call('{"q": ' + deep + "}"), {"text": "Sorry."},
                                  {"text": "Again."}], "context_length": 1 << 20},
                       context_length=1 << 20)
    agent = Agent(model, [lookup(log=log)], max_tokens=2 * levels + 100,
                  constrain_calls=False)  # the validator's refusal, not the grammar's
    outcome = agent.run("x")
    assert outcome.status == "completed" and log == []
    (call,) = outcome.tool_calls
    assert call.status == "invalid" and isinstance(call.error, adil.OutputValidationError)
    assert "deeper than 64" in str(call.error)
    assert agent.run("y").text == "Again."


@pytest.mark.parametrize("levels", [129, 100_000])
def test_a_result_nested_too_deep_fails_the_call_and_the_model_is_told(
    stub_model: LoadScript, levels: int
) -> None:
    cyclic: dict[str, Any] = {}
    cyclic["self"] = cyclic
    tools = [lookup(result={"rows": deep_list(levels)}),
             Tool(name="cyclic", handler=lambda a, c: cyclic, effect="read_only",
                  display={"self": "quoted_text"})]
    model = stub_model({"turns": [{"tool_call": {"name": "lookup", "arguments": {}}},
                                  {"tool_call": {"name": "cyclic", "arguments": {}}},
                                  {"text": "Done."}]})
    agent = Agent(model, tools)
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "Done."
    deep, loop = outcome.tool_calls
    assert deep.status == "failed" and deep.started and deep.delivered is None
    assert isinstance(deep.error, adil.OutputValidationError)
    assert "deeper than 128" in str(deep.error)
    assert loop.status == "failed" and "itself" in str(loop.error)
    assert outcome.display_fields == ()
    told = agent.messages[3]["content"]
    assert '"code": "invalid_result"' in told and '"location": "/rows/0/0' in told


# -- cut-off tool-call tags ------------------------------------------------------------------


@pytest.mark.parametrize("cut", ["<t", "<tool_", "<tool_call"])
def test_a_turn_that_ends_inside_the_opening_tag_is_a_cut_off_call(
    stub_model: LoadScript, cut: str
) -> None:
    model = stub_model({"turns": [{"text": "Let me check. " + cut}, {"text": "It is 21 C."}]})
    agent = Agent(model, [lookup()])
    outcome = agent.run("x")
    assert outcome.status == "completed" and outcome.text == "It is 21 C."  # not the cut text
    (call,) = outcome.tool_calls
    assert call.status == "invalid" and "opening tag" in str(call.error)
    assert '"code": "output_validation_failed"' in agent.messages[3]["content"]


def test_a_cut_opening_tag_after_a_complete_call() -> None:
    from adil.agent.syntax import split_calls

    text = 'A <tool_call>{"name": "a"}</tool_call> then <tool_c'
    assert split_calls(text) == ("A ", ['{"name": "a"}', "<tool_c"])
    assert split_calls("x < y and 1 <") == ("x < y and 1 <", [])  # a lone "<" is text
    assert split_calls("<b>bold</b>") == ("<b>bold</b>", [])


def test_cut_tags_are_only_calls_when_tools_are_offered(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Ends with <tool_ca"}]})
    outcome = Agent(model, [lookup()], tool_choice="none").run("x")
    assert outcome.status == "completed" and outcome.text == "Ends with <tool_ca"


# -- a tool that ignores cancellation ---------------------------------------------------------


def test_a_tool_that_ignores_cancellation_is_abandoned_at_the_total_deadline(
    stub_model: LoadScript
) -> None:
    import threading
    import time

    finished = threading.Event()
    release = threading.Event()

    def stubborn(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        release.wait(30)  # never looks at ctx.cancelled()
        finished.set()
        return {"secret": 42}

    t = Tool(name="stubborn", handler=stubborn, effect="read_only",
             display={"secret": "integer"})
    model = stub_model({"turns": [{"tool_call": {"name": "stubborn", "arguments": {}}},
                                  {"text": "Next run."}]})
    agent = Agent(model, [t])
    outcome = agent.run("x", timeout=adil.Timeout(total=0.3))
    # returned at the deadline while the handler still runs (no timing asserted)
    assert not finished.is_set()
    assert outcome.status == "failed" and isinstance(outcome.error, adil.DeadlineError)
    assert outcome.error.limit == "total"
    (call,) = outcome.tool_calls
    assert call.status == "abandoned" and call.started
    assert call.result is None and call.delivered is None and outcome.display_fields == ()
    told = agent.messages[-1]["content"]
    assert '"code": "abandoned"' in told and "may still be running" in told
    release.set()
    assert finished.wait(5)  # the handler ends later; its result goes nowhere
    time.sleep(0.05)
    later = agent.run("again")
    assert later.status == "completed" and later.text == "Next run."
    assert "secret" not in "".join(m["content"] for m in agent.messages)  # never delivered
    assert later.display_fields == () and later.tool_calls == ()
