"""agent.stream(): the run's events as they happen, on the reference stub
engine; the product page's rules (confirmation by a person, policy,
per-agent cancellation, deadlines) hold while streaming."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import adil
from adil.agent import (
    Agent,
    AgentEvent,
    AgentStream,
    ProposalRaised,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from adil.agent.syntax import VisibleText
from adil.tools import Tool, ToolContext, tool

SCRIPTS = Path(__file__).resolve().parent / "stub_scripts"
LoadScript = Callable[..., adil.Model]


@pytest.fixture
def script_model(stub_engine: adil.Engine) -> Callable[[str], adil.Model]:
    def load(name: str) -> adil.Model:
        return stub_engine.load_model(str(SCRIPTS / name))

    return load


@tool(effect="read_only", display={"temp_c": "number"})
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city}


def email_tool(sent: list[Any]) -> Tool:
    @tool(effect="state_changing", sends_out=True, confirmation_required=True)
    def send_email(to: str, subject: str, body: str, ctx: ToolContext) -> dict[str, Any]:
        """Sends an email."""
        sent.append({"to": to, "by": ctx.confirmed_by})
        return {"status": "sent"}

    return send_email


def text_of(events: list[AgentEvent]) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def kinds(events: list[AgentEvent]) -> list[str]:
    """The event kinds in order, runs of TextDelta folded into one."""
    out: list[str] = []
    for event in events:
        name = type(event).__name__
        if not (out and out[-1] == name == "TextDelta"):
            out.append(name)
    return out


# -- what a stream shows -------------------------------------------------------------


def test_a_streamed_tool_run(script_model: Callable[[str], adil.Model]) -> None:
    agent = Agent(script_model("weather.json"), [get_weather])
    with agent.stream("Weather in Oslo?") as stream:
        assert isinstance(stream, AgentStream)
        events = list(stream)
    assert kinds(events) == ["TextDelta", "ToolCallStarted", "ToolCallFinished", "TextDelta",
                             "RunFinished"]
    # The call's text is not shown (tags split over pieces: test_visible_text_filter).
    assert text_of(events) == "Checking. It is 21.5 degrees and clear in Oslo."
    started = next(e for e in events if isinstance(e, ToolCallStarted))
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert (started.tool, started.arguments) == ("get_weather", {"city": "Oslo"})
    assert finished.call_id == started.call_id and finished.status == "completed"
    assert finished.result == {"temp_c": 21.5, "city": "Oslo"} and finished.error is None
    last = events[-1]
    assert isinstance(last, RunFinished) and last.outcome is stream.outcome
    assert last.outcome.status == "completed"
    assert last.outcome.text == "It is 21.5 degrees and clear in Oslo."
    assert [f.value for f in last.outcome.display_fields] == [21.5]


def test_on_event_of_run_gets_the_same_events(script_model: Callable[[str], adil.Model]) -> None:
    seen: list[AgentEvent] = []
    outcome = Agent(script_model("weather.json"), [get_weather]).run("x", on_event=seen.append)
    assert outcome.status == "completed"
    assert kinds(seen)[-1] == "RunFinished" and text_of(seen).endswith(outcome.text)
    with pytest.raises(adil.InvalidArgumentError, match="on_event"):
        Agent(script_model("weather.json")).run("x", on_event=42)  # type: ignore[arg-type]


def test_invalid_call_finishes_without_starting(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [
        {"text": "Trying. ", "tool_call": {"name": "no_such_tool", "arguments": {}}},
        {"text": "Sorry."}]})
    events = list(Agent(model, [get_weather], constrain_calls=False).stream("x"))
    assert kinds(events) == ["TextDelta", "ToolCallFinished", "TextDelta", "RunFinished"]
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert finished.status == "invalid" and finished.tool == "no_such_tool"
    assert isinstance(finished.error, adil.OutputValidationError)
    assert text_of(events) == "Trying. Sorry."


def test_tool_choice_none_shows_all_text(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Plain <tool_call> text"}]})
    events = list(Agent(model, [get_weather], tool_choice="none").stream("x"))
    assert text_of(events) == "Plain <tool_call> text"


def test_visible_text_filter() -> None:
    def shown(pieces: list[str]) -> str:
        visible = VisibleText()
        return "".join(visible.feed(p) for p in pieces) + visible.end()

    whole = 'a <tool_call>{"name": "x"}</tool_call> b < c'
    assert shown([whole]) == "a  b < c"
    assert shown(list(whole)) == "a  b < c"  # one character at a time
    assert shown(["x <", "tool_call>..."]) == "x "  # cut call: nothing of it shown
    assert shown(["x <to"]) == "x "  # a cut opening tag is a cut call, not text
    assert shown(["x <"]) == "x <"
    assert shown(["1 </tool", "_call> 2"]) == "1 </tool_call> 2"  # a close tag alone is text


# -- confirmation by a person ------------------------------------------------------------


def test_proposal_ends_the_stream_and_is_never_approved(
    script_model: Callable[[str], adil.Model]
) -> None:
    sent: list[Any] = []
    views: list[Any] = []

    def allow(view: Any) -> str:
        views.append(view)
        return "allow"  # not a confirmation

    agent = Agent(script_model("send_email.json"), [email_tool(sent)], policy=allow)
    events = list(agent.stream("Email Bob."))
    assert kinds(events) == ["TextDelta", "ProposalRaised", "RunFinished"]
    raised, finished = events[-2], events[-1]
    assert isinstance(raised, ProposalRaised) and isinstance(finished, RunFinished)
    assert finished.outcome.status == "awaiting_confirmation"
    proposal = raised.proposal
    assert proposal is finished.outcome.proposal is agent.pending_proposal
    assert proposal.status == "pending" and proposal.policy_decision == "allow"
    assert sent == [] and len(views) == 1
    # The agent is idle once the events are delivered: a person decides, then
    # the resume streams too.
    proposal.approve(confirmed_by="alice")
    resumed = list(agent.stream_resume(proposal))
    assert kinds(resumed) == ["ToolCallStarted", "ToolCallFinished", "TextDelta", "RunFinished"]
    last = resumed[-1]
    assert isinstance(last, RunFinished) and last.outcome.status == "completed"
    assert sent == [{"to": "bob@example.com", "by": "alice"}]


def test_rejected_proposal_streams_a_rejected_call(
    script_model: Callable[[str], adil.Model]
) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)])
    outcome = agent.run("Email Bob.")
    assert outcome.proposal is not None
    outcome.proposal.reject(reason="no")
    events = list(agent.stream_resume(outcome.proposal))
    assert kinds(events) == ["ToolCallFinished", "TextDelta", "RunFinished"]
    assert isinstance(events[0], ToolCallFinished) and events[0].status == "rejected"
    assert sent == []


def test_voided_proposal_resume_streams_a_cancelled_outcome(
    script_model: Callable[[str], adil.Model]
) -> None:
    agent = Agent(script_model("send_email.json"), [email_tool([])])
    proposal = agent.run("Email Bob.").proposal
    assert proposal is not None
    agent.cancel()
    events = list(agent.stream_resume(proposal))
    assert len(events) == 1 and isinstance(events[0], RunFinished)
    assert events[0].outcome.status == "cancelled"


# -- cancellation, abandonment, slow readers, deadlines ---------------------------------------


def slow_model(stub_model: LoadScript, text: str = "word " * 200) -> adil.Model:
    return stub_model({"turns": [{"text": text}, {"text": "Again."}], "token_delay_ms": 5})


def test_cancel_stops_only_this_run(stub_model: LoadScript) -> None:
    agent = Agent(slow_model(stub_model))
    other = Agent(slow_model(stub_model, "other " * 20))
    other_handle = other.start("y")
    stream = agent.stream("x")
    first = next(stream)
    assert isinstance(first, TextDelta)
    stream.cancel()
    rest = list(stream)
    last = rest[-1]
    assert isinstance(last, RunFinished) and last.outcome.status == "cancelled"
    assert last.outcome.cancel_acknowledged
    assert other_handle.result(timeout=30).status == "completed"
    assert agent.run("again").text == "Again."  # the agent is free


def test_close_cancels_and_waits(stub_model: LoadScript) -> None:
    agent = Agent(slow_model(stub_model))
    with agent.stream("x") as stream:
        assert isinstance(next(stream), TextDelta)
    assert stream.done()
    assert stream.outcome is not None and stream.outcome.status == "cancelled"
    assert agent.run("again").text == "Again."


def test_an_abandoned_stream_cancels_its_run(stub_model: LoadScript) -> None:
    agent = Agent(slow_model(stub_model))
    stream = agent.stream("x")
    handle = stream._handle
    for _event in stream:
        break
    del stream, _event
    gc.collect()
    assert handle.wait(30)
    assert handle.result().status == "cancelled"
    assert agent.run("again").text == "Again."


def test_a_slow_reader_does_not_stall_the_run(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "many pieces " * 100}]})
    stream = Agent(model).stream("x")
    outcome = stream.result(timeout=30)  # nothing read yet: the run went on
    assert outcome.status == "completed"
    events = list(stream)
    assert text_of(events) == outcome.text and isinstance(events[-1], RunFinished)


def test_a_tool_cancelled_from_the_stream_discards_its_result(
    script_model: Callable[[str], adil.Model]
) -> None:
    running = threading.Event()

    @tool(effect="read_only")
    def export_report(rows: int, ctx: ToolContext) -> str:
        running.set()
        while not ctx.cancelled():
            threading.Event().wait(0.001)
        return "late"

    stream = Agent(script_model("slow_tool.json"), [export_report]).stream("x")
    started = next(stream)
    assert isinstance(started, ToolCallStarted) and running.wait(10)
    stream.cancel()
    events = list(stream)
    assert kinds(events) == ["ToolCallFinished", "RunFinished"]
    finished = events[0]
    assert isinstance(finished, ToolCallFinished)
    assert finished.status == "cancelled" and finished.result is None


def test_total_deadline_while_streaming(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "x" * 200}], "token_delay_ms": 20})
    events = list(Agent(model, timeout=adil.Timeout(total=0.3)).stream("x"))
    last = events[-1]
    assert isinstance(last, RunFinished) and last.outcome.status == "failed"
    assert isinstance(last.outcome.error, adil.DeadlineError)


def test_an_exception_that_ends_the_run_is_raised_by_the_stream(
    script_model: Callable[[str], adil.Model]
) -> None:
    def hook(call: Any, text: str) -> str:
        raise ValueError("hook failed")

    stream = Agent(script_model("weather.json"), [get_weather], result_hook=hook).stream("x")
    seen: list[AgentEvent] = []
    with pytest.raises(ValueError, match="hook failed"):
        for event in stream:
            seen.append(event)
    assert any(isinstance(e, ToolCallStarted) for e in seen)
    assert list(stream) == []
