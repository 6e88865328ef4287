"""Sliding-window layers keep a ring of window + n_batch rows (kv_cache.h)
instead of one row per position: on the tiny files with a window (gemma3:
6 of 7 layers, 12 positions; gpt-oss: even layers, 8; llama-swa: every
layer, 12), a context of 1024 positions with the default batch of 512
wraps its rings.  Against the same context with ADIL_KV_RING=0 (every layer
full): the same logits bit for bit and the same greedy tokens on prompts far
longer than the window, prefill batches that wrap the ring included; a cut
back inside what the ring holds keeps the cache, one further re-evaluates
(the cached count says which) and still gives the same tokens; lookup
decoding (which cuts back inside its last batch) gives the plain run's
tokens; and the cache is smaller by what the rings save."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import spec_for, write_tiny

import adil

GREEDY = adil.Sampling(temperature=0.0)
N_CTX = 1024
N_BATCH = 512  # ADIL_DEFAULT_N_BATCH: the ring is window + 512 rows
ARCHS = ("gemma3", "gpt-oss", "llama-swa")


@pytest.fixture(scope="module", params=ARCHS)
def tiny(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    arch: str = request.param
    return write_tiny(tmp_path_factory.mktemp("ring"), arch, T.F32)


def prompt(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(10, 300, n).astype(np.int32)


def load(engine: adil.Engine, path: Path, monkeypatch: pytest.MonkeyPatch,
         ring: bool) -> adil.Model:
    if ring:
        monkeypatch.delenv("ADIL_KV_RING", raising=False)
    else:
        monkeypatch.setenv("ADIL_KV_RING", "0")
    return engine.load_model(path, threads=2, context_length=N_CTX)


def test_ring_is_smaller(engine: adil.Engine, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with load(engine, tiny, monkeypatch, ring=True) as model:
        arch = model.info.architecture
        ringed = model.info.kv_cache_bytes
    with load(engine, tiny, monkeypatch, ring=False) as model:
        full = model.info.kv_cache_bytes
    name = "llama-swa" if arch == "llama" else arch
    spec = spec_for(name)
    local = {"gemma3": spec.n_layer - 1, "gpt-oss": (spec.n_layer + 1) // 2,
             "llama-swa": spec.n_layer}[name]
    row = 2 * spec.n_head_kv * spec.head_dim * 2  # keys and values as halves
    assert full == spec.n_layer * N_CTX * row
    ring_rows = spec.sliding_window + N_BATCH
    assert ringed == ((spec.n_layer - local) * N_CTX + local * ring_rows) * row


def test_same_logits_and_tokens(engine: adil.Engine, tiny: Path,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    ids = prompt(700, seed=1)  # two prefill batches: the second wraps the rings
    out = {}
    for ring in (True, False):
        with load(engine, tiny, monkeypatch, ring) as model:
            logits = model.logits(ids)
            done = model.complete(ids, max_tokens=40, sampling=GREEDY, ignore_eos=True)
            out[ring] = (logits, done.tokens)
    assert np.array_equal(out[True][0], out[False][0])
    assert out[True][1] == out[False][1]


def test_cut_backs(engine: adil.Engine, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ring context serves the same prompts in turn as a full one: a
    shared prefix that ends inside what the ring holds stays cached, one
    that ends further back is evaluated again."""
    first = prompt(700, seed=2)
    # after `first` (700 + 40 positions) the rings hold positions 216..739
    near = np.concatenate([first[:690], prompt(20, seed=3)])  # needs 679..689: kept
    # after `near` (750 positions written) they hold 226..749
    far = np.concatenate([first[:100], prompt(20, seed=4)])  # needs 89..99: overwritten
    results = {}
    for ring in (True, False):
        with load(engine, tiny, monkeypatch, ring) as model:
            runs = [model.complete(p, max_tokens=40, sampling=GREEDY, ignore_eos=True)
                    for p in (first, near, far)]
        results[ring] = runs
    for r, f in zip(results[True], results[False], strict=True):
        assert r.tokens == f.tokens
    cached = [run.stats.n_cached_tokens for run in results[True]]
    assert cached == [0, 690, 0]
    assert [run.stats.n_cached_tokens for run in results[False]] == [0, 690, 100]


def test_lookup_on_a_ring(engine: adil.Engine, tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lookup decoding drafts from the prompt and cuts back to what it
    verified, inside its last batch: the plain run's tokens."""
    head = np.concatenate([prompt(560, seed=5), prompt(12, seed=6)])
    with load(engine, tiny, monkeypatch, ring=True) as model:
        # the prompt repeats its end and what the model wrote after it, so
        # the continuation has an earlier occurrence to draft from
        seen = model.complete(head, max_tokens=30, sampling=GREEDY, ignore_eos=True).tokens
        ids = np.concatenate([head, np.array(seen, dtype=np.int32), head[-12:]])
        plain = model.complete(ids, max_tokens=60, sampling=GREEDY, ignore_eos=True)
        drafted = model.complete(ids, max_tokens=60, sampling=GREEDY, ignore_eos=True,
                                 speculative="lookup")
    assert drafted.stats.drafted_tokens > 0
    assert drafted.tokens == plain.tokens
