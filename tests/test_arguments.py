"""Strict tool arguments: duplicate keys, invented fields, types, enum/const,
bounds, lengths, and the exact-number rule; unit tests and properties."""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adil
from adil.tools import MAX_EXACT, Tool, ToolContext, exact_number, strict_loads


def _h(arguments: dict[str, Any], ctx: ToolContext) -> None:
    return None


SCHEMA = {
    "type": "object",
    "properties": {
        "to": {"type": "string", "minLength": 3, "maxLength": 8},
        "count": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number", "minimum": -1.5, "maximum": 1.5},
        "mode": {"enum": ["a", "b", 3]},
        "version": {"const": 2},
        "flag": {"type": "boolean"},
        "maybe": {"type": ["string", "null"]},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2,
                 "items": {"type": "object", "properties": {"k": {"type": "integer"}},
                           "required": ["k"], "additionalProperties": False}},
        "id": {"type": "integer"},
        "x": {"type": "number"},
    },
    "required": ["to"],
    "additionalProperties": False,
}
TOOL = Tool(name="t", handler=_h, effect="read_only", parameters=SCHEMA)


def refused(text: str | bytes) -> adil.OutputValidationError:
    with pytest.raises(adil.OutputValidationError) as info:
        TOOL.parse_arguments(text)
    assert info.value.code == "output_validation_failed"
    return info.value


def test_valid_arguments() -> None:
    text = ('{"to": "abc", "count": 10, "ratio": -1.5, "mode": 3, "version": 2.0, "flag": false,'
            ' "maybe": null, "tags": [{"k": 1}], "id": 9007199254740991, "x": 0.1}')
    assert TOOL.parse_arguments(text) == {
        "to": "abc", "count": 10, "ratio": -1.5, "mode": 3, "version": 2.0, "flag": False,
        "maybe": None, "tags": [{"k": 1}], "id": MAX_EXACT, "x": 0.1}
    assert TOOL.parse_arguments(text.encode()) == TOOL.parse_arguments(text)


@pytest.mark.parametrize(("text", "location"), [
    ('{"to": "abc", "to": "abd"}', "/to"),
    ('{"to": "abc", "tags": [{"k": 1, "k": 2}]}', "/tags/0/k"),
    ('{"to": "abc", "invented": 1}', "/invented"),
    ('{"to": "abc", "tags": [{"k": 1, "v": 2}]}', "/tags/0/v"),
    ('{"count": 1}', "/to"),
    ('{"to": "abc", "tags": [{}]}', "/tags/0/k"),
    ('{"to": 5}', "/to"),
    ('{"to": "ab"}', "/to"),
    ('{"to": "abcdefghi"}', "/to"),
    ('{"to": "abc", "count": 0}', "/count"),
    ('{"to": "abc", "count": 11}', "/count"),
    ('{"to": "abc", "count": 2.0}', "/count"),
    ('{"to": "abc", "count": true}', "/count"),
    ('{"to": "abc", "ratio": 1.6}', "/ratio"),
    ('{"to": "abc", "ratio": "1"}', "/ratio"),
    ('{"to": "abc", "mode": "c"}', "/mode"),
    ('{"to": "abc", "mode": 3.5}', "/mode"),
    ('{"to": "abc", "version": 3}', "/version"),
    ('{"to": "abc", "version": true}', "/version"),
    ('{"to": "abc", "flag": 1}', "/flag"),
    ('{"to": "abc", "maybe": 1}', "/maybe"),
    ('{"to": "abc", "tags": []}', "/tags"),
    ('{"to": "abc", "tags": [{"k": 1}, {"k": 2}, {"k": 3}]}', "/tags"),
    ('{"to": "abc", "tags": [{"k": "1"}]}', "/tags/0/k"),
    ('{"to": "abc", "id": 9007199254740992}', "/id"),
    ('{"to": "abc", "id": -9007199254740992}', "/id"),
    ('{"to": "abc", "id": 123456789012345678901234567890}', "/id"),
    ('{"to": "abc", "x": 0.10000000000000001}', "/x"),
    ('{"to": "abc", "x": 1e400}', "/x"),
    ('{"to": "abc", "x": 1e-400}', "/x"),
    ('{"to": "abc", "x": 9007199254740993.0}', "/x"),
    ('{"to": "abc", "x": NaN}', "/x"),
    ('{"to": "abc", "x": Infinity}', "/x"),
    ('{"to": "abc", "x": -Infinity}', "/x"),
    ('{"to": "\\ud800bc"}', "/to"),
    ('{"\\udc00": 1}', ""),  # a key that is not Unicode: its object (locations are Unicode)
    ('{"a": {"\\udc00": 1}}', "/a"),
    ('{"a/b": 1, "a/b": 2}', "/a~1b"),
])
def test_refusals_name_the_location(text: str, location: str) -> None:
    assert refused(text).location == location


@pytest.mark.parametrize("text", [
    '', '{', '{"to": "abc"} x', "{'to': 'abc'}", '{"to": "abc",}', '[1]', '"abc"', b'\xff',
])
def test_not_a_json_object(text: str | bytes) -> None:
    error = refused(text)
    assert error.location in (None, "")


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("42", 42), ("9007199254740991", MAX_EXACT),
    ("-9007199254740991", -MAX_EXACT), ("0.1", 0.1), ("2.50", 2.5), ("1e5", 1e5),
    ("1E5", 1e5), ("-0.0", -0.0), ("5e-324", 5e-324), ("0.30000000000000004", 0.1 + 0.2),
    ("2.2250738585072014e-308", 2.2250738585072014e-308), ("9007199254740991.0", 2.0**53 - 1),
])
def test_exact_numbers(text: str, value: float) -> None:
    got = exact_number(text)
    assert got == value and type(got) is type(value)
    assert math.copysign(1, got) == math.copysign(1, value)  # -0.0 keeps its sign


def test_minus_zero_is_refused_as_an_integer_and_kept_as_a_float() -> None:
    """The integer 0 has no sign: "-0" would not print back the same."""
    with pytest.raises(ValueError, match="write 0, or -0.0"):
        exact_number("-0")
    error = refused('{"to": "abc", "count": -0}')
    assert error.location == "/count" and "no sign" in str(error)
    value = TOOL.parse_arguments('{"to": "abc", "x": -0.0}')["x"]
    assert value == 0 and math.copysign(1, value) == -1


@pytest.mark.parametrize("text", ["1.0", "1e0", "1E1", "10.00", "-3.0"])
def test_an_integer_parameter_refuses_a_number_written_as_a_float(text: str) -> None:
    """JSON Schema counts 1.0 as an integer; here a float text stays a float
    (handing the tool int 1 would not print back as "1.0"): refused, with
    the way to write it."""
    error = refused('{"to": "abc", "count": ' + text + "}")
    assert error.location == "/count"
    assert "without a decimal point or exponent" in str(error)
    number = TOOL.parse_arguments('{"to": "abc", "x": ' + text + "}")["x"]
    assert type(number) is float  # a number parameter takes it, as a float


@pytest.mark.parametrize("text", [
    "9007199254740992", "1e16", "0.3000000000000000444", "1.00000000000000001", "2e-400",
    "123456789.123456789", "4.9e-324", "-0",
])
def test_inexact_numbers(text: str) -> None:
    with pytest.raises(ValueError):
        exact_number(text)


# -- properties ----------------------------------------------------------------

@given(st.integers(min_value=-MAX_EXACT, max_value=MAX_EXACT))
def test_every_integer_in_range_is_accepted_exactly(n: int) -> None:
    assert strict_loads(json.dumps({"n": n})) == {"n": n}


@given(st.one_of(st.integers(min_value=MAX_EXACT + 1), st.integers(max_value=-MAX_EXACT - 1)))
def test_every_integer_out_of_range_is_refused(n: int) -> None:
    with pytest.raises(adil.OutputValidationError) as info:
        strict_loads(json.dumps({"n": [n]}))
    assert info.value.location == "/n/0"


@given(st.floats(allow_nan=False, allow_infinity=False, min_value=-MAX_EXACT,
                 max_value=MAX_EXACT))
def test_shortest_round_trip_text_of_any_float_is_accepted(x: float) -> None:
    for text in (repr(x), json.dumps(x)):
        value = exact_number(text)
        assert value == x and math.copysign(1, value) == math.copysign(1, x)


@given(st.floats(allow_nan=False, allow_infinity=False).filter(lambda x: abs(x) > MAX_EXACT))
def test_floats_beyond_the_range_are_refused(x: float) -> None:
    with pytest.raises(ValueError):
        exact_number(repr(x))


NUMBER_TEXT = st.from_regex(
    re.compile(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,30})?([eE][-+]?[0-9]{1,3})?"), fullmatch=True)


@given(NUMBER_TEXT)
def test_accepted_texts_denote_exactly_what_the_tool_gets(text: str) -> None:
    try:
        value = exact_number(text)
    except ValueError:
        return
    assert abs(value) <= MAX_EXACT
    assert Decimal(text) == Decimal(repr(value))  # the text means the value, digit for digit
    assert exact_number(json.dumps(value)) == value  # and re-encoding it keeps it


@given(NUMBER_TEXT)
def test_texts_with_more_significant_digits_than_a_double_are_refused(text: str) -> None:
    mantissa = re.split("[eE]", text)[0].lstrip("-").replace(".", "")
    significant = mantissa.strip("0")
    if len(significant) > 17:
        with pytest.raises(ValueError):
            exact_number(text)


@given(st.dictionaries(st.text(max_size=5), st.integers(-100, 100), min_size=1, max_size=5),
       st.data())
def test_any_duplicate_key_is_refused_at_its_location(obj: dict[str, int], data: Any) -> None:
    key = data.draw(st.sampled_from(sorted(obj)))
    body = ", ".join(f"{json.dumps(k)}: {v}" for k, v in obj.items())
    text = "{" + body + f", {json.dumps(key)}: 1" + "}"
    with pytest.raises(adil.OutputValidationError) as info:
        strict_loads(text)
    expected = "/" + key.replace("~", "~0").replace("/", "~1")
    if any(0xD800 <= ord(c) <= 0xDFFF for c in "".join(obj)):
        return  # a lone surrogate in an earlier key may be reported first
    assert info.value.location == expected


ARGUMENTS = st.fixed_dictionaries(
    {"to": st.text(min_size=3, max_size=8).filter(
        lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))},
    optional={
        "count": st.integers(1, 10),
        "ratio": st.floats(-1.5, 1.5),
        "mode": st.sampled_from(["a", "b", 3]),
        "flag": st.booleans(),
        "maybe": st.one_of(st.none(), st.text(max_size=4).filter(
            lambda s: not any(0xD800 <= ord(c) <= 0xDFFF for c in s))),
        "tags": st.lists(st.fixed_dictionaries({"k": st.integers(-MAX_EXACT, MAX_EXACT)}),
                         min_size=1, max_size=2),
        "id": st.integers(-MAX_EXACT, MAX_EXACT),
        "x": st.floats(allow_nan=False, allow_infinity=False, min_value=-MAX_EXACT,
                       max_value=MAX_EXACT),
    },
)


@given(ARGUMENTS, st.booleans())
def test_valid_arguments_round_trip(arguments: dict[str, Any], ascii_only: bool) -> None:
    text = json.dumps(arguments, ensure_ascii=ascii_only)
    assert TOOL.parse_arguments(text) == arguments


PROPERTY_NAMES = frozenset(TOOL.parameters["properties"])


@given(ARGUMENTS, st.text(min_size=1, max_size=6).filter(lambda k: k not in PROPERTY_NAMES))
def test_invented_fields_are_always_refused(arguments: dict[str, Any], key: str) -> None:
    text = json.dumps({**arguments, key: 1})
    with pytest.raises(adil.OutputValidationError) as info:
        TOOL.parse_arguments(text)
    assert info.value.location == "/" + key.replace("~", "~0").replace("/", "~1")
