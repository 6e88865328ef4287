"""The CPU engine's model, context and run entry points on tiny synthetic
models: loading errors, context length, sampling determinism, KV-cache
prefix reuse, stop conditions, one run per model, cancellation."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import ARCHITECTURES, spec_for, write_tiny, write_tiny_model

import adil
from adil._binding import check, ffi

GREEDY = adil.Sampling(temperature=0.0)


@pytest.fixture(scope="module")
def gemma_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("tiny"), "gemma3", T.Q8_0)


@pytest.fixture(scope="module")
def llama_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("tiny"), "llama", T.Q4_0)


@pytest.fixture
def model(engine: adil.Engine, gemma_path: Path) -> Iterator[adil.Model]:
    with engine.load_model(gemma_path, threads=2, context_length=64) as m:
        yield m


def ids(n: int, seed: int = 0, n_vocab: int = 384) -> np.ndarray:
    # ids >= 10: no special tokens in prompts
    return np.random.default_rng(seed).integers(10, n_vocab, n).astype(np.int32)


# ---- loading ---------------------------------------------------------------------


def test_model_info(model: adil.Model) -> None:
    info = model.info
    assert (info.architecture, info.name, info.n_vocab) == ("gemma3", "tiny-gemma3", 384)
    assert (info.bos_token, info.eos_token, info.add_bos) == (2, 1, True)
    assert info.eot_token == 5  # <end_of_turn>
    assert info.context_length == 64 and info.n_ctx_train == 256
    assert info.chat_template is None
    assert info.threads == 2 and info.n_params > 0 and info.size_bytes > 0
    assert model.ready()


def test_tokenizer_round_trip(model: adil.Model) -> None:
    tokens = model.tokenize("the cat sat on the mat")
    assert tokens[0] == 2  # BOS, as the file asks
    assert model.detokenize(tokens[1:]) == "the cat sat on the mat"


def test_load_without_mmap_gives_the_same_logits(engine: adil.Engine, llama_path: Path) -> None:
    prompt = ids(16)
    with engine.load_model(llama_path, threads=1) as a, \
            engine.load_model(llama_path, threads=1, use_mmap=False) as b:
        np.testing.assert_array_equal(a.logits(prompt), b.logits(prompt))


def test_unknown_architecture_is_a_capability_error(engine: adil.Engine, tmp_path: Path) -> None:
    path = tmp_path / "mamba.gguf"
    w = gguf.GGUFWriter(str(path), "mamba")
    w.add_tensor("token_embd.weight", np.zeros((8, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    names = r"\(supported: llama, gemma3, qwen2, qwen3, phi3"  # arch.c's table, in order
    with pytest.raises(adil.CapabilityError, match=r"architecture 'mamba'.*" + names):
        engine.load_model(path)


@pytest.mark.parametrize("arch", ARCHITECTURES)
def test_every_architecture_generates(engine: adil.Engine, tmp_path: Path, arch: str) -> None:
    """Each tiny architecture loads, reports itself and generates greedily,
    the same tokens twice; `adil generate` runs the file too."""
    path = write_tiny(tmp_path, arch, T.Q4_K)
    with engine.load_model(path, threads=2, context_length=64) as m:
        assert (m.info.architecture, m.info.name) == (spec_for(arch).arch, f"tiny-{arch}")
        runs = [m.complete(ids(8), max_tokens=12, sampling=GREEDY).tokens for _ in range(2)]
    assert len(runs[0]) == 12 and runs[0] == runs[1]
    cli = subprocess.run([sys.executable, "-m", "adil", "generate", "--model", str(path),
                          "--max-tokens", "4", "--temperature", "0", "the cat"],
                         capture_output=True, text=True, timeout=120)
    assert cli.returncode == 0 and cli.stdout, cli.stderr  # (whitespace is text too)


@pytest.mark.parametrize("arch", ["qwen2", "qwen3", "phi3"])
def test_unknown_rope_scaling_is_a_capability_error(engine: adil.Engine, tmp_path: Path,
                                                    arch: str, monkeypatch: pytest.MonkeyPatch
                                                    ) -> None:
    import make_tiny_models

    plain = make_tiny_models._write_hparams

    def with_scaling(w: gguf.GGUFWriter, spec: make_tiny_models.TinySpec) -> None:
        plain(w, spec)
        w.add_string(f"{arch}.rope.scaling.type", "dynamic-ntk")

    monkeypatch.setattr(make_tiny_models, "_write_hparams", with_scaling)
    path = tmp_path / f"{arch}-ntk.gguf"
    write_tiny_model(path, arch, T.F32)
    with pytest.raises(adil.CapabilityError, match="rope.scaling.type.*dynamic-ntk"):
        engine.load_model(path)


def test_missing_and_truncated_files(engine: adil.Engine, gemma_path: Path,
                                     tmp_path: Path) -> None:
    with pytest.raises(adil.ModelFileError):
        engine.load_model(tmp_path / "absent.gguf")
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gemma_path.read_bytes()[:100_000])
    with pytest.raises(adil.ModelFormatError):
        engine.load_model(cut)


def test_missing_tensor_names_it(engine: adil.Engine, tmp_path: Path) -> None:
    path = tmp_path / "no_norm.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    for key, value in (("embedding_length", 32), ("block_count", 1),
                       ("feed_forward_length", 64), ("attention.head_count", 2)):
        w.add_uint32(f"llama.{key}", value)
    w.add_tensor("token_embd.weight", np.zeros((8, 32), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(adil.ModelFormatError, match="blk.0.attn_norm.weight"):
        engine.load_model(path)


# ---- context length ----------------------------------------------------------------


def test_logits_longer_than_the_context(model: adil.Model) -> None:
    with pytest.raises(adil.ContextLengthError, match="65 tokens.*64 tokens"):
        model.logits(ids(65))


def test_prompt_plus_max_tokens_over_the_context(model: adil.Model) -> None:
    with pytest.raises(adil.ContextLengthError, match=r"40 tokens \+ max_tokens 30 = 70 .* 64"):
        model.complete(ids(40), max_tokens=30)
    # exactly the window is fine
    done = model.complete(ids(40), max_tokens=24, sampling=GREEDY)
    assert len(done.tokens) <= 24


def test_max_tokens_none_means_up_to_the_window(model: adil.Model) -> None:
    done = model.complete(ids(60), max_tokens=None, sampling=GREEDY)
    assert len(done.tokens) <= 4
    if done.stop_reason == "max_tokens":
        assert len(done.tokens) == 4
    with pytest.raises(adil.ContextLengthError):
        model.complete(ids(64), max_tokens=None)


# ---- sampling ------------------------------------------------------------------------


def test_same_seed_same_tokens(model: adil.Model) -> None:
    prompt = ids(12, seed=4)

    def run(seed: int, **kw: float) -> tuple[int, ...]:
        sampling = adil.Sampling(temperature=1.0, top_k=0, top_p=1.0, min_p=0.0, seed=seed, **kw)
        return model.complete(prompt, max_tokens=24, sampling=sampling).tokens

    first = run(7)
    assert run(7) == first
    assert run(8) != first
    penalised = adil.Sampling(temperature=0.7, top_k=20, top_p=0.9, min_p=0.05,
                              repeat_penalty=1.3, seed=3)
    a = model.complete(prompt, max_tokens=24, sampling=penalised).tokens
    assert model.complete(prompt, max_tokens=24, sampling=penalised).tokens == a


def test_greedy_is_deterministic(model: adil.Model) -> None:
    prompt = ids(12, seed=9)
    a = model.complete(prompt, max_tokens=20, sampling=GREEDY)
    b = model.complete(prompt, max_tokens=20, sampling=GREEDY)
    assert a.tokens == b.tokens
    assert a.stop_reason in ("max_tokens", "end_of_text")


# ---- KV cache reuse ----------------------------------------------------------------------


def test_prefix_reuse_gives_the_same_tokens(engine: adil.Engine, gemma_path: Path) -> None:
    first_prompt = ids(20, seed=11)
    with engine.load_model(gemma_path, threads=2, context_length=64) as warm, \
            engine.load_model(gemma_path, threads=2, context_length=64) as cold:
        first = warm.complete(first_prompt, max_tokens=8, sampling=GREEDY)
        follow = np.concatenate([first_prompt, np.array(first.tokens, dtype=np.int32), ids(5, 12)])
        reused = warm.complete(follow, max_tokens=10, sampling=GREEDY)
        fresh = cold.complete(follow, max_tokens=10, sampling=GREEDY)
    assert reused.stats.n_cached_tokens >= len(first_prompt)
    assert fresh.stats.n_cached_tokens == 0
    assert reused.tokens == fresh.tokens


# ---- runs ----------------------------------------------------------------------------------


def test_one_run_per_model(model: adil.Model) -> None:
    generation = model.generate(ids(8), max_tokens=4, sampling=GREEDY)
    try:
        with pytest.raises(adil.BusyError):
            model.generate(ids(8), max_tokens=4)
    finally:
        generation.close()
    assert len(model.complete(ids(8), max_tokens=4, sampling=GREEDY).tokens) <= 4


def test_cancel_before_the_first_token(model: adil.Model) -> None:
    token = model.cancel_token()
    generation = model.generate(ids(8), max_tokens=40, sampling=GREEDY, cancel=token)
    worker = threading.Thread(target=token.cancel)
    worker.start()
    worker.join()
    done = generation.completion()
    assert (done.stop_reason, done.tokens, done.cancel_acknowledged) == ("cancelled", (), True)


def test_cancel_between_steps(engine: adil.Engine, gemma_path: Path) -> None:
    with engine.load_model(gemma_path, threads=2, context_length=1024) as m:
        generation = m.generate(ids(8), max_tokens=None, sampling=GREEDY)
        first = next(generation)  # a step returns at most 64 tokens
        generation.cancel()
        done = generation.completion()
    assert done.stop_reason == "cancelled" and done.cancel_acknowledged
    assert len(first.tokens) <= len(done.tokens) < 1016


def test_stats(model: adil.Model) -> None:
    done = model.complete(ids(30, seed=21), max_tokens=6, sampling=GREEDY)
    assert done.stats.n_prompt_tokens == 30
    assert done.stats.n_generated == len(done.tokens)
    assert done.stats.prefill_ms > 0 and done.stats.decode_ms >= 0


def test_total_deadline(engine: adil.Engine, gemma_path: Path) -> None:
    with engine.load_model(gemma_path, threads=2, context_length=4096) as m:
        generation = m.generate(ids(8), max_tokens=None, sampling=GREEDY,
                                timeout=adil.Timeout(total=0.05))
        with pytest.raises(adil.DeadlineError) as caught:
            for _ in generation:
                pass
    assert caught.value.limit == "total"
    assert 0 < len(generation.tokens) < 4088


def test_explicit_stop_tokens_end_the_run(model: adil.Model) -> None:
    """adil_run_params.stop_tokens (not exposed by Model): a run whose first
    greedy token is a stop token ends at once with END_OF_TEXT."""
    prompt = ids(10, seed=31)
    first = model.complete(prompt, max_tokens=1, sampling=GREEDY).tokens[0]
    lib: Any = model._lib
    params = ffi.new("adil_run_params *")
    lib.adil_run_default_params(params)
    params.max_tokens = 8
    sampling = GREEDY.to_c(lib)
    params.sampling = sampling
    stops = ffi.new("int32_t[]", [first])
    params.stop_tokens, params.n_stop_tokens = stops, 1
    run = ffi.new("adil_run **")
    tokens = ffi.new("int32_t[]", [int(t) for t in prompt])
    check(lib, lib.adil_run_start(model._require_context(), tokens, len(prompt), params, run))
    try:
        out, n = ffi.new("int32_t[]", 8), ffi.new("size_t *")
        assert lib.adil_run_step(run[0], out, 8, n) == 0 and n[0] == 0
        stats = ffi.new("adil_run_stats *")
        stats.struct_size = ffi.sizeof("adil_run_stats")
        check(lib, lib.adil_run_get_stats(run[0], stats))
        assert stats.stop_reason == 1  # ADIL_STOP_END_OF_TEXT
        assert stats.n_generated == 0
    finally:
        lib.adil_run_free(run[0])
