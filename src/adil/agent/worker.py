"""One tool call in a thread of its own, so that the run can stop waiting
for it: at the total deadline the run returns and the call is abandoned,
whatever its handler does (cancellation is cooperative: a handler that
never looks at ``ctx.cancelled()`` cannot be stopped, only left behind).

The handler runs in a copy of the caller's context (``contextvars``), so
context-local state such as a tracing span follows it into the thread.  A
late result is kept here and nowhere else: the agent never reads it once it
stopped waiting.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["HandlerCall"]


class HandlerCall:
    """`work()` started in a daemon thread; :meth:`wait` for its end."""

    def __init__(self, work: Callable[[], Any], name: str) -> None:
        self.value: Any = None
        self.error: BaseException | None = None
        self._done = threading.Event()
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._main, work),
                                        name=f"adil-tool-{name}", daemon=True)
        self._thread.start()

    def _main(self, work: Callable[[], Any]) -> None:
        try:
            self.value = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the agent's thread
            self.error = exc
        finally:
            self._done.set()

    def wait(self, timeout: float | None) -> bool:
        """True once the handler returned or raised; False when `timeout`
        seconds passed first (``None``: no limit)."""
        return self._done.wait(None if timeout is None else max(timeout, 0.0))
