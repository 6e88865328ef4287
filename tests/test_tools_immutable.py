"""A registered tool cannot change past its checks: read-only parameters
and display, no attribute assignment, no subclass redefinitions.  Errors
name the tool and the location; malformed input to Tool, from_openai and
@tool is refused with ToolSchemaError, never AttributeError or TypeError."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

import adil
from adil.agent import Agent
from adil.tools import Tool, ToolContext, tool


def _h(arguments: dict[str, Any], ctx: ToolContext) -> Any:
    return arguments


SCHEMA = {"type": "object",
          "properties": {"to": {"type": "string", "maxLength": 5},
                         "tags": {"type": "array", "items": {"type": "string"}}},
          "required": ["to"], "additionalProperties": False}


def sender() -> Tool:
    return Tool(name="send", handler=_h, effect="state_changing", sends_out=True,
                confirmation_required=True, parameters=SCHEMA)


def test_parameters_are_a_read_only_copy() -> None:
    schema = copy.deepcopy(SCHEMA)
    t = Tool(name="t", handler=_h, effect="read_only", parameters=schema)
    schema["properties"]["to"]["maxLength"] = 10**6  # the caller's dict: not the tool's
    assert t.parameters["properties"]["to"]["maxLength"] == 5
    changes = [
        lambda: t.parameters.__setitem__("additionalProperties", True),
        lambda: t.parameters["properties"].pop("to"),
        lambda: t.parameters["properties"]["to"].update(maxLength=10**6),
        lambda: t.parameters["required"].clear(),
        lambda: t.parameters["required"].append("tags"),
        lambda: t.parameters.setdefault("x", 1),
        lambda: t.parameters["properties"].__delitem__("to"),
    ]
    for change in changes:
        with pytest.raises(adil.InvalidArgumentError, match="read-only"):
            change()
    with pytest.raises(TypeError):  # as a mappingproxy would
        t.parameters["type"] = "array"
    assert t.parameters == SCHEMA
    with pytest.raises(adil.OutputValidationError):
        t.parse_arguments('{"to": "toolong", "extra": 1}')


def test_copies_of_parameters_are_plain_and_mutable() -> None:
    t = Tool(name="t", handler=_h, effect="read_only", parameters=SCHEMA)
    mutable = copy.deepcopy(t.parameters)
    mutable["properties"]["to"]["maxLength"] = 9
    assert type(mutable) is dict and type(mutable["required"]) is list
    assert t.spec()["parameters"] == SCHEMA and type(t.spec()["parameters"]) is dict
    assert json.loads(json.dumps(t.parameters)) == SCHEMA
    again = Tool(name="t2", handler=_h, effect="read_only", parameters=t.parameters)
    assert again.parameters == t.parameters


@pytest.mark.parametrize("attr", ["name", "description", "parameters", "effect",
                                  "reads_private_data", "sends_out", "confirmation_required",
                                  "display", "_handler"])
def test_checked_attributes_cannot_be_assigned_or_deleted(attr: str) -> None:
    t = sender()
    before = getattr(t, attr)
    with pytest.raises(adil.InvalidArgumentError, match="cannot"):
        setattr(t, attr, {"type": "object"} if attr == "parameters" else "read_only")
    with pytest.raises(adil.InvalidArgumentError, match="cannot"):
        delattr(t, attr)
    assert getattr(t, attr) is before


def test_a_changed_tool_cannot_skip_confirmation() -> None:
    t = sender()
    with pytest.raises(adil.InvalidArgumentError):
        t.effect = "read_only"
    with pytest.raises(adil.InvalidArgumentError):
        t.confirmation_required = False
    with pytest.raises(adil.InvalidArgumentError):
        t.needs_confirmation = False  # type: ignore[misc]
    assert t.needs_confirmation


def test_display_is_read_only() -> None:
    t = Tool(name="t", handler=_h, effect="read_only", display={"n": "number"})
    with pytest.raises(TypeError):
        t.display["secret"] = t.display["n"]  # type: ignore[index]
    assert list(t.display) == ["n"]


def test_a_subclass_may_not_redefine_what_tool_checks() -> None:
    with pytest.raises(adil.ToolSchemaError, match="needs_confirmation"):
        class Sneaky(Tool):
            @property
            def needs_confirmation(self) -> bool:
                return False

    with pytest.raises(adil.ToolSchemaError, match="effect"):
        class AlsoSneaky(Tool):
            effect = "read_only"  # type: ignore[assignment]

    class Fine(Tool):
        extra = 1

    assert Fine(name="f", handler=_h, effect="read_only").extra == 1


def test_the_decorated_function_stays_callable() -> None:
    @tool(effect="read_only")
    def add(a: int, b: int) -> int:
        """Adds."""
        return a + b

    assert add(1, 2) == 3 and add.__doc__ == "Adds."
    with pytest.raises(adil.InvalidArgumentError):
        add.name = "sub"


# -- errors name the tool and the location ------------------------------------------------


def test_schema_errors_name_the_tool_and_the_location() -> None:
    with pytest.raises(adil.ToolSchemaError) as caught:
        Tool(name="send_email", handler=_h, effect="read_only",
             parameters={"type": "object", "properties": {"to": {"$ref": "#/x"}}})
    assert caught.value.location == "/properties/to/$ref"
    assert str(caught.value).startswith("tool 'send_email' at /properties/to/$ref: ")
    with pytest.raises(adil.ToolSchemaError) as caught:
        Tool(name="t", handler=_h, effect="read_only", parameters={"type": "array"})
    assert "tool 't' at /type" in str(caught.value)
    with pytest.raises(adil.ToolSchemaError, match="^tool 'w' at /display/x: "):
        Tool(name="w", handler=_h, effect="read_only", display={"x": "html"})
    with pytest.raises(adil.ToolSchemaError, match="^tool 'm': registered sends_out"):
        Tool(name="m", handler=_h, sends_out=True)


def test_decorator_errors_name_the_tool_and_the_location() -> None:
    with pytest.raises(adil.ToolSchemaError) as caught:
        @tool(effect="read_only")
        def lookup(q: set[str]) -> None:
            """Looks up."""

    assert caught.value.location == "/properties/q"
    assert str(caught.value).startswith("tool 'lookup' at /properties/q: ")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"description": 5}, "description must be a string"),
    ({"description": "\ud800"}, "lone surrogate"),
    ({"parameters": [1, 2]}, "parameters must be a JSON-schema dict"),
    ({"parameters": "object"}, "parameters must be a JSON-schema dict"),
    ({"reads_private_data": "yes", "confirmation_required": True}, "True or False"),
    ({"confirmation_required": 1}, "True or False"),
    ({"display": ["temp"]}, "display maps result field names"),
    ({"handler": None}, "handler must be callable"),
    ({"name": "bad\n"}, "must match"),
    ({"name": None}, "must match"),
])
def test_malformed_tool_arguments_are_tool_schema_errors(kwargs: dict[str, Any],
                                                         message: str) -> None:
    given: dict[str, Any] = {"name": "t", "handler": _h, "effect": "read_only", **kwargs}
    with pytest.raises(adil.ToolSchemaError, match=message):
        Tool(**given)


@pytest.mark.parametrize(("spec", "location"), [
    ([1, 2], ""), ("get_weather", ""), (None, ""), (42, ""),
    ({"type": "function", "function": 3}, "/function/name"),
    ({"type": "function", "function": {"name": "a"}, "extra": 1}, "/extra"),
    ({"type": "function"}, "/function/name"),
    ({"description": "no name"}, "/name"),
    ({"name": "a", "color": "red"}, "/color"),
    ({"name": 3}, None),
    ({"name": "a", "parameters": [1]}, ""),
    ({"name": "a", "description": ["x"]}, None),
    ({"name": "a", "parameters": {"type": "object", "properties": {"x": {"$ref": "#"}}}},
     "/properties/x/$ref"),
])
def test_from_openai_refuses_malformed_dicts(spec: Any, location: str | None) -> None:
    with pytest.raises(adil.ToolSchemaError) as caught:
        Tool.from_openai(spec, handler=_h, effect="read_only")
    assert caught.value.location == location


def test_decorating_something_that_is_not_a_function() -> None:
    with pytest.raises(adil.ToolSchemaError):
        tool(42)  # type: ignore[call-overload]


def test_a_shared_tool_serves_two_agents() -> None:
    class Model:
        def __init__(self) -> None:
            self.turns = ['<tool_call>{"name": "t", "arguments": {"to": "a"}}</tool_call>', "ok"]

        def render_chat(self, messages: Any, add_generation_prompt: bool = True,
                        *, deadline: Any = None) -> str:
            return "prompt"

        def cancel_token(self) -> Any:
            return _Token()

        def generate(self, prompt: str, **kwargs: Any) -> Any:
            return _Generation(self.turns.pop(0))

    t = Tool(name="t", handler=_h, effect="read_only", parameters=SCHEMA)
    for _ in range(2):
        outcome = Agent(Model(), [t]).run("x")
        assert outcome.status == "completed" and outcome.tool_calls[0].result == {"to": "a"}


class _Token:
    def cancel(self) -> None:
        pass

    def cancelled(self) -> bool:
        return False


class _Generation:
    def __init__(self, text: str) -> None:
        self.text = text
        self.stop_reason = "end_of_text"
        self.cancel_acknowledged = False

    def __iter__(self) -> Any:
        return iter(())

    def __next__(self) -> Any:
        raise StopIteration

    def close(self) -> None:
        pass
