"""A hypothesis state machine over the public API on the stub engine:
load / generate / step / cancel / close / tokenize / complete in any order,
from the creating thread or another one, and close-during-step races.

Invariants: every failure is an AdilError; a model none of whose
generations is open is never busy; teardown closes everything cleanly."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, multiple, rule

import adil

SCRIPT = {"turns": [{"text": "hello there, general"}] * 10_000, "token_delay_ms": 1}


def _call(fn: Callable[[], Any], in_thread: bool) -> Any:
    """Runs fn here or on another thread; returns its value, or the
    exception it raised (checked by the caller)."""
    result: list[Any] = []

    def go() -> None:
        try:
            result.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            result.append(exc)

    if in_thread:
        t = threading.Thread(target=go)
        t.start()
        t.join(60)
        assert not t.is_alive(), "a call from another thread hung"
    else:
        go()
    return result[0]


def _expect(value: Any, *allowed: type[BaseException]) -> Any:
    if isinstance(value, BaseException):
        assert isinstance(value, (adil.AdilError, *allowed)), repr(value)
    return value


class ApiMachine(RuleBasedStateMachine):
    models = Bundle("models")
    generations = Bundle("generations")

    def __init__(self) -> None:
        super().__init__()
        self.engine = adil.Engine.open(library=adil.STUB_LIBRARY)
        self.script = str(SCRIPT_PATH)
        self.owned: list[tuple[adil.Model, adil.Generation]] = []
        self.all_models: list[adil.Model] = []

    @rule(target=models)
    def load(self) -> adil.Model:
        model = self.engine.load_model(self.script)
        self.all_models.append(model)
        return model

    @rule(target=generations, model=models, text=st.text(max_size=12),
          max_tokens=st.integers(0, 12), in_thread=st.booleans())
    def generate(self, model: adil.Model, text: str, max_tokens: int, in_thread: bool) -> Any:
        value = _expect(_call(lambda: model.generate(text or "x", max_tokens=max_tokens),
                              in_thread))
        if isinstance(value, BaseException):
            return multiple()
        self.owned.append((model, value))
        return value

    @rule(generation=generations, in_thread=st.booleans())
    def step(self, generation: adil.Generation, in_thread: bool) -> None:
        _expect(_call(lambda: next(generation), in_thread), StopIteration)

    @rule(generation=generations, in_thread=st.booleans())
    def cancel(self, generation: adil.Generation, in_thread: bool) -> None:
        _expect(_call(generation.cancel, in_thread))

    @rule(generation=generations, in_thread=st.booleans())
    def close_generation(self, generation: adil.Generation, in_thread: bool) -> None:
        _expect(_call(generation.close, in_thread))
        assert not generation.is_open

    @rule(generation=generations)
    def close_during_step(self, generation: adil.Generation) -> None:
        reader = threading.Thread(target=lambda: _expect(_call(generation.completion, False)))
        reader.start()
        generation.close()
        reader.join(60)
        assert not reader.is_alive()
        assert not generation.is_open

    @rule(model=models, in_thread=st.booleans())
    def close_model(self, model: adil.Model, in_thread: bool) -> None:
        _expect(_call(model.close, in_thread))

    @rule(model=models, text=st.text(max_size=30), in_thread=st.booleans())
    def tokenize(self, model: adil.Model, text: str, in_thread: bool) -> None:
        value = _expect(_call(lambda: model.tokenize(text), in_thread))
        if not isinstance(value, BaseException):
            assert value.dtype.name == "int32" and value.ndim == 1

    @rule(model=models, in_thread=st.booleans())
    def complete(self, model: adil.Model, in_thread: bool) -> None:
        _expect(_call(lambda: model.complete("hi", max_tokens=3), in_thread))

    @invariant()
    def idle_models_are_not_busy(self) -> None:
        for model in self.all_models:
            if any(m is model and g.is_open for m, g in self.owned):
                continue
            try:
                model.complete("x", max_tokens=1)
            except adil.InvalidArgumentError as exc:
                assert "closed" in str(exc)

    def teardown(self) -> None:
        for _, generation in self.owned:
            generation.close()
        for model in self.all_models:
            model.close()
        self.engine.close()


SCRIPT_PATH: Path


@pytest.fixture(autouse=True, scope="module")
def _script(tmp_path_factory: pytest.TempPathFactory) -> None:
    global SCRIPT_PATH
    SCRIPT_PATH = tmp_path_factory.mktemp("machine") / "script.json"
    SCRIPT_PATH.write_text(json.dumps(SCRIPT))


ApiMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_api_state_machine = ApiMachine.TestCase
