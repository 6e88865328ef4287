"""Sampling parameters (the engine's adil_sampling_params, in Python)."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass
from typing import Any

from ._binding import ffi
from ._cdef import CONSTANTS
from .errors import InvalidArgumentError, check_int, check_real

__all__ = ["DEFAULT_SAMPLING", "Sampling", "resolve_sampling"]

_FLOAT_MAX = 3.4028234663852886e38  # the largest finite C float (the engine's type)
_INT32_MAX = 2**31 - 1


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """How the next token is chosen.  ``temperature=0`` is greedy.

    The defaults are adil.h's ADIL_DEFAULT_* macros (llama.cpp's values; the
    signature shows them): temperature 0.8, top_k 40, top_p 0.95, min_p
    0.05, repeat_penalty 1.0 (off) over the last 64 tokens.  ``seed=None``
    draws a fresh seed per generation; a fixed seed gives the same tokens for
    the same prompt.  :data:`DEFAULT_SAMPLING` (``Sampling()``) is the one
    default everything uses when no sampling is given: ``Model.generate``,
    ``Model.complete``, ``Model.chat``, the Agent and the ``adil`` CLI.

    Checked when built (InvalidArgumentError), with the engine's ranges:
    ``temperature`` >= 0, ``top_k`` >= 0 (0 = off), ``top_p`` in (0, 1],
    ``min_p`` in [0, 1], ``repeat_penalty`` > 0, ``repeat_last_n`` >= 0, all
    finite, floats within a C float and integers within an int32; ``seed``
    None or an integer in [0, 2**64).  Booleans are not numbers here."""

    temperature: float = float(CONSTANTS["ADIL_DEFAULT_TEMPERATURE"])
    top_k: int = int(CONSTANTS["ADIL_DEFAULT_TOP_K"])
    top_p: float = float(CONSTANTS["ADIL_DEFAULT_TOP_P"])
    min_p: float = float(CONSTANTS["ADIL_DEFAULT_MIN_P"])
    repeat_penalty: float = float(CONSTANTS["ADIL_DEFAULT_REPEAT_PENALTY"])
    repeat_last_n: int = int(CONSTANTS["ADIL_DEFAULT_REPEAT_LAST_N"])
    seed: int | None = None

    def __post_init__(self) -> None:
        check_real("Sampling.temperature", self.temperature, low=0, high=_FLOAT_MAX)
        check_int("Sampling.top_k", self.top_k, low=0, high=_INT32_MAX)
        check_real("Sampling.top_p", self.top_p, low=0, high=1, low_open=True)
        check_real("Sampling.min_p", self.min_p, low=0, high=1)
        check_real("Sampling.repeat_penalty", self.repeat_penalty, low=0, high=_FLOAT_MAX,
                   low_open=True)
        check_int("Sampling.repeat_last_n", self.repeat_last_n, low=0, high=_INT32_MAX)
        if self.seed is not None:
            check_int("Sampling.seed", self.seed, low=0, high=2**64 - 1)

    def to_c(self, lib: Any) -> Any:
        """A filled adil_sampling_params* (kept alive by the caller)."""
        params = ffi.new("adil_sampling_params *")
        lib.adil_sampling_default_params(params)
        params.temperature = self.temperature
        params.top_k = self.top_k
        params.top_p = self.top_p
        params.min_p = self.min_p
        params.repeat_penalty = self.repeat_penalty
        params.repeat_last_n = self.repeat_last_n
        seed = self.seed if self.seed is not None else int.from_bytes(os.urandom(8), "little")
        params.seed = seed
        return params


DEFAULT_SAMPLING = Sampling()
"""The sampling used when none is given (generate, complete, chat, the Agent
and the CLI): the ADIL_DEFAULT_* values, a fresh seed per generation."""


def resolve_sampling(
    sampling: Sampling | None = None,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    top_k: int | None = None,
    min_p: float | None = None,
    seed: int | None = None,
    repeat_penalty: float | None = None,
) -> Sampling:
    """`sampling` (default :data:`DEFAULT_SAMPLING`) with the keywords that
    are not None put in its place: a keyword wins over the same field of
    `sampling`.  Each value is checked as the field it sets
    (InvalidArgumentError naming ``Sampling.<field>``)."""
    if sampling is None:
        sampling = DEFAULT_SAMPLING
    elif not isinstance(sampling, Sampling):
        raise InvalidArgumentError(f"sampling must be an adil.Sampling, got {sampling!r}")
    given = {"temperature": temperature, "top_p": top_p, "top_k": top_k, "min_p": min_p,
             "seed": seed, "repeat_penalty": repeat_penalty}
    overrides: dict[str, Any] = {name: value for name, value in given.items()
                                 if value is not None}
    return dataclasses.replace(sampling, **overrides) if overrides else sampling
