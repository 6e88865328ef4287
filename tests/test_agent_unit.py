"""The agent loop over a small fake model: several calls in one turn,
invalid calls, failures, proposals and policy, display-field exclusions,
cancellation between tools, and the approval-only-in-approve invariant.
The same rows run on the real stub engine in test_agent_stub.py."""

from __future__ import annotations

import ast
import json
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import adil
from adil.agent import Agent, DisplayField, Proposal, ProposalView, RunOutcome
from adil.tools import Tool, ToolContext, tool

# -- a fake model ---------------------------------------------------------------


class FakeToken:
    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def cancelled(self) -> bool:
        return self._event.is_set()


@dataclass
class FakePiece:
    text: str
    tokens: tuple[int, ...] = ()


class FakeGeneration:
    def __init__(self, text: str, token: FakeToken | None, stop: Sequence[str], delay: float,
                 late_answer: bool) -> None:
        self._chars = list(text)
        self._token = token
        self._stop = tuple(stop)
        self._delay = delay
        self._late = late_answer
        self.text = ""
        self.stop_reason = "running"
        self.cancel_acknowledged = False

    def __iter__(self) -> Iterator[FakePiece]:
        return self

    def __next__(self) -> FakePiece:
        if self.stop_reason != "running":
            raise StopIteration
        if self._token is not None and self._token.cancelled():
            self.cancel_acknowledged = True
            if not self._late:
                self.stop_reason = "cancelled"
                raise StopIteration
        if not self._chars:
            self.stop_reason = "end_of_text"
            raise StopIteration
        time.sleep(self._delay)
        char = self._chars.pop(0)
        self.text += char
        for s in self._stop:
            if self.text.endswith(s):
                self.text = self.text[: -len(s)]
                self.stop_reason = "stop_sequence"
                return FakePiece("")
        return FakePiece(char)

    def close(self) -> None:
        pass


class FakeModel:
    """Turns are strings (the model's output) or exceptions (raised by
    generate without consuming a turn when `fault=True`)."""

    def __init__(self, turns: Sequence[str | BaseException], delay: float = 0.0,
                 late_answer: bool = False, capabilities: tuple[str, ...] | None = None) -> None:
        if capabilities is not None:  # a model that says what it can (ModelLike's option)
            self.capabilities = capabilities
        self.turns = list(turns)
        self.delay = delay
        self.late_answer = late_answer
        self.prompts: list[str] = []
        self.kwargs: list[dict[str, Any]] = []

    def render_chat(self, messages: Sequence[dict[str, str]],
                    add_generation_prompt: bool = True, *, deadline: Any = None) -> str:
        return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"

    def cancel_token(self) -> FakeToken:
        return FakeToken()

    def generate(self, prompt: str, **kwargs: Any) -> FakeGeneration:
        self.prompts.append(prompt)
        self.kwargs.append(kwargs)
        if kwargs.get("n", 1) != 1:
            raise adil.CapabilityError("one choice only")
        turn = self.turns.pop(0) if self.turns else ""
        if isinstance(turn, BaseException):
            raise turn
        return FakeGeneration(turn, kwargs.get("cancel"), kwargs.get("stop", ()), self.delay,
                              self.late_answer)


def call(name: str, **arguments: Any) -> str:
    return f'<tool_call>{json.dumps({"name": name, "arguments": arguments})}</tool_call>'


def reader(name: str = "lookup", display: dict[str, Any] | None = None,
           result: Any = None, log: list[Any] | None = None) -> Tool:
    def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        if log is not None:
            log.append((name, arguments, ctx.confirmed_by))
        return result if result is not None else {"echo": arguments}

    return Tool(name=name, handler=handler, effect="read_only", display=display,
                parameters={"type": "object", "properties": {"q": {"type": "string"}},
                            "additionalProperties": False})


def writer(log: list[Any], name: str = "send") -> Tool:
    def handler(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        log.append((name, arguments, ctx.confirmed_by))
        return {"sent": True}

    return Tool(name=name, handler=handler, effect="state_changing", sends_out=True,
                confirmation_required=True,
                parameters={"type": "object", "properties": {"to": {"type": "string"}},
                            "required": ["to"], "additionalProperties": False})


# -- the loop ---------------------------------------------------------------------


def test_several_calls_in_one_turn_run_in_order_and_results_go_back_together() -> None:
    log: list[Any] = []
    model = FakeModel([f"Looking.{call('lookup', q='a')}{call('lookup', q='b')}", "Done."])
    agent = Agent(model, [reader(log=log)], instructions="Be brief.")
    outcome = agent.run("hi")
    assert outcome.status == "completed" and outcome.text == "Done."
    assert [c.arguments for c in outcome.tool_calls] == [{"q": "a"}, {"q": "b"}]
    assert all(c.status == "completed" and c.started for c in outcome.tool_calls)
    assert [entry[1] for entry in log] == [{"q": "a"}, {"q": "b"}]
    second = model.prompts[1]
    assert second.count("<tool_result call_id=") == 2
    assert '{"echo": {"q": "a"}}' in second and '{"echo": {"q": "b"}}' in second
    # the system message presents the tools and the syntax
    assert "Be brief." in model.prompts[0] and '"name": "lookup"' in model.prompts[0]
    assert "<tool_call>" in model.prompts[0]
    assert model.kwargs[0]["stop"] == ("<tool_result",)


def test_invalid_calls_are_recorded_and_the_model_is_told() -> None:
    model = FakeModel([
        call("nope") + call("lookup", q=1)
        + '<tool_call>{"name": "lookup", "arguments": {"q": "x", "q": "y"}}</tool_call>'
        + '<tool_call>{"name": "lookup", "arguments": {"q": 1e400}}</tool_call>'
        + '<tool_call>{"name": "lookup", "arguments": {"q": "cut',
        "Sorry.",
    ])
    outcome = Agent(model, [reader()]).run("hi")
    assert outcome.status == "completed"
    statuses = [(c.status, getattr(c.error, "location", None)) for c in outcome.tool_calls]
    assert statuses == [("invalid", None), ("invalid", "/q"), ("invalid", "/q"),
                        ("invalid", "/q"), ("invalid", None)]
    assert all(isinstance(c.error, adil.OutputValidationError) for c in outcome.tool_calls)
    assert not any(c.started for c in outcome.tool_calls)
    assert model.prompts[1].count('"code": "output_validation_failed"') == 5
    assert '"location": "/q"' in model.prompts[1]


def test_a_failing_handler_is_reported_to_the_model() -> None:
    def boom(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise RuntimeError("disk on fire")

    t = Tool(name="boom", handler=boom, effect="read_only")
    model = FakeModel([call("boom"), "It failed."])
    outcome = Agent(model, [t]).run("go")
    assert outcome.status == "completed"
    assert outcome.tool_calls[0].status == "failed"
    assert isinstance(outcome.tool_calls[0].error, RuntimeError)
    assert "RuntimeError: disk on fire" in model.prompts[1]


@dataclass
class Weather:
    temp_c: float


def test_results_of_dataclasses_and_unserializable_values() -> None:
    @tool(effect="read_only", display={"temp_c": "number"})
    def weather() -> Weather:
        return Weather(21.5)

    @tool(effect="read_only")
    def weird() -> object:
        return object()

    model = FakeModel([call("weather") + call("weird"), "ok"])
    outcome = Agent(model, [weather, weird]).run("x")
    assert outcome.tool_calls[0].result_json == '{"temp_c": 21.5}'
    assert outcome.display_fields[0].value == 21.5
    assert outcome.tool_calls[1].status == "failed"


def test_conversation_carries_over_and_roles_alternate() -> None:
    model = FakeModel(["One.", "Two."])
    agent = Agent(model)
    agent.run("first")
    agent.run("second")
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "user", "assistant"]
    agent.reset()
    assert agent.messages == []


def test_max_turns_stops_a_model_that_never_answers() -> None:
    model = FakeModel([call("lookup", q="x")] * 5)
    outcome = Agent(model, [reader()], max_turns=3).run("x")
    assert outcome.status == "failed" and type(outcome.error) is adil.AdilError
    assert len(outcome.tool_calls) == 3


def test_tool_choice_none_offers_no_tools_and_reads_no_calls() -> None:
    model = FakeModel([call("lookup", q="x")])
    outcome = Agent(model, [reader()], tool_choice="none").run("x")
    assert outcome.status == "completed" and outcome.tool_calls == ()
    assert "<tool_call>" in outcome.text and "Available tools" not in model.prompts[0]


def test_forcing_a_tool_asks_for_a_grammar() -> None:
    log: list[Any] = []
    model = FakeModel(['{"name":"lookup","arguments":{"q":"x"}}', "Found."],
                      capabilities=("grammar",))
    outcome = Agent(model, [reader(log=log)], tool_choice="lookup").run("x")
    assert outcome.status == "completed" and log[0][1] == {"q": "x"}
    forced = model.kwargs[0]["constraint"]
    assert forced.kind == "tool_call" and forced.trigger is None
    (entry,) = forced.document["x-adil-tools"]
    assert entry["name"] == "lookup" and entry["parameters"]["properties"] == {
        "q": {"type": "string"}}
    assert model.kwargs[0]["stop"] == ()
    later = model.kwargs[1]["constraint"]  # later turns: auto, with a lazy grammar
    assert later.kind == "lazy_tool_call" and later.trigger == "<tool_call>"
    assert "schema" not in model.kwargs[0]  # schema= is the users' structured output
    with pytest.raises(adil.InvalidArgumentError):
        Agent(model, [reader()], tool_choice="missing")
    for capabilities in (None, (), ("logits",)):  # no grammar: forcing is a capability error
        plain = FakeModel(["never"], capabilities=capabilities)
        outcome = Agent(plain, [reader()], tool_choice="lookup").run("x")
        assert outcome.status == "failed" and isinstance(outcome.error, adil.CapabilityError)
        assert plain.prompts == []  # refused before any generation
    refused = Agent(FakeModel([adil.CapabilityError("x")], capabilities=("grammar",)),
                    [reader()], tool_choice="lookup")
    outcome = refused.run("x")
    assert outcome.status == "failed" and isinstance(outcome.error, adil.CapabilityError)


def test_duplicate_tool_names_and_non_tools_are_refused() -> None:
    with pytest.raises(adil.ToolSchemaError):
        Agent(FakeModel([]), [reader(), reader()])
    with pytest.raises(adil.ToolSchemaError):
        Agent(FakeModel([]), [{"type": "function"}])  # type: ignore[list-item]


# -- confirmation and policy ----------------------------------------------------------


def test_state_changing_call_waits_for_a_person_then_runs() -> None:
    log: list[Any] = []
    model = FakeModel([call("send", to="bob"), "Sent."])
    agent = Agent(model, [writer(log)])
    outcome = agent.run("mail bob")
    assert outcome.status == "awaiting_confirmation" and log == []
    proposal = outcome.proposal
    assert isinstance(proposal, Proposal) and proposal.tool == "send"
    assert proposal.arguments == {"to": "bob"} and proposal.call_id.startswith("call_")
    assert outcome.tool_calls[0].status == "awaiting_confirmation"
    assert agent.pending_proposal is proposal
    with pytest.raises(adil.InvalidArgumentError):
        agent.resume(proposal)  # undecided
    with pytest.raises(adil.InvalidArgumentError):
        agent.run("something else")  # the proposal waits
    with pytest.raises(adil.InvalidArgumentError):
        proposal.approve(confirmed_by="  ")
    proposal.arguments["to"] = "mallory"  # editing the copy changes nothing
    proposal.approve(confirmed_by="alice")
    with pytest.raises(adil.InvalidArgumentError):
        proposal.approve(confirmed_by="alice")
    with pytest.raises(adil.InvalidArgumentError):
        proposal.reject(reason="late")
    final = agent.resume(proposal)
    assert final.status == "completed" and final.text == "Sent."
    assert log == [("send", {"to": "bob"}, "alice")]
    assert final.tool_calls[0].confirmed_by == "alice"
    with pytest.raises(adil.InvalidArgumentError):
        agent.resume(proposal)  # resumed already


def test_rejected_call_never_runs_and_the_model_is_told() -> None:
    log: list[Any] = []
    model = FakeModel([call("send", to="bob"), "OK, not sent."])
    agent = Agent(model, [writer(log)])
    outcome = agent.run("mail bob")
    assert outcome.proposal is not None
    outcome.proposal.reject(reason="not today")
    final = agent.resume(outcome.proposal)
    assert final.status == "completed" and log == []
    assert final.tool_calls[0].status == "rejected" and not final.tool_calls[0].started
    assert "not today" in model.prompts[1]


def test_a_proposal_belongs_to_its_agent() -> None:
    model = FakeModel([call("send", to="bob"), call("send", to="eve")])
    a, b = Agent(model, [writer([])]), Agent(model, [writer([])])
    pa = a.run("x").proposal
    assert pa is not None
    pa.approve(confirmed_by="alice")
    with pytest.raises(adil.InvalidArgumentError):
        b.resume(pa)


def test_policy_allow_is_recorded_and_is_not_a_confirmation() -> None:
    log: list[Any] = []
    asked: list[ProposalView] = []

    def policy(p: ProposalView) -> str:
        asked.append(p)
        return "allow"

    model = FakeModel([call("send", to="bob"), "Sent."])
    agent = Agent(model, [writer(log)], policy=policy)  # type: ignore[arg-type]
    outcome = agent.run("mail bob")
    assert outcome.status == "awaiting_confirmation" and log == []
    assert outcome.proposal is not None and asked[0].call_id == outcome.proposal.call_id
    assert outcome.proposal.policy_decision == "allow"
    assert outcome.proposal.status == "pending" and outcome.proposal.confirmed_by is None
    assert outcome.tool_calls[0].policy_decision == "allow"


def test_policy_deny_rejects() -> None:
    log: list[Any] = []
    model = FakeModel([call("send", to="bob"), "Denied, sorry."])
    outcome = Agent(model, [writer(log)], policy=lambda p: "deny").run("mail bob")
    assert outcome.status == "completed" and log == []
    assert outcome.tool_calls[0].status == "rejected"
    assert outcome.tool_calls[0].policy_decision == "deny"
    assert "denied by policy" in model.prompts[1]


def test_a_policy_with_another_answer_fails_the_run() -> None:
    model = FakeModel([call("send", to="bob")])
    outcome = Agent(model, [writer([])], policy=lambda p: "yes").run("x")  # type: ignore[arg-type,return-value]
    assert outcome.status == "failed"
    assert isinstance(outcome.error, adil.InvalidArgumentError)


def test_read_only_tools_run_without_confirmation_and_without_a_person() -> None:
    log: list[Any] = []
    outcome = Agent(FakeModel([call("lookup", q="x"), "ok"]), [reader(log=log)]).run("x")
    assert outcome.status == "completed" and log == [("lookup", {"q": "x"}, None)]


def test_only_proposal_approve_marks_approval() -> None:
    """Over the whole package source: the approval field is written only in
    Proposal.approve (and set to None in __init__), and nothing calls
    .approve() — the SDK never approves a proposal itself — except the
    terminal chat, where the person at the terminal answers y (its one call
    sits under the check of their reply; tests/test_terminal_chat.py)."""
    package = Path(adil.__file__).resolve().parent
    writes: list[str] = []
    approve_calls: list[str] = []

    class Finder(ast.NodeVisitor):
        def __init__(self, filename: str) -> None:
            self.where = [filename]

        def visit_ClassDef(self, node: ast.ClassDef) -> None:
            self._inside(node.name, node)

        def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
            self._inside(node.name, node)

        def visit_AsyncFunctionDef(self, node: ast.AsyncFunctionDef) -> None:
            self._inside(node.name, node)

        def visit_Lambda(self, node: ast.Lambda) -> None:
            self._inside("<lambda>", node)

        def _inside(self, name: str, node: ast.AST) -> None:
            self.where.append(name)
            self.generic_visit(node)
            self.where.pop()

        def visit_Attribute(self, node: ast.Attribute) -> None:
            if node.attr == "_confirmed_by" and isinstance(node.ctx, ast.Store | ast.Del):
                writes.append(".".join(self.where))
            self.generic_visit(node)

        def visit_Call(self, node: ast.Call) -> None:
            if isinstance(node.func, ast.Attribute) and node.func.attr == "approve":
                approve_calls.append(f"{'.'.join(self.where)}:{node.lineno}")
            if isinstance(node.func, ast.Name) and node.func.id in ("setattr", "object"):
                approve_calls.append(f"{'.'.join(self.where)}:{node.lineno} (setattr)")
            self.generic_visit(node)

    for path in sorted(package.rglob("*.py")):
        Finder(path.name).visit(ast.parse(path.read_text(), filename=str(path)))
        text = path.read_text()
        if path.name != "proposal.py":
            assert "_confirmed_by" not in text, path
            assert "setattr(" not in text or "_confirmed" not in text, path
    assert sorted(writes) == ["proposal.py.Proposal.__init__", "proposal.py.Proposal.approve"]
    assert [c.rsplit(":", 1)[0] for c in approve_calls] == [
        "terminal_chat.py._AgentSession._decide"]


# -- display fields ---------------------------------------------------------------


DISPLAY = {"temp": "number", "count": "integer", "ok": "boolean", "name": "quoted_text",
           "sky": ("enum", ["clear", "cloudy"])}


def run_display(result: Any, **agent_kw: Any) -> RunOutcome:
    model = FakeModel([call("lookup", q="x"), "ok"])
    t = reader(display=DISPLAY, result=result)
    return Agent(model, [t], **agent_kw).run("x")


def test_display_fields_declared_matching_and_unchanged() -> None:
    outcome = run_display({"temp": 21.5, "count": 3, "ok": True, "name": 'He said "hi"',
                           "sky": "clear", "secret": "hidden"})
    got = {f.name: f for f in outcome.display_fields}
    assert set(got) == {"temp", "count", "ok", "name", "sky"}  # never undeclared "secret"
    assert got["temp"] == DisplayField("lookup", outcome.tool_calls[0].call_id, "temp",
                                       "number", 21.5)
    assert got["name"].quoted and got["name"].render() == '"He said \\"hi\\""'
    assert not got["temp"].quoted and got["ok"].render() == "true"


@pytest.mark.parametrize(("result", "missing"), [
    ({"temp": "21.5"}, "temp"),              # number declared, string returned
    ({"temp": True}, "temp"),                # booleans are not numbers
    ({"temp": 2**60}, "temp"),               # beyond exact numbers
    ({"count": 3.0}, "count"),               # integer declared, float returned
    ({"count": "3"}, "count"),
    ({"ok": 1}, "ok"),
    ({"name": 5}, "name"),
    ({"name": None}, "name"),
    ({"sky": "raining"}, "sky"),             # not one of the enum's values
    ({"sky": ["clear"]}, "sky"),
])
def test_display_fields_only_when_the_json_type_matches(result: dict[str, Any],
                                                        missing: str) -> None:
    outcome = run_display(result)
    assert outcome.tool_calls[0].status == "completed"
    assert missing not in {f.name for f in outcome.display_fields}


def test_no_display_fields_from_a_result_that_is_not_an_object() -> None:
    assert run_display([{"temp": 1.0}]).display_fields == ()
    assert run_display("temp").display_fields == ()


def test_no_display_fields_from_a_result_changed_by_a_hook() -> None:
    seen: list[str] = []

    def hook(c: Any, text: str) -> str:
        seen.append(text)
        return text.replace("21.5", "22.5")

    outcome = run_display({"temp": 21.5}, result_hook=hook)
    assert seen == ['{"temp": 21.5}']
    assert outcome.tool_calls[0].delivered == '{"temp": 22.5}'
    assert not outcome.tool_calls[0].delivered_unchanged
    assert outcome.display_fields == ()
    same = run_display({"temp": 21.5}, result_hook=lambda c, text: text)
    assert [f.name for f in same.display_fields] == ["temp"]


def test_no_display_fields_from_a_result_cut_to_fit_the_context() -> None:
    big = {"temp": 21.5, "log": "x" * 5000}
    outcome = run_display(big, max_result_tokens=100)
    delivered = outcome.tool_calls[0].delivered
    assert delivered is not None and len(delivered.encode()) <= 100
    assert "cut to fit the context" in delivered
    assert outcome.display_fields == ()
    assert [f.name for f in run_display(big).display_fields] == ["temp"]


def test_no_display_fields_from_failed_or_cancelled_calls() -> None:
    def fail(arguments: dict[str, Any], ctx: ToolContext) -> None:
        raise ValueError("no")

    t = Tool(name="lookup", handler=fail, effect="read_only", display={"temp": "number"})
    outcome = Agent(FakeModel([call("lookup"), "ok"]), [t]).run("x")
    assert outcome.display_fields == ()


# -- cancellation between and during tools -------------------------------------------


def test_cancel_during_a_tool_discards_its_result_and_the_next_tool_never_starts() -> None:
    effects: list[str] = []
    agent_box: list[Agent] = []

    def first(arguments: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        effects.append("first started")
        agent_box[0].cancel()
        assert ctx.cancelled()
        effects.append("first side effect")
        return {"temp": 1.0}

    def second(arguments: dict[str, Any], ctx: ToolContext) -> None:
        effects.append("second started")

    tools = [Tool(name="first", handler=first, effect="read_only", display={"temp": "number"}),
             Tool(name="second", handler=second, effect="read_only")]
    model = FakeModel([call("first") + call("second"), "never"])
    agent = Agent(model, tools)
    agent_box.append(agent)
    outcome = agent.run("x")
    assert outcome.status == "cancelled" and outcome.cancel_acknowledged
    assert effects == ["first started", "first side effect"]  # the side effect stays
    first_call, second_call = outcome.tool_calls
    assert first_call.status == "cancelled" and first_call.started
    assert first_call.result is None and first_call.delivered is None  # result discarded
    assert second_call.status == "cancelled" and not second_call.started
    assert outcome.display_fields == ()
    assert len(model.prompts) == 1
    # the conversation stays well formed: the model hears that the first one
    # started (its side effect may have happened) and the second never ran
    told = agent.messages[-1]["content"]
    assert agent.messages[-1]["role"] == "user"
    assert told.count('"code": "cancelled_after_start"') == 1
    assert "may have had side effects" in told and "not run" not in told.split("</tool_result>")[0]
    assert told.count('"code": "cancelled"') == 1
    assert "not run: the run was cancelled" in told.split("</tool_result>")[1]
    assert agent.run("again").status == "completed"  # the agent is usable again


def test_late_answer_is_returned_with_cancel_acknowledged() -> None:
    model = FakeModel(["Here is the answer."], delay=0.01, late_answer=True)
    agent = Agent(model)
    handle = agent.start("x")
    time.sleep(0.03)
    agent.cancel()
    outcome = handle.result(timeout=5)
    assert outcome.status == "completed" and outcome.text == "Here is the answer."
    assert outcome.cancel_acknowledged


def test_cancel_while_paused_voids_the_proposal() -> None:
    log: list[Any] = []
    model = FakeModel([call("send", to="bob"), "after"])
    agent = Agent(model, [writer(log)])
    outcome = agent.run("x")
    proposal = outcome.proposal
    assert proposal is not None
    agent.cancel()
    assert proposal.status == "voided"
    with pytest.raises(adil.CancelledError):
        proposal.approve(confirmed_by="alice")
    resumed = agent.resume(proposal)
    assert resumed.status == "cancelled" and log == []
    assert agent.run("next").status == "completed"


def test_an_approved_proposal_is_voided_by_a_cancel_before_resume() -> None:
    log: list[Any] = []
    agent = Agent(FakeModel([call("send", to="bob")]), [writer(log)])
    proposal = agent.run("x").proposal
    assert proposal is not None
    proposal.approve(confirmed_by="alice")
    agent.cancel()
    assert agent.resume(proposal).status == "cancelled" and log == []


def test_handle_cancel_only_cancels_its_own_run() -> None:
    model = FakeModel(["slow answer"], delay=0.02)
    agent = Agent(model)
    handle = agent.start("x")
    handle.cancel()
    assert handle.result(timeout=5).status == "cancelled"
    finished = agent.start("y")
    outcome = finished.result(timeout=5)
    handle.cancel()  # a finished handle cancels nothing
    assert outcome.status == "completed"


def test_one_run_at_a_time_per_agent() -> None:
    agent = Agent(FakeModel(["slow"], delay=0.05))
    handle = agent.start("x")
    with pytest.raises(adil.BusyError):
        agent.run("y")
    handle.result(timeout=5)


def test_handle_result_timeout() -> None:
    agent = Agent(FakeModel(["slow answer"], delay=0.05))
    handle = agent.start("x")
    with pytest.raises(adil.DeadlineError):
        handle.result(timeout=0.01)
    assert not handle.done()
    agent.cancel()
    assert handle.result(timeout=5).status == "cancelled"


# -- retries and deadlines on the fake ----------------------------------------------


def test_busy_and_not_ready_are_retried() -> None:
    model = FakeModel([adil.BusyError("b"), adil.ModelNotReadyError("n"), "fine"])
    outcome = Agent(model, retry=adil.retry.RetryPolicy(initial_delay=0.001)).run("x")
    assert outcome.status == "completed" and outcome.text == "fine"
    assert len(model.prompts) == 3


def test_non_retryable_errors_fail_the_run() -> None:
    for error in (adil.ContextLengthError("long"), adil.CapabilityError("no")):
        outcome = Agent(FakeModel([error])).run("x")
        assert outcome.status == "failed" and outcome.error is error
        with pytest.raises(type(error)):
            outcome.raise_for_error()


def test_total_deadline_covers_tool_time_and_the_tool_sees_the_flag() -> None:
    seen: list[bool] = []

    def slow(arguments: dict[str, Any], ctx: ToolContext) -> str:
        deadline = time.monotonic() + 5
        while not ctx.cancelled() and time.monotonic() < deadline:
            time.sleep(0.001)
        seen.append(ctx.cancelled())
        return "late"

    t = Tool(name="slow", handler=slow, effect="read_only")
    agent = Agent(FakeModel([call("slow"), "never"]), [t], timeout=adil.Timeout(total=0.2))
    started = time.monotonic()
    outcome = agent.run("x")
    assert time.monotonic() - started < 2
    assert outcome.status == "failed" and isinstance(outcome.error, adil.DeadlineError)
    assert outcome.error.limit == "total"
    slow_call = outcome.tool_calls[0]
    assert slow_call.status == "abandoned" and slow_call.started and slow_call.result is None
    assert not outcome.cancel_acknowledged
    for _ in range(2000):  # the handler sees the flag (after the run returned)
        if seen:
            break
        time.sleep(0.001)
    assert seen == [True]


def test_generation_gets_the_remaining_total_and_the_read_limit() -> None:
    model = FakeModel(["x"])
    Agent(model, timeout=adil.Timeout(read=3, total=50)).run(
        "x", timeout=adil.Timeout(total=10))
    timeout = model.kwargs[0]["timeout"]
    assert timeout.read == 3 and 9 < timeout.total <= 10


def test_capability_options_are_passed_to_the_model() -> None:
    outcome = Agent(FakeModel(["x"]), n=2).run("x")
    assert outcome.status == "failed" and isinstance(outcome.error, adil.CapabilityError)
    model = FakeModel(["x"])
    Agent(model).run("x", images=["img"])
    assert model.kwargs[0]["images"] == ["img"]


def test_policy_and_hook_exceptions_propagate_and_leave_the_agent_usable() -> None:
    def policy(p: Proposal) -> None:
        raise KeyError("bug in policy")

    agent = Agent(FakeModel([call("send", to="b"), "ok"]), [writer([])], policy=policy)
    with pytest.raises(KeyError):
        agent.run("x")
    assert agent.run("y").status == "completed"



def test_public_names() -> None:
    """adil exports the classes of adil.tools and adil.agent themselves."""
    import adil.agent
    import adil.tools

    for name in ("Tool", "ToolContext", "tool"):
        assert getattr(adil, name) is getattr(adil.tools, name)
    for name in ("Agent", "AgentHandle", "RunOutcome", "Proposal", "DisplayField", "ToolCall"):
        assert getattr(adil, name) is getattr(adil.agent, name)


# -- a policy cannot approve ------------------------------------------------------------


def test_a_policy_sees_a_read_only_view_without_approve() -> None:
    log: list[Any] = []
    seen: list[Any] = []

    def policy(view: Any) -> str:
        seen.append(view)
        assert not isinstance(view, Proposal)
        assert not hasattr(view, "approve") and not hasattr(view, "reject")
        assert view.tool == "send" and view.arguments == {"to": "bob"}
        assert view.effect == "state_changing" and view.sends_out
        assert view.confirmation_required and not view.reads_private_data
        view.arguments["to"] = "mallory"  # a copy: changes nothing
        with pytest.raises(AttributeError):
            view.tool = "lookup"
        return "allow"

    model = FakeModel([call("send", to="bob"), "Sent."])
    agent = Agent(model, [writer(log)], policy=policy)
    outcome = agent.run("mail bob")
    assert outcome.status == "awaiting_confirmation" and log == [] and len(seen) == 1
    assert outcome.proposal is not None and outcome.proposal.arguments == {"to": "bob"}
    assert outcome.proposal.status == "pending" and outcome.proposal.confirmed_by is None


def test_a_policy_that_tries_to_approve_cannot_run_the_tool() -> None:
    """Whatever the policy reaches for — the view, the agent's pending
    proposal — nothing lets it approve; the call waits for a person."""
    log: list[Any] = []
    box: list[Agent] = []

    def policy(view: Any) -> str:
        assert box[0].pending_proposal is None  # not visible while the run is active
        with pytest.raises(AttributeError):
            view.approve(confirmed_by="policy")
        return "allow"

    agent = Agent(FakeModel([call("send", to="bob"), "Sent."]), [writer(log)], policy=policy)
    box.append(agent)
    outcome = agent.run("mail bob")
    assert outcome.status == "awaiting_confirmation" and log == []


def test_a_proposal_is_decided_only_after_the_run_returned_it() -> None:
    stray = Proposal(tool="send", arguments={}, call_id="call_x", owner=object())
    with pytest.raises(adil.InvalidArgumentError, match="not been returned"):
        stray.approve(confirmed_by="alice")
    with pytest.raises(adil.InvalidArgumentError, match="not been returned"):
        stray.reject(reason="no")
    assert stray.status == "pending"
