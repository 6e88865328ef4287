"""Which chat template a model's conversations are rendered with.

In this order:

1. the ``chat_template=`` a caller gives;
2. the model file's own template (GGUF ``tokenizer.chat_template``);
3. a built-in template, only when the vocabulary names the family beyond
   doubt: its turn markers are each one special token (ChatML:
   ``<|im_start|>`` and ``<|im_end|>``; gemma: ``<start_of_turn>`` and
   ``<end_of_turn>``; llama-3: ``<|start_header_id|>`` and ``<|eot_id|>``)
   and no other family's are.  A :class:`ChatTemplateWarning` says which
   family was taken;
4. otherwise :class:`~adil.errors.CapabilityError`, asking for
   ``chat_template=``.  The SDK never invents a format of its own.

The end-of-turn token of a family whose markers a template writes (the
model's own or a built-in one) is where a chat answer stops
(:func:`end_tokens`).
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .errors import CapabilityError, InvalidArgumentError

__all__ = ["CHATML", "FAMILIES", "GEMMA", "LLAMA3", "ChatTemplateWarning", "Family",
           "ResolvedTemplate", "detect_families", "end_tokens", "resolve_template"]


class ChatTemplateWarning(UserWarning):
    """A model without a chat template is rendered with a built-in one."""


@dataclass(frozen=True)
class Family:
    """A model family with a well-known turn format."""

    name: str
    template: str
    markers: tuple[str, ...]  # each one special token in the family's vocabularies
    end: str  # the end-of-turn marker


CHATML = Family(
    name="ChatML",
    template=(
        "{% for message in messages %}"
        "{{ '<|im_start|>' + message['role'] + '\\n' + (message['content'] or '')"
        " + '<|im_end|>\\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
    ),
    markers=("<|im_start|>", "<|im_end|>"),
    end="<|im_end|>",
)

# Gemma has no system role: the system text opens the first user turn.
GEMMA = Family(
    name="gemma",
    template=(
        "{{ bos_token }}"
        "{% if messages[0]['role'] == 'system' %}"
        "{% set prefix = (messages[0]['content'] or '') + '\\n\\n' %}"
        "{% set turns = messages[1:] %}"
        "{% else %}{% set prefix = '' %}{% set turns = messages %}{% endif %}"
        "{% for message in turns %}"
        "{% set role = 'model' if message['role'] == 'assistant' else 'user' %}"
        "{{ '<start_of_turn>' + role + '\\n' + (prefix if loop.first else '')"
        " + ((message['content'] or '') | trim) + '<end_of_turn>\\n' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}{% endif %}"
    ),
    markers=("<start_of_turn>", "<end_of_turn>"),
    end="<end_of_turn>",
)

LLAMA3 = Family(
    name="llama-3",
    template=(
        "{{ bos_token }}"
        "{% for message in messages %}"
        "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'"
        " + ((message['content'] or '') | trim) + '<|eot_id|>' }}"
        "{% endfor %}"
        "{% if add_generation_prompt %}"
        "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}"
    ),
    markers=("<|start_header_id|>", "<|eot_id|>"),
    end="<|eot_id|>",
)

FAMILIES: tuple[Family, ...] = (CHATML, GEMMA, LLAMA3)


class _Info(Protocol):
    @property
    def path(self) -> str: ...
    @property
    def architecture(self) -> str: ...
    @property
    def chat_template(self) -> str | None: ...


class _Model(Protocol):
    """What this module reads of a model (adil.Model has it)."""

    @property
    def info(self) -> _Info: ...

    def tokenize(self, text: str, *, add_bos: bool | None = ..., special: bool = ...) -> Any: ...


@dataclass(frozen=True)
class ResolvedTemplate:
    """The template a conversation is rendered with."""

    source: str
    origin: Literal["argument", "model", "built-in"]
    family: Family | None = None  # the built-in family, when origin is "built-in"


def special_token(model: _Model, text: str) -> int | None:
    """The id of `text` when it is one special token of `model`'s
    vocabulary (parsed as one id with special parsing, and as something
    else without it), else None."""
    with_special = [int(t) for t in model.tokenize(text, add_bos=False, special=True)]
    if len(with_special) != 1:
        return None
    plain = [int(t) for t in model.tokenize(text, add_bos=False, special=False)]
    return with_special[0] if plain != with_special else None


def detect_families(model: _Model) -> list[Family]:
    """The families whose turn markers are all special tokens of `model`."""
    return [f for f in FAMILIES
            if all(special_token(model, m) is not None for m in f.markers)]


def resolve_template(model: _Model, chat_template: str | None = None) -> ResolvedTemplate:
    """The template for `model` (see the module docstring).  Warns
    (ChatTemplateWarning) when a built-in one is taken; CapabilityError when
    there is none to take."""
    if chat_template is not None:
        if not isinstance(chat_template, str) or not chat_template:
            raise InvalidArgumentError(
                f"chat_template must be a non-empty Jinja template string, got {chat_template!r}")
        return ResolvedTemplate(chat_template, "argument")
    info = model.info
    if info.chat_template:
        return ResolvedTemplate(info.chat_template, "model")
    found = detect_families(model)
    if len(found) == 1:
        family = found[0]
        warnings.warn(
            f"{info.path} has no chat template; using the built-in {family.name} template "
            f"(its vocabulary has {' and '.join(family.markers)}). Pass chat_template= to "
            "use another.", ChatTemplateWarning, stacklevel=4)
        return ResolvedTemplate(family.template, "built-in", family)
    why = ("its vocabulary fits several families ("
           + ", ".join(f.name for f in found) + ")" if found else
           "its vocabulary does not identify a known family (ChatML, gemma, llama-3)")
    raise CapabilityError(
        f"{info.path} ({info.architecture}) has no chat template and {why}; pass "
        "chat_template= (a Jinja chat template) to chat with it")


def _caller_level() -> int:
    """The stack level of the first caller outside this package (warnings
    point at the user's line)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("adil."):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


def end_tokens(model: _Model, template: str | None, exclude: Sequence[int | None] = ()
               ) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """The end-of-turn tokens a conversation rendered with `template`
    stops at, besides `exclude` (the model's EOS/EOT, which stop a run
    anyway): each family end marker the template writes that is one special
    token.  Returns (ids, marker texts)."""
    if not template:
        return (), ()
    ids: list[int] = []
    texts: list[str] = []
    for family in FAMILIES:
        if family.end in template:
            token = special_token(model, family.end)
            if token is not None and token not in exclude and token not in ids:
                ids.append(token)
                texts.append(family.end)
    return tuple(ids), tuple(texts)
