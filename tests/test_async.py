"""asyncio bridges (adil.aio, Agent.arun/astream) on the reference stub
engine: the engine works in threads, the loop is never blocked, and
cancelling the awaiting task cancels the engine's work and leaves the model
and the agent free.  No pytest-asyncio: each test runs asyncio.run()."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import adil
from adil import aio
from adil.agent import Agent, AgentEvent, ProposalRaised, RunFinished, TextDelta, ToolCallStarted
from adil.tools import Tool, ToolContext, tool

SCRIPTS = Path(__file__).resolve().parent / "stub_scripts"
LoadScript = Callable[..., adil.Model]
LONG = "token " * 400


@pytest.fixture
def script_model(stub_engine: adil.Engine) -> Callable[[str], adil.Model]:
    def load(name: str) -> adil.Model:
        return stub_engine.load_model(str(SCRIPTS / name))

    return load


def slow(stub_model: LoadScript, *texts: str) -> adil.Model:
    return stub_model({"turns": [{"text": t} for t in texts], "token_delay_ms": 5})


@tool(effect="read_only")
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city}


def email_tool(sent: list[Any]) -> Tool:
    @tool(effect="state_changing", confirmation_required=True)
    def send_email(to: str, subject: str, body: str, ctx: ToolContext) -> str:
        """Sends an email."""
        sent.append((to, ctx.confirmed_by))
        return "sent"

    return send_email


async def first_piece_then_cancel(task: asyncio.Task[Any], got: asyncio.Event) -> None:
    await got.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# -- agenerate ----------------------------------------------------------------------


def test_agenerate_streams_the_same_pieces(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hello there."}, {"text": "Hello there."}]})
    expected = model.complete("x").text

    async def main() -> str:
        stream = aio.agenerate(model, "x", max_tokens=64)
        pieces = [piece async for piece in stream]
        assert all(isinstance(p, adil.Piece) for p in pieces)
        assert stream.stop_reason == "end_of_text" and stream.text == expected
        return "".join(p.text for p in pieces)

    assert asyncio.run(main()) == expected


def test_cancelling_the_task_cancels_the_generation(stub_model: LoadScript) -> None:
    model = slow(stub_model, LONG, "next")
    ticks = [0]

    async def ticker(stop: asyncio.Event) -> None:
        while not stop.is_set():  # runs while the engine works: the loop is not blocked
            ticks[0] += 1
            await asyncio.sleep(0.001)

    async def main() -> aio.AsyncGeneration:
        stream = aio.agenerate(model, "x", max_tokens=1000)
        got = asyncio.Event()

        async def read() -> None:
            async for _piece in stream:
                got.set()

        stop = asyncio.Event()
        ticking = asyncio.create_task(ticker(stop))
        await first_piece_then_cancel(asyncio.create_task(read()), got)
        stop.set()
        await ticking
        return stream

    stream = asyncio.run(main())
    assert stream.stop_reason == "cancelled"
    assert stream.cancel_acknowledged
    assert len(stream.text) < len(LONG)
    assert ticks[0] > 0
    assert model.complete("y").text == "next"  # no BusyError: the model is free


def test_agenerate_errors_come_from_the_iteration(stub_model: LoadScript) -> None:
    model = slow(stub_model, LONG)

    async def main() -> None:
        with model.generate("x"):  # the model's one generation is taken
            with pytest.raises(adil.BusyError):
                async for _piece in aio.agenerate(model, "y"):
                    pass

    asyncio.run(main())


def test_agenerate_aclose_frees_the_model(stub_model: LoadScript) -> None:
    model = slow(stub_model, LONG, "next")

    async def main() -> None:
        async with aio.agenerate(model, "x", max_tokens=1000) as stream:
            async for _piece in stream:
                break
        assert stream.stop_reason == "cancelled"

    asyncio.run(main())
    assert model.complete("y").text == "next"


# -- achat ----------------------------------------------------------------------------


def test_achat(stub_model: LoadScript) -> None:
    pytest.importorskip("adil.chat_api", reason="adil.chat_api (H-chat) has not landed")
    model = stub_model({"turns": [{"text": "Hi!"}]})

    async def main() -> Any:
        return await aio.achat(model, [{"role": "user", "content": "Hello"}], max_tokens=16)

    response = asyncio.run(main())
    assert response.text == "Hi!" and response.finish_reason == "stop"


def test_achat_cancel_frees_the_model(stub_model: LoadScript) -> None:
    pytest.importorskip("adil.chat_api", reason="adil.chat_api (H-chat) has not landed")
    model = slow(stub_model, LONG, "next")

    async def main() -> None:
        task = asyncio.create_task(
            aio.achat(model, [{"role": "user", "content": "Hello"}], max_tokens=1000))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    assert model.complete("y").text == "next"


def test_achat_refuses_stream(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Hi!"}]})
    with pytest.raises(adil.InvalidArgumentError, match="stream"):
        asyncio.run(aio.achat(model, [], stream=True))


# -- agents ---------------------------------------------------------------------------


def test_arun(script_model: Callable[[str], adil.Model]) -> None:
    agent = Agent(script_model("weather.json"), [get_weather])
    outcome = asyncio.run(agent.arun("Weather in Oslo?"))
    assert outcome.status == "completed" and outcome.text == "It is 21.5 degrees and clear in Oslo."


def test_arun_proposal_waits_for_a_person(script_model: Callable[[str], adil.Model]) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)], policy=lambda v: "allow")

    async def main() -> None:
        outcome = await agent.arun("Email Bob.")
        assert outcome.status == "awaiting_confirmation" and sent == []
        proposal = outcome.proposal
        assert proposal is not None and proposal.status == "pending"
        proposal.approve(confirmed_by="alice")
        resumed = await agent.aresume(proposal)
        assert resumed.status == "completed"

    asyncio.run(main())
    assert sent == [("bob@example.com", "alice")]


def test_cancelling_arun_cancels_only_that_agent(stub_model: LoadScript) -> None:
    agent = Agent(slow(stub_model, LONG, "Again."))
    other = Agent(slow(stub_model, "The other agent answers."))
    started = threading.Event()

    def listen(event: AgentEvent) -> None:
        if isinstance(event, TextDelta):
            started.set()

    async def main() -> str:
        task = asyncio.create_task(agent.arun("x", on_event=listen))
        other_task = asyncio.create_task(other.arun("y"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Once CancelledError arrived, the agent is free at once.
        again = await agent.arun("again")
        assert again.text == "Again."
        return (await other_task).text

    assert asyncio.run(main()) == "The other agent answers."


def test_astream(script_model: Callable[[str], adil.Model]) -> None:
    agent = Agent(script_model("weather.json"), [get_weather])

    async def main() -> list[AgentEvent]:
        stream = agent.astream("Weather in Oslo?")
        events = [event async for event in stream]
        assert stream.outcome is not None and stream.outcome.status == "completed"
        return events

    events = asyncio.run(main())
    assert any(isinstance(e, ToolCallStarted) for e in events)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == (
        "Checking. It is 21.5 degrees and clear in Oslo.")
    assert isinstance(events[-1], RunFinished)


def test_astream_proposal_then_astream_resume(script_model: Callable[[str], adil.Model]) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)])

    async def main() -> None:
        events = [event async for event in agent.astream("Email Bob.")]
        raised = events[-2]
        assert isinstance(raised, ProposalRaised) and raised.proposal.status == "pending"
        assert sent == []
        raised.proposal.approve(confirmed_by="carol")
        resumed = [event async for event in agent.astream_resume(raised.proposal)]
        last = resumed[-1]
        assert isinstance(last, RunFinished) and last.outcome.status == "completed"

    asyncio.run(main())
    assert sent == [("bob@example.com", "carol")]


def test_cancelling_an_astream_reader_cancels_the_run(stub_model: LoadScript) -> None:
    agent = Agent(slow(stub_model, LONG, "Again."))

    async def main() -> None:
        stream = agent.astream("x")
        got = asyncio.Event()

        async def read() -> None:
            async for _event in stream:
                got.set()

        await first_piece_then_cancel(asyncio.create_task(read()), got)
        assert stream.outcome is not None and stream.outcome.status == "cancelled"
        assert (await agent.arun("again")).text == "Again."

    asyncio.run(main())


def test_leaving_async_with_cancels_the_run(stub_model: LoadScript) -> None:
    agent = Agent(slow(stub_model, LONG, "Again."))

    async def main() -> None:
        async with agent.astream("x") as stream:
            async for _event in stream:
                break
        assert stream.outcome is not None and stream.outcome.status == "cancelled"
        assert (await agent.arun("again")).text == "Again."

    asyncio.run(main())


def test_astream_needs_a_running_loop(stub_model: LoadScript) -> None:
    agent = Agent(stub_model({"turns": [{"text": "x"}]}))
    with pytest.raises(adil.InvalidArgumentError, match="event loop"):
        agent.astream("x")
    assert agent.run("y").status == "completed"  # nothing was started
