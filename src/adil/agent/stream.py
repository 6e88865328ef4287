"""AgentStream: a run's events as an iterator (``agent.stream()``).

The run goes on in the thread of an :class:`~.agent.AgentHandle`, as with
``agent.start()``; its listener puts each event in an unbounded queue, so
the run never waits for the reader (a slow reader cannot stall or
deadlock it) and the reader waits only for the next event.  The handle
puts an end marker after the last event, also when the run raised.

Leaving the stream cancels the run: ``close()`` (or the ``with`` block's
end) cancels it and waits until it stopped; a stream dropped unread
(``break`` out of a ``for``, then garbage collected) cancels it without
waiting.
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, cast

from .events import AgentEvent
from .records import RunOutcome

if TYPE_CHECKING:
    from .agent import AgentHandle

__all__ = ["AgentStream"]



class _End:
    """The marker put after a run's last event."""


END = _End()


class AgentStream(Iterator[AgentEvent]):
    """An iterator of a run's events; ``RunFinished`` comes last.  An
    exception that ended the run (one that ``run()`` would raise) is raised
    by the iteration after the events before it.

    Threads: one reader at a time; ``cancel()``, ``close()``, ``outcome``
    and ``done()`` from any thread."""

    def __init__(self, handle: AgentHandle, events: queue.SimpleQueue[Any]) -> None:
        self._handle = handle
        self._events = events
        self._ended = False
        handle._when_done(lambda: events.put(END))

    def __iter__(self) -> AgentStream:
        return self

    def __next__(self) -> AgentEvent:
        if self._ended:
            raise StopIteration
        item = self._events.get()
        if item is END:
            self._ended = True
            error = self._handle._error
            if error is not None:
                raise error
            raise StopIteration
        return cast(AgentEvent, item)

    @property
    def outcome(self) -> RunOutcome | None:
        """The run's outcome once it ended (also ``RunFinished.outcome``);
        None while it runs, or when it raised."""
        return self._handle._outcome if self._handle.done() else None

    def done(self) -> bool:
        """True once the run ended (events may still wait to be read)."""
        return self._handle.done()

    def result(self, timeout: float | None = None) -> RunOutcome:
        """Waits for the end (up to `timeout` seconds) and returns the
        outcome, without reading the events (see AgentHandle.result)."""
        return self._handle.result(timeout)

    def cancel(self) -> None:
        """Cancels this stream's run, if it is still going (any thread);
        other agents and runs are not touched.  The events up to the end,
        ``RunFinished`` with a ``cancelled`` outcome included, can still be
        read."""
        self._handle.cancel()

    def close(self, timeout: float | None = None) -> bool:
        """Cancels the run and waits until it stopped (a tool that ignores
        ``ctx.cancelled()`` is waited for, within the run's total timeout);
        True once it ended, False when `timeout` seconds passed first."""
        self._handle.cancel()
        return self._handle.wait(timeout)

    def __enter__(self) -> AgentStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle is not None:
            handle._cancel_quietly()
