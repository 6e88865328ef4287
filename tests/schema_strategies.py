"""Hypothesis strategies for the grammar tests: random schemas of the SDK's
subset (src/adil/tools/schema.py) and, for each, valid documents.

Documents are plain Python values whose canonical text
(``canonical(doc)``: json.dumps compact, ensure_ascii=False) is in the
grammar's form (native/grammar/grammar.h): integers within ±(2^53-1),
decimals with at most 15 significant digits (counted as the grammar counts
them, trailing zeros included) written without an exponent, strings of any
Unicode text but lone surrogates, keys of additional properties written
without backslash escapes.  ``check_document`` checks a document with the
SDK's own reader and validator, so the strategies are tested too
(tests/test_grammar_properties.py).

Also: ``write_json_vocab_model``, a tiny model whose vocabulary holds
JSON-shaped tokens, for the token edge cases.
"""

from __future__ import annotations

import dataclasses
import json
import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

from adil.errors import OutputValidationError
from adil.tools.arguments import json_equal, validate
from adil.tools.strict_json import strict_loads

MAX_EXACT = 2**53 - 1
MAX_DIGITS = 15  # significant digits of a decimal the grammar accepts

# Declared property names: prefixes of each other (the key trie), the empty
# name, and names the canonical form writes with escapes.
DECLARED_NAMES = ("a", "ab", "abc", "b", "name", "", "é", "a b", "a\"b", "back\\slash", "tab\t",
                  "😀", "\u2028", "/", "x\u0001")
# Names of additional properties: no character json.dumps escapes.
EXTRA_NAMES = ("x", "xy", "a_", "abcd", "ü", "名前", "😀😀", "k v", "nämé")
# Characters that stress the string lexer: escapes, controls, every UTF-8 length.
SPECIAL_CHARS = ("\"", "\\", "/", "\n", "\t", "\r", "\b", "\f", "\x00", "\x1f", "\x7f", "é", "€",
                 "😀", "\u2028", "\ufeff", "\U0010ffff", " ", "a")
TYPES = ("object", "array", "string", "integer", "number", "boolean", "null")
TEXTS = ("a title", "say \"what\"\n", "é€😀")


def canonical(doc: Any) -> str:
    """The canonical compact text of a document."""
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def check_document(doc: Any, schema: dict[str, Any]) -> None:
    """Raises when the SDK's reader or validator refuses `doc`'s canonical
    text for `schema`, or reads it back as another value."""
    value = strict_loads(canonical(doc))
    validate(value, schema)
    assert json_equal(value, doc) and canonical(value) == canonical(doc), (doc, value)


def is_valid(doc: Any, schema: dict[str, Any]) -> bool:
    try:
        check_document(doc, schema)
    except (AssertionError, OutputValidationError):
        return False
    return True


def significant_digits(text: str) -> int:
    """Digits from the first non-zero one to the end, as the grammar counts
    them: trailing zeros too (so json.dumps's "125000000000000.0" has 16)."""
    return max(len(text.lstrip("-").replace(".", "").lstrip("0")), 1)


def exact_float(value: float) -> bool:
    """True when json.dumps writes `value` in the grammar's decimal form."""
    text = repr(value)
    return (math.isfinite(value) and "e" not in text and "n" not in text
            and abs(value) <= MAX_EXACT and significant_digits(text) <= MAX_DIGITS)


# ---- numbers -------------------------------------------------------------


def _int_range(schema: dict[str, Any]) -> tuple[int, int]:
    lo = math.ceil(Decimal(schema["minimum"])) if "minimum" in schema else -MAX_EXACT
    hi = math.floor(Decimal(schema["maximum"])) if "maximum" in schema else MAX_EXACT
    return max(lo, -MAX_EXACT), min(hi, MAX_EXACT)


def integers_in(schema: dict[str, Any]) -> st.SearchStrategy[int] | None:
    lo, hi = _int_range(schema)
    if lo > hi:
        return None
    near = st.integers(max(lo, -1000), min(hi, 1000)) if max(lo, -1000) <= min(hi, 1000) else None
    parts = [st.sampled_from(sorted({lo, hi})), st.integers(lo, hi)]
    return st.one_of(*parts, *([near, near] if near is not None else []))


def _decimals_in(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    lo = Decimal(schema["minimum"]) if "minimum" in schema else None
    hi = Decimal(schema["maximum"]) if "maximum" in schema else None
    lo = lo if lo is not None else min(hi if hi is not None else Decimal(0), Decimal(0)) - 10**6
    hi = hi if hi is not None else max(lo, Decimal(0)) + 10**6

    def fits(value: float) -> bool:
        return (exact_float(value) and ("minimum" not in schema or value >= schema["minimum"])
                and ("maximum" not in schema or value <= schema["maximum"]))

    fallback = [v for v in (float(lo), float(hi)) if fits(v)]
    ints = integers_in(schema)

    @st.composite
    def draw_decimal(draw: st.DrawFn) -> Any:
        scale = draw(st.integers(1, 6))
        k_lo, k_hi = math.ceil(lo.scaleb(scale)), math.floor(hi.scaleb(scale))
        if k_lo <= k_hi:
            value = float(Decimal(draw(st.integers(k_lo, k_hi))).scaleb(-scale))
            if fits(value):
                return value
        if fallback:  # a narrow or huge range: its bounds
            return draw(st.sampled_from(fallback))
        assert ints is not None, schema
        return draw(ints)

    specials = [st.just(v) for v in (0.0, -0.0, 0.5, -2.5, 1e-4, 123456789012.345) if fits(v)]
    return st.one_of(draw_decimal(), *specials)


def numbers_in(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    ints = integers_in(schema)
    return st.one_of(_decimals_in(schema), *([ints] if ints is not None else []))


# ---- strings and any values -------------------------------------------------

CHARS = st.one_of(st.sampled_from(SPECIAL_CHARS), st.characters(codec="utf-8"))


def strings(low: int = 0, high: int | None = None) -> st.SearchStrategy[str]:
    return st.text(CHARS, min_size=low, max_size=high if high is not None else low + 8)


_ANY_NUMBERS = numbers_in({})
_ANY_LEAVES = st.one_of(st.none(), st.booleans(), _ANY_NUMBERS, strings(0, 6))


def any_values(max_leaves: int = 6) -> st.SearchStrategy[Any]:
    """Any JSON value in the grammar's form (keys without escapes)."""
    return st.recursive(
        _ANY_LEAVES,
        lambda children: st.one_of(
            st.lists(children, max_size=3),
            st.dictionaries(st.sampled_from(EXTRA_NAMES), children, max_size=3)),
        max_leaves=max_leaves)


# ---- documents of a schema ------------------------------------------------------


def documents(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Valid documents of `schema` (a schema of this module's form: every
    branch that can hold a document gives some)."""
    for keyword in ("const", "enum"):
        if keyword in schema:
            values = [schema["const"]] if keyword == "const" else schema["enum"]
            valid = [v for v in values if is_valid(v, schema)]
            assert valid, schema
            return st.sampled_from(valid)
    if "type" not in schema:
        return any_values()
    names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    branches = [b for b in (_typed(name, schema) for name in names) if b is not None]
    assert branches, schema
    return st.one_of(*branches)


def _typed(name: str, schema: dict[str, Any]) -> st.SearchStrategy[Any] | None:
    if name == "null":
        return st.none()
    if name == "boolean":
        return st.booleans()
    if name == "integer":
        return integers_in(schema)
    if name == "number":
        return numbers_in(schema)
    if name == "string":
        return strings(schema.get("minLength", 0), schema.get("maxLength"))
    if name == "array":
        items = documents(schema["items"]) if "items" in schema else any_values(3)
        low = schema.get("minItems", 0)
        return st.lists(items, min_size=low, max_size=schema.get("maxItems", low + 3))
    return _objects(schema)


@st.composite
def _objects(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    properties: dict[str, Any] = schema.get("properties", {})
    required = schema.get("required", [])
    names = [n for n in properties if n in required or draw(st.booleans())]
    members = [(n, draw(documents(properties[n]))) for n in names]
    if schema.get("additionalProperties") is not False:
        extra = draw(st.lists(st.sampled_from([n for n in EXTRA_NAMES if n not in properties]),
                              max_size=2, unique=True))
        members += [(n, draw(any_values(3))) for n in extra]
    return dict(draw(st.permutations(members)))


def schema_and_documents(
    schema_strategy: st.SearchStrategy[dict[str, Any]] | None = None,
) -> st.SearchStrategy[tuple[dict[str, Any], Any]]:
    """(schema, one valid document of it)."""
    return (schema_strategy or schemas()).flatmap(
        lambda schema: st.tuples(st.just(schema), documents(schema)))


# ---- schemas ------------------------------------------------------------------

_BOUNDS = st.one_of(
    st.integers(-100, 100),
    st.sampled_from([0, 0.5, -0.5, 0.1, 2.5, 1.25, -7.75, 100.001, MAX_EXACT, -MAX_EXACT, 10**15,
                     0.001]),
    st.decimals(-1000, 1000, places=3, allow_nan=False).map(float),
)


@st.composite
def _number_keywords(draw: st.DrawFn, integer_only: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    lo = draw(st.none() | _BOUNDS)
    hi = draw(st.none() | _BOUNDS)
    if lo is not None and hi is not None and lo > hi:
        lo, hi = hi, lo
    if integer_only and lo is not None and hi is not None and math.ceil(lo) > math.floor(hi):
        hi = math.ceil(lo)  # an integer-only range holds an integer
    if lo is not None:
        out["minimum"] = lo
    if hi is not None:
        out["maximum"] = hi
    return out


@st.composite
def _counts(draw: st.DrawFn, low_key: str, high_key: str, most: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    low = draw(st.none() | st.integers(0, most))
    high = draw(st.none() | st.integers(low or 0, most + 1))
    if low is not None:
        out[low_key] = low
    if high is not None:
        out[high_key] = high
    return out


@st.composite
def _keywords_of(draw: st.DrawFn, name: str, depth: int, only: bool) -> dict[str, Any]:
    """The keywords of type `name` (`only`: the schema's single type)."""
    if name in ("integer", "number"):
        return draw(_number_keywords(only and name == "integer"))
    if name == "string":
        return draw(_counts("minLength", "maxLength", 5))
    if name == "array":
        out = draw(_counts("minItems", "maxItems", 3))
        if depth > 0 and draw(st.integers(0, 3)):
            out["items"] = draw(schemas(depth - 1))
        return out
    if name == "object":
        return draw(_object_keywords(depth))
    return {}


@st.composite
def _object_keywords(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    names = draw(st.lists(st.sampled_from(DECLARED_NAMES), max_size=4 if depth > 0 else 0,
                          unique=True))
    if names or draw(st.booleans()):
        out["properties"] = {n: draw(schemas(depth - 1)) for n in names}
    required = [n for n in names if draw(st.booleans())]
    if required or (names and draw(st.booleans())):
        out["required"] = required
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        out["additionalProperties"] = extra
    return out


# A keyword, its value, and the types it constrains: beside other types it is ignored.
_STRAY = (("minLength", 2, {"string"}), ("minimum", 5, {"integer", "number"}),
          ("maxItems", 0, {"array"}))


@st.composite
def _typed_schema(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    leaf = [t for t in TYPES if t not in ("object", "array")]
    pool = TYPES if depth > 0 else tuple(leaf)
    if draw(st.integers(0, 4)):
        names = [draw(st.sampled_from(pool))]
    else:
        names = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3, unique=True))
    schema: dict[str, Any] = {"type": names[0] if len(names) == 1 and draw(st.booleans())
                              else names}
    numeric = [n for n in names if n in ("integer", "number")]
    groups = [n for n in names if n not in numeric] + numeric[:1]  # one set of bounds
    for name in groups:
        schema.update(draw(_keywords_of(name, depth, names == ["integer"])))
    stray = [(key, value) for key, value, owners in _STRAY if not owners & set(names)]
    if stray and not draw(st.integers(0, 5)):
        key, value = draw(st.sampled_from(stray))
        schema[key] = value
    return schema


@st.composite
def _valued_schema(draw: st.DrawFn, depth: int) -> dict[str, Any]:
    """enum or const: values drawn from a base schema's documents, beside
    other values; the base's keywords kept or not."""
    base = draw(_typed_schema(min(depth, 1)))
    valid = draw(st.lists(documents(base), min_size=1, max_size=3))
    schema = dict(base) if draw(st.booleans()) else {}
    if draw(st.booleans()):
        schema["const"] = valid[0]
    else:
        others = draw(st.lists(any_values(3), max_size=2))
        schema["enum"] = draw(st.permutations(valid + others))
    return schema


@st.composite
def schemas(draw: st.DrawFn, depth: int = 2) -> dict[str, Any]:
    """A schema of the subset, nested at most `depth` containers deep."""
    schema = draw(st.one_of(_typed_schema(depth), _typed_schema(depth), _typed_schema(depth),
                            _valued_schema(depth), st.just({})))
    key = draw(st.sampled_from([None, "title", "description"]))
    return schema if key is None else {**schema, key: draw(st.sampled_from(TEXTS))}


# ---- a vocabulary of JSON-shaped tokens -------------------------------------------
# A tiny llama model with a byte-level BPE ("gpt2") tokenizer whose tokens
# span JSON lexemes ("},", "\":\""), end inside a UTF-8 character or begin
# with a continuation byte, hold escapes, whitespace runs and invalid UTF-8;
# plus control, end-of-generation, unused and user-defined tokens.  Random
# weights: sampling picks these tokens often.

JSON_PIECES: tuple[bytes, ...] = (
    b'},', b'":"', b'","', b'{"', b'"}', b'":', b'",', b'},{"', b'}]', b'[{"', b'"]', b'":[',
    b'":{"', b'}}', b']]', b'[]', b'{}', b',"', b'":1}', b'1,', b'1]', b'"a":', b'"name":"',
    b'true', b'false', b'null', b'nul', b'tr', b'0.', b'-0', b'.5', b'1e', b'e5', b'12', b'123',
    b'00', b'-1', b'9007199254740991', b'0.1234567890123456', b'\\u', b'\\ud83d', b'\\ude00',
    b'd83d', b'\\"', b'\\\\', b'\\n', b'"\\', b'\\/', b'\\x', b'abc', b'abc"', b'a"', b'name',
    b'  ', b' ' * 16, b' ' * 17, b'\n  ', b': ', b', ', b'\t\n', b'\xc3\xa9', b'\xa9"',
    b'\xe2\x82', b'\xac"}', b'"\xf0\x9f', b'\x98\x80"', b'\xf0\x9f\x98\x80', b'\xc0\x80',
    b'\xed\xa0\x80', b'\xf4\x90\x80\x80', b'x\x01', b'}\n', b'"}<',
)
JSON_SPECIALS = (("<|begin_of_text|>", 3), ("<|end_of_text|>", 3), ("<|eot_id|>", 3),
                 ("<|start_header_id|>", 3), ("<tool_call>", 4), ("<unused0>", 5))


def _gpt2_byte_chars() -> list[str]:
    """GPT-2's byte -> printable character map (bytes_to_unicode)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    chars = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in chars:
            chars[b] = chr(256 + extra)
            extra += 1
    return [chars[b] for b in range(256)]


def json_vocab() -> tuple[list[str], list[int], list[str]]:
    """Tokens (GPT-2 byte characters), token types and merges: the 256
    bytes, every prefix of each piece (merged from the prefix before it and
    one byte, so the tokenizer reaches them), then the specials."""
    chars = _gpt2_byte_chars()

    def spell(data: bytes) -> str:
        return "".join(chars[b] for b in data)

    tokens = list(chars)
    seen = set(tokens)
    merges = []
    for piece in JSON_PIECES:
        for end in range(2, len(piece) + 1):
            token = spell(piece[:end])
            if token not in seen:
                seen.add(token)
                tokens.append(token)
                merges.append(f"{spell(piece[:end - 1])} {chars[piece[end - 1]]}")
    types = [1] * len(tokens)
    for name, kind in JSON_SPECIALS:
        tokens.append(name)
        types.append(kind)
    return tokens, types, merges


def write_json_vocab_model(path: Path, qtype: Any = None, seed: int = 1) -> Path:
    """Writes the tiny llama model with the JSON-shaped vocabulary to `path`."""
    import gguf
    import make_tiny_models as tiny
    from gguf import GGMLQuantizationType as T

    qtype = T.Q8_0 if qtype is None else qtype
    tokens, types, merges = json_vocab()
    spec = dataclasses.replace(tiny.spec_for("llama"), n_vocab=len(tokens))
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), "llama")
    tiny._write_hparams(w, spec)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    special = {name: tokens.index(name) for name, _ in JSON_SPECIALS}
    w.add_bos_token_id(special["<|begin_of_text|>"])
    w.add_eos_token_id(special["<|end_of_text|>"])
    w.add_eot_token_id(special["<|eot_id|>"])
    w.add_add_bos_token(True)
    tiny.write_weights(w, spec, qtype, rng)
    return path


# ---- walks through the test hooks ---------------------------------------------------
# gguf_hooks' grammar wrappers point into the int32 array they are given; a
# list they convert themselves can be freed before the hook reads it, so
# these hand them an array that lives until the call returns.


def grammar_check(hooks: Any, grammar: Any, ids: Any, cross_check: bool = False
                  ) -> tuple[int, int, str]:
    held = np.ascontiguousarray(ids, dtype=np.int32)
    result: tuple[int, int, str] = hooks.grammar_check(grammar, held, cross_check)
    return result


def grammar_position(hooks: Any, grammar: Any, ids: Any) -> int:
    held = np.ascontiguousarray(ids, dtype=np.int32)
    return int(hooks.grammar_position(grammar, held))
