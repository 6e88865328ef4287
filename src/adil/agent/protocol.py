"""What the agent needs of a model: ``adil.Model`` in-process, and the
service client's model, both fit."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from ..timeouts import Deadline, Timeout

__all__ = ["CancelTokenLike", "GenerationLike", "ModelLike"]


class CancelTokenLike(Protocol):
    def cancel(self) -> None: ...

    def cancelled(self) -> bool: ...


class GenerationLike(Protocol):
    """A stream of pieces; ``text``, ``stop_reason`` and
    ``cancel_acknowledged`` are final once it is exhausted."""

    text: str
    stop_reason: str
    cancel_acknowledged: bool

    def __iter__(self) -> Iterator[Any]: ...

    def __next__(self) -> Any: ...

    def close(self) -> None: ...


class ModelLike(Protocol):
    def render_chat(
        self, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True,
        *, deadline: Deadline | None = None,
    ) -> str: ...

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int = ...,
        sampling: Any = ...,
        schema: dict[str, Any] | None = ...,
        timeout: Timeout | None = ...,
        cancel: Any = ...,
        stop: Sequence[str] = ...,
        n: int = ...,
        images: Sequence[Any] | None = ...,
    ) -> GenerationLike: ...

    def cancel_token(self) -> Any: ...
