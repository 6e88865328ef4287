"""Depth bounds: schemas and arguments nest at most MAX_DEPTH (64) levels,
tool results MAX_RESULT_DEPTH (128); a schema or value that contains itself
is refused as a cycle.  Nothing here may end in RecursionError."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from nesting import deep_list

import adil
from adil.tools import (
    MAX_DEPTH,
    MAX_RESULT_DEPTH,
    Tool,
    ToolContext,
    check_schema,
    result_json,
    strict_loads,
    validate,
)


def _h(arguments: dict[str, Any], ctx: ToolContext) -> None:
    return None


def nested_schema(levels: int) -> dict[str, Any]:
    """An object schema `levels` schemas deep: the root, then arrays."""
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels - 2):
        schema = {"type": "array", "items": schema}
    return {"type": "object", "properties": {"a": schema}, "additionalProperties": False}


def nested_value(levels: int) -> str:
    """Arguments `levels` containers deep, matching nested_schema(levels)."""
    return '{"a": ' + "[" * (levels - 1) + '"x"' + "]" * (levels - 1) + "}"


def test_the_limits() -> None:
    assert (MAX_DEPTH, MAX_RESULT_DEPTH) == (64, 128)


def test_a_schema_exactly_max_depth_deep_is_accepted_with_arguments_as_deep() -> None:
    tool = Tool(name="deep", handler=_h, effect="read_only",
                parameters=nested_schema(MAX_DEPTH))
    arguments = tool.parse_arguments(nested_value(MAX_DEPTH - 1))
    assert arguments["a"]
    with pytest.raises(adil.OutputValidationError):  # one level more than the schema
        tool.parse_arguments(nested_value(MAX_DEPTH))


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 300, 5000])
def test_a_schema_deeper_than_max_depth_is_refused_where_it_passes(levels: int) -> None:
    with pytest.raises(adil.ToolSchemaError, match="nest at most 64") as caught:
        Tool(name="deep", handler=_h, effect="read_only", parameters=nested_schema(levels))
    location = caught.value.location
    assert location is not None
    assert location == "/properties/a" + "/items" * (MAX_DEPTH - 1)


def test_a_schema_that_contains_itself_is_a_cycle() -> None:
    cyclic: dict[str, Any] = {"type": "object", "additionalProperties": False}
    cyclic["properties"] = {"child": cyclic}
    with pytest.raises(adil.ToolSchemaError, match="cycle") as caught:
        Tool(name="cyclic", handler=_h, effect="read_only", parameters=cyclic)
    assert caught.value.location == "/properties/child"
    items: dict[str, Any] = {"type": "array"}
    items["items"] = items
    with pytest.raises(adil.ToolSchemaError, match="cycle"):
        check_schema(items, root_object=False)


def test_a_shared_subschema_is_not_a_cycle() -> None:
    word = {"type": "string"}
    check_schema({"type": "object", "properties": {"a": word, "b": word},
                  "additionalProperties": False})


def test_const_and_enum_values_are_bounded_and_acyclic() -> None:
    loop: list[Any] = []
    loop.append(loop)
    deep: Any = "x"
    for _ in range(1000):
        deep = [deep]
    for value, message in ((loop, "cycle"), (deep, "nest at most")):
        with pytest.raises(adil.ToolSchemaError, match=message):
            check_schema({"const": value}, root_object=False)
        with pytest.raises(adil.ToolSchemaError, match=message):
            check_schema({"enum": [value]}, root_object=False)


@pytest.mark.parametrize("levels", [MAX_DEPTH + 1, 1000, 100_000])
def test_arguments_deeper_than_max_depth_are_refused_before_they_are_read(levels: int) -> None:
    text = "[" * levels + "]" * levels
    with pytest.raises(adil.OutputValidationError, match="deeper than 64"):
        strict_loads(text)
    tool = Tool(name="t", handler=_h, effect="read_only", parameters=nested_schema(3))
    with pytest.raises(adil.OutputValidationError, match="deeper than 64"):
        tool.parse_arguments('{"a": ' + text + "}")


def test_brackets_inside_strings_do_not_count() -> None:
    text = '{"a": "' + "[{" * 1000 + '\\"' + "]}" * 1000 + '"}'
    assert strict_loads(text)["a"].startswith("[{")
    assert strict_loads("[" * MAX_DEPTH + "]" * MAX_DEPTH) == (
        strict_loads("[" * MAX_DEPTH + "]" * MAX_DEPTH))


def test_validate_is_bounded_even_on_an_unchecked_cyclic_schema() -> None:
    cyclic: dict[str, Any] = {"type": "array"}
    cyclic["items"] = cyclic
    value: list[Any] = []
    value.append(value)
    with pytest.raises(adil.OutputValidationError, match="deeper than 64"):
        validate(value, cyclic)


def test_strict_loads_takes_text() -> None:
    with pytest.raises(adil.InvalidArgumentError):
        strict_loads(12)  # type: ignore[arg-type]


# -- results ----------------------------------------------------------------------------


@dataclass
class Node:
    name: str
    children: list[Any]


def test_results_up_to_max_result_depth_are_delivered() -> None:
    assert result_json(deep_list(MAX_RESULT_DEPTH)).count("[") == MAX_RESULT_DEPTH
    assert result_json(Node("a", [Node("b", [])])) == (
        '{"name": "a", "children": [{"name": "b", "children": []}]}')
    assert result_json({1: (1, 2.5, None, True)}) == '{"1": [1, 2.5, null, true]}'


@pytest.mark.parametrize("levels", [MAX_RESULT_DEPTH + 1, 100_000])
def test_deeper_results_are_refused(levels: int) -> None:
    with pytest.raises(adil.OutputValidationError, match="deeper than 128") as caught:
        result_json({"a": deep_list(levels)})
    assert caught.value.location == "/a" + "/0" * (MAX_RESULT_DEPTH - 1)


def test_results_that_contain_themselves_or_are_not_json_are_refused() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    node = Node("a", [])
    node.children.append(node)
    cases = [(loop, "itself", "/self"), (node, "itself", "/children/0"),
             ({"x": [float("nan")]}, "not a JSON number", "/x/0"),
             ({"x": object()}, "type object", "/x"), ({(1, 2): 1}, "not JSON", "")]
    for value, message, location in cases:
        with pytest.raises(adil.OutputValidationError, match=message) as caught:
            result_json(value)
        assert caught.value.location == location
