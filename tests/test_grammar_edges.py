"""Constrained decoding at the edges (issue 10): tokens that span lexemes
or end inside a UTF-8 character, escapes and \\u surrogate pairs,
control/end/user-defined tokens, whitespace (one space between lexemes), duplicate keys, the
exact-number rule and bounds — and schemas the compiler refuses, through
the ABI (adil_grammar_compile), with the JSON Pointer of what it refuses.

Token walks use the test hooks (tests/native/hooks, libadil_engine_hooks
of a build tree) on a tiny llama whose vocabulary holds JSON-shaped tokens
(tests/schema_strategies.py: every byte is a token too, so a byte string is
walked byte by byte).  The byte-level cases also run on the stub engine,
whose scripted text its grammar checks byte by byte (no hooks needed).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schema_strategies import (
    JSON_SPECIALS,
    canonical,
    grammar_check,
    grammar_position,
    json_vocab,
    schema_and_documents,
    write_json_vocab_model,
)

import adil
from adil._binding import check, ffi
from adil.constraints import Constraint

VALID, OPEN = "valid", "open"  # expected outcomes besides a refused byte offset
OBJ_A = {"type": "object", "properties": {"a": {"type": "string", "maxLength": 1}},
         "additionalProperties": False}
INT = {"type": "integer"}
NUM = {"type": "number"}
STR = {"type": "string"}
ANY: dict[str, Any] = {}
MAX = 2**53 - 1

# (schema, document bytes, VALID | OPEN | offset of the first byte refused)
BYTE_CASES: list[tuple[str, dict[str, Any], bytes, str | int]] = [
    # the exact-number rule
    ("integer", INT, b"12", VALID),
    ("minus zero integer", INT, b"-0", 1),
    ("integer with a point", INT, b"1.0", 1),
    ("integer with an exponent", INT, b"1e2", 1),
    ("leading zero", INT, b"01", 1),
    ("largest integer", INT, str(MAX).encode(), VALID),
    ("smallest integer", INT, str(-MAX).encode(), VALID),
    ("2^53", INT, str(MAX + 1).encode(), 15),
    ("-2^53", INT, str(-MAX - 1).encode(), 16),
    ("17 digits", INT, b"10000000000000000", 16),
    ("minus zero number", NUM, b"-0", OPEN),
    ("minus zero decimal", NUM, b"-0.0", VALID),
    ("15 significant digits", NUM, b"0.123456789012345", VALID),
    ("16 significant digits", NUM, b"0.1234567890123456", 17),
    ("15 digits across the point", NUM, b"12345678901234.5", VALID),
    ("16 digits across the point", NUM, b"123456789012345.6", 15),
    ("exponent", NUM, b"1E2", 1),
    ("negative exponent", NUM, b"1.5e-3", 3),
    ("point without digits", NUM, b"1.", OPEN),
    ("leading point", NUM, b".5", 0),
    ("lone minus", NUM, b"-", OPEN),
    ("trailing zeros", NUM, b"2.50", VALID),
    # bounds
    ("at the maximum", {"type": "integer", "minimum": 0, "maximum": 150}, b"150", VALID),
    ("over the maximum", {"type": "integer", "minimum": 0, "maximum": 150}, b"151", 2),
    ("a digit too many", {"type": "integer", "minimum": 0, "maximum": 150}, b"1500", 3),
    ("minus under a minimum of 0", {"type": "integer", "minimum": 0}, b"-1", 0),
    ("negative range", {"type": "integer", "minimum": -150, "maximum": -100}, b"-99", 1),
    ("negative range, too long", {"type": "integer", "minimum": -150, "maximum": -100},
     b"-1000", 4),
    ("fractional bounds: 1", {"type": "integer", "minimum": 0.5, "maximum": 2.5}, b"1", VALID),
    ("fractional bounds: 0", {"type": "integer", "minimum": 0.5, "maximum": 2.5}, b"0", 0),
    ("fractional bounds: 3", {"type": "integer", "minimum": 0.5, "maximum": 2.5}, b"3", 0),
    ("decimal maximum", {"type": "number", "minimum": -1, "maximum": 2.5}, b"2.5", VALID),
    ("decimal maximum exceeded", {"type": "number", "minimum": -1, "maximum": 2.5}, b"2.51", 3),
    ("decimal minimum", {"type": "number", "minimum": -1, "maximum": 2.5}, b"-1.0", VALID),
    ("decimal minimum passed", {"type": "number", "minimum": -1, "maximum": 2.5}, b"-1.01", 4),
    ("minimum 0.1", {"type": "number", "minimum": 0.1}, b"0.1", VALID),
    ("under minimum 0.1", {"type": "number", "minimum": 0.1}, b"0.09", 2),
    ("minus zero at minimum 0", {"type": "number", "minimum": 0}, b"-0.0", VALID),
    ("negative under minimum 0", {"type": "number", "minimum": 0}, b"-0.5", 3),
    ("maximum -0.5", {"type": "number", "maximum": -0.5}, b"-0.5", VALID),
    ("above maximum -0.5", {"type": "number", "maximum": -0.5}, b"-0.4", 3),
    ("17-digit minimum", {"type": "number", "minimum": 0.30000000000000004}, b"0.3", OPEN),
    ("one integer", {"type": "integer", "minimum": MAX, "maximum": MAX}, str(MAX).encode(), VALID),
    # strings, escapes, surrogate pairs
    ("escapes", STR, b'"\\u00e9\\/\\b\\f\\n\\r\\t\\\\\\""', VALID),
    ("unknown escape", STR, b'"\\x"', 2),
    ("raw control character", STR, b'"\x01"', 1),
    ("surrogate pair", {"type": "string", "maxLength": 1}, b'"\\ud83d\\ude00"', VALID),
    ("surrogate pair is one character", {"type": "string", "minLength": 2},
     b'"\\ud83d\\ude00"', 13),
    ("upper-case hex pair", STR, b'"\\uD83D\\uDE00"', VALID),
    ("lone high surrogate", STR, b'"\\ud83d"', 7),
    ("lone low surrogate", STR, b'"\\ude00"', 4),
    ("high surrogate then a letter", STR, b'"\\ud83d\\u0041"', 9),
    ("code points, not bytes", {"type": "string", "maxLength": 2}, '"é😀"'.encode(), VALID),
    ("one code point too many", {"type": "string", "maxLength": 2}, '"é😀a"'.encode(), 7),
    # UTF-8
    ("overlong", STR, b'"\xc0\x80"', 1),
    ("UTF-8 surrogate", STR, b'"\xed\xa0\x80"', 2),
    ("above U+10FFFF", STR, b'"\xf4\x90\x80\x80"', 2),
    ("lone continuation byte", STR, b'"\xa9"', 1),
    ("cut character", STR, b'"\xc3"', 2),
    ("U+10FFFF", STR, b'"\xf4\x8f\xbf\xbf"', VALID),
    # whitespace: one space between lexemes, none before the document
    ("single spaces", ANY, b'{ "a" : 1 , "b" : [ 1 , { } ] }', VALID),
    ("two spaces", ANY, b"{  }", 2),
    ("newline", ANY, b"{\n}", 1),
    ("tab", ANY, b"{\t}", 1),
    ("space before the document", ANY, b" []", 0),
    ("space after the document", ANY, b"[] ", 2),
    ("space after a top-level number", INT, b"1 ", 1),
    ("17 spaces in a string", STR, b'"' + b" " * 17 + b'"', VALID),
    # objects and arrays
    ("duplicate key", ANY, b'{"a":1,"a":1}', 9),
    ("duplicate declared key", {"type": "object", "properties": {"a": {}}}, b'{"a":1,"a":1}', 9),
    ("duplicate extra key", {"type": "object", "properties": {"a": {}}},
     b'{"a":1,"b":1,"b":2}', 15),
    ("extra key refused", OBJ_A, b'{"b":"x"}', 2),
    ("required key missing", {**OBJ_A, "required": ["a"]}, b"{}", 1),
    ("any key order",
     {"type": "object", "properties": {"a": INT, "b": INT}, "required": ["a", "b"]},
     b'{"b":1,"a":2}', VALID),
    ("escaped declared key", {"type": "object", "properties": {'a"b': INT}}, b'{"a\\"b":1}',
     VALID),
    ("too few items", {"type": "array", "minItems": 1, "maxItems": 2}, b"[]", 1),
    ("too many items", {"type": "array", "minItems": 1, "maxItems": 2}, b"[1,2,3]", 4),
    ("trailing comma", {"type": "array", "items": INT}, b"[1,]", 3),
    # enum and const
    ("enum 1.0 as written", {"enum": [1.0]}, b"1.0", VALID),
    ("enum 1.0 as an integer", {"type": "integer", "enum": [1.0]}, b"1", VALID),
    ("enum string with an escape", {"enum": ['a"b']}, b'"a\\"b"', VALID),
    ("const object in order", {"const": {"a": 1, "b": 2}}, b'{"a":1,"b":2}', VALID),
]


def case_id(case: tuple[str, dict[str, Any], bytes, str | int]) -> str:
    return case[0]


# -- the hooks' walk on the JSON-shaped vocabulary -------------------------------------------


class Vocab:
    """The JSON-vocabulary model of the hooks engine, and walks over it."""

    def __init__(self, path: Path) -> None:
        from gguf_hooks import hooks, require_hooks_library

        self.hooks = hooks()
        self.engine = adil.Engine.open(library=require_hooks_library())
        self.model = self.engine.load_model(path, threads=1)
        tokens, _, _ = json_vocab()
        self.special = {name: tokens.index(name) for name, _ in JSON_SPECIALS}
        self.by_bytes: dict[bytes, int] = {}
        for token in range(len(tokens) - len(JSON_SPECIALS)):
            self.by_bytes.setdefault(self.model.token_bytes(token), token)
        self._keep: list[Any] = []

    def grammar(self, schema: dict[str, Any] | str) -> Any:
        text = schema if isinstance(schema, str) else json.dumps(schema, ensure_ascii=False)
        compiled = self.model._compile_grammar(Constraint(text, "raw"))
        self._keep.append(compiled)
        return self.hooks.ffi.cast("adil_grammar *", int(ffi.cast("uintptr_t", compiled)))

    def ids(self, pieces: list[bytes | str | int]) -> list[int]:
        """Token ids: bytes -> the token of exactly those bytes, a name ->
        that special token, an int -> itself."""
        out = []
        for piece in pieces:
            if isinstance(piece, int):
                out.append(piece)
            elif isinstance(piece, str):
                out.append(self.special[piece])
            else:
                assert piece in self.by_bytes, f"no token {piece!r} in the vocabulary"
                out.append(self.by_bytes[piece])
        return out

    def byte_ids(self, data: bytes) -> list[int]:
        return [self.by_bytes[bytes([b])] for b in data]

    def walk(self, schema: dict[str, Any] | str, ids: list[int],
             cross_check: bool = True) -> tuple[int | str, int]:
        """(VALID | OPEN | index of the first token refused, position after
        the tokens accepted)."""
        from gguf_hooks import ADIL_OK

        grammar = self.grammar(schema)
        status, bad, message = grammar_check(self.hooks, grammar, ids, cross_check)
        assert status == ADIL_OK or "not allowed" in message, message  # no mask disagreement
        position = grammar_position(self.hooks, grammar, ids[:bad])
        if status != ADIL_OK:
            return bad, position
        return (OPEN if position == 0 else VALID), position

    def close(self) -> None:
        self._keep.clear()
        self.model.close()
        self.engine.close()


@pytest.fixture(scope="module")
def json_model_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_json_vocab_model(tmp_path_factory.mktemp("json-vocab") / "json-vocab.gguf")


@pytest.fixture(scope="module")
def vocab(json_model_path: Path) -> Iterator[Vocab]:
    v = Vocab(json_model_path)
    yield v
    v.close()


@pytest.mark.parametrize("case", BYTE_CASES, ids=case_id)
def test_bytes(vocab: Vocab, case: tuple[str, dict[str, Any], bytes, str | int]) -> None:
    _, schema, data, expected = case
    assert vocab.walk(schema, vocab.byte_ids(data))[0] == expected


# Multi-byte tokens: (schema, token pieces, VALID | OPEN | index of the token refused)
OBJ_ITEMS = {
    "type": "object",
    "properties": {"a": {"type": "array", "maxItems": 2,
                         "items": {"type": "object", "properties": {"name": STR},
                                   "additionalProperties": False}},
                   "b": INT},
    "required": ["a"], "additionalProperties": False,
}
TOKEN_CASES: list[tuple[str, dict[str, Any], list[bytes | str], str | int]] = [
    ("lexemes in one token", OBJ_ITEMS,
     [b'{"', b"a", b'":[', b'{"', b"name", b'":"', b"abc", b'"}', b",", b"{}", b"]", b',"', b"b",
      b'":1}'], VALID),
    ("a third item at '},{\"'", OBJ_ITEMS,
     [b'{"', b"a", b'":[', b'{"', b"name", b'":"', b'"', b'},{"', b"name", b'":"', b'"', b'},{"'],
     11),
    ("'},{\"' between items", OBJ_ITEMS,
     [b'{"', b"a", b'":[', b'{"', b"name", b'":"', b'"', b'},{"', b"name", b'":"', b'"}', b"]",
      b"}"], VALID),
    ("required key missing at '\":1}'", OBJ_ITEMS, [b'{"', b"b", b'":1}'], 2),
    ("a string where an integer goes", OBJ_ITEMS,
     [b'{"', b"a", b'":[', b"]", b',"', b"b", b'":"'], 6),
    ("a key and its value's quote", OBJ_ITEMS, [b'{"', b"a", b'":"'], 2),
    ("é in two tokens", OBJ_A, [b'{"', b"a", b'":"', b"\xc3", b'\xa9"', b"}"], VALID),
    ("€ cut after two bytes", OBJ_A, [b'{"', b"a", b'":"', b"\xe2\x82", b'\xac"}'], VALID),
    ("a quote after a cut character", OBJ_A, [b'{"', b"a", b'":"', b"\xe2\x82", b'"}'], 4),
    ("emoji from the opening quote", {"type": "string", "maxLength": 1},
     [b'"\xf0\x9f', b'\x98\x80"'], VALID),
    ("a second character past maxLength",
     {"type": "string", "maxLength": 1}, [b'"', b"\xc3\xa9", b"\xc3\xa9"], 2),
    ("no room for a cut character", {"type": "string", "maxLength": 0}, [b'"', b"\xe2\x82"], 1),
    ("continuation byte first", STR, [b'"', b'\xa9"'], 1),
    ("overlong token", STR, [b'"', b"\xc0\x80"], 1),
    ("surrogate pair in escape tokens", {"type": "string", "maxLength": 1},
     [b'"', b"\\ud83d", b"\\ude00", b'"'], VALID),
    ("pair split inside the hex", STR, [b'"', b"\\u", b"d83d", b"\\ude00", b'"'], VALID),
    ("lone high surrogate token", STR, [b'"', b"\\ud83d", b'"'], 2),
    ("low surrogate token first", STR, [b'"', b"\\ude00"], 1),
    ("escaped quote tokens", {"type": "string", "maxLength": 2}, [b'"\\', b'"', b'\\"', b'"'],
     VALID),
    ("space token", ANY, [b"{", b" ", b"}"], VALID),
    ("two-space token", ANY, [b"{", b"  "], 1),
    ("a second space token", ANY, [b"{", b" ", b" "], 2),
    ("': ' and ', ' tokens", ANY, [b'{"', b"a", b'"', b": ", b"1", b", ", b'"', b"b", b'"', b":",
                                   b"2", b"}"], VALID),
    ("newline token", ANY, [b"{", b"}\n"], 1),
    ("17-space token in a string", STR, [b'"', b" " * 17, b'"'], VALID),
    ("user-defined token in a string", STR, [b'"', "<tool_call>", b'"'], VALID),
    ("user-defined token outside", ANY, [b"{", "<tool_call>"], 1),
    ("token past the document's end", ANY, [b"{}", b"\n  "], 1),
    ("literal split", {"type": "boolean"}, [b"tr", b"u", b"e"], VALID),
    ("null for a boolean", {"type": "boolean"}, [b"nul"], 0),
    ("digits token at a bound", {"type": "integer", "maximum": 12}, [b"123"], 0),
]


@pytest.mark.parametrize("case", TOKEN_CASES, ids=case_id)
def test_tokens(vocab: Vocab,
                case: tuple[str, dict[str, Any], list[bytes | str], str | int]) -> None:
    _, schema, pieces, expected = case
    assert vocab.walk(schema, vocab.ids(list(pieces)))[0] == expected


def test_control_tokens_are_never_allowed(vocab: Vocab) -> None:
    doc = b'{"a":"x"}'
    for name in ("<|begin_of_text|>", "<|start_header_id|>", "<unused0>"):
        for at in range(len(doc) + 1):
            ids = [*vocab.byte_ids(doc[:at]), vocab.special[name]]
            assert vocab.walk(OBJ_A, ids, cross_check=False)[0] == at, (name, at)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(case=schema_and_documents())
def test_end_tokens_only_where_the_document_may_end(vocab: Vocab,
                                                      case: tuple[dict[str, Any], Any]) -> None:
    """At every step of a canonical document's tokens: the end-of-generation
    tokens are allowed exactly when the document may end there, control
    tokens never."""
    schema, doc = case
    ids = [int(t) for t in vocab.model.tokenize(canonical(doc), add_bos=False, special=False)]
    grammar = vocab.grammar(schema)
    for at in range(len(ids) + 1):
        may_end = grammar_position(vocab.hooks, grammar, ids[:at]) != 0
        for name in ("<|end_of_text|>", "<|eot_id|>"):
            status, bad, _ = grammar_check(vocab.hooks, grammar, [*ids[:at], vocab.special[name]])
            assert (status == 0) == may_end, (canonical(doc), at, name)
        status, bad, _ = grammar_check(
            vocab.hooks, grammar, [*ids[:at], vocab.special["<|start_header_id|>"]])
        assert status != 0 and bad == at


@pytest.mark.parametrize("schema", [{"const": {'a"b': 1}}, {"enum": [{'a"b': 1}, None]}])
def test_enum_and_const_objects_with_escaped_keys(vocab: Vocab, schema: dict[str, Any]) -> None:
    assert vocab.walk(schema, vocab.byte_ids(canonical({'a"b': 1}).encode()))[0] == VALID


# -- the byte cases on the stub (no hooks) -------------------------------------------------


def utf8(data: bytes) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


@pytest.mark.parametrize("case", [c for c in BYTE_CASES if utf8(c[2]) is not None], ids=case_id)
def test_bytes_on_the_stub(stub_engine: adil.Engine, tmp_path: Path,
                           case: tuple[str, dict[str, Any], bytes, str | int]) -> None:
    """The stub's grammar checks its scripted text byte by byte: a refusal
    ends the run at the byte refused, an unfinished document is refused at
    its end, a valid one gives the value."""
    _, schema, data, expected = case
    text = data.decode("utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"text": text}]}))
    model = stub_engine.load_model(script)
    try:
        done = model.complete("x", schema=schema)
    except adil.OutputValidationError as exc:
        assert expected != VALID, exc
        written = data if expected == OPEN else data[:expected]
        assert exc.text == written.decode("utf-8") and "refused" in str(exc), exc
        return
    assert expected == VALID and done.stop_reason == "end_of_text"
    assert canonical(done.value) == canonical(json.loads(text))


# -- compile errors through the ABI ----------------------------------------------------------


@pytest.fixture(scope="module", params=["cpu", "stub"])
def compiler(request: pytest.FixtureRequest, json_model_path: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[adil.Model]:
    """A model of each engine: both compile with the shared grammar library."""
    if request.param == "cpu":
        engine, path = adil.Engine.open(), json_model_path
    else:
        engine = adil.Engine.open(library=adil.STUB_LIBRARY)
        path = tmp_path_factory.mktemp("stub") / "script.json"
        path.write_text('{"turns": []}')
    with engine, engine.load_model(path) as model:
        yield model


def compile_bytes(model: adil.Model, data: bytes) -> None:
    """adil_grammar_compile on raw bytes; raises the error class of its status."""
    out = ffi.new("adil_grammar **")
    lib = model._lib
    check(lib, lib.adil_grammar_compile(model._require_open(), data, len(data), out))
    lib.adil_grammar_free(out[0])


def nested(n: int) -> bytes:
    return b'{"type":"array","items":' * n + b"{}" + b"}" * n


Bad = type[adil.AdilError]
INVALID, CAPABILITY = adil.InvalidArgumentError, adil.CapabilityError
# (schema text, error class, what the message names: a JSON Pointer or the reason)
COMPILE_ERRORS: list[tuple[bytes, Bad, str]] = [
    (b"", INVALID, "invalid JSON"),
    (b'{"type":', INVALID, "invalid JSON"),
    (b'{"type":"string"} x', INVALID, "offset 18"),
    (b'{"type":"string"}\x00', INVALID, "offset 17"),
    (b'{"description":"\xff"}', INVALID, "UTF-8"),
    (b'{"description":"\\ud800"}', INVALID, "surrogate"),
    (b"[1]", INVALID, 'at ""'),
    (b'{"$ref":"#/x"}', CAPABILITY, 'at "/$ref"'),
    (b'{"type":"object","properties":{"to":{"anyOf":[]}}}', CAPABILITY,
     'at "/properties/to/anyOf"'),
    (b'{"type":"string","pattern":"a+"}', CAPABILITY, 'at "/pattern"'),
    (b'{"type":"array","items":{"type":"string","format":"date"}}', CAPABILITY,
     'at "/items/format"'),
    (b'{"type":"object","properties":{"a/b~c":{"oneOf":[]}}}', CAPABILITY,
     'at "/properties/a~1b~0c/oneOf"'),
    (b'{"type":"object","additionalProperties":{"type":"string"}}', CAPABILITY,
     'at "/additionalProperties"'),
    (b'{"type":"object","properties":{"a":{"x-adil-tools":[]}}}', CAPABILITY,
     'at "/properties/a/x-adil-tools"'),
    (b'{"type":5}', INVALID, 'at "/type"'),
    (b'{"type":"strin"}', INVALID, 'at "/type"'),
    (b'{"type":[]}', INVALID, 'at "/type"'),
    (b'{"type":"integer","minimum":"0"}', INVALID, 'at "/minimum"'),
    (b'{"type":"integer","minimum":1' + b"0" * 400 + b"}", INVALID, 'at "/minimum"'),
    (b'{"type":"string","maxLength":-1}', INVALID, 'at "/maxLength"'),
    (b'{"type":"string","maxLength":1.5}', INVALID, 'at "/maxLength"'),
    (b'{"type":"string","maxLength":99999999999999999999}', INVALID, 'at "/maxLength"'),
    (b'{"type":"object","required":"a"}', INVALID, 'at "/required"'),
    (b'{"type":"object","required":["b"]}', CAPABILITY, 'at "/required"'),
    (b'{"type":"object","properties":[]}', INVALID, 'at "/properties"'),
    (b'{"type":"object","properties":{"a":5}}', INVALID, 'at "/properties/a"'),
    (b'{"enum":[]}', INVALID, 'at "/enum"'),
    (b'{"enum":"a"}', INVALID, 'at "/enum"'),
    (b'{"title":5}', INVALID, 'at "/title"'),
    (b'{"type":"integer","minimum":5,"maximum":1}', CAPABILITY, 'at "/maximum"'),
    (b'{"type":"integer","minimum":0.5,"maximum":0.7}', CAPABILITY, 'at "/maximum"'),
    (b'{"type":"string","minLength":3,"maxLength":1}', CAPABILITY, 'at "/maxLength"'),
    (b'{"type":"array","minItems":2,"maxItems":1}', CAPABILITY, 'at "/maxItems"'),
    (b'{"type":"array","items":{"type":"integer","minimum":1,"maximum":0}}', CAPABILITY,
     'at "/items/maximum"'),
    (b'{"type":"string","enum":[1]}', CAPABILITY, 'at "/enum"'),
    (b'{"type":"null","const":1}', CAPABILITY, 'at "/const"'),
    (b'{"const":1e400}', CAPABILITY, 'at "/const"'),
    (b'{"x-adil-tools":[]}', INVALID, 'at "/x-adil-tools"'),
    (b'{"x-adil-tools":[{"name":"a"}]}', INVALID, 'at "/x-adil-tools/0"'),
    (b'{"x-adil-tools":[{"name":"a","parameters":{}},{"name":"a","parameters":{}}]}', INVALID,
     'at "/x-adil-tools"'),
    (b'{"x-adil-tools":[{"name":"a","parameters":{"type":"object"}}],"type":"object"}', INVALID,
     'at "/type"'),
    (b'{"type":"string","x-adil-trigger":"<t>"}', INVALID, 'at "/x-adil-end"'),
    (b'{"type":"string","x-adil-trigger":"","x-adil-end":"</t>"}', INVALID,
     'at "/x-adil-trigger"'),
    (b'{"type":"string","x-adil-trigger":"' + b"x" * 65 + b'","x-adil-end":"</t>"}', INVALID,
     'at "/x-adil-trigger"'),
    (b'{"type":"object","properties":{' + b",".join(b'"p%d":{}' % i for i in range(65)) + b"}}",
     CAPABILITY, 'at "/properties"'),
    # Schema text nests at most 132 JSON levels (64 levels of schema, two each).
    (nested(132), INVALID, "nesting deeper than 132"),
    # A value nesting more containers than a document may (64) is never written.
    (b'{"const":' + b"[" * 65 + b"]" * 65 + b"}", CAPABILITY, 'at "/const"'),
]


@pytest.mark.parametrize(("text", "error", "names"), COMPILE_ERRORS,
                         ids=[t[:48].decode("utf-8", "replace") for t, _, _ in COMPILE_ERRORS])
def test_compile_errors_name_the_pointer(compiler: adil.Model, text: bytes, error: Bad,
                                         names: str) -> None:
    with pytest.raises(error) as info:
        compile_bytes(compiler, text)
    assert names in str(info.value), info.value


@pytest.mark.parametrize("text", [
    b'{"type":"array","items":{"type":"array","items":{}}}', nested(31), nested(63),
    b'{"type":"string","minLength":1000000000}', b'{"type":"integer","minimum":-0}',
    b'{"type":["integer","string"],"minimum":0.5,"maximum":0.7}',
    b'{"x-adil-trigger":"<t>","x-adil-end":"</t>","type":"string"}',
], ids=lambda t: t[:48].decode())
def test_edge_schemas_compile(compiler: adil.Model, text: bytes) -> None:
    compile_bytes(compiler, text)


@pytest.mark.parametrize("bound", [b'"minimum":9007199254740992', b'"maximum":-9007199254740992',
                                   b'"minimum":1e300', b'"maximum":-1e300'])
def test_integer_bounds_beyond_the_exact_range_are_refused(compiler: adil.Model,
                                                           bound: bytes) -> None:
    with pytest.raises((adil.CapabilityError, adil.InvalidArgumentError)):
        compile_bytes(compiler, b'{"type":"integer",' + bound + b"}")


def test_deep_and_huge_inputs_never_crash(json_model_path: Path) -> None:
    """In a child, so that a crash fails this test alone: nesting far past
    the limit, and inputs of megabytes or many entries (each either
    compiles or is refused with a reason)."""
    from child import run_child

    out = run_child(f"""
        import json
        import adil
        from adil._binding import check, ffi
        from test_grammar_edges import compile_bytes
        inputs = [
            b'{{"type":"array","items":' * 100000 + b'{{}}' + b'}}' * 100000,
            b'{{"const":' + b'[' * 1000000 + b']' * 1000000 + b'}}',
            b'[' * 1000000,
            b'{{"type":"string","description":"' + b'd' * 8000000 + b'"}}',
            b'{{"enum":[' + b','.join(b'"v%d"' % i for i in range(20000)) + b']}}',
            b'{{"enum":[' + b','.join(b'%d.5' % i for i in range(20000)) + b']}}',
            b'{{"type":"object","properties":{{' + b','.join(
                b'"p%d":{{"type":"integer"}}' % i for i in range(100000)) + b'}}}}',
            b'{{"type":"string","maxLength":4294967296}}',
        ]
        results = []
        for engine in (adil.Engine.open(), adil.Engine.open(library=adil.STUB_LIBRARY)):
            path = {str(json_model_path)!r}
            if engine.info.engine_name != "adil-cpu":
                import os, tempfile
                fd, path = tempfile.mkstemp(suffix=".json")
                os.write(fd, b'{{"turns": []}}')
                os.close(fd)
            model = engine.load_model(path)
            for data in inputs:
                try:
                    compile_bytes(model, data)
                    results.append("ok")
                except (adil.InvalidArgumentError, adil.CapabilityError) as exc:
                    results.append(type(exc).__name__ + ": " + str(exc)[:200])
        print(json.dumps(results))
    """, timeout=300)
    results = json.loads(out.strip().splitlines()[-1])
    assert len(results) == 16
    for result in results:
        assert result == "ok" or 'at "' in result or "invalid JSON" in result, result
    assert all("nesting deeper than 132" in r for r in results[0:3] + results[8:11]), results



KEYS = ("type", "properties", "required", "additionalProperties", "items", "enum", "const",
        "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "description",
        "title", "$ref", "anyOf", "pattern", "x-adil-tools", "x-adil-trigger", "x-adil-end",
        "name", "parameters", "a", "")
JUNK = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 2**60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["object", "array", "string", "integer", "number", "boolean", "null", "a"])
    | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.sampled_from(KEYS), children, max_size=4),
    max_leaves=14)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(schema=st.dictionaries(st.sampled_from(KEYS), JUNK, max_size=5))
def test_random_schemas_compile_or_are_refused_with_a_pointer(compiler: adil.Model,
                                                             schema: dict[str, Any]) -> None:
    """Any JSON object: compiled, or refused with the JSON Pointer of the
    keyword at fault; a schema the SDK accepts is never refused as invalid
    (only as unsatisfiable)."""
    from adil.tools.schema import check_schema

    text = json.dumps(schema, ensure_ascii=False)
    try:
        compile_bytes(compiler, text.encode())
    except adil.CapabilityError as exc:
        assert 'at "' in str(exc), exc
    except adil.InvalidArgumentError as exc:
        assert 'at "' in str(exc), exc
        try:
            check_schema(schema, root_object=False, any_value=True)
        except adil.ToolSchemaError:
            return
        raise AssertionError(
            f"the SDK accepts {text} but the compiler calls it invalid: {exc}") from None
