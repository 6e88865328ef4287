"""bench/compare's parsing of both benches' JSON by depth, its names, fits
and tables (no engine runs: the JSON is written here)."""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "compare"


@pytest.fixture(scope="module")
def compare() -> ModuleType:
    loader = importlib.machinery.SourceFileLoader("bench_compare", str(SCRIPT))
    spec = importlib.util.spec_from_loader("bench_compare", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_compare"] = module  # dataclasses look their module up there
    loader.exec_module(module)
    return module


def stats(median: float) -> dict[str, float]:
    return {"median": median, "min": median - 1, "max": median + 1}


def test_parse_depths(compare: ModuleType) -> None:
    assert compare.parse_depths("0,1024,4096") == [0, 1024, 4096]
    for bad in ("", "-1", "0,0", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            compare.parse_depths(bad)


def test_ours_by_depth_and_of_before_depth(compare: ModuleType) -> None:
    side = compare.Side()
    compare.add_ours({"depths": [{"depth": 0, "prefill": stats(100), "decode": stats(50)},
                                 {"depth": 1024, "prefill": stats(80), "decode": stats(40)}]},
                     side)
    assert side.samples("pp", 1024).median == 80 and side.samples("tg", 0).median == 50
    old = compare.Side()  # a bench of before --depth: the top level, at depth 0
    compare.add_ours({"prefill": stats(100), "decode": stats(50)}, old)
    assert old.samples("pp", 0).median == 100 and old.samples("tg", 0).median == 50
    assert old.samples("pp", 1024).median is None


def test_llama_rows_by_n_depth(compare: ModuleType) -> None:
    side = compare.Side()
    compare.add_llama([
        {"n_prompt": 512, "n_gen": 0, "n_depth": 0, "samples_ts": [10.0, 12.0, 11.0]},
        {"n_prompt": 0, "n_gen": 128, "n_depth": 0, "samples_ts": [5.0]},
        {"n_prompt": 512, "n_gen": 0, "n_depth": 4096, "samples_ts": [8.0]},
        {"n_prompt": 0, "n_gen": 128, "samples_ts": [4.0]},  # a build of before -d
        {"n_prompt": 0, "n_gen": 128, "n_depth": 4096, "samples_ts": []},
    ], side)
    assert side.samples("pp", 0).median == 11.0 and side.samples("pp", 4096).median == 8.0
    assert side.samples("tg", 0).run_medians == [5.0, 4.0]
    assert side.samples("tg", 4096).median is None


def test_tables_name_depths_and_fit_slopes(compare: ModuleType) -> None:
    args = argparse.Namespace(prompt_tokens=512, gen_tokens=128, depth=[0, 1000])
    build = compare.Build("best", Path("/x/llama-bench"), "/x/llama-bench")
    ours, theirs = compare.Side(), compare.Side()
    # ms/token: ours 1.0 -> 2.0 (slope 1.0 per 1k), theirs 2.0 -> 2.5 (slope 0.5)
    compare.add_ours({"depths": [{"depth": 0, "prefill": stats(1000), "decode": stats(1000)},
                                 {"depth": 1000, "prefill": stats(500), "decode": stats(500)}]},
                     ours)
    compare.add_llama([{"n_gen": 0, "n_depth": 0, "samples_ts": [500.0]},
                       {"n_gen": 0, "n_depth": 1000, "samples_ts": [400.0]}], theirs)
    results = {2: {None: ours, "best": theirs}}
    speed = "\n".join(compare.speed_table(args, [build], results))
    assert "| 2 | pp512@d1000 | 500.00" in speed and "| 2 | tg128 |" in speed
    assert "1.25×" in speed  # 500 / 400 at depth 1000
    cost = compare.cost_table(args, [build], results)
    assert "| 2 | ours | 1.000 ms | +1.0000 ms | 1.000 ms | +1.0000 ms |" in cost
    assert "| 2 | llama.cpp best | 2.000 ms | +0.5000 ms | n/a | n/a |" in cost
    assert compare.fit_line([0, 1000], [1000.0, None]) is None
