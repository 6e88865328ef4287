"""Structured output: ``complete(prompt, schema=...)`` with a dict, a
dataclass, a TypedDict or a pydantic model gives ``Completion.value``;
output the engine refuses, that breaks the schema or that max_tokens cuts
short raises OutputValidationError with its location and the text so far;
an engine without grammar support raises CapabilityError.  On the stub,
whose scripted text its grammar checks byte by byte."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
from collections.abc import Callable
from typing import Any, Literal, NotRequired, TypedDict

import pytest

import adil
from adil.constraints import Constraint, schema_constraint, tool_call_constraint
from adil.structured import output_schema, prefix_location

LoadScript = Callable[..., adil.Model]

PERSON = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1},
                   "age": {"type": "integer", "minimum": 0, "maximum": 150}},
    "required": ["name", "age"],
    "additionalProperties": False,
}


@dataclasses.dataclass
class Person:
    name: str
    age: int


class PersonDict(TypedDict):
    name: str
    age: int
    nickname: NotRequired[str]


def say(text: str) -> dict[str, Any]:
    return {"turns": [{"text": text}]}


# -- schemas and constraints (no engine) ------------------------------------------------


@pytest.mark.parametrize("schema", [
    {}, {"description": "anything"}, {"type": "string"}, {"type": ["integer", "null"]},
    {"enum": [1, "a", None]}, {"const": {"a": [1]}},
    {"type": "array", "items": {}, "maxItems": 3}, PERSON,
])
def test_any_root_and_any_value_are_allowed_for_structured_output(schema: dict[str, Any]) -> None:
    constraint = schema_constraint(schema)
    assert constraint.kind == "schema" and constraint.trigger is None
    assert constraint.document == schema
    assert " " not in constraint.text.replace("anything", "")  # compact


@pytest.mark.parametrize(("schema", "location"), [
    ({"type": "object", "properties": {"a": {"$ref": "#"}}}, "/properties/a/$ref"),
    ({"anyOf": [{"type": "string"}]}, "/anyOf"),
    ({"properties": {"a": {"type": "string"}}}, "/properties"),  # properties need a type
    ({"type": "array", "items": {"minimum": 1}}, "/items/minimum"),
    ({"type": "string", "minLength": 3, "maxLength": 2}, "/maxLength"),
    ({"type": "integer", "maximum": 2**60}, "/maximum"),
    ({"type": "strin"}, "/type"),
])
def test_schemas_outside_the_subset_are_refused_with_the_location(
    schema: dict[str, Any], location: str
) -> None:
    with pytest.raises(adil.ToolSchemaError) as info:
        output_schema(schema)
    assert info.value.location == location


def test_tool_parameters_still_need_a_type() -> None:
    with pytest.raises(adil.ToolSchemaError) as info:
        adil.Tool(name="t", handler=lambda a, c: None, effect="read_only",
                  parameters={"type": "object", "properties": {"a": {}},
                              "additionalProperties": False})
    assert info.value.location == "/properties/a"


def test_types_give_their_schemas() -> None:
    assert output_schema(Person).schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"], "additionalProperties": False}
    typed = output_schema(PersonDict).schema
    assert typed["required"] == ["name", "age"] and "nickname" in typed["properties"]
    assert output_schema(list[int]).schema == {"type": "array", "items": {"type": "integer"}}
    assert output_schema(Literal["a", "b"]).schema == {"type": "string", "enum": ["a", "b"]}
    with pytest.raises(adil.ToolSchemaError):
        output_schema(dict)
    for bad in ("{}", 3, [PERSON], None.__class__()):
        with pytest.raises(adil.InvalidArgumentError):
            output_schema(bad)


def test_the_schema_is_copied() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    read = output_schema(schema)
    schema["properties"]["a"]["type"] = "integer"
    assert read.read('{"a":"x"}') == {"a": "x"}


def test_reading_uses_the_strict_reader_and_the_validator() -> None:
    read = output_schema(PERSON)
    assert read.read('{"name":"Ada","age":36}') == {"name": "Ada", "age": 36}
    cases = {
        '{"name":"Ada","age":36,"x":1}': "/x",
        '{"name":"Ada","age":1.5}': "/age",
        '{"name":"Ada","age":151}': "/age",
        '{"name":"","age":1}': "/name",
        '{"name":"Ada","name":"Bob","age":1}': "/name",  # duplicate key
        '{"name":"Ada"}': "/age",
        '{"name":"Ada","age":9007199254740993}': "/age",  # the exact-number rule
    }
    for text, location in cases.items():
        with pytest.raises(adil.OutputValidationError) as info:
            read.read(text)
        assert info.value.location == location, text
        assert info.value.text == text
    with pytest.raises(adil.OutputValidationError) as info:
        read.read('{"name":"Ada","age":')
    assert info.value.location is None and "invalid JSON" in str(info.value)


def test_values_convert_to_the_type() -> None:
    assert output_schema(Person).read('{"name":"Ada","age":36}') == Person("Ada", 36)
    value = output_schema(PersonDict).read('{"age":36,"name":"Ada"}')
    assert type(value) is dict and value == {"age": 36, "name": "Ada"}

    @dataclasses.dataclass
    class Checked:
        n: int

        def __post_init__(self) -> None:
            if self.n % 2:
                raise ValueError("n must be even")

    with pytest.raises(adil.OutputValidationError) as info:
        output_schema(Checked).read('{"n":3}')
    assert "n must be even" in str(info.value) and info.value.location == ""


@pytest.mark.parametrize(("text", "location"), [
    ("", ""), ("{", ""), ('{"na', ""), ('{"name"', ""), ('{"name":', "/name"),
    ('{"name":"Al', "/name"), ('{"a":1,', ""), ('{"a":[1,', "/a/1"), ('{"a":[', "/a/0"),
    ('{"a":{"b":"x\\"}', "/a/b"), ('{"a":{"b":1},"c":', "/c"), ('[{"x/y~":', "/0/x~1y~0"),
    ('{"a":"}]","b":[', "/b/0"), ('{"\\u00e9":', "/\u00e9"), ('{"a":"x"', ""),
    ('{"a":[1,"x"', "/a"), ('{"a":[1]', ""), ('{"a":12', "/a"), ('{ "a" : [ {} ', "/a"),
    ('[[],', "/1"),
])
def test_prefix_location(text: str, location: str) -> None:
    assert prefix_location(text) == location


def test_tool_call_constraints() -> None:
    tools = [adil.Tool(name=n, handler=lambda a, c: None, effect="read_only") for n in "ab"]
    forced = tool_call_constraint(tools[:1])
    assert forced.kind == "tool_call" and forced.document == {
        "x-adil-tools": [{"name": "a", "parameters": dict(tools[0].parameters)}]}
    lazy = tool_call_constraint(tools, lazy=True)
    assert lazy.trigger == "<tool_call>" and lazy.document["x-adil-end"] == "</tool_call>"
    assert [t["name"] for t in lazy.document["x-adil-tools"]] == ["a", "b"]
    with pytest.raises(adil.InvalidArgumentError):
        tool_call_constraint([])
    with pytest.raises(adil.InvalidArgumentError):
        tool_call_constraint([{"name": "a"}])  # type: ignore[list-item]
    raw = Constraint.raw({"x-adil-tools": [], "x-adil-trigger": "<t>"})
    assert raw.kind == "raw" and raw.trigger == "<t>"


# -- on the stub ----------------------------------------------------------------------


def test_dict_schema_gives_the_value(stub_model: LoadScript) -> None:
    model = stub_model(say('{"name":"Ada","age":36}'))
    done = model.complete("Describe a person:", schema=PERSON)
    assert done.value == {"name": "Ada", "age": 36}
    assert done.text == '{"name":"Ada","age":36}' and done.stop_reason == "end_of_text"
    assert json.loads(done.text) == done.value


@pytest.mark.parametrize(("schema", "expected"), [
    (Person, Person("Ada", 36)),
    (PersonDict, {"name": "Ada", "age": 36}),
])
def test_type_schemas_give_instances(stub_model: LoadScript, schema: Any, expected: Any) -> None:
    model = stub_model(say('{"name":"Ada","age":36}'))
    done = model.complete("x", schema=schema)
    assert done.value == expected and type(done.value) is type(expected)


@pytest.mark.skipif(importlib.util.find_spec("pydantic") is None, reason="pydantic not installed")
def test_pydantic_model_schema(stub_model: LoadScript) -> None:
    import pydantic

    class Pet(pydantic.BaseModel):
        name: str
        legs: int = 4

    model = stub_model(say('{"name":"Rex"}'))
    done = model.complete("x", schema=Pet)
    assert isinstance(done.value, Pet) and done.value == Pet(name="Rex", legs=4)


@pytest.mark.parametrize(("schema", "text", "value"), [
    ({}, '[1,{"a":null}]', [1, {"a": None}]),
    ({"type": "string"}, '"h\\u00e9"', "h\u00e9"),
    ({"type": "boolean"}, "true", True),
    ({"type": "array", "items": {"type": "number"}}, "[0.5,2]", [0.5, 2]),
])
def test_any_root(stub_model: LoadScript, schema: dict[str, Any], text: str, value: Any) -> None:
    done = stub_model(say(text)).complete("x", schema=schema)
    assert done.value == value


def test_streaming_exposes_the_value_after_the_end(stub_model: LoadScript) -> None:
    model = stub_model(say('{"name":"Ada","age":36}'))
    with model.generate("x", schema=Person) as generation:
        with pytest.raises(adil.InvalidArgumentError):
            _ = generation.value  # not known yet
        text = "".join(piece.text for piece in generation)
    assert text == '{"name":"Ada","age":36}' and generation.value == Person("Ada", 36)
    plain = stub_model(say("hi")).generate("x")
    assert plain.value is None and "".join(p.text for p in plain) == "hi"
    assert plain.value is None


def test_a_script_that_breaks_the_grammar_is_refused_at_the_byte(stub_model: LoadScript) -> None:
    model = stub_model(say('{"name":"Ada","age":"old"}'))
    with pytest.raises(adil.OutputValidationError) as info:
        model.complete("x", schema=PERSON)
    error = info.value
    assert error.code == "output_validation_failed"
    assert error.location == "/age"
    assert error.text == '{"name":"Ada","age":'  # the bytes before the refused one
    assert "refused" in str(error)


def test_an_unknown_key_is_refused(stub_model: LoadScript) -> None:
    model = stub_model(say('{"name":"Ada","job":"x"}'))
    with pytest.raises(adil.OutputValidationError) as info:
        model.complete("x", schema=PERSON)
    assert info.value.location == "" and info.value.text is not None
    assert info.value.text.startswith('{"name":"Ada",')


def test_truncation_by_max_tokens(stub_model: LoadScript) -> None:
    model = stub_model(say('{"name":"Ada","age":36}'))
    with pytest.raises(adil.OutputValidationError) as info:
        model.complete("x", schema=PERSON, max_tokens=10)
    error = info.value
    assert "truncated" in str(error) and error.text == '{"name":"A'
    assert error.location == "/name"


def test_the_model_stays_usable_after_a_refusal(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "nope"}, {"text": "{\"name\":\"Ada\",\"age\":1}"}]})
    with pytest.raises(adil.OutputValidationError):
        model.complete("x", schema=PERSON)
    assert model.complete("x", schema=Person).value == Person("Ada", 1)


def test_schema_errors_come_before_the_engine(stub_model: LoadScript) -> None:
    model = stub_model(say("{}"))
    with pytest.raises(adil.ToolSchemaError) as info:
        model.complete("x", schema={"type": "object", "patternProperties": {}})
    assert info.value.location == "/patternProperties"
    with pytest.raises(adil.InvalidArgumentError):
        model.complete("x", schema=PERSON, constraint=schema_constraint(PERSON))
    with pytest.raises(adil.InvalidArgumentError):
        model.complete("x", constraint={"type": "object"})  # type: ignore[arg-type]
    assert model.complete("x", schema={}).value == {}  # the turn was not consumed


def test_stats_count_the_grammar(stub_model: LoadScript) -> None:
    done = stub_model(say('{"name":"Ada","age":36}')).complete("x", schema=PERSON)
    assert done.stats.n_generated == len(done.tokens)
    assert done.stats.forced_tokens >= 0 and done.stats.grammar_ms >= 0


def test_an_engine_without_grammar_raises_capability_error(
    stub_model: LoadScript, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = stub_model(say('{"name":"Ada","age":36}'))
    info = dataclasses.replace(model.engine.info, capabilities=())
    monkeypatch.setattr(model.engine, "info", info)
    for schema in (PERSON, Person, {}):
        with pytest.raises(adil.CapabilityError) as error:
            model.complete("x", schema=schema)
        assert error.value.code == "unsupported_capability"
    with pytest.raises(adil.CapabilityError):
        model.complete("x", constraint=schema_constraint({}))
    assert model.complete("x").text == '{"name":"Ada","age":36}'  # nothing was consumed


def test_a_2_0_engine_has_no_grammar(variant_libraries: dict[str, str],
                                     write_script: Callable[..., str]) -> None:
    engine = adil.Engine.open(library=variant_libraries["abi2_0"])
    assert "grammar" not in engine.info.capabilities
    model = engine.load_model(write_script(say("{}")))
    with pytest.raises(adil.CapabilityError):
        model.complete("x", schema={})
