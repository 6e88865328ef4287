"""ToolContext: what a tool handler learns about the call it serves."""

from __future__ import annotations

from typing import Any, Protocol

from ..errors import CapabilityError

__all__ = ["CancelSignal", "ToolContext"]


class CancelSignal(Protocol):
    """What a tool needs of a cancel token (``adil.CancelToken`` is one)."""

    def cancelled(self) -> bool: ...


class ToolContext:
    """Passed to a handler with each call.

    ``cancelled()`` calls the engine's C cancelled-flag function through cffi:
    poll it before each side effect.  ``confirmed_by`` is the person who
    approved this call (``None`` for a read-only call that needed no
    confirmation): keep enforcing your own authorisation with it, the SDK's
    confirmation does not replace it.
    """

    __slots__ = ("_cancel", "_remaining", "call_id", "confirmed_by", "tool")

    def __init__(
        self,
        *,
        tool: str,
        call_id: str,
        cancel: CancelSignal,
        confirmed_by: str | None = None,
        remaining: Any = None,
    ) -> None:
        self.tool = tool
        self.call_id = call_id
        self.confirmed_by = confirmed_by
        self._cancel = cancel
        self._remaining = remaining

    def cancelled(self) -> bool:
        """True once the run this call belongs to was cancelled (or its total
        deadline passed).  Cheap: one atomic load in the engine."""
        return self._cancel.cancelled()

    @property
    def cancel_fn_and_token(self) -> tuple[Any, Any]:
        """(adil_cancelled_fn, void* token): the C pair, for a native tool.
        CapabilityError when the run's cancel signal has none (a service
        client's token, a test's fake)."""
        pair = getattr(self._cancel, "fn_and_token", None)
        if pair is None:
            raise CapabilityError("this cancel signal has no C function (not an engine token)")
        return tuple(pair)

    def time_remaining(self) -> float | None:
        """Seconds left of the run's total deadline, or None without one."""
        return None if self._remaining is None else float(self._remaining())

    def __repr__(self) -> str:
        return (f"ToolContext(tool={self.tool!r}, call_id={self.call_id!r}, "
                f"confirmed_by={self.confirmed_by!r})")
