"""Bad arguments at the boundary: each is a clear InvalidArgumentError (or
the error the engine would give), never OverflowError/TypeError/ValueError
from cffi or numpy, and never silently mangled (issue 8: D15–D18)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny_model

import adil

LoadScript = Callable[..., adil.Model]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("arguments") / "tiny-llama.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    return str(path)


@pytest.fixture
def model(stub_model: LoadScript) -> adil.Model:
    return stub_model({"turns": [{"text": "hello"}] * 20})


@pytest.mark.parametrize("kwargs", [
    {"threads": 2**40}, {"threads": 0}, {"threads": -1}, {"threads": 1.5}, {"threads": True},
    {"context_length": 2**32}, {"context_length": 0}, {"context_length": "4096"},
])
def test_load_model_numbers(stub_engine: adil.Engine, write_script: Callable[..., str],
                            kwargs: dict[str, object]) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        stub_engine.load_model(write_script({"turns": []}), **kwargs)  # type: ignore[arg-type]


def test_engine_open_arguments() -> None:
    with pytest.raises(adil.InvalidArgumentError, match="NUL"):
        adil.Engine.open(backend="cpu\x00x")
    with pytest.raises(adil.InvalidArgumentError):
        adil.Engine.open(threads=2**40)


def test_paths_with_nul_or_of_the_wrong_type(stub_engine: adil.Engine,
                                              write_script: Callable[..., str]) -> None:
    path = write_script({"turns": []})
    with pytest.raises(adil.InvalidArgumentError, match="NUL"):
        stub_engine.load_model(path + "\x00ignored")
    with pytest.raises(adil.InvalidArgumentError):
        stub_engine.load_model(42)  # type: ignore[arg-type]


def test_directory_and_fifo_are_model_file_errors(tmp_path: Path) -> None:
    """D8/D15: a directory (no mmap) gave 'cannot allocate 2^63 bytes', a
    FIFO hung in open()."""
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    with adil.Engine.open() as engine:
        for path in (tmp_path, fifo):
            for use_mmap in (True, False):
                with pytest.raises(adil.ModelFileError):
                    engine.load_model(path, use_mmap=use_mmap)


@pytest.mark.parametrize("kwargs", [
    {"max_tokens": 1.5}, {"max_tokens": -1}, {"max_tokens": 2**32}, {"max_tokens": 0},
    {"stop": [1, 2]}, {"sampling": {"temperature": 0}}, {"timeout": True}, {"timeout": "5"},
    {"timeout": 0}, {"schema": "{}"},
])
def test_generate_arguments(model: adil.Model, kwargs: dict[str, object]) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        model.generate("hi", **kwargs)  # type: ignore[arg-type]
    assert model.complete("hi").text == "hello"  # nothing was left busy


def test_a_single_stop_string_is_not_split_into_characters(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "say E then END here"}]})
    assert model.complete("hi", stop="END").text == "say E then "


def test_lone_surrogate_text(model: adil.Model) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="index 2"):
        model.tokenize("ab\ud800c")
    with pytest.raises(adil.InvalidArgumentError):
        model.complete("\udfff")


@pytest.mark.parametrize("ids", [
    np.array([[104, 105], [106, 107]]),      # 2-D: used 2 of 4 ids
    [104.0, 105.7],                           # floats: truncated
    np.array([1.5, 2.5]),
    [True, False],
    [104, 2**40],                             # outside int32
    [[104], [105, 106]],                      # ragged
])
def test_token_ids_are_never_mangled(model: adil.Model, ids: object) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        model.generate(ids)  # type: ignore[arg-type]
    with pytest.raises(adil.InvalidArgumentError):
        model.detokenize(ids)  # type: ignore[arg-type]


def test_logits_checks_the_window_before_allocating(tiny: str) -> None:
    """D16: logits([2]*50000) allocated 49 GiB before the context check."""
    with adil.Engine.open() as engine, engine.load_model(tiny, context_length=64) as model:
        with pytest.raises(adil.ContextLengthError):
            model.logits([2] * 50_000)
        assert model.logits([2, 5]).shape == (2, model.n_vocab)


def test_a_context_the_engine_refuses_fails_at_load(tiny: str) -> None:
    """D18: context_length=2**31 loaded, then failed at the first call."""
    with adil.Engine.open() as engine:
        with pytest.raises(adil.AdilError):
            engine.load_model(tiny, context_length=2**31)


def test_closed_engine_and_model(stub_engine: adil.Engine, write_script: Callable[..., str]
                                 ) -> None:
    engine = adil.Engine.open(library=adil.STUB_LIBRARY)
    model = engine.load_model(write_script({"turns": []}))
    engine.close()
    with pytest.raises(adil.InvalidArgumentError, match="closed"):
        model.complete("hi")
    with pytest.raises(adil.InvalidArgumentError, match="closed"):
        engine.load_model(write_script({"turns": []}))


def test_a_mapped_file_truncated_in_place_is_refused(tmp_path: Path) -> None:
    """D9: truncating a mapped model file killed the process with SIGBUS at
    the next run; now the run and logits() are refused, and a model loaded
    with use_mmap=False keeps working on its own copy."""
    path = tmp_path / "tiny.gguf"
    write_tiny_model(path, "llama", T.Q8_0)
    with adil.Engine.open() as engine:
        mapped = engine.load_model(path, context_length=64)
        copied = engine.load_model(path, context_length=64, use_mmap=False)
        greedy = adil.Sampling(temperature=0)
        expected = copied.complete([2, 5, 6], max_tokens=2, ignore_eos=True,
                                   sampling=greedy).tokens
        os.truncate(path, 1000)
        with pytest.raises(adil.ModelFileError, match="changed since it was loaded"):
            mapped.complete([2, 5, 6], max_tokens=2)
        with pytest.raises(adil.ModelFileError):
            mapped.logits([2, 5])
        assert copied.complete([2, 5, 6], max_tokens=2, ignore_eos=True,
                               sampling=greedy).tokens == expected
        mapped.close()
        copied.close()
