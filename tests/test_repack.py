"""Q4_K, Q8_0 and Q5_0 weights repacked at load into the 8-row layout
(compute/repack.h; Q8_0 and Q5_0 at the avx512 level only, and a tied output
head with the embedding whose rows are then looked up unpacked) against the
file's row-major layout (ADIL_REPACK=0, read at each load), on the tiny Q4_K,
Q8_0 and Q5_0 files of every architecture (dense and mixture of experts):
at every position the logits within TOL_QUANT of its logit scale, the same
greedy continuation up to its first near-tie, and not bit-identical where the CPU has SIMD kernels
(so the repacked kernels really ran).  The two layouts sum the same integer
products in another float order (observed: 3e-7 of the scale), until an
activation of some layer that lies at a rounding tie of its 8-bit
quantization takes the other level (test_model_logits.py explains it), from
which position on the logits move by up to 1.8e-2 (qwen2, phi3, llama-swa,
gemma3).  The kernels themselves are checked against the
scalar reference at every level by tests/native/test_repack.c."""

from __future__ import annotations

from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import ARCHITECTURES, model_path, write_all
from test_moe import expected_decode_bytes

import adil

PROMPT_LEN = 40
TOL_QUANT = 5e-2  # test_model_logits.py's rule for the quantized types


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("tiny_models")
    write_all(directory)
    return directory


def run(engine: adil.Engine, path: Path) -> tuple[np.ndarray, list[int], list[float]]:
    """The prompt's logits, a greedy continuation and, at each of its steps,
    the margin between the two most likely tokens."""
    with engine.load_model(path, threads=2, context_length=128) as model:
        ids = np.random.default_rng(5).integers(0, model.n_vocab, PROMPT_LEN).astype(np.int32)
        logits = model.logits(ids)
        completion = model.complete(ids.tolist(), max_tokens=12, temperature=0.0, ignore_eos=True,
                                    logprobs=2)
        assert completion.logprobs is not None
        margins = [step.top[0][2] - step.top[1][2] for step in completion.logprobs]
    return logits, list(completion.tokens), margins


@pytest.mark.parametrize("qtype", (T.Q4_K, T.Q8_0, T.Q5_0), ids=lambda t: t.name)
@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_repacked_weights_match_the_row_major_ones(
        engine: adil.Engine, tiny_dir: Path, arch: str, qtype: T,
        monkeypatch: pytest.MonkeyPatch) -> None:
    path = model_path(tiny_dir, arch, qtype)
    repacked, repacked_tokens, _ = run(engine, path)
    monkeypatch.setenv("ADIL_REPACK", "0")
    rows, row_tokens, margins = run(engine, path)
    err = np.abs(repacked - rows).max(axis=1)
    scale = np.abs(rows).max(axis=1)
    assert np.all(err <= TOL_QUANT * scale), f"worst position {int(np.argmax(err / scale))}"
    # The greedy continuations agree up to the first step whose two most
    # likely tokens are closer than twice the largest logit difference of the
    # prompt: from such a near-tie on, either layout may take either token.
    near_tie = next((i for i, m in enumerate(margins) if m <= 2 * err.max()), len(margins))
    if (arch, qtype) != ("qwen3moe", T.Q8_0):  # its router near-tie (test_model_logits.py) can
        assert repacked_tokens[:near_tie] == row_tokens[:near_tie]  # pick another expert
    if engine.info.kernels == "avx512" or (engine.info.kernels == "avx2" and qtype == T.Q4_K):
        assert not np.array_equal(repacked, rows)


@pytest.mark.parametrize("arch", ["llama", "qwen3moe"])
def test_decode_bytes_count_the_layout(engine: adil.Engine, tiny_dir: Path, arch: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Model.info.decode_bytes: the file's bytes a token reads (test_moe.py's
    oracle) plus 4 bytes per row and super-block of each repacked matrix (its
    unpacked scales), of an expert tensor the routed share; size_bytes stays
    the file's."""
    path = model_path(tiny_dir, arch, T.Q4_K)
    total, read = expected_decode_bytes(path)
    reader = gguf.GGUFReader(str(path))
    fields = {f.name: f for f in reader.fields.values()}
    n_expert = int(fields[f"{arch}.expert_count"].parts[-1][0]) if arch == "qwen3moe" else 0
    n_used = int(fields[f"{arch}.expert_used_count"].parts[-1][0]) if n_expert else 0
    extra = 0
    for t in reader.tensors:
        rows = int(np.prod(t.shape[1:]))
        if t.tensor_type != T.Q4_K or t.name == "token_embd.weight" or rows % 8:
            continue
        more = rows * (int(t.shape[0]) // 256) * 4
        extra += more // n_expert * n_used if "_exps." in t.name else more
    assert extra > 0
    with engine.load_model(path) as model:
        assert (model.info.size_bytes, model.info.decode_bytes) == (total, read + extra)
    monkeypatch.setenv("ADIL_REPACK", "0")
    with engine.load_model(path) as model:
        assert (model.info.size_bytes, model.info.decode_bytes) == (total, read)
