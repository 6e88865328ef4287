"""The gpt-oss architecture (native/engine/models/gpt_oss.c) on its tiny
files (tests/make_tiny_models.py): that the tiny model exercises what sets
gpt-oss apart, so that test_model_logits' comparison with the numpy
reference means something; what the loader refuses; and ``adil generate``
on it.  The logits themselves are checked in test_model_logits.py."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np
import pytest
import reference_forward
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader
from make_tiny_models import (
    TinySpec,
    _write_hparams,
    _write_tokenizer,
    spec_for,
    write_tiny,
    write_weights,
)
from reference_forward import forward, read_config, read_tensors
from test_model_logits import TOL_FLOAT, assert_close, exact_kv_cache, prompt_ids

import adil

SPEC = spec_for("gpt-oss")


@pytest.fixture(scope="module")
def f32_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("gpt_oss"), "gpt-oss", T.F32)


def write_gpt_oss(path: Path, extra: Callable[[gguf.GGUFWriter], None],
                  spec: TinySpec = SPEC) -> Path:
    """The tiny F32 gpt-oss file with `extra` metadata after the usual keys."""
    w = gguf.GGUFWriter(str(path), "gpt-oss")
    _write_hparams(w, spec)
    extra(w)
    _write_tokenizer(w, spec)
    write_weights(w, spec, T.F32, np.random.default_rng(0))
    return path


def test_the_tiny_model_exercises_sinks_yarn_window_and_clamps(
        f32_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each of gpt-oss's own parts changes the reference's logits by far more
    than the engine's tolerance: with the sinks gone, YaRN off, no window,
    or the swiglu clamps lifted."""
    reader = GGUFReader(str(f32_path))
    cfg, w = read_config(reader), read_tensors(reader)
    ids = prompt_ids(SPEC.n_vocab)
    base = forward(cfg, w, ids)
    no_sinks = {k: (np.full_like(v, -np.inf) if k.endswith("attn_sinks.weight") else v)
                for k, v in w.items()}
    variants = {
        "sinks": forward(cfg, no_sinks, ids),
        "yarn": forward(dataclasses.replace(cfg, yarn_factor=0.0), w, ids),
        "window": forward(dataclasses.replace(cfg, sliding_window=0), w, ids),
    }
    monkeypatch.setattr(reference_forward, "swiglu_oai",
                        lambda g, u: g / (1.0 + np.exp(-1.702 * g)) * (u + 1.0))
    variants["clamps"] = forward(cfg, w, ids)
    scale = np.abs(base).max()
    for name, other in variants.items():
        assert np.abs(other - base).max() > 1e-2 * scale, name
    # the window (8) only matters once a local layer's queries see more
    window = variants["window"]
    np.testing.assert_allclose(window[:SPEC.sliding_window], base[:SPEC.sliding_window],
                               rtol=0, atol=1e-9 * scale)


def test_engine_matches_without_yarn(engine: adil.Engine, tmp_path: Path,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same file with rope.scaling.type none: plain RoPE, as the
    reference computes it (an f32 KV cache on both sides, for TOL_FLOAT)."""
    exact_kv_cache(monkeypatch)
    spec = dataclasses.replace(SPEC, yarn_factor=0.0)
    path = write_gpt_oss(tmp_path / "no_yarn.gguf", lambda w: None, spec)
    with engine.load_model(path, threads=2, context_length=128) as model:
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    reader = GGUFReader(str(path))
    cfg = dataclasses.replace(read_config(reader), kv_f16=False)
    assert_close(got, forward(cfg, read_tensors(reader), ids.astype(np.int64)), TOL_FLOAT)


def test_rope_scaling_longrope_is_a_capability_error(engine: adil.Engine, tmp_path: Path) -> None:
    spec = dataclasses.replace(SPEC, yarn_factor=0.0)
    path = write_gpt_oss(tmp_path / "longrope.gguf",
                         lambda w: w.add_string("gpt-oss.rope.scaling.type", "longrope"), spec)
    with pytest.raises(adil.CapabilityError, match="longrope"):
        engine.load_model(path)


def test_partial_rotary_is_refused(engine: adil.Engine, tmp_path: Path) -> None:
    path = write_gpt_oss(tmp_path / "partial.gguf", lambda w: w.add_rope_dimension_count(32))
    with pytest.raises(adil.ModelFormatError, match="rope.dimension_count"):
        engine.load_model(path)


def test_missing_sinks_are_a_format_error(engine: adil.Engine, tmp_path: Path,
                                          f32_path: Path) -> None:
    """The sinks are required, as llama.cpp requires them."""
    reader = GGUFReader(str(f32_path))
    path = tmp_path / "no_sinks.gguf"
    w = gguf.GGUFWriter(str(path), "gpt-oss")
    _write_hparams(w, SPEC)
    _write_tokenizer(w, SPEC)
    for t in reader.tensors:
        if not t.name.endswith("attn_sinks.weight"):
            w.add_tensor(t.name, np.asarray(t.data).reshape([int(n) for n in reversed(t.shape)]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(adil.ModelFormatError, match="attn_sinks"):
        engine.load_model(path)


def test_adil_generate_runs_it(tmp_path: Path) -> None:
    """`adil generate` on the MXFP4 file (experts in the released files'
    type), greedy: the same text twice."""
    path = write_tiny(tmp_path, "gpt-oss", T.MXFP4)
    outputs = []
    for _ in range(2):
        result = subprocess.run([sys.executable, "-m", "adil", "generate", "--model", str(path),
                                 "--max-tokens", "12", "--temperature", "0", "the cat sat on"],
                                capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1] and outputs[0].strip()
