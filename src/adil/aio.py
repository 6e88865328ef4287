"""asyncio bridges: the engine works in threads, the event loop never waits.

    async for piece in adil.aio.agenerate(model, "Once upon a time", max_tokens=64):
        print(piece.text, end="")
    response = await adil.aio.achat(model, [{"role": "user", "content": "Hi"}])
    outcome = await agent.arun("What is the weather in Oslo?")
    async for event in agent.astream("What is the weather in Oslo?"): ...

(``model.agenerate`` and ``model.achat`` are the same functions as methods.)

Every blocking engine call (starting a generation, each step, a chat, an
agent run) runs in a worker thread: the default executor of the loop for
generation steps and chats, the agent's own run thread for agents.

Cancellation.  Cancelling the task that awaits one of these cancels the
engine's work: the generation (``generation.cancel()``), the chat's run
(its cancel token), or the agent's run (``agent.cancel()`` of that run
only; other agents and generations are not touched).  The task then waits,
without blocking the loop, until that work has stopped, so that when
``CancelledError`` reaches the caller the model is free for its next
generation (no BusyError) and the agent for its next run.  A second cancel
while it waits stops the wait (the work still stops, a moment later).

Threads: an :class:`AsyncGeneration` or :class:`AsyncAgentStream` belongs
to one event loop and one reader; ``cancel()`` may come from any thread.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import AsyncIterator, Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .agent.events import AgentEvent
from .agent.stream import END
from .errors import InvalidArgumentError
from .generation import Generation, Piece, Stats

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .agent.agent import AgentHandle, Listener
    from .agent.records import RunOutcome
    from .chat_api import ChatResponse
    from .engine import Model
    from .options import GenerateOptions

__all__ = ["AsyncAgentStream", "AsyncGeneration", "achat", "agenerate"]

T = TypeVar("T")


# -- generate ----------------------------------------------------------------


def agenerate(model: Model, prompt: Any, **kwargs: Unpack[GenerateOptions]) -> AsyncGeneration:
    """``model.generate(prompt, **kwargs)`` as an async iterator of
    :class:`~adil.Piece` (``async for piece in agenerate(...)``).  The
    generation starts at the first ``__anext__`` (errors of
    ``generate()`` itself, such as BusyError, are raised there); each step
    runs in a worker thread.  Cancelling the reading task cancels the
    generation and waits until the model is free."""
    return AsyncGeneration(lambda: model.generate(prompt, **kwargs))


class AsyncGeneration(AsyncIterator[Piece]):
    """An async iterator of pieces.  Once it ended, ``text``, ``tokens``,
    ``stop_reason``, ``stats``, ``cancel_acknowledged`` and ``value`` are
    those of the :class:`~adil.Generation` (``generation``; None before the
    first ``__anext__``).  ``async with`` / ``aclose()`` cancels and frees
    the run."""

    def __init__(self, start: Callable[[], Generation]) -> None:
        self._start: Callable[[], Generation] | None = start
        self._generation: Generation | None = None
        self._stopping = False  # cancelled: the step's thread closes the run

    # -- what the generation says ------------------------------------------
    @property
    def generation(self) -> Generation | None:
        return self._generation

    @property
    def text(self) -> str:
        return self._generation.text if self._generation is not None else ""

    @property
    def tokens(self) -> tuple[int, ...]:
        return self._generation.tokens if self._generation is not None else ()

    @property
    def stop_reason(self) -> str:
        if self._generation is not None:
            return self._generation.stop_reason
        return "cancelled" if self._stopping else "running"

    @property
    def stats(self) -> Stats:
        return self._generation.stats if self._generation is not None else Stats()

    @property
    def cancel_acknowledged(self) -> bool:
        return self._generation is not None and self._generation.cancel_acknowledged

    @property
    def value(self) -> Any:
        return self._generation.value if self._generation is not None else None

    # -- iteration -----------------------------------------------------------
    def __aiter__(self) -> AsyncGeneration:
        return self

    async def __anext__(self) -> Piece:
        generation = self._generation
        if generation is None:
            start, self._start = self._start, None
            if start is None or self._stopping:
                raise StopAsyncIteration
            generation = await _in_thread(start, on_cancel=self.cancel, discard=_close)
            self._generation = generation
        piece = await _in_thread(self._step, on_cancel=self.cancel)
        if piece is None:
            raise StopAsyncIteration
        return piece

    def _step(self) -> Piece | None:
        """One piece, in a worker thread; a cancel meanwhile frees the run
        here, once the step returned."""
        generation = self._generation
        assert generation is not None
        try:
            return next(generation, None)
        finally:
            if self._stopping:
                generation.close()

    def cancel(self) -> None:
        """Asks the generation to stop before its next token (any thread)."""
        self._stopping = True
        if self._generation is not None:
            self._generation.cancel()

    async def aclose(self) -> None:
        """Cancels the generation and frees its run (in a worker thread: it
        waits for a step in progress)."""
        self.cancel()
        self._start = None
        generation = self._generation
        if generation is not None:
            await _in_thread(generation.close)

    async def __aenter__(self) -> AsyncGeneration:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


# -- chat --------------------------------------------------------------------


async def achat(model: Model, messages: Sequence[Any], **kwargs: Any) -> ChatResponse:
    """``adil.chat_api.chat(model, messages, **kwargs)`` awaited: the chat
    runs in a worker thread.  Cancelling the task cancels its run (through
    its cancel token: the one given as ``cancel=``, else a new one) and
    waits until the model is free.  ``stream=True`` is refused: stream with
    :func:`agenerate` or with ``chat(stream=True)`` in a thread."""
    if kwargs.get("stream"):
        raise InvalidArgumentError("achat() returns the whole response: stream=True is not taken")
    from .chat_api import chat

    token = kwargs.get("cancel") or model.cancel_token()
    kwargs["cancel"] = token
    return await _in_thread(lambda: chat(model, messages, **kwargs), on_cancel=token.cancel)


# -- agents --------------------------------------------------------------------


async def wait_handle(handle: AgentHandle) -> RunOutcome:
    """The outcome of an agent run in its thread (Agent.arun, aresume)."""
    done = _done_future(handle)
    try:
        await asyncio.shield(done)
    except asyncio.CancelledError:
        handle.cancel()
        await _settle(done)
        raise
    return handle.result()


class _Inbox:
    """The listener of a streamed run: hands events to the loop's queue.
    Apart from the stream, so that the run's thread does not keep the
    stream alive (a dropped stream is collected, and cancels its run)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[Any] = asyncio.Queue()

    def put(self, item: Any) -> None:
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, item)
        except RuntimeError:  # the loop is closed: nobody reads any more
            pass


class AsyncAgentStream(AsyncIterator[AgentEvent]):
    """``agent.astream()``: the events of :meth:`Agent.stream
    <adil.agent.Agent.stream>` as an async iterator.  ``outcome`` once the
    run ended; ``cancel()`` (any thread) cancels this run; ``aclose()`` or
    the end of ``async with`` cancels it and waits for its end; cancelling
    the reading task does too; a stream dropped unread cancels its run."""

    def __init__(self, begin: Callable[[Listener], AgentHandle]) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise InvalidArgumentError(
                "astream() needs a running event loop (call it from a coroutine; "
                "stream() is the one for threads)") from None
        inbox = _Inbox(loop)
        self._queue = inbox.queue
        self._ended = False
        self._handle = begin(inbox.put)
        self._done = _done_future(self._handle)
        self._handle._when_done(lambda: inbox.put(END))

    @property
    def outcome(self) -> RunOutcome | None:
        """The run's outcome once it ended; None while it runs or when it raised."""
        return self._handle._outcome if self._handle.done() else None

    def __aiter__(self) -> AsyncAgentStream:
        return self

    async def __anext__(self) -> AgentEvent:
        if self._ended:
            raise StopAsyncIteration
        try:
            item = await self._queue.get()
        except asyncio.CancelledError:
            self._handle.cancel()
            await _settle(self._done)
            raise
        if item is END:
            self._ended = True
            error = self._handle._error
            if error is not None:
                raise error
            raise StopAsyncIteration
        return cast(AgentEvent, item)

    def cancel(self) -> None:
        """Cancels this stream's run if it is still going (any thread)."""
        self._handle.cancel()

    async def aclose(self) -> None:
        """Cancels the run and waits (without blocking the loop) for its end."""
        self._handle.cancel()
        await _settle(self._done)

    async def __aenter__(self) -> AsyncAgentStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle._cancel_quietly()


# -- the thread bridge -----------------------------------------------------------


async def _in_thread(
    work: Callable[[], T],
    *,
    on_cancel: Callable[[], None] | None = None,
    discard: Callable[[T], None] | None = None,
) -> T:
    """`work()` in a worker thread (with the caller's context variables).
    When the awaiting task is cancelled: `on_cancel()` (in the loop's
    thread; it must not block), then a wait for `work` to return, then
    `discard(result)` if it returned one, then CancelledError."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future = loop.run_in_executor(None, context.run, work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        await _settle(future)
        if discard is not None and not future.cancelled() and future.exception() is None:
            discard(future.result())
        raise


async def _settle(future: asyncio.Future[Any]) -> None:
    """Waits for `future` after a cancel; its result or error no longer
    matters.  Cancelling this wait raises CancelledError."""
    try:
        await asyncio.shield(future)
    except asyncio.CancelledError:
        if not future.done():
            raise
    except Exception:  # noqa: BLE001 - the work was cancelled: its error is moot
        pass


def _done_future(handle: AgentHandle) -> asyncio.Future[None]:
    """A future of the running loop that is done once `handle`'s run ended."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[None] = loop.create_future()

    def resolve() -> None:
        try:
            loop.call_soon_threadsafe(_set_done, future)
        except RuntimeError:  # the loop is closed: nobody waits
            pass

    handle._when_done(resolve)
    return future


def _set_done(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _close(generation: Generation) -> None:
    generation.close()
