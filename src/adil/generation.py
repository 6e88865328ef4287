"""One generation: stepping an engine run and turning tokens into text.

:class:`Generation` is the iterator ``Model.generate()`` returns.  It steps
the C run in batches (the engine returns once it has a batch or its step
budget passed, so streaming stays smooth while the per-call overhead is
amortised), decodes UTF-8 incrementally, applies stop strings, and frees the
run as soon as it ends so the model can serve the next one.
"""

from __future__ import annotations

import codecs
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

from ._binding import STATUSES, STOP_REASONS, check, ffi, token_logprobs
from .errors import AdilError, BusyError, InvalidArgumentError, OutputValidationError
from .structured import prefix_location

if TYPE_CHECKING:
    from .constraints import Constraint
    from .engine import Model
    from .structured import OutputSchema

__all__ = ["Completion", "Generation", "Piece", "Stats", "StopReason", "TokenLogprob"]

StopReason = Literal["running", "end_of_text", "max_tokens", "stop_sequence", "cancelled",
                     "deadline", "error"]
"""Why a generation ended (``running`` while it goes on)."""

STEP_CAPACITY = 64
# How long the main thread sleeps at most while a step runs on the helper
# thread before it looks for a SIGINT whose wake-up it missed (see
# _step_interruptibly): the bound on how late such a signal cancels the run.
_SIGNAL_POLL_S = 0.02
# adil_stop_reason value -> Generation.stop_reason.
_NAMES: dict[str, StopReason] = {
    "ADIL_STOP_NONE": "running",
    "ADIL_STOP_END_OF_TEXT": "end_of_text",
    "ADIL_STOP_MAX_TOKENS": "max_tokens",
    "ADIL_STOP_CANCELLED": "cancelled",
    "ADIL_STOP_DEADLINE_TOTAL": "deadline",
    "ADIL_STOP_DEADLINE_READ": "deadline",
    "ADIL_STOP_ERROR": "error",
}
_STOP_REASONS: dict[int, StopReason] = {STOP_REASONS[name]: reason
                                        for name, reason in _NAMES.items()}
# A run that ends with one of these statuses raises nothing (a cancelled run
# just stops).
_QUIET_STATUSES = (STATUSES["ADIL_OK"], STATUSES["ADIL_STATUS_CANCELLED"])


@dataclass(frozen=True)
class TokenLogprob:
    """One generated token's log-probability (``logprobs=k``): the
    log-softmax of the model's raw logits at that step (before temperature,
    penalties and grammar), and the `k` most likely tokens there, most likely
    first, as ``(token, text, logprob)``.  ``text``: the token's bytes
    decoded, special tokens by their text (invalid UTF-8 replaced: a token
    may hold part of a character).  A token whose logits the engine did not
    compute (one a grammar forced, evaluated in a batch) has ``logprob`` NaN
    and no ``top``."""

    token: int
    text: str
    logprob: float
    top: tuple[tuple[int, str, float], ...] = ()


@dataclass(frozen=True)
class Piece:
    """A streamed piece: text (whole characters) and the tokens behind it;
    with ``logprobs=k``, one :class:`TokenLogprob` per token (else None)."""

    text: str
    tokens: tuple[int, ...]
    logprobs: tuple[TokenLogprob, ...] | None = None


@dataclass(frozen=True)
class Stats:
    n_prompt_tokens: int = 0
    n_cached_tokens: int = 0
    n_generated: int = 0
    prefill_ms: float = 0.0
    decode_ms: float = 0.0
    # ABI 2.1 (0 from a 2.0 engine): tokens the grammar forced, and the time
    # spent on token masks and advancing the grammar.
    forced_tokens: int = 0
    grammar_ms: float = 0.0
    # ABI 2.3 (0 from an earlier engine): tokens a speculative run
    # (speculative="lookup") drafted and verified, and how many of them it kept.
    drafted_tokens: int = 0
    draft_accepted: int = 0

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
    """A finished generation: the generated part only.  ``value``: with a
    schema, the document read and validated (an instance of the schema's
    type when it is one); None without a schema."""

    text: str
    tokens: tuple[int, ...]
    stop_reason: StopReason
    stats: Stats
    cancel_acknowledged: bool = False
    value: Any = None
    logprobs: tuple[TokenLogprob, ...] | None = None  # with logprobs=k: one per token


class Generation(Iterator[Piece]):
    """An iterator of :class:`Piece`; after it ends, ``text``, ``tokens``,
    ``stop_reason`` (a :data:`StopReason`), ``stats``,
    ``cancel_acknowledged``, (with a schema) ``value`` and (with
    ``logprobs=k``) ``logprobs`` describe it.

    Stop reasons: ``end_of_text``, ``max_tokens``, ``stop_sequence``,
    ``cancelled``.  An expired deadline raises :class:`DeadlineError` after
    the pieces produced before it; so does :class:`OutputValidationError`
    for constrained output the engine refused or that was truncated, or
    (with a schema) a document that does not read or validate (``.location``,
    and ``.text``: the text generated).

    Threads: one thread reads it at a time (another gets BusyError);
    ``cancel()`` and ``close()`` may come from any thread — ``close()``
    cancels, waits for a step in progress, then frees the run."""

    def __init__(
        self,
        model: Model,
        run: Any,
        serial: int,
        token_bytes: Callable[[int], bytes],
        stop: Sequence[str],
        *,
        constraint: Constraint | None = None,
        schema: OutputSchema | None = None,
        max_tokens: int = 0,
        logprobs: int | None = None,
    ) -> None:
        self._lib = model._lib
        self._model = model  # owns the run's slot, the context and the call lock
        self._calls = model._calls
        self._run = run  # the model frees it
        self._serial = serial  # which of the model's runs this is
        self._token_bytes = token_bytes
        self._stop = tuple(s for s in stop if s)
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self._buffer = ffi.new("int32_t[]", STEP_CAPACITY)
        self._n_out = ffi.new("size_t *")
        self._reading = threading.Lock()  # one reader at a time
        self._stepped = False  # the first step (the prefill) has run
        self._held = ""  # text held back: it may be the start of a stop string
        self._pending_error: AdilError | None = None
        self._constraint = constraint
        self._schema = schema
        self._max_tokens = max_tokens
        self._n_logprobs = logprobs  # None: not asked; k: alternatives per token
        self._logprob_list: list[TokenLogprob] = []
        self._raw_stop = STOP_REASONS["ADIL_STOP_NONE"]
        self._value: Any = None
        self._capacity = STEP_CAPACITY  # tokens per step (adil.bench steps one at a time)
        # The first step returns with the first token (time to first token),
        # unless nobody reads the pieces (completion()): then it is one more
        # step for nothing.
        self._first_token_alone = True
        # Appended per step and joined when read: += on a str or tuple
        # attribute copies it, which made long outputs quadratic.
        self._text_parts: list[str] = []
        self._token_list: list[int] = []
        self.stop_reason: StopReason = "running"
        self.cancel_acknowledged = False
        self.stats = Stats()

    @property
    def text(self) -> str:
        """The text generated so far."""
        if len(self._text_parts) > 1:
            self._text_parts[:] = ["".join(self._text_parts)]
        return self._text_parts[0] if self._text_parts else ""

    @property
    def tokens(self) -> tuple[int, ...]:
        """The tokens generated so far."""
        return tuple(self._token_list)

    @property
    def logprobs(self) -> tuple[TokenLogprob, ...] | None:
        """With ``logprobs=k``: one TokenLogprob per token generated so far;
        None when not asked."""
        return None if self._n_logprobs is None else tuple(self._logprob_list)

    @property
    def value(self) -> Any:
        """With a schema: the document, read and validated, once the stream
        has ended (None when it ended without one: cancelled, or it raised).
        Without a schema: None.  InvalidArgumentError while a schema'd
        stream is still going."""
        if self._schema is not None and self.stop_reason == "running":
            raise InvalidArgumentError("the value is known once the generation has ended")
        return self._value

    @property
    def is_open(self) -> bool:
        """True until the run is freed (finished or closed)."""
        return self._model._run_is(self._serial)

    def _owns(self, serial: int) -> bool:
        return serial == self._serial

    # -- iteration ------------------------------------------------------
    def __iter__(self) -> Generation:
        return self

    def __next__(self) -> Piece:
        if not self._reading.acquire(blocking=False):
            raise BusyError("another thread is reading this generation")
        try:
            while True:
                if self._pending_error is not None:
                    error, self._pending_error = self._pending_error, None
                    try:
                        raise error
                    finally:
                        del error  # no frame -> exception -> frame cycle
                if not self.is_open:
                    raise StopIteration
                piece = self._step()
                if piece is not None:
                    return piece
        finally:
            self._reading.release()

    def _step(self) -> Piece | None:
        with self._calls:
            if not self.is_open:  # closed by another thread meanwhile
                return None
            status, interrupted = self._call_step(self._run)
            piece = self._take(status)
        if interrupted is not None:
            interrupted()
        return piece

    def _call_step(self, run: Any) -> tuple[int, Callable[[], None] | None]:
        """One adil_run_step.  The first step (it holds the prefill, seconds
        for a long prompt) runs on a helper thread while the main thread
        waits, so Ctrl-C cancels the run at once instead of when the C call
        returns; the interrupt is delivered once the step is taken.

        Later steps (about 20 ms each) do so too while SIGINT has a handler
        of its own: Python runs a handler once for all the signals that came
        during one C call, and such a handler may count them (``adil chat``
        leaves on a second Ctrl-C); on the helper thread each one is seen.
        Python's default handler only raises KeyboardInterrupt, which one
        signal does as well as two: those steps stay on this thread."""
        first, self._stepped = not self._stepped, True
        # The first step returns with the first token: the engine ends a
        # step once its budget (20 ms) has passed, so a prefill just under
        # the budget would otherwise decode a second token (another forward
        # pass) before the caller saw the first one.
        capacity = 1 if first and self._first_token_alone else self._capacity
        handler = _python_sigint_handler()
        if handler is not None and (first or handler is not signal.default_int_handler):
            return _step_interruptibly(self._lib, run, self._buffer, capacity, self._n_out)
        return self._lib.adil_run_step(run, self._buffer, capacity, self._n_out), None

    def _take(self, status: int) -> Piece | None:
        tokens = tuple(int(t) for t in self._buffer[0 : self._n_out[0]])
        logprobs = self._read_logprobs(tokens) if self._n_logprobs is not None else None
        self._token_list.extend(tokens)
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
        if text:
            self._text_parts.append(text)
        if finished:
            self._read_output()
        return Piece(text, tokens, logprobs) if (text or tokens) else None

    def _read_logprobs(self, tokens: tuple[int, ...]) -> tuple[TokenLogprob, ...]:
        """The TokenLogprob of each token of this step (read while the run
        is live: before _finish frees it)."""
        k = self._n_logprobs or 0
        first = len(self._token_list)
        read = []
        for index, token in enumerate(tokens, start=first):
            logprob, top = token_logprobs(self._lib, self._run, index)
            read.append(TokenLogprob(token, self._text_of(token), logprob,
                                     tuple((t, self._text_of(t), lp) for t, lp in top[:k])))
        self._logprob_list.extend(read)
        return tuple(read)

    def _text_of(self, token: int) -> str:
        return self._model.token_bytes(token, special=True).decode("utf-8", "replace")

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

    def _stats_later(self, raw: Any) -> dict[str, Any]:
        """The run stats fields of ABI 2.1 and 2.3, when the engine's struct has them."""
        if not self._model._library.has_fields("adil_run_stats", 1):
            return {}
        fields = {"forced_tokens": int(raw.n_forced_tokens), "grammar_ms": float(raw.grammar_ms)}
        if self._model._library.has_fields("adil_run_stats", 3):
            fields.update(drafted_tokens=int(raw.n_drafted),
                          draft_accepted=int(raw.n_draft_accepted))
        return fields

    def _read_stats(self) -> Any:
        """The run's adil_run_stats so far (the run must be live)."""
        raw = ffi.new("adil_run_stats *")
        raw.struct_size = ffi.sizeof("adil_run_stats")
        check(self._lib, self._lib.adil_run_get_stats(self._run, raw))
        return raw

    def _stats_of(self, raw: Any) -> Stats:
        return Stats(
            n_prompt_tokens=raw.n_prompt_tokens,
            n_cached_tokens=raw.n_cached_tokens,
            n_generated=raw.n_generated,
            prefill_ms=raw.prefill_ms,
            decode_ms=raw.decode_ms,
            **self._stats_later(raw),
        )

    def live_stats(self) -> Stats:
        """The stats so far: read from the engine while the run is live, the
        final ones once it ended (adil.bench reads them after every step)."""
        with self._calls:
            if not self.is_open:
                return self.stats
            return self._stats_of(self._read_stats())

    def _finish(self, status: int, stopped_by_string: bool) -> None:
        raw = self._read_stats()
        self.stats = self._stats_of(raw)
        self._raw_stop = int(raw.stop_reason)
        self.cancel_acknowledged = bool(raw.cancel_acknowledged)
        self.stop_reason = "stop_sequence" if stopped_by_string else _STOP_REASONS.get(
            raw.stop_reason, "error")
        self._model._free_run(self._serial)
        if status not in _QUIET_STATUSES:
            try:
                check(self._lib, status, stop_reason=raw.stop_reason)
            except AdilError as error:
                self._pending_error = error.with_traceback(None)

    # -- constrained output ---------------------------------------------
    def _read_output(self) -> None:
        """Once the run ended: an OutputValidationError of the engine gets
        its location and text; with a schema, the document is read into
        ``value`` (or becomes the pending error)."""
        error = self._pending_error
        if isinstance(error, OutputValidationError) and self._constraint is not None:
            self._pending_error = self._refused(error)
            return
        if self._schema is None or error is not None or self.stop_reason in (
                "cancelled", "deadline", "running"):
            return
        text = self.text
        try:
            self._value = self._schema.read(text)
        except OutputValidationError as exc:
            if self.stop_reason != "max_tokens":
                self._pending_error = exc
                return
            self._pending_error = OutputValidationError(
                f"the output was truncated by {self._limit()} before the document was complete "
                f"({exc})", location=prefix_location(text), text=text)

    def _refused(self, error: OutputValidationError) -> OutputValidationError:
        """The engine ended the run: its grammar refused what came next, or
        the run stopped (max_tokens) before the document was complete."""
        text = self.text
        trigger = self._constraint.trigger if self._constraint is not None else None
        document = text.rpartition(trigger)[2] if trigger else text
        location = prefix_location(document)
        truncated = (self._raw_stop == STOP_REASONS["ADIL_STOP_MAX_TOKENS"]
                     or "truncat" in error.message.lower()
                     or 0 < self._max_tokens <= len(self._token_list))
        what = (f"the output was truncated by {self._limit()} before the document was complete"
                if truncated else "the engine refused the output")
        return OutputValidationError(f"{what} after {len(text)} characters: {error.message}",
                                     location=location, text=text)

    def _limit(self) -> str:
        return (f"max_tokens={self._max_tokens}" if self._max_tokens
                else "the end of the context (max_tokens=None)")

    # -- lifetime -------------------------------------------------------
    def close(self) -> None:
        """Frees the run, cancelling it if still going.  Idempotent; any
        thread (a step in progress elsewhere stops within a layer's time
        and is waited for)."""
        self._model._cancel_run(self._serial)
        self._model._free_run(self._serial)
        if self.stop_reason == "running":
            self.stop_reason = "cancelled"

    def __del__(self) -> None:
        # An abandoned stream frees its run at once (if this is cut short,
        # the model's next call reaps it: Model._reap).
        model = getattr(self, "_model", None)
        if model is not None:
            model._free_run(self._serial)

    def cancel(self) -> None:
        """Asks the run to stop before its next token, or within a layer of a
        prefill (any thread)."""
        self._model._cancel_run(self._serial)

    def __enter__(self) -> Generation:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def completion(self) -> Completion:
        """Consumes the rest and returns the whole :class:`Completion`."""
        self._first_token_alone = False  # no piece is read before the end
        for _ in self:
            pass
        return Completion(self.text, self.tokens, self.stop_reason, self.stats,
                          self.cancel_acknowledged, self._value, self.logprobs)


def _python_sigint_handler() -> Callable[[int, FrameType | None], Any] | None:
    """SIGINT's Python handler (the default raises KeyboardInterrupt) when
    this is the main thread, else None (no Python handler, or signals cannot
    be handled on this thread)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    handler = signal.getsignal(signal.SIGINT)
    return handler if callable(handler) else None


def _step_interruptibly(lib: Any, run: Any, buffer: Any, capacity: int,
                        n_out: Any) -> tuple[int, Callable[[], None] | None]:
    """adil_run_step on a helper thread; SIGINT meanwhile cancels the run.
    Returns the status and, if SIGINT came, a function that hands each
    signal to the handler that was installed before (KeyboardInterrupt by
    default)."""
    status: list[int] = []
    signals: list[int] = []
    errors: list[BaseException] = []

    def on_sigint(signum: int, frame: Any) -> None:
        signals.append(signum)  # not the frame: it would hold this stack in a cycle
        lib.adil_run_cancel(run)

    worker = threading.Thread(
        target=lambda: status.append(lib.adil_run_step(run, buffer, capacity, n_out)),
        name="adil-step", daemon=True)
    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        worker.start()
        while worker.is_alive():  # the run must not be freed while the step runs
            try:
                # Not join() without a timeout: a SIGINT that lands after
                # Python last ran its handlers but before the thread sleeps
                # in the lock's wait does not interrupt that wait, and would
                # wait with the step (the run not cancelled) until it ends.
                worker.join(_SIGNAL_POLL_S)
            except BaseException as exc:  # noqa: BLE001 - another signal's handler raised
                errors.append(exc)
                lib.adil_run_cancel(run)
    finally:
        signal.signal(signal.SIGINT, previous)
    if errors:
        try:
            raise errors[0]
        finally:
            errors.clear()  # no frame -> list -> exception -> frame cycle
    if not signals or not callable(previous):
        return status[0], None
    count = len(signals)
    return status[0], lambda: _hand_on(previous, count, sys._getframe(1))


def _hand_on(handler: Callable[[int, FrameType | None], Any], count: int,
             frame: FrameType | None) -> None:
    """Calls `handler` once for each of `count` signals, each call even when
    an earlier one raised (``adil chat``'s handler stops the answer on the
    first Ctrl-C and leaves on a second one); the last exception raised
    propagates, with the one before as its ``__context__``."""
    raised: BaseException | None = None
    for _ in range(count):
        try:
            handler(signal.SIGINT, frame)
        except BaseException as exc:  # noqa: BLE001 - raised below, after the others ran
            if raised is not None and raised is not exc and exc.__context__ is None:
                exc.__context__ = raised
            raised = exc
    if raised is not None:
        try:
            raise raised
        finally:
            raised = None  # no frame -> exception -> frame cycle
