"""One generation: stepping an engine run and turning tokens into text.

:class:`Generation` is the iterator ``Model.generate()`` returns.  It steps
the C run in batches (the engine returns once it has a batch or its step
budget passed, so streaming stays smooth while the per-call overhead is
amortised), decodes UTF-8 incrementally, applies stop strings, and frees the
run as soon as it ends so the model can serve the next one.
"""

from __future__ import annotations

import codecs
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from ._binding import Library, check, ffi
from .errors import AdilError

__all__ = ["Completion", "Generation", "Piece", "Stats"]

STEP_CAPACITY = 64
_STOP_REASONS = {
    0: "running",
    1: "end_of_text",
    2: "max_tokens",
    3: "cancelled",
    4: "deadline",
    5: "deadline",
    6: "error",
}


@dataclass(frozen=True)
class Piece:
    """A streamed piece: text (whole characters) and the tokens behind it."""

    text: str
    tokens: tuple[int, ...]


@dataclass(frozen=True)
class Stats:
    n_prompt_tokens: int = 0
    n_cached_tokens: int = 0
    n_generated: int = 0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0

    @property
    def prefill_tokens_per_s(self) -> float:
        evaluated = self.n_prompt_tokens - self.n_cached_tokens
        return evaluated / (self.prefill_ms / 1000) if self.prefill_ms > 0 else 0.0

    @property
    def decode_tokens_per_s(self) -> float:
        # The first token comes out of the prefill; decode made the others.
        decoded = max(self.n_generated - 1, 0)
        return decoded / (self.decode_ms / 1000) if self.decode_ms > 0 else 0.0


@dataclass(frozen=True)
class Completion:
    """A finished generation: the generated part only."""

    text: str
    tokens: tuple[int, ...]
    stop_reason: str
    stats: Stats
    cancel_acknowledged: bool = False


class Generation(Iterator[Piece]):
    """An iterator of :class:`Piece`; after it ends, ``text``, ``tokens``,
    ``stop_reason``, ``stats`` and ``cancel_acknowledged`` describe it.

    Stop reasons: ``end_of_text``, ``max_tokens``, ``stop_sequence``,
    ``cancelled``.  An expired deadline raises :class:`DeadlineError` after
    the pieces produced before it."""

    def __init__(
        self,
        library: Library,
        run: Any,
        token_bytes: Callable[[int], bytes],
        stop: Sequence[str],
        keepalive: Sequence[Any],
        on_close: Callable[[], None],
    ) -> None:
        self._lib = library.lib
        self._run = run
        self._token_bytes = token_bytes
        self._stop = tuple(s for s in stop if s)
        self._keepalive = keepalive  # params, grammar, cancel flag: alive while the run is
        self._on_close = on_close
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ffi.new("int32_t[]", STEP_CAPACITY)
        self._n_out = ffi.new("size_t *")
        self._lock = threading.Lock()  # close() vs cancel() from another thread
        self._held = ""  # text held back: it may be the start of a stop string
        self._pending_error: AdilError | None = None
        self.text = ""
        self.tokens: tuple[int, ...] = ()
        self.stop_reason = "running"
        self.cancel_acknowledged = False
        self.stats = Stats()

    # -- iteration ------------------------------------------------------
    def __iter__(self) -> Generation:
        return self

    def __next__(self) -> Piece:
        while True:
            if self._pending_error is not None:
                error, self._pending_error = self._pending_error, None
                raise error
            if self._run is None:
                raise StopIteration
            piece = self._step()
            if piece is not None:
                return piece

    def _step(self) -> Piece | None:
        status = self._lib.adil_run_step(self._run, self._buffer, STEP_CAPACITY, self._n_out)
        tokens = tuple(int(t) for t in self._buffer[0 : self._n_out[0]])
        self.tokens += tokens
        text = self._decoder.decode(b"".join(self._token_bytes(t) for t in tokens))
        stopped_by_string = False
        if self._stop:
            text, stopped_by_string = self._apply_stop(text)
        finished = status != 0 or not tokens or stopped_by_string
        if finished:
            if not stopped_by_string:
                text += self._held + self._decoder.decode(b"", final=True)
                self._held = ""
            self._finish(status, stopped_by_string)
        self.text += text
        return Piece(text, tokens) if (text or tokens) else None

    def _apply_stop(self, text: str) -> tuple[str, bool]:
        """Cuts at the first stop string; holds back a possible prefix of one."""
        text = self._held + text
        self._held = ""
        cut = min((i for i in (text.find(s) for s in self._stop) if i >= 0), default=-1)
        if cut >= 0:
            return text[:cut], True
        keep = max((k for s in self._stop for k in range(1, len(s)) if text.endswith(s[:k])),
                   default=0)
        if keep:
            text, self._held = text[:-keep], text[-keep:]
        return text, False

    def _finish(self, status: int, stopped_by_string: bool) -> None:
        raw = ffi.new("adil_run_stats *")
        raw.struct_size = ffi.sizeof("adil_run_stats")
        check(self._lib, self._lib.adil_run_get_stats(self._run, raw))
        self.stats = Stats(
            n_prompt_tokens=raw.n_prompt_tokens,
            n_cached_tokens=raw.n_cached_tokens,
            n_generated=raw.n_generated,
            prefill_ms=raw.prefill_ms,
            decode_ms=raw.decode_ms,
        )
        self.cancel_acknowledged = bool(raw.cancel_acknowledged)
        self.stop_reason = "stop_sequence" if stopped_by_string else _STOP_REASONS.get(
            raw.stop_reason, "error")
        self.close()
        if status not in (0, 1):  # ADIL_STATUS_CANCELLED ends the run, it is no error
            try:
                check(self._lib, status, stop_reason=raw.stop_reason)
            except AdilError as error:
                self._pending_error = error

    # -- lifetime -------------------------------------------------------
    def close(self) -> None:
        """Frees the run (cancelling it if still going).  Idempotent."""
        with self._lock:
            run, self._run = self._run, None
        if run is not None:
            ffi.release(run)
            self._keepalive = ()
            self._on_close()

    def __del__(self) -> None:
        # An abandoned stream must not leave its model busy for ever.
        self.close()

    def cancel(self) -> None:
        """Asks the run to stop before its next token (any thread)."""
        with self._lock:
            if self._run is not None:
                self._lib.adil_run_cancel(self._run)

    def __enter__(self) -> Generation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def completion(self) -> Completion:
        """Consumes the rest and returns the whole :class:`Completion`."""
        for _ in self:
            pass
        return Completion(self.text, self.tokens, self.stop_reason, self.stats,
                          self.cancel_acknowledged)

