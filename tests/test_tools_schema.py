"""The schema subset: every keyword outside it is refused at registration,
at any depth, with the JSON Pointer of the keyword."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

import adil
from adil.tools import Tool, ToolContext, ToolSchemaWarning, check_schema


def _handler(arguments: dict[str, Any], ctx: ToolContext) -> None:
    return None


def make(parameters: dict[str, Any], **kw: Any) -> Tool:
    return Tool(name="t", handler=_handler, parameters=parameters, effect="read_only", **kw)


UNSUPPORTED = {
    "$ref": "#/$defs/x", "$defs": {}, "definitions": {}, "anyOf": [{"type": "string"}],
    "oneOf": [{"type": "string"}], "allOf": [{"type": "string"}], "not": {"type": "null"},
    "pattern": "^a", "format": "email", "default": "x", "examples": ["x"],
    "exclusiveMinimum": 0, "exclusiveMaximum": 9, "multipleOf": 2, "uniqueItems": True,
    "prefixItems": [], "contains": {"type": "string"}, "patternProperties": {},
    "propertyNames": {"type": "string"}, "minProperties": 1, "maxProperties": 2,
    "dependentRequired": {}, "dependentSchemas": {}, "if": {}, "then": {}, "else": {},
    "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "x", "$comment": "c",
    "nullable": True, "additionalItems": False, "unevaluatedProperties": False,
    "contentEncoding": "base64", "readOnly": True, "writeOnly": True, "deprecated": True,
    "strict": True,
}


def _base() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "to": {"type": "string"},
            "tags": {"type": "array", "items": {
                "type": "object", "properties": {"label": {"type": "string"}},
                "additionalProperties": False}},
            "address": {"type": "object", "properties": {"city": {"type": "string"}},
                        "additionalProperties": False},
        },
        "additionalProperties": False,
    }


# Where to put a keyword (a path of keys into _base()) and the pointer expected.
DEPTHS = [
    ((), ""),
    (("properties", "to"), "/properties/to"),
    (("properties", "tags", "items"), "/properties/tags/items"),
    (("properties", "tags", "items", "properties", "label"),
     "/properties/tags/items/properties/label"),
    (("properties", "address", "properties", "city"), "/properties/address/properties/city"),
]


@pytest.mark.parametrize("keyword", sorted(UNSUPPORTED))
@pytest.mark.parametrize(("path", "pointer"), DEPTHS)
def test_every_unsupported_keyword_is_refused_at_every_depth(
    keyword: str, path: tuple[str, ...], pointer: str
) -> None:
    schema = _base()
    node = schema
    for key in path:
        node = node[key]
    node[keyword] = copy.deepcopy(UNSUPPORTED[keyword])
    with pytest.raises(adil.ToolSchemaError) as info:
        make(schema)
    assert info.value.location == f"{pointer}/{keyword}"
    assert info.value.code == "tool_schema_invalid"


def test_ref_location_is_the_documented_example() -> None:
    schema = {"type": "object", "properties": {"to": {"$ref": "#/$defs/email"}},
              "additionalProperties": False}
    with pytest.raises(adil.ToolSchemaError) as info:
        make(schema)
    assert info.value.location == "/properties/to/$ref"


def test_pointer_escapes_slash_and_tilde_in_property_names() -> None:
    schema = {"type": "object", "properties": {"a/b~c": {"type": "string", "pattern": "x"}},
              "additionalProperties": False}
    with pytest.raises(adil.ToolSchemaError) as info:
        make(schema)
    assert info.value.location == "/properties/a~1b~0c/pattern"


def test_property_named_like_a_keyword_is_a_property_not_a_keyword() -> None:
    tool = make({"type": "object", "properties": {
        "pattern": {"type": "string"}, "$ref": {"type": "integer"}},
        "additionalProperties": False})
    assert tool.parse_arguments('{"pattern": "x", "$ref": 3}') == {"pattern": "x", "$ref": 3}


def test_additional_properties_absent_is_allowed_with_a_warning() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}}
    with pytest.warns(ToolSchemaWarning, match="additionalProperties") as record:
        tool = make(schema)
    message = str(record[0].message)
    assert "''" in message and "'/properties/a'" in message
    # invented fields pass where additionalProperties is absent
    assert tool.parse_arguments('{"a": {"x": 1}, "b": 2}') == {"a": {"x": 1}, "b": 2}


def test_additional_properties_false_gives_no_warning_and_refuses_invented_fields() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tool = make({"type": "object", "properties": {"a": {"type": "string"}},
                     "additionalProperties": False})
    with pytest.raises(adil.OutputValidationError) as info:
        tool.parse_arguments('{"a": "x", "invented": 1}')
    assert info.value.location == "/invented"


def test_additional_properties_as_a_schema_is_outside_the_subset() -> None:
    with pytest.raises(adil.ToolSchemaError) as info:
        make({"type": "object", "additionalProperties": {"type": "string"}})
    assert info.value.location == "/additionalProperties"


def prop(schema: Any) -> dict[str, Any]:
    """An object schema whose one property "a" is `schema`."""
    return {"type": "object", "properties": {"a": schema}}


@pytest.mark.parametrize(("schema", "pointer"), [
    ({"type": "objekt"}, "/type"),
    ({"type": ["string", "string"]}, "/type"),
    (prop({"type": "integer", "minimum": "0"}), "/properties/a/minimum"),
    (prop({"type": "integer", "minimum": 2**53}), "/properties/a/minimum"),
    (prop({"type": "string", "minLength": -1}), "/properties/a/minLength"),
    (prop({"type": "string", "maxLength": True}), "/properties/a/maxLength"),
    (prop({"type": "array", "minItems": 3, "maxItems": 2, "items": {"type": "string"}}),
     "/properties/a/maxItems"),
    (prop({"enum": []}), "/properties/a/enum"),
    (prop({"description": "no type"}), "/properties/a"),
    (prop(True), "/properties/a"),
    (prop({"type": "array", "items": [{"type": "string"}]}), "/properties/a/items"),
    ({"type": "object", "properties": {}, "required": ["ghost"]}, "/required/0"),
    (prop({"type": "string", "title": 3}), "/properties/a/title"),
    (prop({"enum": [float("nan")]}), "/properties/a/enum/0"),
    ({"type": "string"}, "/type"),
])
def test_malformed_values_of_supported_keywords(schema: dict[str, Any], pointer: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolSchemaWarning)
        with pytest.raises(adil.ToolSchemaError) as info:
            make(schema)
    assert info.value.location == pointer


def test_full_subset_is_accepted() -> None:
    schema = {
        "type": "object", "title": "Send", "description": "d",
        "properties": {
            "to": {"type": "string", "minLength": 3, "maxLength": 99, "description": "x"},
            "n": {"type": "integer", "minimum": -5, "maximum": 5},
            "x": {"type": ["number", "null"]},
            "kind": {"enum": ["a", "b", 1, None]},
            "v": {"const": 2},
            "flag": {"type": "boolean"},
            "list": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 3},
        },
        "required": ["to"],
        "additionalProperties": False,
    }
    assert check_schema(schema) == []
    tool = make(schema)
    assert tool.parameters == schema
    assert tool.parameters is not schema  # the tool keeps its own copy


def test_tool_names_are_checked() -> None:
    with pytest.raises(adil.ToolSchemaError):
        Tool(name="bad name", handler=_handler, effect="read_only")
    with pytest.raises(adil.ToolSchemaError):
        Tool(name="ok", handler="not callable", effect="read_only")  # type: ignore[arg-type]
