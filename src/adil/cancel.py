"""CancelToken: the engine's C cancelled flag, usable from Python.

One token stands for one piece of work (a generation and the tools it leads
to).  ``cancel()`` may be called from any thread.  ``cancelled()`` calls the
engine's C function ``adil_cancel_flag_is_set`` through cffi: the same
function, with the same token, that a native (C) tool receives.
"""

from __future__ import annotations

from typing import Any

from ._binding import Library, check, ffi

__all__ = ["CancelToken"]


class CancelToken:
    """A cancelled flag owned by an engine library."""

    def __init__(self, library: Library) -> None:
        self._library = library
        out = ffi.new("adil_cancel_flag **")
        check(library.lib, library.lib.adil_cancel_flag_new(out))
        self._flag = ffi.gc(out[0], library.lib.adil_cancel_flag_free)

    def cancel(self) -> None:
        """Sets the flag (idempotent, any thread)."""
        self._library.lib.adil_cancel_flag_set(self._flag)

    def cancelled(self) -> bool:
        """True once cancel() was called: asks the C flag function."""
        return bool(self._library.lib.adil_cancel_flag_is_set(self._flag))

    @property
    def fn_and_token(self) -> tuple[Any, Any]:
        """(adil_cancelled_fn, token) for a native tool: the C pair itself."""
        fn = ffi.cast("adil_cancelled_fn", self._library.lib.adil_cancel_flag_is_set)
        return fn, ffi.cast("void *", self._flag)

    @property
    def handle(self) -> Any:
        """The adil_cancel_flag* to put in run params."""
        return self._flag

    @property
    def library(self) -> Library:
        return self._library
