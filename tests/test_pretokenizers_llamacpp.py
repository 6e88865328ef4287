"""Every pre-tokenizer against llama.cpp, on llama.cpp's own vocabulary test strings.

Fixtures: tests/fixtures/pretok/, recorded from llama.cpp 0c1e57098 (what
llama-cpp-python 0.3.36 vendors) by tests/fixtures/record_pretok_llamacpp.py:
inputs.json holds the strings of llama.cpp's models/ggml-vocab-*.gguf.inp
files (its test-tokenizer-0 inputs) and our own unicode-heavy ones; <pre>.json
llama.cpp's ids for each, with the vocabulary of make_pretok_models.py
(byte-level BPE trained on those strings without pre-tokenization, so that a
word boundary in the wrong place changes the ids) and tokenizer.ggml.pre set
to <pre>.  Here the same model file is written again and run by our engine:
the ids must be llama.cpp's exactly, for every string.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from make_pretok_models import Vocab, build_vocab, vocab_sha256, write_pretok_model
from test_tokenizer_gemma import _tokenize

import adil

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "pretok"
INPUTS: list[dict[str, str]] = json.loads((FIXTURES / "inputs.json").read_text("utf-8"))["inputs"]
NAMES = sorted(p.stem for p in FIXTURES.glob("*.json") if p.stem != "inputs")


def _raw(item: dict[str, str]) -> bytes:
    return bytes.fromhex(item["hex"]) if "hex" in item else item["text"].encode("utf-8")


TEXTS = [_raw(i) for i in INPUTS]


@pytest.fixture(scope="module")
def vocab() -> Vocab:
    return build_vocab(TEXTS)


def _load(engine: adil.Engine, directory: Path, pre: str, vocab: Vocab) -> adil.Model:
    path = directory / f"pretok-{pre}.gguf"
    write_pretok_model(path, pre, vocab)
    return engine.load_model(path, threads=1)


def test_fixtures_cover_every_pattern() -> None:
    """One recorded name per pattern (and the aliases whose settings differ)."""
    for name in (
        "default",
        "llama-bpe",
        "qwen2",
        "qwen35",
        "smollm",
        "gpt-2",
        "phi-2",
        "gpt-4o",
        "tekken",
        "deepseek-llm",
        "deepseek-coder",
        "deepseek-v3",
    ):
        assert name in NAMES
    assert len(INPUTS) >= 250


@pytest.mark.parametrize("pre", NAMES)
def test_ids_equal_llama_cpp(engine: adil.Engine, vocab: Vocab, tmp_path: Path, pre: str) -> None:
    doc: dict[str, Any] = json.loads((FIXTURES / f"{pre}.json").read_text("utf-8"))
    assert doc["vocab_sha256"] == vocab_sha256(vocab[0], vocab[2]), (
        "make_pretok_models.py now writes another vocabulary than the one the fixtures were "
        "recorded with: record them again (tests/fixtures/record_pretok_llamacpp.py)"
    )
    model = _load(engine, tmp_path, pre, vocab)
    try:
        mismatches = []
        for item, text, want in zip(INPUTS, TEXTS, doc["ids"], strict=True):
            got = _tokenize(model, text, 0, 0)
            if got != want:
                mismatches.append(f"{str(item)[:70]}: got {got[:16]}, want {want[:16]}")
        # llama.cpp's add_special=true is our add_bos=-1: the pre-tokenizer's default.
        for text, want in zip(TEXTS, doc["with_bos"], strict=False):
            got = _tokenize(model, text, -1, 0)
            if got != want:
                mismatches.append(f"with BOS {text[:40]!r}: got {got[:16]}, want {want[:16]}")
    finally:
        model.close()
    assert not mismatches, f"{pre}: {len(mismatches)} differ:\n" + "\n".join(mismatches)


def test_unknown_pre_tokenizer_is_refused_by_name(
    engine: adil.Engine, vocab: Vocab, tmp_path: Path
) -> None:
    with pytest.raises(adil.CapabilityError, match="chameleon"):
        _load(engine, tmp_path, "chameleon", vocab)
