"""Sampling parameters (the engine's adil_sampling_params, in Python)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from ._binding import ffi

__all__ = ["Sampling"]


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """How the next token is chosen.  ``temperature=0`` is greedy.

    Defaults follow llama.cpp's.  ``seed=None`` draws a fresh seed per
    generation; a fixed seed gives the same tokens for the same prompt."""

    temperature: float = 0.8
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05
    repeat_penalty: float = 1.0
    repeat_last_n: int = 64
    seed: int | None = None

    def __post_init__(self) -> None:
        if not self.temperature >= 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}")
        if not self.repeat_penalty > 0:
            raise ValueError(f"repeat_penalty must be > 0, got {self.repeat_penalty}")
        if self.seed is not None and not 0 <= self.seed < 2**64:
            raise ValueError(f"seed must be in [0, 2**64), got {self.seed}")

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
