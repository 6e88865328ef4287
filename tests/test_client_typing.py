"""The chat keyword sets are typed once (adil.options, PEP 692); mypy still
picks the overload by ``stream``: ``ChatStream`` for ``stream=True``,
``ChatResponse`` otherwise, on a Model, on ``chat_api.chat`` and on an
OpenAIModel, and refuses a keyword the set does not hold.  This file is
checked by mypy (the test below runs it on this file)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from typing_extensions import assert_type

    from adil import Model
    from adil.chat_api import ChatResponse, ChatStream, chat
    from adil.client.openai_model import OpenAIChatStream, OpenAIModel
    from adil.generation import Completion


def _typed(model: Model, served: OpenAIModel, flag: bool) -> None:
    """Never run: what mypy infers for each call."""
    messages = [{"role": "user", "content": "hi"}]
    assert_type(model.chat(messages, stream=True, temperature=0.0), ChatStream)
    assert_type(model.chat(messages, max_tokens=8), ChatResponse)
    assert_type(model.chat(messages, stream=flag), ChatResponse | ChatStream)
    assert_type(chat(model, messages, stream=True, tools=None), ChatStream)
    assert_type(chat(model, messages, seed=1), ChatResponse)
    assert_type(served.chat(messages, stream=True, cancel=object()), OpenAIChatStream)
    assert_type(served.chat(messages), ChatResponse)
    assert_type(model.complete("hi", max_tokens=4, stop_tokens=[1]), Completion)
    model.chat(messages, max_token=8)  # type: ignore[call-overload]


def test_mypy_infers_the_overloads() -> None:
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (pip install adil[dev])")
    root = Path(__file__).resolve().parent.parent
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--warn-unused-ignores",
         "--config-file", str(root / "pyproject.toml"), __file__],
        cwd=root, env={**os.environ, "MYPYPATH": str(root / "src")}, capture_output=True,
        text=True, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
