"""The CPU engine's forward pass against the numpy reference
(tests/reference_forward.py) on tiny synthetic GGUFs of each architecture in
each weight type (tests/make_tiny_models.py).

Tolerances: at every position p of a 64-token prompt,
    max_v |engine[p, v] - reference[p, v]| <= TOL * max_v |reference[p, v]|
with, for an engine context with an f32 KV cache (ADIL_KV_TYPE=f32) and the
reference keeping keys and values exact,
  * TOL_FLOAT = 1e-5 for F32/F16/BF16 weights: the same maths in float32
    against float64 (observed: below 1e-6);
  * TOL_QUANT = 5e-2 for the quantized types: the engine, like llama.cpp,
    quantizes the activations of each matrix product to 8 bits (Q8_0 or
    Q8_K) while the reference multiplies by the exact dequantized weights
    (observed: 1e-3 .. 2e-2);
and for the default f16 KV cache, the reference rounding keys and values to
float16 too, F32 weights:
  * TOL_KV_F16 = 1e-3: the engine rounds its float32 keys and the reference
    its float64 ones, and the few that lie near a half's rounding boundary
    go different ways, one half's ulp (5e-4 of the key) each (observed:
    1.6e-5 .. 1.2e-4).
The 64-token prompt is longer than the sliding window (12) of the gemma3 and
llama-swa files, so local and global layers both matter.  (The qwen3 files'
q/k norm weights are halved to keep their quantized logits within TOL_QUANT;
observed 2e-2 .. 4.6e-2 for the dense archs at the 8-bit-activation types.)
Mixture-of-experts files in quantized types are compared with the reference
that rounds activations as the engine does (reference_forward.py says why;
observed 1e-7 .. 3e-2, Q5_1 the most: its activations' fp16 sums are not
rounded by the reference; gpt-oss MXFP4, the released files' expert
type: 2e-2).  That reference rounds exactly as the engine's quantizers do
(test_weight_types.py), but its inputs are float64 where the engine's carry
float32 rounding (1e-7 .. 1e-6 relative, in another order at each kernel
level: the SIMD dots and attention sum within their error budgets, not bit
for bit).  An activation that close to a rounding tie takes the other 8-bit
level (a step of max/127 in its block), which moves the logits by up to 2e-2
from that position on.  The tiny qwen3moe Q8_0 file at every level: position
45, layer 0's q/k/v input, element 235 is -44.5 * d in the reference (level
-45) and 6e-8 above it in the engine (-44.4999962: -44); with the AVX2 and
AVX-512 kernels also position 2 (layer 1's q/k/v input, -21.4999981 against
-21.5000019) and 29.  The tiny llama files, compared the same way: Q8_0 2.7e-3
at AVX2 (1.9e-7 scalar), Q4_0 1.3e-2 at scalar (1.2e-7 AVX2).  Within
TOL_QUANT, but enough to flip a router near-tie (the xfails below).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import ARCHITECTURES, WEIGHT_TYPES, model_path, spec_for, write_all
from reference_forward import reference_logits

import adil
from adil._binding import check, ffi

TOL_FLOAT = 1e-5
TOL_KV_F16 = 1e-3
TOL_QUANT = 5e-2
FLOAT_TYPES = (T.F32, T.F16, T.BF16)
PROMPT_LEN = 64
MOE_ARCHITECTURES = ("qwen3moe", "gpt-oss")


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny_models")
    write_all(directory)
    return directory


def prompt_ids(n_vocab: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_vocab, PROMPT_LEN).astype(np.int32)


def exact_kv_cache(monkeypatch: pytest.MonkeyPatch) -> None:
    """Contexts made from here on in this test keep an f32 KV cache (the
    engine reads ADIL_KV_TYPE when it makes a context)."""
    monkeypatch.setenv("ADIL_KV_TYPE", "f32")


def tolerance(qtype: T) -> float:
    return TOL_FLOAT if qtype in FLOAT_TYPES else TOL_QUANT


def assert_close(got: np.ndarray, want: np.ndarray, tol: float) -> None:
    assert got.shape == want.shape
    scale = np.abs(want).max(axis=1)
    err = np.abs(got - want).max(axis=1)
    worst = int(np.argmax(err / scale))
    assert np.all(err <= tol * scale), (
        f"position {worst}: max |diff| {err[worst]:.3g} > {tol} * {scale[worst]:.3g}")


@pytest.mark.parametrize("qtype", WEIGHT_TYPES, ids=lambda t: t.name)
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_logits_match_reference(engine: adil.Engine, tiny_dir: Path, arch: str, qtype: T,
                                request: pytest.FixtureRequest,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    # A router compares scores: the exact-input reference can pick another expert than the
    # engine where two are within the rounding of the 8-bit activations (reference_forward.py)
    moe_quant = arch in MOE_ARCHITECTURES and qtype not in FLOAT_TYPES
    if arch == "qwen3moe" and qtype == T.Q8_0:
        request.applymarker(pytest.mark.xfail(
            strict=False, reason="a router near-tie at every kernel level: at position 48 the "
            "reference's 2nd and 3rd expert logits are 1e-4 of the logit scale apart, and the "
            "positions before it are up to 2.4e-2 off (from 45 at scalar, from 2 at AVX2 / "
            "AVX-512), where an activation at a Q8_0 rounding tie took the other level"))
    if arch == "gpt-oss" and qtype in (T.Q5_1, T.Q3_K):
        request.applymarker(pytest.mark.xfail(
            strict=False, reason="one router near-tie of the tiny gpt-oss file flips an expert "
            "(Q5_1 at position 42: the reference does not round Q8_1's sums, 3e-2 before it; "
            "Q3_K at position 18, 1e-7 before it); every other position within TOL_QUANT"))
    exact_kv_cache(monkeypatch)
    path = model_path(tiny_dir, arch, qtype)
    with engine.load_model(path, threads=2, context_length=128) as model:
        assert model.info.architecture == spec_for(arch).arch
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    assert got.dtype == np.float32
    want = reference_logits(path, ids, engine_activations=moe_quant, kv_f16=False)
    assert_close(got, want, tolerance(qtype))


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_f16_kv_cache_matches_reference(engine: adil.Engine, tiny_dir: Path, arch: str,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The default f16 KV cache against the reference that rounds keys and
    values to float16 too, within TOL_KV_F16; and it is what the default
    context uses (its logits differ from an f32 cache's)."""
    path = model_path(tiny_dir, arch, T.F32)
    with engine.load_model(path, threads=2, context_length=128) as model:
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    assert_close(got, reference_logits(path, ids), TOL_KV_F16)
    exact_kv_cache(monkeypatch)
    with engine.load_model(path, threads=2, context_length=128) as model:
        exact = model.logits(ids)
    assert not np.array_equal(got, exact)


def test_mistral_window_covers_every_layer(engine: adil.Engine, tiny_dir: Path) -> None:
    """llama-swa is the llama file plus attention.sliding_window = 12: the
    first 12 positions see everything either way, later ones only 12."""
    window = spec_for("llama-swa").sliding_window
    logits = []
    for arch in ("llama", "llama-swa"):
        with engine.load_model(model_path(tiny_dir, arch, T.F32), threads=2,
                               context_length=128) as model:
            logits.append(model.logits(prompt_ids(model.n_vocab)))
    full, windowed = logits
    np.testing.assert_allclose(windowed[:window], full[:window], rtol=0, atol=1e-4)
    assert np.all(np.abs(windowed[window:] - full[window:]).max(axis=1) > 1e-2)


def context_logits(model: adil.Model, ids: np.ndarray, **params: int) -> np.ndarray:
    """adil_context_logits on a fresh context with explicit context params
    (n_batch, n_threads), which the Model API does not expose."""
    lib: Any = model._lib
    p = ffi.new("adil_context_params *")
    lib.adil_context_default_params(p)
    for key, value in params.items():
        setattr(p, key, value)
    out = ffi.new("adil_context **")
    check(lib, lib.adil_context_new(model._require_open(), p, out))
    try:
        logits = np.empty((len(ids), model.n_vocab), dtype=np.float32)
        tokens = np.ascontiguousarray(ids, dtype=np.int32)
        check(lib, lib.adil_context_logits(
            out[0], ffi.cast("int32_t *", tokens.ctypes.data), len(tokens),
            ffi.cast("float *", logits.ctypes.data), logits.size))
        return logits
    finally:
        lib.adil_context_free(out[0])


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_batching_and_threads_do_not_change_logits(engine: adil.Engine, tiny_dir: Path,
                                                   arch: str) -> None:
    """Prefill in batches of 7 (positions cross batch and window borders) and
    on 1 or 3 threads gives the logits of one 64-token batch on 2 threads."""
    with engine.load_model(model_path(tiny_dir, arch, T.Q4_K), threads=2,
                           context_length=128) as model:
        ids = prompt_ids(model.n_vocab, seed=3)
        whole = model.logits(ids)
        for params in ({"n_batch": 7}, {"n_threads": 1}, {"n_threads": 3, "n_batch": 16}):
            got = context_logits(model, ids, n_ctx=128, **params)
            np.testing.assert_allclose(got, whole, rtol=0, atol=1e-4 * np.abs(whole).max(),
                                       err_msg=str(params))


@pytest.mark.parametrize("qtype", (T.F32, T.Q8_0, T.Q6_K), ids=lambda t: t.name)
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_decode_path_matches_teacher_forcing(engine: adil.Engine, tiny_dir: Path, arch: str,
                                             qtype: T) -> None:
    """Greedy generation (batched prefill, then one token per forward pass
    through the KV cache) picks, at every step, the argmax of the
    teacher-forced logits of the same sequence (up to a near-tie of 1e-4 of
    the logit scale)."""
    with engine.load_model(model_path(tiny_dir, arch, qtype), threads=2,
                           context_length=128) as model:
        prompt = prompt_ids(model.n_vocab, seed=5)[:20]
        done = model.complete(prompt, max_tokens=40, sampling=adil.Sampling(temperature=0.0))
        generated = np.array(done.tokens, dtype=np.int32)
        assert len(generated) > 0
        logits = model.logits(np.concatenate([prompt, generated]))
    rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(generated)]
    chosen = rows[np.arange(len(generated)), generated]
    slack = 1e-4 * np.abs(rows).max()
    assert np.all(chosen >= rows.max(axis=1) - slack)
