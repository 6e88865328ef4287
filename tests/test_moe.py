"""The mixture-of-experts block (native/engine/models/moe.c) on tiny qwen3moe
files: the gating keys a file may set, and what the engine refuses.  The
logits themselves are checked against the numpy reference in
test_model_logits.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import (
    _write_hparams,
    _write_tokenizer,
    spec_for,
    write_tiny_model,
    write_weights,
)
from reference_forward import reference_logits
from test_model_logits import TOL_FLOAT, assert_close, exact_kv_cache, prompt_ids

import adil


def write_qwen3moe(path: Path, extra: Callable[[gguf.GGUFWriter], None]) -> Path:
    """The tiny F32 qwen3moe file with `extra` metadata written after the
    usual hyperparameters."""
    spec = spec_for("qwen3moe")
    w = gguf.GGUFWriter(str(path), "qwen3moe")
    _write_hparams(w, spec)
    extra(w)
    _write_tokenizer(w, spec)
    write_weights(w, spec, T.F32, np.random.default_rng(0))
    return path


def test_weights_without_renormalisation(engine: adil.Engine, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """expert_weights_norm = false: the top-k softmax probabilities are used
    as they are (they sum to less than 1).  An f32 KV cache, for TOL_FLOAT."""
    exact_kv_cache(monkeypatch)
    path = write_qwen3moe(tmp_path / "no_norm.gguf", lambda w: w.add_expert_weights_norm(False))
    with engine.load_model(path, threads=2, context_length=128) as model:
        ids = prompt_ids(model.n_vocab)
        got = model.logits(ids)
    assert_close(got, reference_logits(path, ids, kv_f16=False), TOL_FLOAT)
    normed = write_qwen3moe(tmp_path / "norm.gguf", lambda w: None)
    assert not np.allclose(reference_logits(normed, ids), reference_logits(path, ids))


def test_unknown_gating_function_is_a_capability_error(engine: adil.Engine, tmp_path: Path) -> None:
    path = write_qwen3moe(tmp_path / "sigmoid.gguf",
                          lambda w: w.add_uint32("qwen3moe.expert_gating_func", 2))
    with pytest.raises(adil.CapabilityError, match="expert_gating_func"):
        engine.load_model(path)


def test_more_experts_used_than_there_are_is_refused(engine: adil.Engine, tmp_path: Path) -> None:
    spec = spec_for("qwen3moe")
    w = gguf.GGUFWriter(str(tmp_path / "k9.gguf"), "qwen3moe")
    w.add_uint32("qwen3moe.expert_count", spec.n_expert)
    w.add_uint32("qwen3moe.expert_used_count", spec.n_expert + 1)
    for key, value in (("embedding_length", spec.n_embd), ("block_count", spec.n_layer),
                       ("feed_forward_length", spec.n_ff), ("attention.head_count", spec.n_head)):
        w.add_uint32(f"qwen3moe.{key}", value)
    w.add_tensor("token_embd.weight", np.zeros((8, spec.n_embd), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(adil.ModelFormatError, match="expert_used_count"):
        engine.load_model(tmp_path / "k9.gguf")


def test_unsupported_architecture_lists_qwen3moe(engine: adil.Engine, tmp_path: Path) -> None:
    path = tmp_path / "mamba.gguf"
    w = gguf.GGUFWriter(str(path), "mamba")
    w.add_tensor("token_embd.weight", np.zeros((8, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(adil.CapabilityError, match=r"supported: .*qwen3moe"):
        engine.load_model(path)


def expected_decode_bytes(path: Path, elements: bool = False) -> tuple[int, int]:
    """(all tensor bytes, bytes one decoded token reads) of a file — with
    `elements`, (all tensor elements, the weights one token multiplies by) — from the
    gguf package's reader (an oracle independent of the engine's loader):
    expert tensors count n_expert_used / n_expert (per layer, rounded down
    as the engine does), a token embedding with a separate output head one row."""
    reader = gguf.GGUFReader(str(path))
    arch = str(bytes(reader.fields["general.architecture"].parts[-1]), "utf-8")

    def count(key: str) -> int:
        field = reader.fields.get(f"{arch}.{key}")
        return int(field.parts[-1][0]) if field is not None else 0

    n_expert, n_used = count("expert_count"), count("expert_used_count")
    tensors = {t.name: t for t in reader.tensors}

    def size(name: str) -> int:
        return int(tensors[name].n_elements if elements else tensors[name].n_bytes)

    total = sum(size(name) for name in tensors)
    read = total
    if n_expert:
        layers = {name.split(".")[1] for name in tensors if name.endswith("_exps.weight")}
        for layer in layers:
            experts = sum(size(f"blk.{layer}.ffn_{p}_exps.weight") for p in ("gate", "up", "down"))
            read -= experts // n_expert * (n_expert - n_used)
    if "output.weight" in tensors:
        embd = size("token_embd.weight")
        read -= embd - embd // int(tensors["token_embd.weight"].shape[1])
    return total, read


@pytest.mark.parametrize("arch", ["qwen3moe", "gpt-oss", "llama"])
def test_decode_bytes_counts_the_routed_experts(engine: adil.Engine, tmp_path: Path,
                                                arch: str) -> None:
    """Model.info.decode_bytes (ABI 2.5), what `adil bench`'s ceiling divides
    by: a mixture of experts reads only its routed experts' share per token."""
    path = tmp_path / f"{arch}.gguf"
    write_tiny_model(path, arch, T.Q8_0)
    total, read = expected_decode_bytes(path)
    n_params, multiplied = expected_decode_bytes(path, elements=True)
    with engine.load_model(path) as model:
        assert (model.info.size_bytes, model.info.decode_bytes) == (total, read)
        assert (model.info.n_params, model.info.decode_params) == (n_params, multiplied)
        assert model.info.n_embd == spec_for(arch).n_embd
    assert (read < total) if arch != "llama" else (read <= total)


def test_decode_bytes_is_none_before_abi_2_5(variant_libraries: dict[str, str],
                                             write_script: Callable[[dict[str, object]], str]
                                             ) -> None:
    with adil.Engine.open(library=variant_libraries["abi2_2"]) as old, \
            old.load_model(write_script({"turns": [{"text": "x"}]})) as model:
        assert model.info.decode_bytes is None and model.info.decode_params is None
        assert model.info.n_embd is None
    with adil.Engine.open(library=variant_libraries["abi2_7"]) as later, \
            later.load_model(write_script({"turns": [{"text": "x"}]})) as model:
        # the stub has no weights
        assert model.info.decode_bytes == model.info.decode_params == model.info.n_embd == 0
