"""Everyday API fit (issue 11, part 5) on the stub and a tiny GGUF:
timeout= as plain seconds, sampling keywords, max_tokens=None, complete()
with generate()'s signature, the StopReason type, keyword-only booleans,
stop_tokens=, a model whose context is made at first use, one default
sampling, and the checks of logprobs=."""

from __future__ import annotations

import asyncio
import inspect
import math
import threading
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil
from adil.generation import Completion, StopReason
from adil.sampling import DEFAULT_SAMPLING, resolve_sampling
from adil.timeouts import as_timeout

Load = Callable[..., adil.Model]
GREEDY = adil.Sampling(temperature=0.0, seed=0)
PROMPT = "the capital of France is"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("api_fit") / "tiny-llama.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    return str(path)


@pytest.fixture
def gguf(engine: adil.Engine, tiny: str) -> Iterator[adil.Model]:
    with engine.load_model(tiny, threads=1, context_length=64) as model:
        yield model


# ---- timeout= ------------------------------------------------------------------------

def test_timeout_takes_plain_seconds(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "hello"}, {"text": "x" * 400}],
                        "token_delay_ms": 5})
    assert model.complete("hi", timeout=30).text == "hello"  # an int is seconds
    with pytest.raises(adil.DeadlineError) as caught:
        model.complete("hi", timeout=0.05)  # a float too: the whole generation
    assert caught.value.limit == "total"


@pytest.mark.parametrize("value", [True, False, 0, -1, 0.0, math.inf, math.nan, "5", [1]])
def test_timeout_refuses_what_is_not_seconds(stub_model: Load, value: object) -> None:
    model = stub_model({"turns": [{"text": "ok"}]})
    with pytest.raises(adil.InvalidArgumentError, match="timeout"):
        model.generate("hi", timeout=value)  # type: ignore[arg-type]
    assert model.complete("hi", timeout=adil.Timeout(total=30)).text == "ok"


def test_as_timeout() -> None:
    assert as_timeout(None) is None
    limit = adil.Timeout(read=2)
    assert as_timeout(limit) is limit
    assert as_timeout(3) == adil.Timeout(total=3.0)
    assert as_timeout(0.5) == adil.Timeout(total=0.5)


# ---- sampling keywords -------------------------------------------------------------------

def test_sampling_keywords_set_fields_and_win_over_sampling() -> None:
    assert resolve_sampling() is DEFAULT_SAMPLING
    assert resolve_sampling(None, temperature=0.0) == adil.Sampling(temperature=0.0)
    base = adil.Sampling(temperature=0.5, top_k=3, seed=7)
    assert resolve_sampling(base) is base
    got = resolve_sampling(base, temperature=0.0, top_p=0.5, top_k=9, min_p=0.1, seed=1,
                           repeat_penalty=1.1)
    assert got == adil.Sampling(temperature=0.0, top_p=0.5, top_k=9, min_p=0.1, seed=1,
                                repeat_penalty=1.1, repeat_last_n=base.repeat_last_n)


@pytest.mark.parametrize("keyword, value", [
    ("temperature", -1.0), ("temperature", True), ("top_p", 0.0), ("top_p", 1.5),
    ("top_k", -1), ("top_k", 2.5), ("min_p", 2.0), ("seed", -1), ("seed", 2**64),
    ("repeat_penalty", 0.0), ("temperature", math.nan),
])
def test_sampling_keywords_are_checked_as_the_field(stub_model: Load, keyword: str,
                                                    value: object) -> None:
    model = stub_model({"turns": [{"text": "ok"}]})
    with pytest.raises(adil.InvalidArgumentError, match=f"Sampling.{keyword}"):
        model.generate("hi", **{keyword: value})
    assert model.complete("hi", **{keyword: None}).text == "ok"  # None: not given


def test_sampling_keywords_on_a_model(gguf: adil.Model) -> None:
    greedy = gguf.complete(PROMPT, max_tokens=8, sampling=GREEDY)
    assert gguf.complete(PROMPT, max_tokens=8, temperature=0).tokens == greedy.tokens
    hot = adil.Sampling(temperature=50.0, top_k=0, top_p=1.0, min_p=0.0, seed=3)
    # temperature= wins over the hot sampling: greedy again.
    assert gguf.complete(PROMPT, max_tokens=8, sampling=hot, temperature=0.0).tokens \
        == greedy.tokens
    # A seed keyword makes sampled output repeatable.
    first = gguf.complete(PROMPT, max_tokens=8, sampling=hot, seed=11)
    assert gguf.complete(PROMPT, max_tokens=8, sampling=hot, seed=11).tokens == first.tokens
    with pytest.raises(adil.InvalidArgumentError, match="sampling must be an adil.Sampling"):
        gguf.generate(PROMPT, sampling={"temperature": 0})  # type: ignore[arg-type]


def test_one_default_sampling() -> None:
    assert DEFAULT_SAMPLING == adil.Sampling() and adil.DEFAULT_SAMPLING is DEFAULT_SAMPLING
    assert "DEFAULT_SAMPLING" in (adil.Sampling.__doc__ or "")
    for method in (adil.Model.generate, adil.Model.complete):
        assert inspect.signature(method).parameters["sampling"].default is None
    assert inspect.signature(adil.Agent).parameters["sampling"].default is None


# ---- max_tokens ---------------------------------------------------------------------------

def test_max_tokens_none_runs_to_the_end_of_the_context(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "y" * 100}]}, context_length=32)
    done = model.complete("abcd", max_tokens=None)
    assert len(done.tokens) == 28 and done.stop_reason == "max_tokens"
    with pytest.raises(adil.InvalidArgumentError, match="max_tokens"):
        model.generate("abcd", max_tokens=0)
    with pytest.raises(adil.InvalidArgumentError, match="max_tokens"):
        model.generate("abcd", max_tokens=True)  # type: ignore[arg-type]


def test_max_tokens_none_on_a_model(gguf: adil.Model) -> None:
    ids = gguf.tokenize(PROMPT)
    done = gguf.complete(ids, max_tokens=None, sampling=GREEDY, ignore_eos=True)
    assert len(ids) + len(done.tokens) == gguf.info.context_length
    assert done.stop_reason == "max_tokens"


# ---- signatures -----------------------------------------------------------------------

def test_complete_has_the_signature_of_generate() -> None:
    generate = inspect.signature(adil.Model.generate)
    complete = inspect.signature(adil.Model.complete)
    assert list(complete.parameters.values()) == list(generate.parameters.values())
    assert all(p.kind is not p.VAR_KEYWORD for p in complete.parameters.values())
    hints = typing.get_type_hints(adil.Model.complete)
    assert hints["return"] is Completion
    assert {k: v for k, v in hints.items() if k != "return"} == {
        k: v for k, v in typing.get_type_hints(adil.Model.generate).items() if k != "return"}


def test_stop_reason_is_a_literal() -> None:
    assert set(typing.get_args(StopReason)) == {
        "running", "end_of_text", "max_tokens", "stop_sequence", "cancelled", "deadline",
        "error"}
    assert typing.get_type_hints(Completion)["stop_reason"] == StopReason
    assert adil.StopReason == StopReason


@pytest.mark.parametrize("method, names", [
    ("tokenize", ("add_bos", "special")), ("detokenize", ("special",)),
    ("token_bytes", ("special",)), ("render_chat", ("add_generation_prompt",)),
])
def test_boolean_parameters_are_keyword_only(method: str, names: tuple[str, ...]) -> None:
    parameters = inspect.signature(getattr(adil.Model, method)).parameters
    for name in names:
        assert parameters[name].kind is inspect.Parameter.KEYWORD_ONLY, (method, name)


def test_positional_booleans_are_refused(stub_model: Load) -> None:
    model = stub_model({"turns": []})
    with pytest.raises(TypeError):
        model.tokenize("hi", False)  # type: ignore[misc]
    with pytest.raises(TypeError):
        model.detokenize([104], True)  # type: ignore[misc]
    with pytest.raises(TypeError):
        model.token_bytes(104, True)  # type: ignore[misc]
    with pytest.raises(TypeError):
        model.render_chat([{"role": "user", "content": "hi"}], False)  # type: ignore[misc]
    assert list(model.tokenize("hi", add_bos=False, special=False)) == list(b"hi")
    assert model.detokenize([104, 105], special=True) == "hi"


# ---- stop_tokens= ---------------------------------------------------------------------

def test_stop_tokens_end_the_run_as_end_of_text(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "abc|def"}, {"text": "abc|def"}]})
    done = model.complete("hi", stop_tokens=[ord("|")])
    assert done.text == "abc" and done.stop_reason == "end_of_text"
    assert model.complete("hi", stop_tokens=()).text == "abc|def"
    for bad in ([1.5], [[1]], [-1], ["a"]):
        with pytest.raises(adil.InvalidArgumentError, match="stop_tokens"):
            model.generate("hi", stop_tokens=bad)  # type: ignore[arg-type]


def test_stop_tokens_on_a_model(gguf: adil.Model) -> None:
    first = gguf.complete(PROMPT, max_tokens=4, sampling=GREEDY).tokens
    done = gguf.complete(PROMPT, max_tokens=4, sampling=GREEDY, stop_tokens=[first[1]])
    assert done.tokens == first[:1] and done.stop_reason == "end_of_text"


# ---- the context is made at first use -----------------------------------------------------

def test_info_makes_no_context(engine: adil.Engine, tiny: str) -> None:
    with engine.load_model(tiny) as model:
        assert model.info.context_length == 256  # the tiny model's n_ctx_train
        assert model.info.n_vocab > 0 and model._context is None
        model.tokenize(PROMPT)
        model.detokenize([5, 6])
        assert model._context is None  # tokens need no KV cache either
        model.complete(PROMPT, max_tokens=2, sampling=GREEDY)
        assert model._context is not None
        assert model._lib.adil_context_size(model._context) == 256
    with engine.load_model(tiny, context_length=48) as model:
        assert model.info.context_length == 48 and model._context is None
        assert model.logits([1, 5]).shape == (2, model.n_vocab)
        assert model._lib.adil_context_size(model._context) == 48


def test_info_of_a_stub_model(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ok"}], "context_length": 100})
    assert model.info.context_length == 100 and model._context is None
    assert stub_model({"turns": []}, context_length=5000).info.context_length == 5000
    big = stub_model({"turns": [], "context_length": 10_000})
    assert big.info.context_length == 4096  # capped at ADIL_DEFAULT_N_CTX_CAP
    assert model.complete("hi", max_tokens=None).text == "ok"
    assert model._lib.adil_context_size(model._context) == 100


@pytest.mark.parametrize("length", [0, 2**20 + 1, 2**31, -1, 1.5, True])
def test_a_bad_context_length_still_fails_at_load(engine: adil.Engine, tiny: str,
                                                   length: object) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="context_length"):
        engine.load_model(tiny, context_length=length)  # type: ignore[arg-type]


def test_the_first_calls_of_many_threads_make_one_context(
    engine: adil.Engine, tiny: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Any] = []
    original = adil.Model._new_context

    def counting(self: adil.Model, *args: Any) -> Any:
        made.append(self)
        return original(self, *args)

    monkeypatch.setattr(adil.Model, "_new_context", counting)
    with engine.load_model(tiny, threads=1, context_length=32) as model:
        start = threading.Barrier(4)
        errors: list[BaseException] = []

        def work() -> None:
            try:
                start.wait()
                model.logits([1, 2, 3])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and len(made) == 1


def test_close_before_first_use(engine: adil.Engine, tiny: str, tmp_path: Path) -> None:
    model = engine.load_model(tiny)
    model.close()
    assert model.info.context_length == 256
    with pytest.raises(adil.InvalidArgumentError, match="closed"):
        model.complete(PROMPT)
    with pytest.raises(adil.InvalidArgumentError, match="closed"):
        model.logits([1])


# ---- logprobs= checks -------------------------------------------------------------------

@pytest.mark.parametrize("value", [-1, 21, 1.5, True, "3"])
def test_logprobs_must_be_0_to_20(stub_model: Load, value: object) -> None:
    model = stub_model({"turns": [{"text": "ok"}]})
    with pytest.raises(adil.InvalidArgumentError, match="logprobs"):
        model.generate("hi", logprobs=value)  # type: ignore[arg-type]


def test_no_logprobs_unless_asked(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ok"}]})
    generation = model.generate("hi")
    pieces = list(generation)
    assert all(p.logprobs is None for p in pieces) and generation.logprobs is None
    assert generation.completion().logprobs is None


def test_exports() -> None:
    for name in ("TokenLogprob", "DEFAULT_SAMPLING", "StopReason"):
        assert name in adil.__all__ and hasattr(adil, name)


# ---- the async methods ------------------------------------------------------------------

def test_async_methods_have_the_signatures_of_generate_and_chat() -> None:
    generate = inspect.signature(adil.Model.generate).parameters
    assert list(inspect.signature(adil.Model.agenerate).parameters.values()) == list(
        generate.values())
    chat = {k: v for k, v in inspect.signature(adil.Model.chat).parameters.items()
            if k != "stream"}
    assert list(inspect.signature(adil.Model.achat).parameters.values()) == list(chat.values())
    assert inspect.iscoroutinefunction(adil.Model.achat)


def test_async_methods_run(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "one"}, {"text": "two"}]})

    async def main() -> tuple[str, str]:
        pieces = [piece.text async for piece in model.agenerate("hi", max_tokens=None)]
        response = await model.achat([{"role": "user", "content": "hi"}])
        return "".join(pieces), response.text

    assert asyncio.run(main()) == ("one", "two")
