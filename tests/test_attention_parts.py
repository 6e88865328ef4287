"""Attention over ranges longer than ADIL_ATT_PART (1024) positions, which
the engine computes in parts cut at the multiples of 1024 and folds in order
(compute/attention.h): a batch folds a tile's parts one after the other, a
decode hands them to the threads and folds them afterwards.  On the tiny
f32 files of llama (every layer global), gemma3 (global layers beside
sliding ones) and gpt-oss (sinks, which the fold adds last):
  - a prompt of 2,300 tokens against the numpy reference, within
    test_model_logits.py's TOL_FLOAT (an f32 KV cache on both sides);
  - decoding past position 1024 (every step a one-token decode, its parts
    on the threads): the same tokens and bit-identical log-probabilities at
    1 and 2 threads, within 1e-5 of the log-softmax of the same positions'
    logits in one batch; and where lookup decoding drafts (llama, gemma3:
    drafted steps evaluated in a batch), its tokens and log-probabilities
    bit-identical to the plain run's."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny
from reference_forward import reference_logits
from test_model_logits import TOL_FLOAT, assert_close

import adil

ARCHS = ("llama", "gemma3", "gpt-oss")
N_CTX = 2600


@pytest.fixture(scope="module", params=ARCHS)
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    arch: str = request.param
    return write_tiny(tmp_path_factory.mktemp("parts"), arch, T.F32)


def test_long_prompt_matches_the_reference(engine: adil.Engine, tiny: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADIL_KV_TYPE", "f32")
    with engine.load_model(tiny, threads=2, context_length=N_CTX) as model:
        ids = np.random.default_rng(3).integers(0, model.n_vocab, 2300).astype(np.int32)
        got = model.logits(ids)
    assert_close(got, reference_logits(tiny, ids, kv_f16=False), TOL_FLOAT)


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    m = x.max(axis=-1, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=-1, keepdims=True))


def test_decode_parts_equal_the_batch(engine: adil.Engine, tiny: Path) -> None:
    # A block of 50 tokens repeated: its n-grams recur, so lookup may draft
    block = np.random.default_rng(4).integers(10, 300, 50)
    prompt = np.tile(block, 22)[:1060].tolist()
    runs = {}
    for threads in (1, 2):
        with engine.load_model(tiny, threads=threads, context_length=N_CTX) as model:
            arch = model.info.architecture
            for mode in (None, "lookup"):
                done = model.complete(prompt, max_tokens=40, temperature=0.0, ignore_eos=True,
                                      logprobs=3, speculative=mode)  # type: ignore[arg-type]
                assert done.logprobs is not None
                runs[threads, mode] = (done.tokens, [(s.logprob, s.top) for s in done.logprobs],
                                       done.stats.drafted_tokens)
            batch = model.logits(prompt + list(runs[1, None][0]))
    tokens, steps = runs[1, None][:2]
    assert runs[2, None][:2] == (tokens, steps)
    want = log_softmax(batch[len(prompt) - 1:-1])
    for i, (logprob, top) in enumerate(steps):
        assert abs(logprob - want[i, tokens[i]]) <= 1e-5
        for token, _, p in top:
            assert abs(p - want[i, token]) <= 1e-5
    if arch != "gpt-oss":  # whose tiny file's output never repeats an n-gram: no drafts
        for threads in (1, 2):
            assert runs[threads, "lookup"][2] > 0
            assert runs[threads, "lookup"][:2] == (tokens, steps), threads
