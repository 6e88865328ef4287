"""The KV cache's size as Model.info and `adil bench` report it
(adil_model_kv_bytes, ABI 2.4): keys and values of every layer for the
context's positions, two bytes an element by default (IEEE half) and four
with ADIL_KV_TYPE=f32; 0 for the stub, which keeps none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import spec_for, write_tiny

import adil
from adil.bench import format_table, run_bench


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("kv"), "gemma3", T.F32)


def full_cache_bytes(n_ctx: int, element: int) -> int:
    spec = spec_for("gemma3")
    return spec.n_layer * n_ctx * 2 * spec.n_head_kv * spec.head_dim * element


@pytest.mark.parametrize(("kv_type", "element"), [(None, 2), ("f16", 2), ("f32", 4)])
def test_info_reports_the_cache_of_the_context(tiny: Path, monkeypatch: pytest.MonkeyPatch,
                                               kv_type: str | None, element: int) -> None:
    if kv_type is not None:
        monkeypatch.setenv("ADIL_KV_TYPE", kv_type)
    else:
        monkeypatch.delenv("ADIL_KV_TYPE", raising=False)
    with adil.Engine.open() as engine:
        for n_ctx in (16, 200):
            with engine.load_model(tiny, context_length=n_ctx) as model:
                assert model.info.kv_cache_bytes == full_cache_bytes(n_ctx, element)
        # no context_length: the trained length, capped (adil.h), as the context has it
        with engine.load_model(tiny) as model:
            model.logits(np.arange(4, dtype=np.int32))  # makes the context
            assert model.info.context_length == spec_for("gemma3").n_ctx_train
            assert model.info.kv_cache_bytes == full_cache_bytes(model.info.context_length,
                                                                 element)


def test_stub_keeps_no_cache(stub_model: Callable[..., adil.Model]) -> None:
    with stub_model({"turns": [{"text": "hi"}]}) as model:
        assert model.info.kv_cache_bytes == 0


def test_bench_reports_cache_and_peak_rss(tiny: Path) -> None:
    result = run_bench(str(tiny), threads=1, prompt_tokens=8, gen_tokens=4, repetitions=1,
                       context_length=100)
    assert result.context_length == 100
    assert result.kv_cache_bytes == full_cache_bytes(100, 2)
    assert result.peak_rss_bytes > 10 * 2**20  # at least the interpreter and the model
    report = result.to_json()
    assert report["kv_cache_bytes"] == result.kv_cache_bytes
    assert report["peak_rss_bytes"] == result.peak_rss_bytes
    assert "KV cache" in format_table(result) and "peak RSS" in format_table(result)


def test_bench_refuses_a_context_shorter_than_its_tests(tiny: Path) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="context_length"):
        run_bench(str(tiny), threads=1, prompt_tokens=64, gen_tokens=4, repetitions=1,
                  context_length=32)
