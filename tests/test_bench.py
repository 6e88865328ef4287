"""`adil bench` on a tiny model: the report's fields, and ignore_eos (a
fixed-length decode even when the model writes end-of-text).  No timing is
asserted: speed belongs to bench/."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import model_path, write_tiny_model

import adil
from adil.bench import run_bench

GREEDY = adil.Sampling(temperature=0.0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = model_path(tmp_path_factory.mktemp("bench"), "gemma3", T.Q8_0)
    write_tiny_model(path, "gemma3", T.Q8_0)
    return path


def test_ignore_eos_keeps_generating(tiny: Path) -> None:
    # Near-uniform sampling over the tiny vocabulary reaches end-of-text
    # within a few seeds; the same seed with ignore_eos must go past it.
    hot = {"temperature": 50.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}
    prompt = np.arange(10, 16, dtype=np.int32)
    with adil.Engine.open() as engine, engine.load_model(tiny, context_length=256) as model:
        for seed in range(200):
            sampling = adil.Sampling(seed=seed, **hot)
            stopped = model.complete(prompt, max_tokens=200, sampling=sampling)
            if stopped.stop_reason == "end_of_text":
                break
        else:
            pytest.fail("the tiny model never wrote end-of-text")
        forced = model.complete(prompt, max_tokens=200, sampling=sampling, ignore_eos=True)
        end_of_text = {model.info.eos_token, model.info.eot_token}
    n = len(stopped.tokens)
    assert forced.stop_reason == "max_tokens" and len(forced.tokens) == 200
    assert forced.tokens[:n] == stopped.tokens
    assert forced.tokens[n] in end_of_text


def test_bench_json_report(tiny: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "adil", "bench", "--model", str(tiny), "--threads", "1",
         "--prompt-tokens", "16", "--gen-tokens", "8", "--repetitions", "2", "--json"],
        capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    for key in ("prefill_tokens_per_s", "decode_tokens_per_s", "read_bandwidth_gb_per_s",
                "decode_roofline_fraction"):
        assert report[key] > 0, key
    assert report["threads"] == 1 and report["gen_tokens"] == 8
    assert set(report["prefill"]) == {"median", "min", "max"}


@pytest.mark.parametrize("sizes", [{"prompt_tokens": 0}, {"prompt_tokens": -5}, {"gen_tokens": 1},
                                   {"repetitions": 0}, {"repetitions": 1.5}])
def test_run_bench_refuses_sizes_it_cannot_measure(tiny: Path, sizes: dict[str, Any]) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        run_bench(str(tiny), threads=1, **sizes)


def test_bench_reports_the_threads_that_run(tiny: Path) -> None:
    # The engine caps its thread count; the report (and the bandwidth
    # measurement) use what runs, not what was asked.
    with adil.Engine.open() as engine, engine.load_model(tiny, threads=100_000) as model:
        runs = model.info.threads
    result = run_bench(str(tiny), threads=100_000, prompt_tokens=4, gen_tokens=2, repetitions=1)
    assert result.threads == runs < 100_000
