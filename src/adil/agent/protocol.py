"""What the agent needs of a model: ``adil.Model`` in-process, and the
service client's model, both fit.

Grammar (ABI 2.1).  A model that can constrain its output says so with a
``capabilities`` attribute (a collection of str) that lists ``"grammar"``
(``adil.Model.capabilities``: its engine's).  Only then does the agent pass
``generate(..., constraint=...)``, an :class:`adil.constraints.Constraint`
(the lazy or forced tool-call grammar), and such a model must accept that
keyword: a generation it constrains ends with OutputValidationError when the
output cannot be completed as the constraint says (e.g. cut short).  A model
without the attribute, or whose capabilities lack ``grammar``, never gets
``constraint``; forcing a tool on it fails with CapabilityError.  The agent
never passes ``schema`` (that is the users' structured output)."""

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
    """Required: render_chat, generate, cancel_token.  Optional (read with
    getattr): ``capabilities`` (see the module docstring), ``info`` with
    ``context_length`` and ``tokenize`` (to fit long tool results)."""

    def render_chat(
        self, messages: Sequence[dict[str, str]], *, add_generation_prompt: bool = True,
        deadline: Deadline | None = None,
    ) -> str: ...

    def generate(
        self,
        prompt: str,
        *,
        max_tokens: int | None = ...,
        sampling: Any = ...,
        schema: dict[str, Any] | None = ...,
        timeout: Timeout | float | None = ...,
        cancel: Any = ...,
        stop: Sequence[str] = ...,
        n: int = ...,
        images: Sequence[Any] | None = ...,
    ) -> GenerationLike: ...

    def cancel_token(self) -> Any: ...
