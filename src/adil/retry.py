"""Retries: only for a busy model or service, a model that is not ready, and
a refused connection; exponential backoff with jitter; never sleeping into
or starting an attempt past the total deadline.

    policy = RetryPolicy(max_retries=4, initial_delay=0.05)
    generation = policy.call(lambda: model.generate(prompt), deadline=deadline)

Delay before retry ``k`` (0-based): ``min(max_delay, initial_delay *
multiplier**k)``, scaled by a random factor in ``[1 - jitter, 1]``.  When
that sleep would reach the total deadline, the policy stops and raises the
last error (the cause, not a timeout): no attempt can start after the
deadline.  An attempt is never started once the deadline has passed
(:class:`DeadlineError`, ``limit == "total"``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from .errors import (
    AdilError,
    BusyError,
    InvalidArgumentError,
    ModelNotReadyError,
    ServiceConnectionError,
    check_int,
    check_real,
)
from .timeouts import Deadline

__all__ = ["RetryPolicy", "is_retryable"]

T = TypeVar("T")


def is_retryable(error: BaseException) -> bool:
    """Busy, model not ready, or a connection that was refused (the service
    is not up yet); nothing else, in particular no dropped connection, whose
    request may already have had effects."""
    if isinstance(error, BusyError | ModelNotReadyError):
        return True
    return isinstance(error, ServiceConnectionError) and bool(getattr(error, "refused", False))


@dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How often and how patiently to retry (times in seconds).  Checked when
    built (InvalidArgumentError): ``max_retries`` an integer >= 0, delays
    finite with ``0 < initial_delay <= max_delay``, ``multiplier`` finite and
    >= 1, ``jitter`` in [0, 1)."""

    max_retries: int = 5
    initial_delay: float = 0.05
    max_delay: float = 2.0
    multiplier: float = 2.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        check_int("RetryPolicy.max_retries", self.max_retries, low=0)
        check_real("RetryPolicy.initial_delay", self.initial_delay, low=0, low_open=True)
        check_real("RetryPolicy.max_delay", self.max_delay, low=0, low_open=True)
        if self.initial_delay > self.max_delay:
            raise InvalidArgumentError(
                f"RetryPolicy needs initial_delay <= max_delay, got {self.initial_delay!r} > "
                f"{self.max_delay!r}"
            )
        check_real("RetryPolicy.multiplier", self.multiplier, low=1)
        check_real("RetryPolicy.jitter", self.jitter, low=0, high=1, high_open=True)

    def base_delay(self, retry: int) -> float:
        """The delay before retry `retry` (0-based) without jitter."""
        return min(self.max_delay, self.initial_delay * self.multiplier ** min(retry, 64))

    def delay(self, retry: int, rng: random.Random) -> float:
        """The jittered delay before retry `retry`."""
        return self.base_delay(retry) * (1.0 - self.jitter * rng.random())

    def call(
        self,
        attempt: Callable[[], T],
        *,
        deadline: Deadline | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        should_stop: Callable[[], bool] | None = None,
    ) -> T:
        """Calls `attempt` until it succeeds, fails with an error that is not
        retryable, runs out of retries, or the next try would pass the
        deadline.  `should_stop` (e.g. a cancel flag) ends the retries early:
        the last error is raised."""
        retry = 0
        while True:
            if deadline is not None:
                deadline.check()
            try:
                return attempt()
            except AdilError as error:
                if not is_retryable(error) or retry >= self.max_retries:
                    raise
                rng = rng or random.Random()  # made at the first retry: seeding reads urandom
                pause = self.delay(retry, rng)
                if deadline is not None and deadline.expires_within(pause):
                    raise
                if should_stop and should_stop():
                    raise
                sleep(pause)
                retry += 1
