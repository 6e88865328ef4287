"""Agent: drives a model through tool calls to a final answer.

    agent = adil.Agent(model, tools=[get_weather, send], instructions="...",
                       policy=None, timeout=adil.Timeout(total=60))
    outcome = agent.run("What is the weather in Oslo?")
    if outcome.status == "awaiting_confirmation":
        outcome.proposal.approve(confirmed_by="alice")   # a person decided
        outcome = agent.resume(outcome.proposal)

One run at a time per agent; the conversation carries over from run to run
(``reset()`` clears it).  ``cancel()`` stops this agent's run, from any
thread, and voids its pending proposal; nothing else is touched.

Thread rule (enforced under the agent's lock; nothing waits, nothing
interleaves):

* ``run``, ``start``, ``resume``, ``start_resume`` and their streamed and
  async forms (``stream``, ``stream_resume``, ``arun``, ``aresume``,
  ``astream``, ``astream_resume``: the run goes on in an AgentHandle's
  thread, see :mod:`.stream` and :mod:`adil.aio`): one at a time per agent,
  from any thread.  A second call while a run is active raises
  :class:`~adil.errors.BusyError`; while a proposal waits for a person,
  ``run``/``start`` raise InvalidArgumentError.  ``reset()`` raises
  BusyError while a run is active.
* ``cancel()``, ``messages``, ``pending_proposal``, ``tools``, ``model``:
  any thread, any time (the reads are snapshots).
* :class:`AgentHandle`: ``result``, ``wait``, ``done``, ``cancel`` from any
  thread, any number of times.
* :class:`~.proposal.Proposal`: read, approve or reject from any thread;
  the first decision wins.
* :class:`~adil.tools.Tool`: immutable, may be shared by agents and
  threads.  Its handler runs in a thread of its own per call (see
  :mod:`.worker`); a handler shared by several agents, or one that may be
  abandoned at a deadline and called again by the next run, must be safe to
  call from several threads at once.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..errors import BusyError, DeadlineError, InvalidArgumentError, check_real
from ..retry import RetryPolicy
from ..timeouts import Clock, Deadline, Timeout
from ..tools import Tool
from .config import AgentConfig, Policy, ResultHook, require_text, tools_by_name
from .conversation import Conversation
from .events import AgentEvent, ProposalRaised, RunFinished
from .loop import Ending, RunLoop, close_turn
from .prompt import system_message
from .proposal import Proposal
from .protocol import ModelLike
from .records import RunOutcome
from .state import RunState, Segment
from .stream import AgentStream

if TYPE_CHECKING:
    from ..aio import AsyncAgentStream

__all__ = ["Agent", "AgentHandle", "Listener"]

Listener = Callable[[AgentEvent], None]


class Agent:
    """An agent over any model (in-process or through the service client).

    ``timeout``: the agent's default :class:`~adil.Timeout`; ``total`` covers
    a whole run or resume (generations, tool time and retries), ``read`` the
    longest silence between tokens.  ``retry``: how busy and not-ready
    errors are retried.  ``policy(view)`` gets a read-only
    :class:`~.proposal.ProposalView` and may answer "deny" (the call is
    rejected) or "allow" (recorded; a person must still confirm).
    ``tool_choice``: "auto" (the model may call tools), "none" (no tools
    offered), "required" (the first turn of a run must call one of the
    tools) or a tool's name (the first turn calls it).  Forcing needs an
    engine with grammar support (else the run fails with CapabilityError).
    On such an engine every call is constrained by the grammar, so it is
    valid by construction; ``constrain_calls=False`` leaves "auto" turns
    unconstrained (the validator alone judges their calls).  See
    :mod:`.loop` for what happens when the grammar refuses a call.
    ``result_hook(call, text) -> text`` may rewrite a result before the
    model sees it (it must return a str of Unicode text: anything else
    fails the run with InvalidArgumentError); ``max_result_tokens`` cuts longer results (default: a
    quarter of the model's context).  Rewritten or cut results give no
    display fields."""

    def __init__(
        self,
        model: ModelLike,
        tools: Sequence[Tool] = (),
        *,
        instructions: str = "",
        policy: Policy | None = None,
        timeout: Timeout | None = None,
        retry: RetryPolicy | None = None,
        tool_choice: str = "auto",
        max_tokens: int = 1024,
        sampling: Any = None,
        max_turns: int = 16,
        result_hook: ResultHook | None = None,
        max_result_tokens: int | None = None,
        n: int = 1,
        clock: Clock = time.monotonic,
        constrain_calls: bool = True,
    ) -> None:
        self._config = AgentConfig(
            model=model, tools=tools_by_name(tools), instructions=instructions, policy=policy,
            timeout=Timeout() if timeout is None else timeout,
            retry=RetryPolicy() if retry is None else retry, tool_choice=tool_choice,
            max_tokens=max_tokens, sampling=sampling, max_turns=max_turns,
            result_hook=result_hook, max_result_tokens=max_result_tokens, n=n, clock=clock,
            constrain_calls=constrain_calls,
        )
        self._conversation = Conversation(
            system_message(instructions, self._config.offered_tools))
        self._lock = threading.Lock()
        self._state: RunState | None = None  # a run that is active or waits for a person
        self._segment: Segment | None = None  # the active run() / resume()

    # -- properties --------------------------------------------------------
    @property
    def model(self) -> ModelLike:
        return self._config.model

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(self._config.tools.values())

    @property
    def messages(self) -> list[dict[str, str]]:
        """A copy of the conversation, as given to ``model.render_chat``."""
        return self._conversation.snapshot()

    @property
    def pending_proposal(self) -> Proposal | None:
        state = self._state
        return state.proposal if state is not None and self._segment is None else None

    # -- runs --------------------------------------------------------------
    def run(
        self, input: str, *, timeout: Timeout | None = None, images: Sequence[Any] | None = None,
        on_event: Listener | None = None,
    ) -> RunOutcome:
        """Runs to a final answer, a proposal, a cancel or a failure.

        ``on_event(event)``: called with each :mod:`~.events` event as it
        happens, in the run's thread (keep it short: the run waits for it;
        an exception it raises ends the run and propagates)."""
        return self._drive(self._begin(input, timeout, images, on_event))

    def start(
        self, input: str, *, timeout: Timeout | None = None, images: Sequence[Any] | None = None,
        on_event: Listener | None = None,
    ) -> AgentHandle:
        """Like :meth:`run`, in a background thread: ``handle.result()``."""
        segment = self._begin(input, timeout, images, on_event)
        return AgentHandle(self, segment, lambda: self._drive(segment))

    def resume(self, proposal: Proposal, *, timeout: Timeout | None = None,
               on_event: Listener | None = None) -> RunOutcome:
        """Continues the run after a person approved or rejected `proposal`:
        an approved call runs (its ``ctx.confirmed_by`` is the person), a
        rejected one is skipped and the model is told.  A proposal voided by
        a cancel gives a ``cancelled`` outcome."""
        return self._work(self._begin_resume(proposal, timeout, on_event), on_event)()

    def start_resume(self, proposal: Proposal, *, timeout: Timeout | None = None,
                     on_event: Listener | None = None) -> AgentHandle:
        """Like :meth:`resume`, in a background thread."""
        begun = self._begin_resume(proposal, timeout, on_event)
        return AgentHandle(self, begun if isinstance(begun, Segment) else None,
                           self._work(begun, on_event))

    # -- streams -------------------------------------------------------------
    def stream(
        self, input: str, *, timeout: Timeout | None = None, images: Sequence[Any] | None = None
    ) -> AgentStream:
        """Like :meth:`start`, as an iterator of :mod:`~.events` events
        (``TextDelta``, ``ToolCallStarted``, ``ToolCallFinished``,
        ``ProposalRaised``, then ``RunFinished`` last).  The run goes on in
        its own thread whatever the reader does: events wait in the stream
        until read.  ``stream.cancel()`` cancels this run; leaving the
        stream (``with``, ``close()``, or dropping it) cancels it too.  A
        run that pauses for a person ends the stream (``RunFinished`` with
        ``awaiting_confirmation``); its proposal stays pending: decide it,
        then :meth:`stream_resume` (or :meth:`resume`) it."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        segment = self._begin(input, timeout, images, events.put)
        return AgentStream(AgentHandle(self, segment, lambda: self._drive(segment)), events)

    def stream_resume(self, proposal: Proposal, *, timeout: Timeout | None = None) -> AgentStream:
        """Like :meth:`resume`, as an :class:`AgentStream` (see :meth:`stream`)."""
        events: queue.SimpleQueue[Any] = queue.SimpleQueue()
        return AgentStream(self.start_resume(proposal, timeout=timeout, on_event=events.put),
                           events)

    # -- asyncio -------------------------------------------------------------
    async def arun(
        self, input: str, *, timeout: Timeout | None = None, images: Sequence[Any] | None = None,
        on_event: Listener | None = None,
    ) -> RunOutcome:
        """Like :meth:`run`, awaited: the run goes on in its own thread, the
        event loop is never blocked.  Cancelling the awaiting task cancels
        this agent's run and waits (without blocking the loop) until it
        stopped, so the agent and its model are free once CancelledError
        reaches the caller."""
        from ..aio import wait_handle

        return await wait_handle(self.start(input, timeout=timeout, images=images,
                                            on_event=on_event))

    async def aresume(self, proposal: Proposal, *, timeout: Timeout | None = None,
                      on_event: Listener | None = None) -> RunOutcome:
        """Like :meth:`resume`, awaited (see :meth:`arun`)."""
        from ..aio import wait_handle

        return await wait_handle(self.start_resume(proposal, timeout=timeout,
                                                   on_event=on_event))

    def astream(
        self, input: str, *, timeout: Timeout | None = None, images: Sequence[Any] | None = None
    ) -> AsyncAgentStream:
        """Like :meth:`stream`, as an async iterator (``async for``; ``async
        with`` or ``await stream.aclose()`` cancels the run and waits for its
        end).  Call it from a coroutine: it needs the running event loop."""
        from ..aio import AsyncAgentStream

        return AsyncAgentStream(
            lambda listener: self.start(input, timeout=timeout, images=images, on_event=listener))

    def astream_resume(self, proposal: Proposal, *,
                       timeout: Timeout | None = None) -> AsyncAgentStream:
        """Like :meth:`stream_resume`, as an async iterator."""
        from ..aio import AsyncAgentStream

        return AsyncAgentStream(
            lambda listener: self.start_resume(proposal, timeout=timeout, on_event=listener))

    def cancel(self) -> None:
        """Cancels this agent's run (any thread): a generation stops before its
        next token, a tool not yet started never starts, a running tool sees
        ``ctx.cancelled()`` turn true and its result is discarded; the
        pending proposal is voided.  Other agents are not touched."""
        with self._lock:
            segment, state = self._segment, self._state
            if segment is not None:
                segment.cancel()
            elif state is not None:  # paused, waiting for a person
                for index in state.queue[:1]:
                    state.calls[index] = replace(state.calls[index], status="cancelled")
                close_turn(self._conversation, state, "cancelled")
                self._state = None

    def reset(self) -> None:
        """Forgets the conversation: BusyError while a run is active,
        InvalidArgumentError while a proposal waits (cancel() it first)."""
        with self._lock:
            if self._segment is not None:
                raise BusyError("this agent is running: cancel or finish the run before reset()")
            if self._state is not None:
                raise InvalidArgumentError(
                    "a proposal waits for confirmation: resume() it or cancel() the agent before "
                    "reset()"
                )
            self._conversation.clear()

    # -- bookkeeping ---------------------------------------------------------
    def _new_segment(self, timeout: Timeout | None, on_event: Listener | None) -> Segment:
        merged = self._config.timeout.merged(timeout)
        return Segment(token=self._config.model.cancel_token(),
                       deadline=Deadline.start(merged, self._config.clock), timeout=merged,
                       on_event=on_event)

    def _begin(self, input: str, timeout: Timeout | None,
               images: Sequence[Any] | None, on_event: Listener | None) -> Segment:
        require_text("input", input)
        _check_begin(timeout, on_event)
        with self._lock:
            if self._segment is not None:
                raise BusyError("this agent is already running (one run at a time)")
            if self._state is not None:
                raise InvalidArgumentError(
                    "a proposal waits for confirmation: resume() it or cancel() the agent first"
                )
            segment = self._new_segment(timeout, on_event)
            self._conversation.append("user", input)
            self._state = RunState(images=images)
            self._segment = segment
            return segment

    def _begin_resume(self, proposal: Proposal, timeout: Timeout | None,
                      on_event: Listener | None) -> Segment | RunOutcome:
        if not isinstance(proposal, Proposal) or proposal._owner is not self:
            raise InvalidArgumentError("resume() takes a proposal of this agent")
        _check_begin(timeout, on_event)
        with self._lock:
            if self._segment is not None:
                raise BusyError("this agent is already running (one run at a time)")
            state = self._state
            if proposal.status == "voided":
                return RunOutcome("cancelled", cancel_acknowledged=True,
                                  messages=tuple(self._conversation.snapshot()))
            if state is None or state.proposal is not proposal:
                raise InvalidArgumentError(
                    f"proposal {proposal.call_id} is not waiting in this agent (resumed already?)"
                )
            if proposal.status == "pending":
                raise InvalidArgumentError("approve() or reject() the proposal before resume()")
            self._segment = self._new_segment(timeout, on_event)
            return self._segment

    def _work(self, begun: Segment | RunOutcome,
              on_event: Listener | None) -> Callable[[], RunOutcome]:
        """What runs a begun resume: the segment, or an outcome known at once."""
        if isinstance(begun, Segment):
            segment = begun
            return lambda: self._drive(segment)

        def ended() -> RunOutcome:
            if on_event is not None:
                on_event(RunFinished(begun))
            return begun

        return ended

    def _drive(self, segment: Segment) -> RunOutcome:
        state = self._state
        assert state is not None
        ending = Ending("failed")
        finished: list[AgentEvent] = []
        try:
            ending = RunLoop(self._config, self._conversation, state, segment, self).run()
        finally:
            outcome = self._finish(state, segment, ending, finished)
        # Told once the agent is idle: a listener may resume or run at once.
        for event in finished:
            segment.emit(event)
        if outcome.proposal is not None:
            segment.emit(ProposalRaised(outcome.proposal))
        segment.emit(RunFinished(outcome))
        return outcome

    def _finish(self, state: RunState, segment: Segment, ending: Ending,
                finished: list[AgentEvent]) -> RunOutcome:
        with self._lock:
            if ending.status != "awaiting_confirmation":
                close_turn(self._conversation, state, ending.status)
                if self._state is state:
                    self._state = None
            if self._segment is segment:
                self._segment = None
            finished.extend(state.finished_events())  # the calls close_turn closed
            return RunOutcome(
                status=ending.status,
                text=ending.text,
                tool_calls=tuple(state.calls),
                display_fields=tuple(state.fields),
                cancel_acknowledged=state.cancel_ack or segment.cancel_requested,
                proposal=ending.proposal,
                error=ending.error,
                messages=tuple(self._conversation.snapshot()),
            )

    def _cancel_segment(self, segment: Segment | None) -> None:
        with self._lock:
            active = segment is not None and self._segment is segment
        if active:
            self.cancel()


class AgentHandle:
    """A run in a background thread.  Every method may be called from any
    thread, any number of times."""

    def __init__(self, agent: Agent, segment: Segment | None,
                 work: Callable[[], RunOutcome]) -> None:
        self._agent = agent
        self._segment = segment
        self._done = threading.Event()
        self._outcome: RunOutcome | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []  # called once the run ended
        self._thread = threading.Thread(target=self._main, args=(work,), daemon=True,
                                        name="adil-agent-run")
        self._thread.start()

    def _main(self, work: Callable[[], RunOutcome]) -> None:
        try:
            self._outcome = work()
        except BaseException as exc:  # noqa: BLE001 - result() re-raises it in the caller
            self._error = exc
        finally:
            with self._lock:
                self._done.set()
                callbacks, self._callbacks = self._callbacks, []
            for callback in callbacks:
                callback()

    def _when_done(self, callback: Callable[[], None]) -> None:
        """Calls `callback()` once the run ended: in the run's thread, or at
        once when it has ended already.  It must not raise."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def _cancel_quietly(self) -> None:
        """Cancels this handle's run without taking the agent's lock (a
        garbage collected stream may call it from any thread, even one that
        holds the lock).  A run that ended is not touched: its segment's
        token is its own."""
        if self._segment is not None and not self._done.is_set():
            self._segment.cancel()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """True once the run ended (within `timeout` seconds)."""
        return self._done.wait(_seconds(timeout))

    def result(self, timeout: float | None = None) -> RunOutcome:
        """The outcome; waits up to `timeout` seconds (DeadlineError after)."""
        if not self._done.wait(_seconds(timeout)):
            raise DeadlineError(f"the run did not end within {timeout} s", limit="total")
        if self._error is not None:
            raise self._error
        assert self._outcome is not None
        return self._outcome

    def cancel(self) -> None:
        """Cancels this handle's run, if it is still the agent's active run."""
        self._agent._cancel_segment(self._segment)


def _check_begin(timeout: object, on_event: object) -> None:
    if timeout is not None and not isinstance(timeout, Timeout):
        raise InvalidArgumentError(f"timeout must be an adil.Timeout or None, got {timeout!r}")
    if on_event is not None and not callable(on_event):
        raise InvalidArgumentError(f"on_event must be callable or None, got {on_event!r}")


def _seconds(timeout: object) -> float | None:
    """A wait's `timeout`: None, or finite seconds >= 0."""
    return None if timeout is None else check_real("timeout (seconds)", timeout, low=0)
