"""The stub engine's models report a chat template (native/stub/stub_script.h):
by default the SDK's former plain format written in Jinja, byte for byte
(rendered as the SDK renders templates, with trim_blocks and lstrip_blocks);
a script's "chat_template" replaces it, and null removes it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

import adil
from adil.chat import render_chat


def _plain(messages: Sequence[Mapping[str, Any]], add_generation_prompt: bool) -> str:
    """The SDK's former plain format (adil.chat._plain before issue 11)."""
    parts = [f"<|{m['role']}|>\n{m['content'] or ''}\n" for m in messages]
    if add_generation_prompt:
        parts.append("<|assistant|>\n")
    return "".join(parts)


CONVERSATIONS: list[list[dict[str, Any]]] = [
    [],
    [{"role": "user", "content": "hi"}],
    [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What is 2+2?"},
     {"role": "assistant", "content": "4"}, {"role": "user", "content": "and 3+3?"}],
    [{"role": "user", "content": ""}],
    [{"role": "assistant", "content": None}, {"role": "tool", "content": '{"ok": true}'}],
    [{"role": "user", "content": "line one\nline two\n\n  indented\n"}],
    [{"role": "user", "content": "\n"}, {"role": "user", "content": "  {% raw %} {{ x }} \t"}],
    [{"role": "user", "content": "trailing blanks   \n   "}],
    [{"role": "user", "content": "unicode: ünïcødé ✓ 😀"}],
]


@pytest.mark.parametrize("messages", CONVERSATIONS)
@pytest.mark.parametrize("add_generation_prompt", [True, False])
def test_default_template_is_the_plain_format(
    stub_model: Callable[..., adil.Model], messages: list[dict[str, Any]],
    add_generation_prompt: bool,
) -> None:
    model = stub_model({"turns": []})
    template = model.info.chat_template
    assert template is not None
    rendered = render_chat(template, messages, add_generation_prompt=add_generation_prompt)
    assert rendered == _plain(messages, add_generation_prompt)


def test_script_replaces_or_removes_the_template(stub_model: Callable[..., adil.Model]) -> None:
    own = "{% for m in messages %}[{{ m['content'] }}]{% endfor %}"
    assert stub_model({"turns": [], "chat_template": own}).info.chat_template == own
    assert stub_model({"turns": [], "chat_template": None}).info.chat_template is None


def test_template_of_another_type_is_refused(stub_engine: adil.Engine,
                                             write_script: Callable[..., str]) -> None:
    with pytest.raises(adil.ModelFormatError, match="chat_template: expected a string"):
        stub_engine.load_model(write_script({"turns": [], "chat_template": ["x"]}))
