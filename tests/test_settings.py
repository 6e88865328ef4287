"""Settings objects refuse bad values when they are built, with
InvalidArgumentError (an AdilError, also a ValueError and a TypeError):
Timeout, RetryPolicy and Sampling."""

from __future__ import annotations

import math
from typing import Any

import pytest

import adil
from adil.retry import RetryPolicy

BAD_SECONDS = [0, -1, -0.5, math.nan, math.inf, -math.inf, True, False, "1", [1], 10**400]


@pytest.mark.parametrize("field", ["connect", "read", "total"])
@pytest.mark.parametrize("value", BAD_SECONDS)
def test_timeout_refuses_what_is_not_finite_positive_seconds(field: str, value: Any) -> None:
    with pytest.raises(adil.InvalidArgumentError, match=f"Timeout.{field}") as caught:
        adil.Timeout(**{field: value})
    assert caught.value.code == "invalid_argument"


def test_timeout_infinity_is_refused_not_read_as_no_limit() -> None:
    """None is "no limit" (and, in merged(), "keep the other limit"); inf is
    refused so that it cannot pass for a lifted limit, and never reaches the
    engine, whose millisecond fields would overflow."""
    with pytest.raises(adil.InvalidArgumentError, match="None for no limit"):
        adil.Timeout(total=math.inf)
    assert adil.Timeout(total=None).total is None
    assert adil.Timeout(total=1e9).total == 1e9
    assert adil.Timeout(connect=1, read=2.5, total=3).read == 2.5


@pytest.mark.parametrize("kwargs", [
    {"max_retries": -1}, {"max_retries": 1.5}, {"max_retries": True}, {"max_retries": "3"},
    {"initial_delay": 0}, {"initial_delay": -1}, {"initial_delay": math.nan},
    {"initial_delay": math.inf}, {"max_delay": math.inf}, {"max_delay": "2"},
    {"initial_delay": 3.0, "max_delay": 2.0}, {"multiplier": 0.5}, {"multiplier": math.nan},
    {"multiplier": math.inf}, {"jitter": 1}, {"jitter": -0.1}, {"jitter": "x"},
    {"jitter": None},
])
def test_retry_policy_refuses_bad_settings(kwargs: dict[str, Any]) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="RetryPolicy"):
        RetryPolicy(**kwargs)


def test_retry_policy_edges_that_are_fine() -> None:
    policy = RetryPolicy(max_retries=0, initial_delay=1, max_delay=1, multiplier=1, jitter=0)
    assert policy.base_delay(10) == 1


@pytest.mark.parametrize("kwargs", [
    {"temperature": -1}, {"temperature": math.nan}, {"temperature": math.inf},
    {"temperature": 1e39}, {"temperature": "0.7"}, {"temperature": None}, {"temperature": True},
    {"top_k": -1}, {"top_k": 1.5}, {"top_k": 2**31}, {"top_k": False},
    {"top_p": 0}, {"top_p": 1.5}, {"top_p": math.nan}, {"top_p": -0.1},
    {"min_p": -0.1}, {"min_p": 1.01}, {"min_p": math.nan},
    {"repeat_penalty": 0}, {"repeat_penalty": -1}, {"repeat_penalty": math.inf},
    {"repeat_last_n": -1}, {"repeat_last_n": 2.0}, {"repeat_last_n": 2**31},
    {"seed": -1}, {"seed": 2**64}, {"seed": 1.5}, {"seed": "1"}, {"seed": True},
])
def test_sampling_refuses_values_outside_the_engine_ranges(kwargs: dict[str, Any]) -> None:
    (name,) = [k for k in kwargs if k != "max_delay"]
    with pytest.raises(adil.InvalidArgumentError, match=f"Sampling.{name}"):
        adil.Sampling(**kwargs)


def test_sampling_edges_that_are_fine() -> None:
    greedy = adil.Sampling(temperature=0, top_k=0, top_p=1, min_p=0, repeat_last_n=0,
                           seed=2**64 - 1)
    assert greedy.seed == 2**64 - 1 and greedy.top_k == 0
    assert adil.Sampling(min_p=1, seed=0).min_p == 1


def test_errors_are_also_value_and_type_errors() -> None:
    for build in (lambda: adil.Timeout(total=-1), lambda: RetryPolicy(max_retries=-1),
                  lambda: adil.Sampling(temperature="hot")):
        with pytest.raises(ValueError):
            build()
        with pytest.raises(TypeError):
            build()
