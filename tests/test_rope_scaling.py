"""RoPE scaling read from "<arch>.rope.scaling.*" (native/engine/models/
loader.c: adil_rope_scaling) for any architecture that asks for it: the tiny
llama and qwen3moe files with YaRN or linear scaling added match the numpy
reference (tests/reference_forward.py, YaRN as ggml's rope_yarn), and a kind
the engine lacks is a CapabilityError naming it.  gpt-oss's own YaRN is in
test_gpt_oss.py and test_model_logits.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import _write_hparams, _write_tokenizer, spec_for, write_weights
from reference_forward import reference_logits
from test_model_logits import TOL_FLOAT, assert_close, exact_kv_cache, prompt_ids

import adil


def write_scaled(path: Path, arch: str, extra: Callable[[gguf.GGUFWriter], None]) -> Path:
    """The tiny F32 `arch` file with `extra` rope scaling keys."""
    spec = spec_for(arch)
    w = gguf.GGUFWriter(str(path), arch)
    _write_hparams(w, spec)
    extra(w)
    _write_tokenizer(w, spec)
    write_weights(w, spec, T.F32, np.random.default_rng(0))
    return path


def yarn(factor: float, orig_ctx: int | None) -> Callable[[gguf.GGUFWriter], None]:
    def add(w: gguf.GGUFWriter) -> None:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(factor)
        if orig_ctx is not None:
            w.add_rope_scaling_orig_ctx_len(orig_ctx)
    return add


def linear(w: gguf.GGUFWriter) -> None:
    w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
    w.add_rope_scaling_factor(4.0)


# llama: interleaved pairs; qwen3moe: NeoX pairs.  Original contexts that
# put the YaRN ramp inside the head (64 dims at base 1e4 / 1e6), and one
# that defaults to context_length.
CASES = [("llama", "yarn-4-over-32", yarn(4.0, 32)), ("llama", "yarn-8-default", yarn(8.0, None)),
         ("qwen3moe", "yarn-4-over-64", yarn(4.0, 64)), ("llama", "linear-4", linear)]


@pytest.mark.parametrize(("arch", "name", "extra"), CASES, ids=[c[1] + "-" + c[0] for c in CASES])
def test_scaled_rope_matches_reference(engine: adil.Engine, tmp_path: Path, arch: str, name: str,
                                       extra: Callable[[gguf.GGUFWriter], None],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    exact_kv_cache(monkeypatch)  # an f32 KV cache, for TOL_FLOAT
    path = write_scaled(tmp_path / f"{arch}-{name}.gguf", arch, extra)
    plain = write_scaled(tmp_path / f"{arch}-plain.gguf", arch, lambda w: None)
    with engine.load_model(path, threads=2, context_length=128) as model:
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    want = reference_logits(path, ids, kv_f16=False)
    assert_close(got, want, TOL_FLOAT)
    # the scaling changes the logits (so the comparison above tests it)
    assert np.abs(want - reference_logits(plain, ids)).max() > 1e-3 * np.abs(want).max()


def test_longrope_is_a_capability_error(engine: adil.Engine, tmp_path: Path) -> None:
    path = write_scaled(tmp_path / "longrope.gguf", "llama",
                        lambda w: w.add_string("llama.rope.scaling.type", "longrope"))
    with pytest.raises(adil.CapabilityError, match="longrope"):
        engine.load_model(path)
