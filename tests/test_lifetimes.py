"""1,000 open/load/generate/close cycles of the stub: resident memory stays
bounded (ASan's leak check covers the C side in tests/native)."""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

import adil

psutil = pytest.importorskip("psutil")


def test_thousand_cycles_rss_bounded(write_script: Callable[..., str]) -> None:
    path = write_script({"turns": [{"text": "hello world", "tool_call": {
        "name": "t", "arguments": {"a": 1}}}]})

    def cycle() -> None:
        with adil.Engine.open(library=adil.STUB_LIBRARY) as engine:
            with engine.load_model(path) as model:
                assert model.complete("hi").text.startswith("hello world")

    for _ in range(100):  # warm up caches and allocator pools
        cycle()
    gc.collect()
    before = psutil.Process().memory_info().rss
    for _ in range(1000):
        cycle()
    gc.collect()
    growth = psutil.Process().memory_info().rss - before
    assert growth < 8 * 1024 * 1024, f"RSS grew by {growth / 1e6:.1f} MB over 1,000 cycles"
