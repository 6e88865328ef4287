"""logprobs=k on generate/complete (ABI 2.2): each generated token's
log-probability is the log-softmax of the model's raw logits at that step
(before temperature, penalties and grammar), checked against
``model.logits()`` of the same prefix on a tiny GGUF; the alternatives are
the k most likely, most likely first."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.generation import TokenLogprob

Load = Callable[..., adil.Model]
GREEDY = adil.Sampling(temperature=0.0, seed=0)
PROMPT = "the capital of France is"
TOL = 1e-4


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[adil.Model]:
    path = tmp_path_factory.mktemp("logprobs") / "tiny-llama.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    with adil.Engine.open() as engine:
        if "logprobs" not in engine.info.capabilities:
            pytest.skip(f"the engine {engine.info.library} has no logprobs (ABI "
                        f"{engine.info.abi})")
        with engine.load_model(path, threads=1, context_length=64) as loaded:
            yield loaded


def log_softmax(row: np.ndarray) -> np.ndarray:
    row = row.astype(np.float64)
    shifted = row - row.max()
    return shifted - np.log(np.exp(shifted).sum())


def expected(model: adil.Model, prompt: list[int], tokens: tuple[int, ...]) -> np.ndarray:
    """log_softmax of the raw logits before each generated token."""
    rows = model.logits(prompt + list(tokens[:-1]))[len(prompt) - 1:]
    return np.stack([log_softmax(row) for row in rows])


def check(model: adil.Model, prompt: list[int], done: adil.Completion, k: int) -> None:
    assert done.logprobs is not None and len(done.logprobs) == len(done.tokens) > 0
    want = expected(model, prompt, done.tokens)
    for i, (token, got) in enumerate(zip(done.tokens, done.logprobs, strict=True)):
        assert isinstance(got, TokenLogprob) and got.token == token
        assert got.text == model.token_bytes(token, special=True).decode("utf-8", "replace")
        assert abs(got.logprob - want[i, token]) <= TOL, (i, got.logprob, want[i, token])
        assert len(got.top) == k
        values = [lp for _, _, lp in got.top]
        assert values == sorted(values, reverse=True)
        best = np.sort(want[i])[::-1][:k]
        np.testing.assert_allclose(values, best, atol=TOL)
        for alt, text, lp in got.top:
            assert abs(lp - want[i, alt]) <= TOL
            assert text == model.token_bytes(alt, special=True).decode("utf-8", "replace")


def test_greedy_logprobs_match_the_logits(model: adil.Model) -> None:
    prompt = [int(t) for t in model.tokenize(PROMPT)]
    done = model.complete(prompt, max_tokens=8, sampling=GREEDY, logprobs=5)
    check(model, prompt, done, 5)
    assert done.logprobs is not None
    assert all(lp.top[0][0] == lp.token for lp in done.logprobs)  # greedy takes the best


@pytest.mark.parametrize("sampling", [
    adil.Sampling(temperature=1.5, top_k=0, top_p=1.0, min_p=0.0, seed=5),
    adil.Sampling(temperature=0.7, repeat_penalty=1.8, seed=9),
])
def test_logprobs_do_not_depend_on_sampling(model: adil.Model, sampling: adil.Sampling
                                            ) -> None:
    prompt = [int(t) for t in model.tokenize(PROMPT)]
    done = model.complete(prompt, max_tokens=10, sampling=sampling, logprobs=3)
    check(model, prompt, done, 3)


def test_pieces_carry_their_tokens_logprobs(model: adil.Model) -> None:
    prompt = [int(t) for t in model.tokenize(PROMPT)]
    generation = model.generate(prompt, max_tokens=12, temperature=0, logprobs=2)
    per_piece: list[Any] = []
    for piece in generation:
        assert piece.logprobs is not None
        assert tuple(lp.token for lp in piece.logprobs) == piece.tokens
        per_piece.extend(piece.logprobs)
    done = generation.completion()
    assert done.logprobs == tuple(per_piece) == generation.logprobs


def test_zero_alternatives(model: adil.Model) -> None:
    prompt = [int(t) for t in model.tokenize(PROMPT)]
    done = model.complete(prompt, max_tokens=4, sampling=GREEDY, logprobs=0)
    check(model, prompt, done, 0)
    with_top = model.complete(prompt, max_tokens=4, sampling=GREEDY, logprobs=20)
    check(model, prompt, with_top, 20)
    assert done.logprobs is not None and with_top.logprobs is not None
    assert [lp.logprob for lp in done.logprobs] == [lp.logprob for lp in with_top.logprobs]


def test_no_logprobs_unless_asked(model: adil.Model) -> None:
    done = model.complete(PROMPT, max_tokens=3, sampling=GREEDY)
    assert done.logprobs is None


def test_capability_error_without_the_capability(model: adil.Model,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(adil.Model, "capabilities", property(lambda self: ("grammar",)))
    with pytest.raises(adil.CapabilityError, match="log-probabilities"):
        model.generate(PROMPT, logprobs=1)
    assert model.complete(PROMPT, max_tokens=2, sampling=GREEDY).logprobs is None


def test_stub(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ab"}]})
    if "logprobs" not in model.capabilities:
        with pytest.raises(adil.CapabilityError):
            model.generate("hi", logprobs=2)
        return
    done = model.complete("hi", logprobs=2)
    assert done.logprobs == (TokenLogprob(97, "a", 0.0, ((97, "a", 0.0),)),
                             TokenLogprob(98, "b", 0.0, ((98, "b", 0.0),)))
