"""Agent settings and call arguments are checked with InvalidArgumentError
(or ToolSchemaError for tools), never a plain AttributeError or TypeError
later; the thread rule of Agent, AgentHandle and Proposal is enforced."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from test_agent_unit import FakeModel, call, reader, writer

import adil
from adil.agent import Agent
from adil.retry import RetryPolicy


@pytest.mark.parametrize("kwargs", [
    {"timeout": 30}, {"timeout": 0}, {"timeout": {"total": 3}},
    {"retry": 3}, {"retry": 0},
    {"sampling": {"temperature": 0}}, {"sampling": 0.7},
    {"policy": "allow"}, {"result_hook": "upper"}, {"clock": 1.0},
    {"tool_choice": ["lookup"]}, {"tool_choice": None},
    {"max_tokens": 0}, {"max_tokens": "64"}, {"max_turns": True},
    {"n": 0}, {"n": 1.0}, {"max_result_tokens": 8}, {"max_result_tokens": "many"},
    {"max_result_tokens": 64.0}, {"instructions": None}, {"instructions": 5},
])
def test_bad_settings_are_refused_when_the_agent_is_built(kwargs: dict[str, Any]) -> None:
    with pytest.raises(adil.InvalidArgumentError) as caught:
        Agent(FakeModel([]), [reader()], **kwargs)
    assert caught.value.code == "invalid_argument"


def test_good_settings_pass() -> None:
    agent = Agent(FakeModel(["ok"]), (reader(),), timeout=adil.Timeout(total=5),
                  retry=RetryPolicy(max_retries=0), sampling=adil.Sampling(temperature=0),
                  max_result_tokens=16, n=1, tool_choice="none")
    assert agent.run("x").text == "ok"


@pytest.mark.parametrize("tools", [reader(), "lookup", 5, {"lookup": 1}, None])
def test_tools_must_be_a_list_or_tuple(tools: Any) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="list or tuple"):
        Agent(FakeModel([]), tools)


@pytest.mark.parametrize("model", [None, "model.gguf", object()])
def test_the_model_must_be_a_model(model: Any) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="model must be"):
        Agent(model)


def test_run_arguments_are_checked() -> None:
    agent = Agent(FakeModel(["ok", "ok"]))
    for bad in (lambda: agent.run(5), lambda: agent.run(None),  # type: ignore[arg-type]
                lambda: agent.run("x", timeout=10),  # type: ignore[arg-type]
                lambda: agent.start("x", timeout="10")):  # type: ignore[arg-type]
        with pytest.raises(adil.InvalidArgumentError):
            bad()
    assert agent.messages == [] and agent.run("x").text == "ok"  # nothing half-started


@pytest.mark.parametrize("answer", [None, b"text", 5, {"a": 1}])
def test_a_result_hook_that_does_not_return_text_fails_the_run(answer: Any) -> None:
    agent = Agent(FakeModel([call("lookup", q="x"), "never", "again"]), [reader()],
                  result_hook=lambda c, text: answer)
    outcome = agent.run("x")
    assert outcome.status == "failed"
    assert isinstance(outcome.error, adil.InvalidArgumentError)
    assert "result_hook must return" in str(outcome.error)
    assert agent.run("y").status == "completed"  # usable again


def test_handle_wait_and_result_check_their_timeout() -> None:
    handle = Agent(FakeModel(["ok"])).start("x")
    for bad in ("1", -1, float("nan"), True):
        with pytest.raises(adil.InvalidArgumentError):
            handle.result(timeout=bad)
        with pytest.raises(adil.InvalidArgumentError):
            handle.wait(timeout=bad)
    assert handle.result(timeout=5).text == "ok"


# -- the thread rule ------------------------------------------------------------------------


def test_two_threads_calling_run_at_once_one_runs_the_other_is_busy() -> None:
    agent = Agent(FakeModel(["slow answer"] * 8, delay=0.005))
    barrier = threading.Barrier(8)
    results: list[Any] = []

    def go() -> None:
        barrier.wait()
        try:
            results.append(agent.run("x").status)
        except adil.BusyError as error:
            results.append(error.code)

    threads = [threading.Thread(target=go) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert results.count("completed") >= 1
    assert sorted(set(results)) <= ["busy", "completed"]
    roles = [m["role"] for m in agent.messages]  # never two runs interleaved
    assert roles == ["user", "assistant"] * results.count("completed")


def test_reset_while_a_run_is_active_is_busy() -> None:
    agent = Agent(FakeModel(["slow answer"], delay=0.02))
    handle = agent.start("x")
    with pytest.raises(adil.BusyError):
        agent.reset()
    with pytest.raises(adil.BusyError):
        agent.start("y")
    handle.result(timeout=5)
    agent.reset()
    assert agent.messages == []


def test_reset_while_a_proposal_waits_is_refused() -> None:
    agent = Agent(FakeModel([call("send", to="bob")]), [writer([])])
    assert agent.run("x").status == "awaiting_confirmation"
    with pytest.raises(adil.InvalidArgumentError):
        agent.reset()


def test_two_threads_deciding_one_proposal_first_wins() -> None:
    log: list[Any] = []
    agent = Agent(FakeModel([call("send", to="bob"), "Sent."]), [writer(log)])
    proposal = agent.run("x").proposal
    assert proposal is not None
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(approve: bool) -> None:
        barrier.wait()
        try:
            if approve:
                proposal.approve(confirmed_by="alice")
            else:
                proposal.reject(reason="no")
            outcomes.append("decided")
        except adil.InvalidArgumentError:
            outcomes.append("refused")

    threads = [threading.Thread(target=decide, args=(flag,)) for flag in (True, False)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(5)
    assert sorted(outcomes) == ["decided", "refused"]
    assert proposal.status in ("approved", "rejected")


def test_two_threads_resuming_one_proposal_one_resumes() -> None:
    log: list[Any] = []
    agent = Agent(FakeModel([call("send", to="bob"), "Sent."], delay=0.01), [writer(log)])
    proposal = agent.run("x").proposal
    assert proposal is not None
    proposal.approve(confirmed_by="alice")
    barrier = threading.Barrier(2)
    results: list[str] = []

    def resume() -> None:
        barrier.wait()
        try:
            results.append(agent.resume(proposal).status)
        except (adil.BusyError, adil.InvalidArgumentError) as error:
            results.append(error.code)

    threads = [threading.Thread(target=resume) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) in (["busy", "completed"], ["completed", "invalid_argument"])
    assert len(log) == 1  # the call ran once


def test_cancel_and_messages_from_another_thread_during_a_run() -> None:
    agent = Agent(FakeModel(["a long answer " * 20], delay=0.002))
    handle = agent.start("x")
    seen = [len(agent.messages) for _ in range(50)]  # reading is safe meanwhile
    time.sleep(0.01)
    agent.cancel()
    assert handle.result(timeout=5).status == "cancelled"
    assert min(seen) >= 1
