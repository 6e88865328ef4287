"""The product page, row by row, on the reference stub engine: tools and
exact numbers, confirmation by a person, policy, display fields, every
cancellation row, deadlines and retries, and the error table."""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import cffi
import pytest

import adil
from adil.agent import Agent, Proposal, RunOutcome
from adil.retry import RetryPolicy
from adil.tools import Tool, ToolContext, tool

SCRIPTS = Path(__file__).resolve().parent / "stub_scripts"
FAST_RETRY = RetryPolicy(initial_delay=0.01, max_delay=0.05, max_retries=20)
LoadScript = Callable[..., adil.Model]


@pytest.fixture
def script_model(stub_engine: adil.Engine) -> Callable[[str], adil.Model]:
    def load(name: str) -> adil.Model:
        return stub_engine.load_model(str(SCRIPTS / name))

    return load


def tool_call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


@tool(effect="read_only", display={"temp_c": "number", "city": "quoted_text",
                                   "sky": ("enum", ["clear", "cloudy"])})
def get_weather(city: str) -> dict[str, Any]:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city, "sky": "clear", "station": "OSL-3"}


def email_tool(sent: list[Any]) -> Tool:
    @tool(effect="state_changing", sends_out=True, confirmation_required=True)
    def send_email(to: str, subject: str, body: str, ctx: ToolContext) -> dict[str, Any]:
        """Sends an email."""
        sent.append({"to": to, "subject": subject, "by": ctx.confirmed_by})
        return {"status": "sent"}

    return send_email


class Signalling:
    """A model that says when a generation has started."""

    def __init__(self, model: adil.Model) -> None:
        self.model = model
        self.started = threading.Event()
        self.proceed = threading.Event()  # cleared: generate() waits, its run open
        self.proceed.set()

    def render_chat(self, messages: Sequence[dict[str, str]],
                    add_generation_prompt: bool = True, *, deadline: Any = None) -> str:
        return self.model.render_chat(messages, add_generation_prompt=add_generation_prompt,
                                      deadline=deadline)

    def cancel_token(self) -> adil.CancelToken:
        return self.model.cancel_token()

    def generate(self, prompt: str, **kwargs: Any) -> adil.Generation:
        generation = self.model.generate(prompt, **kwargs)
        self.started.set()
        assert self.proceed.wait(30)
        return generation


# -- tools, exact numbers, display ----------------------------------------------------


def test_a_tool_run_end_to_end(script_model: Callable[[str], adil.Model]) -> None:
    agent = Agent(script_model("weather.json"), [get_weather], instructions="Be brief.")
    outcome = agent.run("What is the weather in Oslo?")
    assert outcome.status == "completed"
    assert outcome.text == "It is 21.5 degrees and clear in Oslo."
    (call,) = outcome.tool_calls
    assert call.tool == "get_weather" and call.arguments == {"city": "Oslo"}
    assert call.status == "completed" and call.delivered_unchanged
    shown = {(f.name, f.kind, f.value) for f in outcome.display_fields}
    assert shown == {("temp_c", "number", 21.5), ("city", "quoted_text", "Oslo"),
                     ("sky", "enum", "clear")}  # "station" was not declared
    roles = [m["role"] for m in agent.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert agent.messages[2]["content"] == (
        'Checking. <tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>')


def test_exact_numbers_only(script_model: Callable[[str], adil.Model]) -> None:
    seen: list[dict[str, Any]] = []

    @tool(effect="read_only")
    def get_account(id: int, rate: float = 0.0) -> str:
        seen.append({"id": id, "rate": rate})
        return "ok"

    # The validator's exact-number rule (the grammar's: test_agent_grammar).
    agent = Agent(script_model("exact_numbers.json"), [get_account], constrain_calls=False)
    outcome = agent.run("account?")
    assert outcome.status == "completed" and outcome.text == "Account found."
    calls = outcome.tool_calls
    assert [(c.status, getattr(c.error, "location", None)) for c in calls] == [
        ("invalid", "/id"), ("invalid", "/rate"), ("invalid", "/id"), ("completed", None)]
    assert seen == [{"id": 9007199254740991, "rate": 0.1}]


@pytest.mark.parametrize(("agent_kw", "expected"), [
    ({}, {"temp_c", "city", "sky"}),
    ({"result_hook": lambda call, text: text.replace("OSL-3", "[station]")}, set()),
    ({"result_hook": lambda call, text: text}, {"temp_c", "city", "sky"}),
    ({"max_result_tokens": 40}, set()),
])
def test_display_fields_only_from_results_delivered_unchanged(
    script_model: Callable[[str], adil.Model], agent_kw: dict[str, Any], expected: set[str]
) -> None:
    outcome = Agent(script_model("weather.json"), [get_weather], **agent_kw).run("x")
    assert outcome.status == "completed"
    assert {f.name for f in outcome.display_fields} == expected
    call = outcome.tool_calls[0]
    assert call.delivered_unchanged == bool(expected)


def test_results_are_cut_to_fit_a_small_context(stub_model: LoadScript) -> None:
    @tool(effect="read_only", display={"rows": "integer"})
    def dump() -> dict[str, Any]:
        return {"rows": 3, "data": "y" * 4000}

    model = stub_model({"turns": [{"tool_call": tool_call("dump")}, {"text": "ok"}],
                        "context_length": 4096}, context_length=2048)
    outcome = Agent(model, [dump], max_tokens=64).run("x")
    call = outcome.tool_calls[0]
    assert call.delivered is not None and len(call.delivered) < 2048 // 4 + 100
    assert outcome.status == "completed" and outcome.display_fields == ()


def test_display_kinds_type_mismatch_is_not_shown(stub_model: LoadScript) -> None:
    @tool(effect="read_only", display={"temp_c": "number", "ok": "boolean", "n": "integer"})
    def odd() -> dict[str, Any]:
        return {"temp_c": "21.5", "ok": "yes", "n": 2.0}

    model = stub_model({"turns": [{"tool_call": tool_call("odd")}, {"text": "ok"}]})
    assert Agent(model, [odd]).run("x").display_fields == ()


# -- confirmation by a person, policy ----------------------------------------------------


def test_state_changing_call_waits_for_a_person(script_model: Callable[[str], adil.Model]) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)])
    outcome = agent.run("Email Bob about lunch.")
    assert outcome.status == "awaiting_confirmation" and sent == []
    proposal = outcome.proposal
    assert proposal is not None and proposal.tool == "send_email"
    assert proposal.arguments == {"to": "bob@example.com", "subject": "Lunch", "body": "Noon?"}
    proposal.approve(confirmed_by="alice")
    final = agent.resume(proposal)
    assert final.status == "completed" and final.text == "Done: the email is on its way."
    assert sent == [{"to": "bob@example.com", "subject": "Lunch", "by": "alice"}]


def test_rejected_call_is_skipped(script_model: Callable[[str], adil.Model]) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)])
    outcome = agent.run("Email Bob.")
    assert outcome.proposal is not None
    outcome.proposal.reject(reason="Bob is on holiday")
    final = agent.resume(outcome.proposal)
    assert final.status == "completed" and sent == []
    assert final.tool_calls[0].status == "rejected"
    assert "Bob is on holiday" in agent.messages[3]["content"]


def test_policy_allow_is_recorded_never_executed(
    script_model: Callable[[str], adil.Model]
) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)],
                  policy=lambda proposal: "allow")
    outcome = agent.run("Email Bob.")
    assert outcome.status == "awaiting_confirmation" and sent == []
    assert outcome.proposal is not None and outcome.proposal.policy_decision == "allow"
    assert outcome.proposal.status == "pending"


def test_policy_deny_rejects(script_model: Callable[[str], adil.Model]) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)],
                  policy=lambda proposal: "deny")
    outcome = agent.run("Email Bob.")
    assert outcome.status == "completed" and sent == []
    assert outcome.tool_calls[0].status == "rejected"


def test_confirmation_required_read_only_tool_waits_too(stub_model: LoadScript) -> None:
    read: list[str] = []

    @tool(effect="read_only", reads_private_data=True, confirmation_required=True)
    def read_inbox(ctx: ToolContext) -> list[str]:
        read.append(str(ctx.confirmed_by))
        return ["hello"]

    agent = Agent(stub_model({"turns": [{"tool_call": tool_call("read_inbox")},
                                        {"text": "One mail."}]}), [read_inbox])
    outcome = agent.run("mail?")
    assert outcome.status == "awaiting_confirmation" and read == []
    assert outcome.proposal is not None
    outcome.proposal.approve(confirmed_by="carol")
    assert agent.resume(outcome.proposal).text == "One mail." and read == ["carol"]


# -- cancellation: every row of the seed's table ----------------------------------------


def test_cancelled_before_the_tool_starts_during_generation(stub_model: LoadScript) -> None:
    started: list[str] = []

    @tool(effect="read_only")
    def lookup(q: str) -> str:
        started.append(q)
        return "x"

    model = Signalling(stub_model({
        "turns": [{"text": "Let me look that up for you, one moment.",
                   "tool_call": tool_call("lookup", q="a")}],
        "token_delay_ms": 20}))
    agent = Agent(model, [lookup])
    handle = agent.start("x")
    assert model.started.wait(5)
    time.sleep(0.05)
    agent.cancel()
    outcome = handle.result(timeout=5)
    assert outcome.status == "cancelled" and outcome.cancel_acknowledged
    assert started == [] and outcome.tool_calls == ()


def test_cancelled_before_the_tool_starts_after_approval(
    script_model: Callable[[str], adil.Model]
) -> None:
    sent: list[Any] = []
    agent = Agent(script_model("send_email.json"), [email_tool(sent)])
    proposal = agent.run("Email Bob.").proposal
    assert proposal is not None
    proposal.approve(confirmed_by="alice")
    agent.cancel()
    outcome = agent.resume(proposal)
    assert outcome.status == "cancelled" and sent == []
    assert proposal.status == "voided"


def test_cancelled_after_the_tool_started(script_model: Callable[[str], adil.Model]) -> None:
    effects: list[str] = []
    running = threading.Event()
    observed: list[bool] = []

    @tool(effect="read_only", display={"rows": "integer"})
    def export_report(rows: int, ctx: ToolContext) -> dict[str, Any]:
        effects.append("wrote part 1")  # a side effect before the cancel
        running.set()
        deadline = time.monotonic() + 10
        while not ctx.cancelled() and time.monotonic() < deadline:
            time.sleep(0.001)
        observed.append(ctx.cancelled())
        return {"rows": rows}

    agent = Agent(script_model("slow_tool.json"), [export_report])
    handle = agent.start("export")
    assert running.wait(5)
    agent.cancel()
    outcome = handle.result(timeout=5)
    assert outcome.status == "cancelled" and outcome.cancel_acknowledged
    assert observed == [True]  # the engine's flag, seen through ctx.cancelled()
    assert effects == ["wrote part 1"]  # the side effect stays
    call = outcome.tool_calls[0]
    assert call.started and call.status == "cancelled"
    assert call.result is None and call.delivered is None  # the result is discarded
    assert outcome.display_fields == ()


def test_native_tool_gets_the_c_cancelled_flag_function(
    script_model: Callable[[str], adil.Model]
) -> None:
    """A C tool receives (adil_cancelled_fn, token) from ctx and stops when
    the agent is cancelled; the stub exports such a tool for tests."""
    ffi = cffi.FFI()
    ffi.cdef("""typedef int (*adil_cancelled_fn)(void *token);
        int adil_stub_sleep_tool(void *user_data, const char *arguments_json,
            size_t arguments_len, adil_cancelled_fn cancelled, void *cancel_token,
            char *result, size_t result_capacity, size_t *result_len);""")
    lib = ffi.dlopen(adil.STUB_LIBRARY)
    running = threading.Event()
    statuses: list[int] = []

    def native(arguments: dict[str, Any], ctx: ToolContext) -> Any:
        fn, token = ctx.cancel_fn_and_token
        args = json.dumps({"ms": 10_000}).encode()
        out = ffi.new("char[]", 64)
        size = ffi.new("size_t *")
        running.set()
        statuses.append(lib.adil_stub_sleep_tool(ffi.NULL, args, len(args), fn, token, out,
                                                 64, size))
        if statuses[-1] == 1:  # ADIL_STATUS_CANCELLED
            raise adil.CancelledError("the native tool saw the cancel")
        return json.loads(ffi.buffer(out, size[0])[:])

    export = Tool(name="export_report", handler=native, effect="read_only",
                  parameters={"type": "object", "properties": {"rows": {"type": "integer"}},
                              "additionalProperties": False})
    agent = Agent(script_model("slow_tool.json"), [export])
    started = time.monotonic()
    handle = agent.start("x")
    assert running.wait(5)
    agent.cancel()
    outcome = handle.result(timeout=5)
    assert time.monotonic() - started < 3
    assert statuses == [1] and outcome.status == "cancelled"
    assert isinstance(outcome.tool_calls[0].error, adil.CancelledError)


def test_cancelling_one_agent_voids_only_its_own_proposal(stub_model: LoadScript) -> None:
    sent: list[Any] = []
    model = stub_model({"turns": [
        {"tool_call": tool_call("send_email", to="a@x", subject="A", body="a")},
        {"tool_call": tool_call("send_email", to="b@x", subject="B", body="b")},
        {"text": "B sent."}]})
    a = Agent(model, [email_tool(sent)])
    b = Agent(model, [email_tool(sent)])
    pa, pb = a.run("A").proposal, b.run("B").proposal
    assert pa is not None and pb is not None
    a.cancel()
    assert pa.status == "voided" and pb.status == "pending"
    pb.approve(confirmed_by="bob")
    outcome = b.resume(pb)
    assert outcome.status == "completed" and outcome.text == "B sent."
    assert [s["to"] for s in sent] == ["b@x"]
    assert a.resume(pa).status == "cancelled" and len(sent) == 1


def test_cancelling_one_agent_does_not_interrupt_another_generation(
    stub_model: LoadScript
) -> None:
    sent: list[Any] = []
    base = stub_model({"turns": [
        {"tool_call": tool_call("send_email", to="a@x", subject="A", body="a")},
        {"text": "Agent B answers slowly but completely."}], "token_delay_ms": 5})
    model = Signalling(base)
    a = Agent(model, [email_tool(sent)])
    proposal = a.run("A").proposal
    assert proposal is not None
    model.started.clear()
    b = Agent(model)
    handle = b.start("B")
    assert model.started.wait(5)
    a.cancel()  # while B's generation is in progress on the same model
    outcome = handle.result(timeout=10)
    assert outcome.status == "completed" and not outcome.cancel_acknowledged
    assert outcome.text == "Agent B answers slowly but completely."
    assert proposal.status == "voided"


def test_cancel_as_the_run_starts_is_acknowledged_while_text_is_returned(
    script_model: Callable[[str], adil.Model]
) -> None:
    model = Signalling(script_model("late_answer.json"))
    agent = Agent(model)
    handle = agent.start("What is the answer?")
    assert model.started.wait(5)
    agent.cancel()
    outcome = handle.result(timeout=5)
    assert outcome.status == "completed"
    assert outcome.text == "The answer is 42, as computed."
    assert outcome.cancel_acknowledged


# -- deadlines and retries ---------------------------------------------------------------


def test_total_deadline_during_generation(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "x" * 100}], "token_delay_ms": 20})
    started = time.monotonic()
    outcome = Agent(model, timeout=adil.Timeout(total=0.3)).run("x")
    elapsed = time.monotonic() - started
    assert outcome.status == "failed" and isinstance(outcome.error, adil.DeadlineError)
    assert outcome.error.limit == "total" and elapsed < 1.0


def test_read_deadline_is_the_longest_silence(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "slow"}], "token_delay_ms": 400})
    outcome = Agent(model).run("x", timeout=adil.Timeout(read=0.05, total=10))
    assert outcome.status == "failed" and isinstance(outcome.error, adil.DeadlineError)
    assert outcome.error.limit == "read"
    fast = stub_model({"turns": [{"text": "quick enough"}], "token_delay_ms": 5})
    assert Agent(fast, timeout=adil.Timeout(read=0.5)).run("x").status == "completed"


def test_total_deadline_covers_tool_time(script_model: Callable[[str], adil.Model]) -> None:
    observed: list[bool] = []

    @tool(effect="read_only")
    def export_report(rows: int, ctx: ToolContext) -> str:
        deadline = time.monotonic() + 10
        while not ctx.cancelled() and time.monotonic() < deadline:
            time.sleep(0.001)
        observed.append(ctx.cancelled())
        return "done"

    started = time.monotonic()
    outcome = Agent(script_model("slow_tool.json"), [export_report],
                    timeout=adil.Timeout(total=0.3)).run("x")
    assert time.monotonic() - started < 1.5
    assert outcome.status == "failed" and isinstance(outcome.error, adil.DeadlineError)
    assert outcome.error.limit == "total"
    assert outcome.tool_calls[0].status == "abandoned"  # the run did not wait for it
    for _ in range(2000):  # the handler sees the flag (after the run returned)
        if observed:
            break
        time.sleep(0.001)
    assert observed == [True]


def test_busy_and_not_ready_are_retried(script_model: Callable[[str], adil.Model]) -> None:
    outcome = Agent(script_model("busy_then_answer.json"), retry=FAST_RETRY).run("x")
    assert outcome.status == "completed" and outcome.text == "Ready now."


def test_not_ready_for_a_while_after_load_is_retried(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "Loaded."}], "faults": [{"not_ready_ms": 300}]})
    outcome = Agent(model, retry=RetryPolicy(initial_delay=0.05, max_retries=30)).run("x")
    assert outcome.status == "completed" and outcome.text == "Loaded."


def test_retries_never_exceed_the_total_deadline(stub_model: LoadScript) -> None:
    faults = [{"on_call": n, "status": "busy"} for n in range(1, 200)]
    model = stub_model({"turns": [{"text": "never"}], "faults": faults})
    started = time.monotonic()
    outcome = Agent(model, retry=RetryPolicy(initial_delay=0.05, max_retries=1000),
                    timeout=adil.Timeout(total=0.5)).run("x")
    elapsed = time.monotonic() - started
    assert outcome.status == "failed" and elapsed < 0.5 + 0.1
    assert isinstance(outcome.error, adil.BusyError | adil.DeadlineError)


def test_concurrent_generation_on_one_model_is_busy_and_retried(stub_model: LoadScript) -> None:
    # paced for about a second: the direct call below must meet a's run even
    # when this thread waits for a core (a 190 ms run was over first under load)
    model = stub_model({"turns": [{"text": "first answer, paced"},
                                  {"text": "second answer, paced"}], "token_delay_ms": 50})
    signalling = Signalling(model)
    signalling.proceed.clear()  # a's run stays open until the direct call was made
    a, b = Agent(signalling, retry=FAST_RETRY), Agent(model, retry=FAST_RETRY)
    handle = a.start("one")
    assert signalling.started.wait(5)
    try:
        with pytest.raises(adil.BusyError):
            model.generate("direct", max_tokens=4)  # the engine serves one at a time
    finally:
        signalling.proceed.set()
    outcome_b = b.run("two")  # busy at first, retried until a finishes
    outcome_a = handle.result(timeout=10)
    assert {outcome_a.text, outcome_b.text} == {"first answer, paced", "second answer, paced"}


def test_busy_without_retries_fails_with_busy(
    script_model: Callable[[str], adil.Model]
) -> None:
    outcome = Agent(script_model("busy_then_answer.json"),
                    retry=RetryPolicy(max_retries=0)).run("x")
    assert outcome.status == "failed" and isinstance(outcome.error, adil.BusyError)
    assert outcome.error.code == "busy"


def test_not_ready_without_retries_fails_with_model_not_ready(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "x"}], "faults": [{"not_ready_ms": 5000}]})
    outcome = Agent(model, retry=RetryPolicy(max_retries=0)).run("x")
    assert isinstance(outcome.error, adil.ModelNotReadyError)
    assert outcome.error.code == "model_not_ready"


# -- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "error"), [
    ("context_length", adil.ContextLengthError), ("capability", adil.CapabilityError)])
def test_scripted_faults_become_typed_errors(stub_model: LoadScript, status: str,
                                              error: type[adil.AdilError]) -> None:
    model = stub_model({"turns": [{"text": "x"}], "faults": [{"on_call": 1, "status": status}]})
    outcome = Agent(model).run("x")
    assert outcome.status == "failed" and isinstance(outcome.error, error)


def test_prompt_beyond_the_context_is_a_context_length_error(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [{"text": "x"}]}, context_length=256)
    outcome = Agent(model, [get_weather], max_tokens=16).run("x")
    assert isinstance(outcome.error, adil.ContextLengthError)
    assert outcome.error.code == "context_length_exceeded"


def test_capability_errors(stub_model: LoadScript, monkeypatch: pytest.MonkeyPatch) -> None:
    def model() -> adil.Model:
        return stub_model({"turns": [{"tool_call": tool_call("get_weather", city="Oslo")}]})

    # Forcing a tool needs grammar support, which the stub has: take it away.
    plain = model()
    monkeypatch.setattr(plain.engine, "info",
                        dataclasses.replace(plain.engine.info, capabilities=()))
    forced = Agent(plain, [get_weather], tool_choice="get_weather").run("x")
    several = Agent(model(), n=2).run("x")
    images = Agent(model()).run("x", images=[b"\x89PNG"])
    for outcome in (forced, several, images):
        assert outcome.status == "failed" and isinstance(outcome.error, adil.CapabilityError)
        assert outcome.error.code == "unsupported_capability"


def test_invalid_arguments_are_output_validation_errors(stub_model: LoadScript) -> None:
    model = stub_model({"turns": [
        {"tool_call": tool_call("get_weather", city="Oslo", country="NO")},
        {"text": "Sorry."}]})
    # The validator's refusal; under the grammar the engine refuses the call
    # earlier (test_agent_grammar).
    outcome = Agent(model, [get_weather], constrain_calls=False).run("x")
    error = outcome.tool_calls[0].error
    assert isinstance(error, adil.OutputValidationError) and error.location == "/country"


def test_outcomes_are_typed(script_model: Callable[[str], adil.Model]) -> None:
    outcome = Agent(script_model("weather.json"), [get_weather]).run("x")
    assert isinstance(outcome, RunOutcome) and outcome.error is None
    assert outcome.raise_for_error() is outcome
    assert not isinstance(outcome.proposal, Proposal)
