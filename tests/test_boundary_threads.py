"""The Python/C boundary from several threads and in any order of calls:
each reproducer of issue 8 (D1–D5) as a test.  A crash or a hang would take
the test process down, so the crashy ones run in a child (tests/child.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from child import run_child
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil

LoadScript = Callable[..., adil.Model]
SLOW = {"turns": [{"text": "abcdefghijklmnopqrstuvwxyz" * 4}], "token_delay_ms": 5}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("boundary") / "tiny-llama.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    return str(path)


def test_load_complete_close_cycles_never_hang_oversubscribed(tiny: str) -> None:
    """D1: close() hung in the pool's join when a worker missed the stop
    word; threads=4 on 2 cores made it likely within ~100 cycles."""
    run_child(f"""
        import adil
        engine = adil.Engine.open()
        for _ in range(300):
            m = engine.load_model({tiny!r}, threads=4, context_length=64)
            m.complete([2, 10, 20, 30], max_tokens=2)
            m.close()
    """, timeout=240)


def test_close_while_another_thread_tokenizes(tiny: str) -> None:
    """D2: close() freed the vocabulary under a tokenize() of another
    thread.  Now close() waits for the call, and later calls are refused."""
    run_child(f"""
        import threading
        import adil
        engine = adil.Engine.open()
        text = "the cat sat on the mat " * 2000
        for _ in range(20):
            model = engine.load_model({tiny!r}, context_length=64)
            errors = []
            def hammer():
                try:
                    while True:
                        model.tokenize(text)
                except adil.InvalidArgumentError as exc:
                    errors.append(exc)
            t = threading.Thread(target=hammer)
            t.start()
            model.close()
            t.join()
            assert errors and "closed" in str(errors[0]), errors
    """)


def test_two_threads_reading_one_generation(stub_model: LoadScript) -> None:
    """D3: two threads stepping one run freed it under each other.  Now one
    reader at a time; the other gets BusyError, and no token is lost."""
    model = stub_model(SLOW)
    generation = model.generate("hi", max_tokens=200)
    pieces: list[str] = []
    busy: list[adil.BusyError] = []

    def read() -> None:
        while True:
            try:
                pieces.append(next(generation).text)
            except StopIteration:
                return
            except adil.BusyError as exc:
                busy.append(exc)

    threads = [threading.Thread(target=read) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "".join(pieces) == generation.text == SLOW["turns"][0]["text"]
    assert busy, "the two readers never met"
    model.close()


def test_close_from_another_thread_during_a_long_step(stub_model: LoadScript) -> None:
    """D4: Generation.close() from another thread freed the run while the
    first was still in adil_run_step, and the model took a new run.  Now
    close() cancels, waits for the step, then frees."""
    model = stub_model({"turns": [{"text": "a" * 50}, {"text": "next"}],
                        "token_delay_ms": 20})
    generation = model.generate("hi", max_tokens=100)
    seen: list[Any] = []

    def read() -> None:
        seen.extend(piece.text for piece in generation)

    reader = threading.Thread(target=read)
    reader.start()
    time.sleep(0.1)
    generation.close()
    assert not generation.is_open
    assert model.complete("again").text == "next"  # the slot was freed once
    reader.join()
    assert generation.stop_reason == "cancelled"
    assert len("".join(seen)) < 50
    model.close()


def test_close_from_another_thread_during_a_long_step_on_the_cpu_engine(tiny: str) -> None:
    """D4 on the CPU engine (ASan in CI sees a use after free)."""
    with adil.Engine.open() as engine, engine.load_model(tiny, context_length=512) as model:
        for _ in range(5):
            generation = model.generate([4 + i % 300 for i in range(400)], max_tokens=100,
                                        ignore_eos=True)
            reader = threading.Thread(target=lambda g=generation: g.completion())
            reader.start()
            generation.close()
            reader.join()
            assert not generation.is_open
        assert len(model.complete([2, 5, 6], max_tokens=3, ignore_eos=True).tokens) == 3


def test_render_chat_and_info_after_close(stub_model: LoadScript, tiny: str) -> None:
    """D5: render_chat() after close() read the freed template."""
    template = "{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}"
    path = Path(tiny).with_name("tiny-chat.gguf")
    write_tiny_model(path, "llama", T.Q8_0, chat_template=template)
    with adil.Engine.open() as engine:
        model = engine.load_model(path, context_length=64)
        messages = [{"role": "user", "content": "hi"}]
        before = model.render_chat(messages, add_generation_prompt=False)
        info = model.info
        model.close()
        assert model.render_chat(messages, add_generation_prompt=False) == before == "<user>hi"
        assert model.info == info
        with pytest.raises(adil.InvalidArgumentError, match="closed"):
            model.tokenize("hi")


def test_close_refused_while_a_generation_is_open_then_allowed(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "hello"}]})
    generation = model.generate("hi")
    with pytest.raises(adil.BusyError):
        model.close()
    with pytest.raises(adil.BusyError):
        model.generate("again")
    del generation  # an abandoned generation frees its run
    model.close()
    model.close()  # idempotent


def test_many_threads_many_calls_one_model(stub_model: LoadScript) -> None:
    """Every call from every thread ends with a result or an AdilError."""
    model = stub_model({"turns": [{"text": "x" * 20}] * 200})
    failures: list[BaseException] = []

    def work(i: int) -> None:
        for _ in range(20):
            try:
                if i % 3 == 0:
                    model.complete("hello", max_tokens=5)
                elif i % 3 == 1:
                    assert list(model.tokenize("hello")) == list(b"hello") or True
                else:
                    model.detokenize([104, 105])
            except adil.AdilError:
                pass
            except BaseException as exc:  # noqa: BLE001 - the test collects anything else
                failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures
    model.close()
