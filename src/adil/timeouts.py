"""Deadlines: :class:`Timeout` (what a caller asks for) and :class:`Deadline`
(one operation's running clock against it).

``connect``: longest wait to reach the service (service path only).
``read``: longest silence between two tokens or events.
``total``: the whole operation, tool time and retries included.
All in seconds; ``None`` means no limit.  A limit is a finite number above
zero: ``0``, negatives, NaN, booleans, strings and infinity are refused with
:class:`~adil.errors.InvalidArgumentError` when the Timeout is built.
Infinity is refused rather than read as "no limit" because ``None`` already
says that, and in :meth:`Timeout.merged` a ``None`` field keeps the other
timeout's limit: ``math.inf`` would look like a way to lift a limit that it
could not keep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import DeadlineError, InvalidArgumentError, check_real

__all__ = ["Clock", "Deadline", "Timeout", "as_timeout"]

Clock = Callable[[], float]


@dataclass(frozen=True, kw_only=True)
class Timeout:
    """Per-phase limits in seconds: finite numbers above zero, or ``None``
    for no limit (InvalidArgumentError otherwise)."""

    connect: float | None = None
    read: float | None = None
    total: float | None = None

    def __post_init__(self) -> None:
        for name in ("connect", "read", "total"):
            value = getattr(self, name)
            if value is not None:
                check_real(f"Timeout.{name} (seconds; None for no limit)", value, low=0,
                           low_open=True)

    def merged(self, override: Timeout | None) -> Timeout:
        """This timeout with the fields that `override` sets replaced."""
        if override is None:
            return self
        if not isinstance(override, Timeout):
            raise InvalidArgumentError(f"expected an adil.Timeout or None, got {override!r}")
        return Timeout(
            connect=override.connect if override.connect is not None else self.connect,
            read=override.read if override.read is not None else self.read,
            total=override.total if override.total is not None else self.total,
        )


def as_timeout(value: Timeout | float | None, name: str = "timeout") -> Timeout | None:
    """A ``timeout=`` argument as a Timeout: a Timeout as it is, plain
    seconds (an int or float above zero, finite; not a bool) as
    ``Timeout(total=seconds)``, None as None; InvalidArgumentError naming
    `name` otherwise."""
    if value is None or isinstance(value, Timeout):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        check_real(f"{name} (seconds; or an adil.Timeout, None for no limit)", value, low=0,
                   low_open=True)
        return Timeout(total=float(value))
    raise InvalidArgumentError(
        f"{name} must be an adil.Timeout, a number of seconds or None, got {value!r}")


@dataclass
class Deadline:
    """The running clock of one operation against a :class:`Timeout`."""

    timeout: Timeout
    clock: Clock = field(default=time.monotonic)
    started: float = 0.0

    @classmethod
    def start(cls, timeout: Timeout | None, clock: Clock = time.monotonic) -> Deadline:
        return cls(timeout or Timeout(), clock, clock())

    def elapsed(self) -> float:
        return self.clock() - self.started

    def remaining(self) -> float | None:
        """Seconds left of the total, or ``None`` when there is no total."""
        if self.timeout.total is None:
            return None
        return self.timeout.total - self.elapsed()

    def expired(self) -> bool:
        left = self.remaining()
        return left is not None and left <= 0

    def expires_within(self, seconds: float) -> bool:
        """True when the total deadline falls `seconds` from now or sooner
        (compared as absolute times, as a sleep of `seconds` would end)."""
        if self.timeout.total is None:
            return False
        return self.clock() + seconds >= self.started + self.timeout.total

    def check(self) -> None:
        """Raises :class:`DeadlineError` (limit ``total``) once expired."""
        if self.expired():
            raise DeadlineError(
                f"total timeout of {self.timeout.total} s expired", limit="total"
            )

    def bounded(self, limit: float | None) -> float | None:
        """`limit` cut down to what remains of the total (either may be None)."""
        left = self.remaining()
        if left is None:
            return limit
        left = max(left, 0.0)
        return left if limit is None else min(limit, left)
