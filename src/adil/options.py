"""The keyword sets of generate and chat, typed once (PEP 692).

:class:`GenerateOptions` are the keywords of :meth:`adil.Model.generate`
(and of ``complete``, ``agenerate``), :class:`ChatOptions` those of
:meth:`adil.Model.chat` (and of :func:`adil.chat_api.chat`, ``achat``);
both hold :class:`SamplingOptions`.  A function that passes them on is
typed ``**options: Unpack[ChatOptions]``; the one function that implements
each set (``Model.generate``, ``chat_api.chat``) spells the keywords out
with their defaults, so an unknown keyword raises TypeError when called,
and :func:`keywords_of` gives a passing-on function that implementation's
keywords in its runtime signature (``inspect.signature``, ``help()``).
Each field below states its default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from .cancel import CancelToken
    from .constraints import Constraint
    from .sampling import Sampling
    from .timeouts import Timeout
    from .tools import Tool

__all__ = ["BaseChatOptions", "ChatOptions", "GenerateOptions", "SamplingOptions",
           "keywords_of"]

F = TypeVar("F", bound=Callable[..., Any])


class SamplingOptions(TypedDict, total=False):
    """How the next token is chosen: a :class:`~adil.Sampling`, and
    keywords that set one field of it (a keyword wins over ``sampling``),
    each checked as that Sampling field."""

    sampling: Sampling | None
    """Default None: :data:`adil.sampling.DEFAULT_SAMPLING`."""
    temperature: float | None
    """Default None: the ``temperature`` of ``sampling``."""
    top_p: float | None
    """Default None: the ``top_p`` of ``sampling``."""
    top_k: int | None
    """Default None: the ``top_k`` of ``sampling``."""
    min_p: float | None
    """Default None: the ``min_p`` of ``sampling``."""
    seed: int | None
    """Default None: the ``seed`` of ``sampling``."""
    repeat_penalty: float | None
    """Default None: the ``repeat_penalty`` of ``sampling``."""


class GenerateOptions(SamplingOptions, total=False):
    """The keywords of :meth:`adil.Model.generate` (and ``complete``,
    ``agenerate``)."""

    max_tokens: int | None
    """Default 256: the most tokens to generate; None: up to the end of
    the context window (0 is refused)."""
    schema: Any
    """Default None.  Structured output (see :mod:`adil.structured`): a
    dict in the schema subset, or a dataclass, TypedDict or pydantic model
    class; the engine's grammar keeps the output a valid document, and once
    the stream ends ``value`` holds it, read and validated (an instance of
    the type)."""
    timeout: Timeout | float | None
    """Default None (no limit): an :class:`~adil.Timeout`, or plain seconds
    for the whole generation (``Timeout(total=seconds)``)."""
    cancel: CancelToken | None
    """Default None: a :class:`~adil.CancelToken` of the model's engine
    that stops the run."""
    stop: str | Sequence[str]
    """Default ``()``: strings that end the generation (not part of the
    text)."""
    n: int
    """Default 1: choices per request; only 1 is produced."""
    images: Sequence[Any] | None
    """Default None; images are refused (CapabilityError)."""
    ignore_eos: bool
    """Default False: True keeps generating past end-of-text (benchmarks)."""
    constraint: Constraint | None
    """Default None: a grammar of :mod:`adil.constraints` taken as it is
    (the agent's tool calls); no value is read.  Not with ``schema``."""
    logprobs: int | None
    """Default None.  ``k`` (0..20): each piece's ``logprobs`` holds one
    :class:`~adil.generation.TokenLogprob` per token with the `k` most
    likely alternatives (needs the engine capability ``logprobs``)."""
    stop_tokens: Sequence[int] | npt.NDArray[np.int32]
    """Default ``()``: token ids that end the generation as end-of-text
    does (the chat layer's end-of-turn tokens)."""
    speculative: Literal["lookup"] | None
    """Default None.  ``"lookup"``: lookup (prompt n-gram) decoding, faster
    where the output copies from the prompt (extraction, edits); the output
    is the same as without it (greedy: token for token; sampled: the same
    distribution).  Needs the engine capability ``lookup``."""


class BaseChatOptions(SamplingOptions, total=False):
    """The keywords every chat takes (also
    :meth:`adil.client.openai_model.OpenAIModel.chat`, with its own
    ``cancel``)."""

    tools: Sequence[Tool | Mapping[str, Any]] | None
    """Default None: :class:`adil.Tool` objects or OpenAI function dicts;
    their calls come back, never run."""
    tool_choice: str | Mapping[str, Any]
    """Default ``"auto"``: also ``"none"`` (tools kept out),
    ``"required"``, a tool's name, or OpenAI's ``{"type": "function",
    "function": {"name": N}}`` (a forced call needs grammar support)."""
    schema: Any
    """Default None: the answer follows this schema (as ``generate``'s
    ``schema``); not with ``tools``."""
    max_tokens: int | None
    """Default None: up to the end of the context window (on an
    OpenAI-compatible server: the server's default)."""
    stop: str | Sequence[str]
    """Default ``()``: strings that end the answer (not part of it)."""
    timeout: Timeout | float | None
    """Default None (no limit): as ``generate``'s ``timeout``."""


class ChatOptions(BaseChatOptions, total=False):
    """The keywords of :meth:`adil.Model.chat` and
    :func:`adil.chat_api.chat` (besides ``stream``)."""

    cancel: CancelToken | None
    """Default None: a :class:`~adil.CancelToken` of the model's engine."""
    logprobs: int | None
    """Default None: as ``generate``'s ``logprobs``."""
    speculative: Literal["lookup"] | None
    """Default None: as ``generate``'s ``speculative``."""
    chat_template: str | None
    """Default None: the model's template (see :mod:`adil.chat_templates`
    for which one); else a Jinja template string used instead."""


def keywords_of(implementation: Callable[..., Any], *, exclude: Sequence[str] = ()
                ) -> Callable[[F], F]:
    """Decorates a function that takes ``**options`` and passes them on to
    `implementation`: its runtime signature and annotations become its own
    positional parameters, then the keyword-only parameters of
    `implementation` (less `exclude`), with their defaults, then its own
    return annotation.  Typing reads the ``Unpack[...]`` annotation; this
    keeps ``inspect.signature`` and ``help()`` showing the keywords."""
    theirs = inspect.signature(implementation)
    keywords = [p for p in theirs.parameters.values()
                if p.kind is p.KEYWORD_ONLY and p.name not in exclude]

    def decorate(function: F) -> F:
        own = inspect.signature(function)
        head = [p for p in own.parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        function.__signature__ = own.replace(  # type: ignore[attr-defined]
            parameters=[*head, *keywords])
        annotations = {p.name: p.annotation for p in [*head, *keywords]
                       if p.annotation is not p.empty}
        annotations["return"] = own.return_annotation
        function.__annotations__ = annotations
        return function

    return decorate
