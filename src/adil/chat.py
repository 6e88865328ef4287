"""Chat prompts: a model's Jinja chat template (GGUF
``tokenizer.chat_template``) rendered with jinja2 in a sandbox, or, for a
model without one, a plain documented format:

    <|system|>
    ...
    <|user|>
    ...
    <|assistant|>

(one block per message, the role in ``<|...|>`` on its own line).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any, NoReturn

from jinja2 import TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from .errors import CapabilityError

__all__ = ["render_chat"]


def _raise_exception(message: str) -> NoReturn:
    raise CapabilityError(f"the chat template refused the messages: {message}")


@lru_cache(maxsize=8)
def _compile(source: str) -> Any:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise_exception
    return env.from_string(source)


def render_chat(
    template: str | None,
    messages: Sequence[Mapping[str, str]],
    *,
    add_generation_prompt: bool = True,
    bos_token: str = "",
    eos_token: str = "",
) -> str:
    if template is None:
        return _plain(messages, add_generation_prompt)
    try:
        return str(_compile(template).render(
            messages=[dict(m) for m in messages],
            add_generation_prompt=add_generation_prompt,
            bos_token=bos_token,
            eos_token=eos_token,
        ))
    except TemplateError as exc:
        raise CapabilityError(f"the model's chat template failed: {exc}") from exc


def _plain(messages: Sequence[Mapping[str, str]], add_generation_prompt: bool) -> str:
    parts = [f"<|{m['role']}|>\n{m['content']}\n" for m in messages]
    if add_generation_prompt:
        parts.append("<|assistant|>\n")
    return "".join(parts)
