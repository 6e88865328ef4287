"""Chat prompts: the GGUF chat template rendered with jinja2 (sandboxed), the
plain format for models without one, and `adil generate --chat`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.chat import render_chat

# The shape of gemma's instruction template (turn markers, "model" role).
TURNS = (
    "{{ bos_token }}{% for message in messages %}"
    "{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "<start_of_turn>{{ role }}\n{{ message['content'] | trim }}<end_of_turn>\n"
    "{% endfor %}{% if add_generation_prompt %}<start_of_turn>model\n{% endif %}"
)
MESSAGES = [{"role": "user", "content": "Hi there "}, {"role": "assistant", "content": "Hello."}]


def test_template_rendering() -> None:
    text = render_chat(TURNS, MESSAGES, bos_token="<bos>")
    assert text == ("<bos><start_of_turn>user\nHi there<end_of_turn>\n"
                    "<start_of_turn>model\nHello.<end_of_turn>\n<start_of_turn>model\n")
    assert not render_chat(TURNS, MESSAGES, add_generation_prompt=False).endswith("model\n")


def test_plain_format_without_a_template() -> None:
    assert render_chat(None, MESSAGES) == (
        "<|user|>\nHi there \n<|assistant|>\nHello.\n<|assistant|>\n")


def test_template_errors_are_typed() -> None:
    refusing = "{{ raise_exception('roles must alternate') }}"
    with pytest.raises(adil.CapabilityError, match="roles must alternate"):
        render_chat(refusing, MESSAGES)
    with pytest.raises(adil.CapabilityError):
        render_chat("{% for %}", MESSAGES)
    # The sandbox refuses reaching into Python internals.
    with pytest.raises(adil.CapabilityError):
        render_chat("{{ messages.__class__.__mro__[1].__subclasses__() }}", MESSAGES)


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("chat") / "tiny-chat.gguf"
    write_tiny_model(path, "gemma3", T.Q8_0, chat_template=TURNS)
    return path


def test_model_uses_its_gguf_template(chat_model: Path) -> None:
    with adil.Engine.open() as engine, engine.load_model(chat_model, context_length=64) as model:
        assert model.info.chat_template == TURNS
        bos = model.detokenize([model.info.bos_token or 0], special=True)
        prompt = model.render_chat([{"role": "user", "content": "Hi"}])
        assert prompt == f"{bos}<start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n"


def test_generate_chat_cli(chat_model: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "adil", "generate", "--model", str(chat_model), "--chat",
         "--max-tokens", "4", "--stats", "Hi"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "prefill:" in result.stderr and "decode:" in result.stderr
