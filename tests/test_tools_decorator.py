"""@tool: schemas from type hints and docstrings; Tool(handler=...);
OpenAI-style dicts; effects and flags; display declarations."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal, NotRequired, Optional, TypedDict

import pytest

import adil
from adil.tools import FunctionTool, Tool, ToolContext, tool


class FakeSignal:
    def __init__(self, value: bool = False) -> None:
        self.value = value

    def cancelled(self) -> bool:
        return self.value


def ctx_for(name: str = "t", confirmed_by: str | None = None) -> ToolContext:
    return ToolContext(tool=name, call_id="call_1", cancel=FakeSignal(), confirmed_by=confirmed_by)


class Address(TypedDict):
    street: str
    zip: NotRequired[int]


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


try:
    import pydantic
except ImportError:  # pragma: no cover - pydantic is optional
    pydantic = None  # type: ignore[assignment]
else:
    class Mail(pydantic.BaseModel):
        to: str = pydantic.Field(description="Recipient address.")
        cc: list[str] = []
        priority: int | None = None


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


def test_scalars_optional_literal_list_and_docstring() -> None:
    @tool(effect="read_only")
    def search(
        query: str,
        limit: int,
        ratio: float,
        exact: bool,
        mode: Literal["fast", "deep"] = "fast",
        lang: Optional[str] = None,  # noqa: UP045 - the typing form is what we test
        tags: list[str] | None = None,
        nothing: None = None,
    ) -> list[str]:
        """Searches the index.

        Longer explanation that continues
        on a second line.

        Args:
            query: What to look for.
            limit: How many results,
                at most.
            mode: Search mode.

        Returns:
            Matching titles.
        """
        return [query]

    assert isinstance(search, FunctionTool)
    assert search.name == "search"
    assert search.description == (
        "Searches the index. Longer explanation that continues on a second line.")
    assert search.parameters == {
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "What to look for."},
            "limit": {"type": "integer", "description": "How many results, at most."},
            "ratio": {"type": "number"},
            "exact": {"type": "boolean"},
            "mode": {"type": "string", "enum": ["fast", "deep"], "description": "Search mode."},
            "lang": {"type": ["string", "null"]},
            "tags": {"type": ["array", "null"], "items": {"type": "string"}},
            "nothing": {"type": "null"},
        },
        "required": ["query", "limit", "ratio", "exact"],
        "additionalProperties": False,
    }
    assert search("x", 1, 0.5, True) == ["x"]  # still callable like the function


def test_sphinx_and_numpy_docstrings() -> None:
    @tool(effect="read_only")
    def a(city: str) -> None:
        """Weather.

        :param city: The city name.
        :returns: nothing
        """

    @tool(effect="read_only")
    def b(city: str) -> None:
        """Weather.

        Parameters
        ----------
        city : str
            The city name.
        """

    for t in (a, b):
        assert t.description == "Weather."
        assert t.parameters["properties"]["city"]["description"] == "The city name."


def test_typed_dict_dataclass_enum_annotated_and_conversion() -> None:
    seen: dict[str, Any] = {}

    @tool(effect="read_only", name="place")
    def place(
        address: Address,
        where: Point,
        color: Color,
        points: list[Point],
        note: Annotated[str, "A short note."] = "",
        ctx: ToolContext | None = None,
    ) -> str:
        seen.update(address=address, where=where, color=color, points=points, note=note, ctx=ctx)
        return "ok"

    props = place.parameters["properties"]
    assert props["address"] == {
        "type": "object",
        "properties": {"street": {"type": "string"}, "zip": {"type": "integer"}},
        "required": ["street"], "additionalProperties": False,
    }
    assert props["where"] == {
        "type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x"], "additionalProperties": False,
    }
    assert props["color"] == {"type": "string", "enum": ["red", "blue"]}
    assert props["points"]["items"] == props["where"]
    assert props["note"] == {"type": "string", "description": "A short note."}
    assert "ctx" not in props
    arguments = place.parse_arguments(
        '{"address": {"street": "Main"}, "where": {"x": 1}, "color": "blue",'
        ' "points": [{"x": 2, "y": 3.5}]}')
    ctx = ctx_for("place")
    assert place.invoke(arguments, ctx) == "ok"
    assert seen["address"] == {"street": "Main"}
    assert seen["where"] == Point(1.0, 0.0) and isinstance(seen["where"].x, float)
    assert seen["color"] is Color.BLUE
    assert seen["points"] == [Point(2.0, 3.5)]
    assert seen["note"] == "" and seen["ctx"] is ctx


def test_ctx_by_annotation_under_another_name() -> None:
    got: list[ToolContext] = []

    @tool(effect="read_only")
    def f(x: int, context: ToolContext) -> int:
        got.append(context)
        return x

    assert list(f.parameters["properties"]) == ["x"]
    ctx = ctx_for("f", confirmed_by="alice")
    assert f.invoke({"x": 2}, ctx) == 2 and got == [ctx]
    assert got[0].confirmed_by == "alice" and not got[0].cancelled()


def test_pydantic_models() -> None:
    if pydantic is None:
        pytest.skip("pydantic is not installed")
    received: list[Any] = []

    @tool(effect="state_changing", sends_out=True, confirmation_required=True)
    def send(mail: Mail) -> None:
        received.append(mail)

    assert send.parameters["properties"]["mail"] == {
        "type": "object",
        "properties": {
            "to": {"type": "string", "description": "Recipient address."},
            "cc": {"type": "array", "items": {"type": "string"}},
            "priority": {"type": ["integer", "null"]},
        },
        "required": ["to"], "additionalProperties": False,
    }
    send.invoke(send.parse_arguments('{"mail": {"to": "a@b"}}'), ctx_for("send"))
    assert isinstance(received[0], Mail) and received[0].to == "a@b"


@pytest.mark.parametrize(("hint", "pointer"), [
    (dict, "/properties/x"),
    (dict[str, int], "/properties/x"),
    (tuple[int, int], "/properties/x"),
    (int | Point, "/properties/x"),
    (list, "/properties/x"),
    (Any, "/properties/x"),
    (list[dict[str, int]], "/properties/x/items"),
])
def test_hints_outside_the_subset_are_refused_with_a_location(hint: Any, pointer: str) -> None:
    def f(x: Any) -> None: ...

    f.__annotations__["x"] = hint
    with pytest.raises(adil.ToolSchemaError) as info:
        tool(effect="read_only")(f)
    assert info.value.location == pointer


def test_recursive_dataclass_is_refused() -> None:
    @dataclasses.dataclass
    class Node:
        child: Optional[Node] = None  # noqa: UP045

    def f(node: Node) -> None: ...

    f.__annotations__["node"] = Node
    Node.__annotations__["child"] = Optional[Node]  # noqa: UP045
    with pytest.raises(adil.ToolSchemaError, match="recursive"):
        tool(effect="read_only")(f)


def test_missing_hint_and_var_args_are_refused() -> None:
    with pytest.raises(adil.ToolSchemaError) as info:
        @tool(effect="read_only")
        def f(x) -> None: ...  # type: ignore[no-untyped-def]
    assert info.value.location == "/properties/x"
    with pytest.raises(adil.ToolSchemaError):
        @tool(effect="read_only")
        def g(*args: int) -> None: ...


def test_bare_decorator_is_state_changing_by_default() -> None:
    @tool
    def delete(path: str) -> None:
        """Deletes a file."""

    assert delete.effect == "state_changing" and delete.needs_confirmation
    assert delete.description == "Deletes a file."


def test_tool_handler_receives_arguments_dict_and_ctx() -> None:
    calls: list[tuple[dict[str, Any], ToolContext]] = []

    def handler(arguments: dict[str, Any], ctx: ToolContext) -> str:
        calls.append((arguments, ctx))
        return "done"

    t = Tool(name="x", handler=handler, effect="read_only",
             parameters={"type": "object", "properties": {"a": {"type": "integer"}},
                         "additionalProperties": False})
    ctx = ctx_for("x")
    assert t.invoke({"a": 1}, ctx) == "done"
    assert calls == [({"a": 1}, ctx)]


# -- effects and flags ---------------------------------------------------------

def _h(arguments: dict[str, Any], ctx: ToolContext) -> None:
    return None


@pytest.mark.parametrize("flag", ["reads_private_data", "sends_out"])
def test_private_or_outgoing_tools_must_be_confirmation_required(flag: str) -> None:
    flags: dict[str, Any] = {flag: True}
    with pytest.raises(adil.ToolSchemaError, match="confirmation_required"):
        Tool(name="x", handler=_h, effect="read_only", **flags)
    with pytest.raises(adil.ToolSchemaError, match="confirmation_required"):
        tool(effect="read_only", name="y", **flags)(lambda: None)
    ok = Tool(name="x", handler=_h, effect="read_only", confirmation_required=True, **flags)
    assert ok.needs_confirmation


def test_effects() -> None:
    assert not Tool(name="r", handler=_h, effect="read_only").needs_confirmation
    assert Tool(name="w", handler=_h, effect="state_changing").needs_confirmation
    assert Tool(name="c", handler=_h, effect="read_only",
                confirmation_required=True).needs_confirmation
    with pytest.raises(adil.ToolSchemaError, match="effect"):
        Tool(name="x", handler=_h, effect="harmless")  # type: ignore[arg-type]


# -- OpenAI-style dicts -----------------------------------------------------------

def test_openai_function_dicts() -> None:
    spec = {"type": "function", "function": {
        "name": "get_weather", "description": "Weather.", "strict": True,
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                       "required": ["city"], "additionalProperties": False}}}
    t = Tool.from_openai(spec, handler=_h, effect="read_only")
    assert t.name == "get_weather" and t.description == "Weather."
    assert t.to_openai() == {"type": "function", "function": {
        "name": "get_weather", "description": "Weather.", "parameters": t.parameters}}
    inner = Tool.from_openai(spec["function"], handler=_h, effect="read_only")  # type: ignore[arg-type]
    assert inner.parameters == t.parameters
    bad = {"type": "function", "function": {"name": "x", "parameters": {
        "type": "object", "properties": {"to": {"$ref": "#/x"}}}}}
    with pytest.raises(adil.ToolSchemaError) as info:
        Tool.from_openai(bad, handler=_h, effect="read_only")
    assert info.value.location == "/properties/to/$ref"


# -- display declarations -----------------------------------------------------------

def test_display_declarations() -> None:
    t = Tool(name="x", handler=_h, effect="read_only", display={
        "a": "number", "b": "integer", "c": "boolean", "d": "quoted_text",
        "e": ("enum", ["ok", "bad"]), "f": {"kind": "enum", "values": [1, 2]}})
    assert {n: s.kind for n, s in t.display.items()} == {
        "a": "number", "b": "integer", "c": "boolean", "d": "quoted_text", "e": "enum",
        "f": "enum"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"a": "html"}, "/display/a"), ({"e": "enum"}, "/display/e"),
        ({"e": ("enum", [])}, "/display/e"),
        ({"s": ("quoted_text", ["x"])}, "/display/s")]
    for bad, pointer in cases:
        with pytest.raises(adil.ToolSchemaError) as info:
            Tool(name="x", handler=_h, effect="read_only", display=bad)
        assert info.value.location == pointer
