"""Retries: which errors, backoff with jitter, and never past the total
deadline (a property test on a fake clock)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import adil
from adil.retry import RetryPolicy, is_retryable
from adil.timeouts import Deadline, Timeout


@dataclass
class FakeClock:
    now: float = 1000.0
    sleeps: list[float] = field(default_factory=list)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        assert seconds >= 0
        self.sleeps.append(seconds)
        self.now += seconds


def test_which_errors_are_retried() -> None:
    assert is_retryable(adil.BusyError("x"))
    assert is_retryable(adil.ModelNotReadyError("x"))
    assert is_retryable(adil.ServiceConnectionError("x", refused=True))
    assert not is_retryable(adil.ServiceConnectionError("dropped"))
    for error in (adil.DeadlineError("x"), adil.ContextLengthError("x"),
                  adil.CapabilityError("x"), adil.OutputValidationError("x"),
                  adil.PermissionDeniedError("x"), adil.CancelledError("x"), ValueError("x")):
        assert not is_retryable(error)


def test_backoff_grows_exponentially_with_jitter_and_a_cap() -> None:
    policy = RetryPolicy(initial_delay=0.1, multiplier=2, max_delay=1.0, jitter=0.5)
    assert [policy.base_delay(k) for k in range(6)] == [0.1, 0.2, 0.4, 0.8, 1.0, 1.0]
    rng = random.Random(1)
    delays = [policy.delay(3, rng) for _ in range(200)]
    assert all(0.4 <= d <= 0.8 for d in delays) and len(set(delays)) > 100


def test_succeeds_after_busy_and_not_ready() -> None:
    clock = FakeClock()
    errors = [adil.BusyError("b"), adil.ModelNotReadyError("n")]

    def attempt() -> str:
        if errors:
            raise errors.pop(0)
        return "ok"

    assert RetryPolicy().call(attempt, sleep=clock.sleep) == "ok"
    assert len(clock.sleeps) == 2


def test_other_errors_are_raised_at_once() -> None:
    calls = []

    def attempt() -> None:
        calls.append(1)
        raise adil.ContextLengthError("too long")

    with pytest.raises(adil.ContextLengthError):
        RetryPolicy().call(attempt, sleep=lambda s: None)
    assert calls == [1]


def test_no_attempt_starts_after_the_deadline() -> None:
    clock = FakeClock()
    deadline = Deadline.start(Timeout(total=1.0), clock=clock)
    clock.now += 1.0
    with pytest.raises(adil.DeadlineError) as info:
        RetryPolicy().call(lambda: "never", deadline=deadline, sleep=clock.sleep)
    assert info.value.limit == "total"


def test_should_stop_ends_retries() -> None:
    def attempt() -> None:
        raise adil.BusyError("busy")

    with pytest.raises(adil.BusyError):
        RetryPolicy(max_retries=100).call(attempt, sleep=lambda s: None, should_stop=lambda: True)


RETRYABLE = st.sampled_from([
    lambda: adil.BusyError("busy"),
    lambda: adil.ModelNotReadyError("loading"),
    lambda: adil.ServiceConnectionError("refused", refused=True),
])


@settings(max_examples=400)
@given(
    total=st.one_of(st.none(), st.floats(0.001, 30.0)),
    failures=st.integers(0, 40),
    max_retries=st.integers(0, 12),
    initial=st.floats(0.001, 1.0),
    multiplier=st.floats(1.0, 4.0),
    cap=st.floats(1.0, 10.0),
    jitter=st.floats(0.0, 0.99),
    attempt_cost=st.floats(0.0, 2.0),
    seed=st.integers(0, 2**32),
    make_error=RETRYABLE,
)
@example(  # found by hypothesis: a pause that ends exactly at the deadline after rounding
    total=1.0, failures=1, max_retries=1, initial=1.0, multiplier=1.0, cap=1.0,
    jitter=8.840452517309341e-15, attempt_cost=0.0, seed=0,
    make_error=lambda: adil.BusyError("busy"),
)
def test_retries_never_pass_the_total_deadline(
    total: float | None, failures: int, max_retries: int, initial: float, multiplier: float,
    cap: float, jitter: float, attempt_cost: float, seed: int, make_error: object,
) -> None:
    clock = FakeClock()
    policy = RetryPolicy(max_retries=max_retries, initial_delay=min(initial, cap),
                         max_delay=cap, multiplier=multiplier, jitter=jitter)
    deadline = Deadline.start(Timeout(total=total), clock=clock)
    end = None if total is None else clock.now + total
    starts: list[float] = []

    def attempt() -> str:
        starts.append(clock.now)
        clock.now += attempt_cost  # the attempt itself takes time
        if len(starts) <= failures:
            raise make_error()  # type: ignore[operator]
        return "ok"

    try:
        result = policy.call(attempt, deadline=deadline, sleep=clock.sleep,
                             rng=random.Random(seed))
    except adil.AdilError as error:
        result = None
        assert is_retryable(error) or (isinstance(error, adil.DeadlineError)
                                       and error.limit == "total")
    # never more attempts than allowed
    assert len(starts) <= max_retries + 1
    assert all(pause > 0 for pause in clock.sleeps)
    if end is not None:
        # no attempt starts at or after the deadline, no sleep reaches it
        assert all(s < end for s in starts)
        sleep_ends = [starts[i] + attempt_cost + pause for i, pause in enumerate(clock.sleeps)]
        assert all(e < end for e in sleep_ends), (sleep_ends, end)
    # each pause is the capped exponential delay, jittered downwards only
    for k, pause in enumerate(clock.sleeps):
        base = min(cap, min(initial, cap) * multiplier**k)
        assert base * (1 - jitter) - 1e-12 <= pause <= base + 1e-12
    # success whenever the failures fit in the retries and the time
    if result == "ok":
        assert len(starts) == failures + 1
    elif end is None:
        assert failures > max_retries and len(starts) == max_retries + 1
