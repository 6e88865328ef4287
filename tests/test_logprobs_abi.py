"""ABI 2.2 log-probabilities through the binding's ffi (adil_run_params.n_logprobs,
adil_run_token_logprobs, _binding.token_logprobs): the CPU engine's values are
the log-softmax of Model.logits of the run's own output; the stub's are 0 with
the token its only alternative; an engine of minor 2.1 offers neither the
capability nor the function.  The public API (Piece.logprobs) is tested in
test_logprobs.py."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil._binding import MAX_LOGPROBS, ffi, token_logprobs


def _run(model: adil.Model, prompt: list[int], *, n_logprobs: int, max_tokens: int,
         temperature: float = 0.0, repeat_penalty: float = 1.0, read: bool = True,
         ) -> tuple[list[int], list[tuple[float, tuple[tuple[int, float], ...]]]]:
    """A run on a context of its own, stepped to its end; each token's logprobs
    read right after the step that returned it (unless not `read`)."""
    lib: Any = model._lib
    params = ffi.new("adil_context_params *")
    lib.adil_context_default_params(params)
    params.n_ctx = 256
    out_ctx = ffi.new("adil_context **")
    assert lib.adil_context_new(model._require_open(), params, out_ctx) == 0
    ctx = out_ctx[0]
    sampling = ffi.new("adil_sampling_params *")
    lib.adil_sampling_default_params(sampling)
    sampling.temperature = temperature
    sampling.repeat_penalty = repeat_penalty
    run_params = ffi.new("adil_run_params *")
    lib.adil_run_default_params(run_params)
    run_params.sampling = sampling
    run_params.max_tokens = max_tokens
    run_params.ignore_eos = 1
    run_params.n_logprobs = n_logprobs
    ids = ffi.new("int32_t[]", prompt)
    out_run = ffi.new("adil_run **")
    try:
        adil._binding.check(lib, lib.adil_run_start(ctx, ids, len(prompt), run_params, out_run))
        run = out_run[0]
        tokens: list[int] = []
        entries = []
        buf = ffi.new("int32_t[]", 8)
        n = ffi.new("size_t *")
        while True:
            adil._binding.check(lib, lib.adil_run_step(run, buf, 8, n))
            for i in range(int(n[0])):
                tokens.append(int(buf[i]))
                if read:
                    entries.append(token_logprobs(lib, run, len(tokens) - 1))
            if n[0] == 0:
                break
        if not read:
            lib.adil_run_free(run)
            return tokens, entries
        with pytest.raises(adil.InvalidArgumentError, match="tokens generated so far"):
            token_logprobs(lib, run, len(tokens))
        lib.adil_run_free(run)
        return tokens, entries
    finally:
        lib.adil_context_free(ctx)


@pytest.fixture(scope="module")
def tiny_llama(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("logprobs") / "tiny.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    return path


@pytest.mark.parametrize(("temperature", "repeat_penalty", "k"),
                         [(0.0, 1.0, 5), (1.0, 1.6, 1), (0.8, 1.0, MAX_LOGPROBS)])
def test_engine_logprobs_are_log_softmax_of_the_logits(
    tiny_llama: Path, temperature: float, repeat_penalty: float, k: int
) -> None:
    engine = adil.Engine.open(library=adil.ENGINE_LIBRARY)
    assert "logprobs" in engine.library.capabilities
    with engine.load_model(tiny_llama, threads=1) as model:
        prompt = [1, 5, 6, 7]
        tokens, entries = _run(model, prompt, n_logprobs=k, max_tokens=24,
                               temperature=temperature, repeat_penalty=repeat_penalty)
        assert len(tokens) == 24
        logits = model.logits(prompt + tokens).astype(np.float64)
        for i, (token, (logprob, top)) in enumerate(zip(tokens, entries, strict=True)):
            row = logits[len(prompt) + i - 1]
            lsm = row - row.max() - math.log(np.exp(row - row.max()).sum())
            assert logprob == pytest.approx(lsm[token], abs=1e-4)
            assert len(top) == k
            assert [lp for _, lp in top] == sorted((lp for _, lp in top), reverse=True)
            for tid, lp in top:
                assert lp == pytest.approx(lsm[tid], abs=1e-4)
            assert sorted(lsm, reverse=True)[k - 1] == pytest.approx(top[-1][1], abs=1e-4)
            if temperature == 0.0:
                assert top[0][0] == token or top[0][1] - logprob < 1e-4


def test_engine_refuses_too_many_logprobs(tiny_llama: Path) -> None:
    engine = adil.Engine.open(library=adil.ENGINE_LIBRARY)
    with engine.load_model(tiny_llama, threads=1) as model, \
            pytest.raises(adil.InvalidArgumentError, match="n_logprobs: expected 0..20, got 21"):
        _run(model, [1, 5], n_logprobs=MAX_LOGPROBS + 1, max_tokens=2)


def test_stub_logprobs_are_certain(stub_model: Callable[..., adil.Model]) -> None:
    model = stub_model({"turns": [{"text": "Hi!"}]})
    assert "logprobs" in model.engine.library.capabilities
    tokens, entries = _run(model, [ord("x")], n_logprobs=3, max_tokens=10)
    assert bytes(tokens) == b"Hi!"
    assert entries == [(0.0, ((t, 0.0),)) for t in tokens]


def test_run_without_logprobs_says_so(stub_model: Callable[..., adil.Model]) -> None:
    model = stub_model({"turns": [{"text": "Hi"}]})
    with pytest.raises(adil.InvalidArgumentError, match="started with n_logprobs 0"):
        _run(model, [ord("x")], n_logprobs=0, max_tokens=10)


def test_2_1_engine_has_no_logprobs(variant_libraries: dict[str, str],
                                    write_script: Callable[..., str]) -> None:
    """A 2.1 engine: no "logprobs", no function, and n_logprobs is a field it
    never reads (even out of range: the run works; nothing can be asked of it)."""
    engine = adil.Engine.open(library=variant_libraries["abi2_1"])
    library = engine.library
    assert "logprobs" not in library.capabilities
    assert not library.has_function("adil_run_token_logprobs")
    with engine.load_model(write_script({"turns": [{"text": "ok"}]})) as model:
        tokens, _ = _run(model, [ord("x")], n_logprobs=MAX_LOGPROBS + 5, max_tokens=5, read=False)
        assert bytes(tokens) == b"ok"
        with pytest.raises(AttributeError):
            _ = model._lib.adil_run_token_logprobs
