"""`adil bench` on a tiny model: the report's fields, and ignore_eos (a
fixed-length decode even when the model writes end-of-text).  No timing is
asserted: speed belongs to bench/."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny

import adil
from adil.bench import check_depths, fit_cost, format_table, run_bench
from adil.cli import main as cli_main

GREEDY = adil.Sampling(temperature=0.0)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("bench"), "gemma3", T.Q8_0)


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
                "decode_roofline_fraction", "int8_peak_macs_per_s", "prefill_macs_per_s",
                "prefill_peak_fraction"):
        assert report[key] > 0, key
    assert report["prefill_macs_per_s"] == pytest.approx(
        report["prefill_tokens_per_s"] * report["prefill_params"])
    assert report["prefill_peak_fraction"] == pytest.approx(
        report["prefill_macs_per_s"] / report["int8_peak_macs_per_s"])
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


# -- depth (llama-bench's -d) and the cost curve -------------------------------

def test_fit_cost_recovers_a_line() -> None:
    # ms per token = 0.5 + 0.25 per 1k tokens of depth, exactly
    fit = fit_cost([0, 1024, 4096], [0.5 + 0.25 * d / 1000 for d in (0, 1024, 4096)])
    assert fit is not None and fit.points == 3
    assert fit.slope_ms_per_1k == pytest.approx(0.25)
    assert fit.intercept_ms == pytest.approx(0.5)
    assert fit.to_json() == {"slope_ms_per_token_per_1k_depth": fit.slope_ms_per_1k,
                             "intercept_ms_per_token": fit.intercept_ms, "points": 3}


def test_fit_cost_least_squares_and_too_few_depths() -> None:
    fit = fit_cost([0, 1000, 2000], [1.0, 3.0, 2.0])  # the line through the means
    assert fit is not None
    assert fit.slope_ms_per_1k == pytest.approx(0.5) and fit.intercept_ms == pytest.approx(1.5)
    assert fit_cost([0], [1.0]) is None
    assert fit_cost([], []) is None
    with pytest.raises(adil.InvalidArgumentError):
        fit_cost([0, 1], [1.0])


@pytest.mark.parametrize("depths", [[], [-1], [0, 0], [1.5], [True], "0,1", 3])
def test_check_depths_refuses(depths: Any) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        check_depths(depths)


def test_check_depths_keeps_the_order() -> None:
    assert check_depths((4096, 0, 1024)) == [4096, 0, 1024]


@pytest.mark.parametrize("text", ["", "0,,1", "a", "-5", "0,0", "1.5"])
def test_cli_depth_is_a_usage_error(text: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli_main(["bench", "--model", "x.gguf", "--depth", text])
    assert exited.value.code == 2 and "--depth" in capsys.readouterr().err


def test_run_bench_at_depth_reuses_the_prefix(tiny: Path) -> None:
    # 600 tokens of depth: past the tiny model's 12-token sliding window and
    # past its ring (window + batch < the context), so a kept prefix is one
    # the ring still holds.
    result = run_bench(str(tiny), threads=1, prompt_tokens=8, gen_tokens=4, repetitions=2,
                       depths=[0, 600])
    assert [d.depth for d in result.depths] == [0, 600]
    assert [d.n_cached_tokens for d in result.depths] == [0, 600]
    assert all(len(d.prefill.values) == len(d.decode.values) == 2 for d in result.depths)
    assert result.prefill is result.depths[0].prefill  # the top level is the first depth's
    report = result.to_json()
    assert report["depth"] == 0 and [d["depth"] for d in report["depths"]] == [0, 600]
    assert all(d["prefill_ms_per_token"] > 0 and d["decode_ms_per_token"] > 0
               for d in report["depths"])
    for test in ("prefill", "decode"):
        assert report["cost_fit"][test]["points"] == 2
    json.dumps(report)
    table = format_table(result)
    assert "pp8@d600" in table and "tg4@d600" in table and "cost curve, decode" in table


def test_run_bench_refuses_a_context_too_short_for_the_depth(tiny: Path) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="context_length"):
        run_bench(str(tiny), threads=1, prompt_tokens=8, gen_tokens=4, repetitions=1,
                  depths=[0, 100], context_length=64)


def test_bench_json_of_one_depth_keeps_its_shape(tiny: Path) -> None:
    result = run_bench(str(tiny), threads=1, prompt_tokens=4, gen_tokens=2, repetitions=1)
    report = result.to_json()
    assert report["depth"] == 0 and len(report["depths"]) == 1
    assert report["depths"][0]["n_cached_tokens"] == 0
    assert report["cost_fit"] == {"prefill": None, "decode": None}
    assert report["prefill"] == report["depths"][0]["prefill"]
    assert "cost curve" not in format_table(result)


def test_a_prefix_the_cache_lost_is_an_engine_error() -> None:
    from adil.bench import _check_cached

    _check_cached(600, 600, "prefill")
    with pytest.raises(adil.EngineInternalError, match="depth 600 reused 0"):
        _check_cached(0, 600, "decode")


def test_bench_prefill_line_against_the_int8_peak(tiny: Path) -> None:
    """The prefill line of the table, with and without an int8 peak."""
    result = run_bench(str(tiny), threads=1, prompt_tokens=4, gen_tokens=2, repetitions=1)
    assert result.int8_peak_macs_per_s is not None and result.prefill_macs_per_s is not None
    line = next(x for x in format_table(result).splitlines() if x.startswith("prefill: "))
    assert " GMAC/s = " in line and "% of the int8 peak " in line
    unknown = dataclasses.replace(result, int8_peak_macs_per_s=None, prefill_params=None)
    assert unknown.prefill_macs_per_s is None and unknown.prefill_peak_fraction is None
    assert "prefill: - (the engine measures no int8 peak)" in format_table(unknown)
