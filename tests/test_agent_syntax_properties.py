"""Properties of reading model output: whatever a model writes, reading its
tool calls never raises, and everything the SDK would write back to the
model is Unicode text."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adil
from adil.agent.syntax import CALL_CLOSE, CALL_OPEN, error_payload, parse_calls, unicode_safe
from adil.tools import exact_number, validate

# Pieces a hostile model likes: tags, JSON punctuation, escapes (lone
# surrogates among them), deep brackets, numbers at the edges.
PIECES = st.sampled_from([
    CALL_OPEN, CALL_CLOSE, "<tool_", "<", '{"name": "t", "arguments": ', "{", "}", "[", "]",
    '"', "\\", "\\ud800", "\\udfff", "\\u0000", "\\n", ":", ",", " ", "-0", "1.0", "1e999",
    "9007199254740993", "NaN", "true", "null", '"q"', '"a"', "[" * 70, "]" * 70, "\ud800",
])
TEXT = st.lists(st.one_of(PIECES, st.text(max_size=5)), max_size=40).map("".join)


@given(TEXT)
def test_reading_any_output_never_raises_and_errors_are_unicode(text: str) -> None:
    for parsed in parse_calls(text):
        if parsed.error is not None:
            assert isinstance(parsed.error, adil.OutputValidationError)
            payload = error_payload(parsed.error.code, str(parsed.error), parsed.error.location)
            payload.encode("utf-8")
            json.loads(payload)
        else:
            assert isinstance(parsed.arguments, dict)
            json.dumps(parsed.arguments, ensure_ascii=False).encode("utf-8")
            assert parsed.name is not None
            parsed.name.encode("utf-8")


def _pair_at(text: str, i: int) -> bool:
    return "\ud800" <= text[i] <= "\udbff" and "\udc00" <= text[i + 1] <= "\udfff"


@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF,
                                      blacklist_categories=()), max_size=20)
       .filter(lambda t: not any(_pair_at(t, i) for i in range(len(t) - 1))))
def test_unicode_safe_text_always_encodes_and_keeps_json_values(text: str) -> None:
    """(A high surrogate followed by a low one is two code points in Python
    but reads back from JSON as one character: left out.)"""
    safe = unicode_safe(json.dumps({"k": text}, ensure_ascii=False))
    safe.encode("utf-8")
    assert json.loads(safe) == {"k": text}


@pytest.mark.parametrize("text", ["", "abc", "1.", ".5", "01", "+1", "1e", " 1", "0x10", "∞"])
def test_exact_number_refuses_what_is_not_a_json_number(text: str) -> None:
    with pytest.raises(adil.InvalidArgumentError):
        exact_number(text)


def test_validate_needs_a_schema_dict() -> None:
    with pytest.raises(adil.InvalidArgumentError):
        validate(1, "integer")  # type: ignore[arg-type]


def test_timeout_merged_needs_a_timeout() -> None:
    with pytest.raises(adil.InvalidArgumentError):
        adil.Timeout(total=1).merged(5)  # type: ignore[arg-type]


def test_cancel_fn_and_token_without_an_engine_token() -> None:
    class Flag:
        def cancelled(self) -> bool:
            return False

    ctx: Any = adil.ToolContext(tool="t", call_id="c", cancel=Flag())
    with pytest.raises(adil.CapabilityError):
        ctx.cancel_fn_and_token  # noqa: B018 - the property raises
