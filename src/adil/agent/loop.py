"""The agent loop: generate, read tool calls, ask for confirmation, run
tools, feed results back, until the model answers without a call.

One :class:`RunLoop` drives one segment of a run (``run()`` or
``resume()``); it returns an :class:`Ending` and leaves the bookkeeping of
the agent (whose run is active, which proposal is pending) to the Agent.

Constrained calls.  When the model's engine compiles grammars (its
``capabilities`` list ``grammar``, see :mod:`adil.constraints`), each turn's
generation carries a constraint:

* ``tool_choice="auto"``: a lazy one (free text; from ``<tool_call>`` on,
  one call of an offered tool with its arguments' schema, then
  ``</tool_call>``).  ``Agent(constrain_calls=False)`` leaves these turns
  unconstrained: the validator alone judges the calls.
* ``tool_choice="required"`` or a tool's name: on the first turn of a run
  the call is forced from the first token (the model writes the bare
  envelope ``{"name":...,"arguments":...}``, a call of any tool or of the
  named one); later turns are "auto" turns, so the run can end.  Forcing
  needs the grammar: on an engine without it the run fails with
  :class:`~adil.errors.CapabilityError` (``constrain_calls`` does not
  change that).
* ``"none"``: no tools, no constraint.

A constrained generation that ends with :class:`OutputValidationError` (the
engine refused what the model wrote, or ``max_tokens`` cut a call short)
does not fail the run: the call it was writing becomes an ``invalid`` call
with that error (its ``location`` relative to the arguments), the model is
told as for any invalid call, and the next turn may try again, within
``max_turns``.  Calls completed earlier in the same turn are handled as
usual.
"""

from __future__ import annotations

import copy
import secrets
from dataclasses import dataclass, replace
from typing import Any

from ..constraints import Constraint, supports_grammar
from ..errors import (
    AdilError,
    CancelledError,
    CapabilityError,
    DeadlineError,
    InvalidArgumentError,
    OutputValidationError,
)
from ..timeouts import Timeout
from ..tools import Tool, ToolContext, result_json, validate
from .config import AgentConfig
from .conversation import Conversation
from .display import display_fields
from .events import TextDelta, ToolCallStarted
from .proposal import Proposal
from .protocol import GenerationLike
from .records import RunStatus, ToolCall
from .state import RunState, Segment
from .syntax import (
    CALL_CLOSE,
    CALL_OPEN,
    RESULT_OPEN,
    VisibleText,
    arguments_error,
    error_payload,
    parse_envelope,
    peek_name,
    result_block,
    split_calls,
    unicode_safe,
)
from .worker import HandlerCall

__all__ = ["Ending", "RunLoop", "close_turn"]


@dataclass(frozen=True)
class Ending:
    status: RunStatus
    text: str = ""
    error: AdilError | None = None
    proposal: Proposal | None = None


class RunLoop:
    def __init__(
        self, config: AgentConfig, conversation: Conversation, state: RunState, segment: Segment,
        owner: object,
    ) -> None:
        self.config = config
        self.conversation = conversation
        self.state = state
        self.seg = segment
        self.owner = owner  # the Agent: proposals remember whose they are

    def run(self) -> Ending:
        try:
            return self._loop()
        except AdilError as error:
            if self.seg.cancel_requested and not isinstance(error, DeadlineError):
                return Ending("cancelled")
            return Ending("failed", error=error)

    # -- the loop ---------------------------------------------------------
    def _loop(self) -> Ending:
        state = self.state
        while True:
            stop = self._drain()
            if stop is not None:
                return stop
            if self._stopped():
                return Ending("cancelled")
            self.seg.deadline.check()
            if state.turns >= self.config.max_turns:
                raise AdilError(
                    f"the run reached max_turns={self.config.max_turns} model turns "
                    "without a final answer"
                )
            text, generation, refused = self._generate()
            state.turns += 1
            state.cancel_ack = state.cancel_ack or bool(generation.cancel_acknowledged)
            if generation.stop_reason == "cancelled":
                return Ending("cancelled")
            bodies = self._calls_in(text)
            if refused is not None and not bodies:
                bodies = [text]  # the call was refused before it showed: still one call
            if not bodies:
                self.conversation.append("assistant", text)
                return Ending("completed", text=text)
            self.conversation.append("assistant", _assistant_text(text, bodies,
                                                                  forced=self._forced_now()))
            for i, body in enumerate(bodies):
                last = i == len(bodies) - 1
                state.queue.append(self._record(body, refused if last else None))
            if generation.cancel_acknowledged or self._stopped():
                return Ending("cancelled")  # the calls never start

    def _stopped(self) -> bool:
        """True once cancelled; an expired deadline raises instead."""
        if self.seg.deadline_hit:
            raise DeadlineError(
                f"total timeout of {self.seg.timeout.total} s expired", limit="total"
            )
        return bool(self.seg.token.cancelled())

    def _forced_now(self) -> bool:
        """True for the turn just generated when it was forced (the first)."""
        return bool(self.config.forced_tools) and self.state.turns <= 1

    def _calls_in(self, text: str) -> list[str]:
        if self.config.tool_choice == "none":
            return []
        if self._forced_now():
            return [text.strip()]
        return split_calls(text)[1]

    # -- one model turn ---------------------------------------------------
    def _generate(self) -> tuple[str, GenerationLike, OutputValidationError | None]:
        """One model turn: its text, the generation, and the error that ended
        a constrained generation early (the engine refused the output, or
        max_tokens cut a call short), if any."""
        config, seg = self.config, self.seg
        forced = self.state.turns == 0 and bool(config.forced_tools)
        constraint = self._constraint(forced)
        prompt = config.model.render_chat(self.conversation.snapshot(), deadline=seg.deadline)
        extra: dict[str, Any] = {} if constraint is None else {"constraint": constraint}

        def attempt() -> GenerationLike:
            left = seg.deadline.remaining()
            if left is not None and left <= 0:
                raise DeadlineError("total timeout expired before a generation", limit="total")
            timeout = Timeout(connect=seg.timeout.connect, read=seg.timeout.read, total=left)
            return config.model.generate(
                prompt, max_tokens=config.max_tokens, sampling=config.sampling,
                timeout=timeout, cancel=seg.token,
                stop=(RESULT_OPEN,) if config.offered_tools and not forced else (),
                n=config.n, images=self.state.images, **extra,
            )

        generation = config.retry.call(
            attempt, deadline=seg.deadline, sleep=seg.sleep, should_stop=seg.token.cancelled
        )
        refused: OutputValidationError | None = None
        visible = self._visible(forced)
        try:
            for piece in generation:
                if visible is not None:
                    self._show(visible.feed(piece.text))
            if visible is not None:
                self._show(visible.end())
        except OutputValidationError as exc:
            if constraint is None:
                raise
            refused = exc
        finally:
            generation.close()
        return generation.text, generation, refused

    def _visible(self, forced: bool) -> VisibleText | None:
        """The filter of this turn's TextDelta events; None when nobody
        listens or nothing of the turn is text (a forced call)."""
        if self.seg.on_event is None or forced:
            return None
        return _AllText() if self.config.tool_choice == "none" else VisibleText()

    def _show(self, text: str) -> None:
        if text:
            self.seg.emit(TextDelta(text))

    def _report(self) -> None:
        """ToolCallFinished for the calls that reached their final status."""
        for event in self.state.finished_events():
            self.seg.emit(event)

    def _constraint(self, forced: bool) -> Constraint | None:
        """The grammar of this turn (see the module docstring)."""
        config = self.config
        grammar = supports_grammar(config.model)
        if forced:
            if not grammar:
                raise CapabilityError(
                    f"tool_choice={config.tool_choice!r} forces a tool call, which needs an "
                    "engine with grammar support; this model's engine has none (its "
                    f"capabilities: {_capabilities(config.model)})")
            return config.forced_constraint
        return config.lazy_constraint if grammar else None

    def _record(self, body: str, refused: OutputValidationError | None = None) -> int:
        """Adds a ToolCall for one call the model wrote; returns its index.
        `refused`: the engine refused this call as it was written."""
        call_id = "call_" + secrets.token_hex(8)
        if refused is not None:
            self.state.calls.append(ToolCall(
                call_id=call_id, tool=peek_name(body), raw=body, status="invalid",
                error=arguments_error(refused)))
            return len(self.state.calls) - 1
        parsed = parse_envelope(body)
        tool = self.config.tools.get(parsed.name) if parsed.name is not None else None
        error = parsed.error
        if error is None and tool is None:
            error = OutputValidationError(f"there is no tool named {parsed.name!r}")
        if error is None and tool is not None and parsed.arguments is not None:
            try:
                validate(parsed.arguments, tool.parameters)
            except OutputValidationError as exc:
                error = exc
        self.state.calls.append(ToolCall(
            call_id=call_id, tool=parsed.name, raw=body, arguments=parsed.arguments,
            status="invalid" if error is not None else "queued", error=error,
        ))
        return len(self.state.calls) - 1

    # -- the calls of the current turn ------------------------------------
    def _drain(self) -> Ending | None:
        state = self.state
        while state.queue:
            self._report()
            index = state.queue[0]
            call = state.calls[index]
            if call.status == "invalid":
                self._answer(call, _error_of(call.error))
                state.queue.pop(0)
                continue
            if self._stopped():
                return Ending("cancelled")  # cancelled before the tool starts
            tool = self.config.tools[str(call.tool)]
            confirmed_by: str | None = None
            if tool.needs_confirmation:
                decided = self._confirmation(index, tool)
                if isinstance(decided, Ending):
                    return decided
                if decided is None:  # rejected: it never runs
                    state.queue.pop(0)
                    continue
                confirmed_by = decided
            stop = self._execute(index, tool, confirmed_by)
            if stop is not None:
                return stop
            state.queue.pop(0)
        self._report()
        if state.results:
            self.conversation.append("user", "\n".join(state.results))
            state.results.clear()
        return None

    def _confirmation(self, index: int, tool: Tool) -> Ending | str | None:
        """The person who confirmed, None when rejected, or an Ending that
        pauses the run until a person decides."""
        state, call = self.state, self.state.calls[index]
        proposal = state.proposal
        if proposal is None or proposal.call_id != call.call_id:
            proposal = Proposal(tool=tool.name, arguments=call.arguments or {},
                                call_id=call.call_id, owner=self.owner)
            state.proposal = proposal
            self._ask_policy(proposal, tool)
        decision = proposal.status
        state.calls[index] = call = replace(call, policy_decision=proposal.policy_decision)
        if decision == "pending":
            state.calls[index] = replace(call, status="awaiting_confirmation")
            proposal._offer()
            return Ending("awaiting_confirmation", proposal=proposal)
        state.proposal = None
        if decision == "voided":
            return Ending("cancelled")
        if decision == "rejected":
            state.calls[index] = call = replace(call, status="rejected")
            reason = proposal.reason or "rejected"
            self._answer(call, error_payload("rejected", f"not run: {reason}"))
            return None
        return str(proposal.confirmed_by)

    def _ask_policy(self, proposal: Proposal, tool: Tool) -> None:
        """Asks the policy, which sees a read-only view (it cannot approve)."""
        policy = self.config.policy
        if policy is None:
            return
        decision = policy(proposal._view(tool))
        if decision not in ("allow", "deny", None):
            raise InvalidArgumentError(
                f"a policy answers 'allow', 'deny' or None, got {decision!r}"
            )
        proposal._record_policy(decision)

    def _execute(self, index: int, tool: Tool, confirmed_by: str | None) -> Ending | None:
        """Runs one call's handler in a thread of its own and waits for it, at
        most until the total deadline: past it the call is abandoned (its
        ctx.cancelled() turns true, its late result is never read) and the
        run fails with DeadlineError at once.  A cancel is cooperative: the
        handler sees the flag, the run waits for it (still bounded by the
        deadline) and discards its result."""
        seg, state = self.seg, self.state
        seg.deadline.check()  # no tool starts after the total deadline
        call = replace(state.calls[index], started=True, confirmed_by=confirmed_by)
        state.calls[index] = call
        ctx = ToolContext(tool=tool.name, call_id=call.call_id, cancel=seg.token,
                          confirmed_by=confirmed_by, remaining=seg.deadline.remaining)
        arguments = copy.deepcopy(call.arguments or {})
        handler = HandlerCall(lambda: tool.invoke(arguments, ctx), tool.name)
        try:
            if seg.on_event is not None:  # once it has started (a listener cannot delay it)
                seg.emit(ToolCallStarted(call.call_id, tool.name,
                                         copy.deepcopy(call.arguments or {})))
            finished = handler.wait(seg.deadline.remaining())
        except BaseException:  # KeyboardInterrupt, a listener's error: the handler must stop too
            seg.token.cancel()
            raise
        if not finished:
            seg.deadline_hit = True
            seg.token.cancel()  # the handler's ctx.cancelled() turns true
            state.calls[index] = replace(call, status="abandoned")
            raise DeadlineError(
                f"total timeout of {seg.timeout.total} s expired while tool {tool.name!r} was "
                "running: the call was abandoned", limit="total")
        error, value = handler.error, handler.value
        if error is not None and not isinstance(error, Exception):
            raise error  # SystemExit, KeyboardInterrupt, ... from the handler: not a tool failure
        if seg.token.cancelled():  # started, then cancelled: the result is discarded
            state.calls[index] = replace(call, status="cancelled", error=error)
            self._stopped()  # raises DeadlineError when the deadline was the cause
            return Ending("cancelled")
        if error is not None:
            state.calls[index] = call = replace(call, status="failed", error=error)
            code = "cancelled" if isinstance(error, CancelledError) else "tool_error"
            self._answer(call, error_payload(code, f"{type(error).__name__}: {error}"))
            return None
        try:
            result_text = unicode_safe(result_json(value))
        except OutputValidationError as exc:  # not JSON, too deep, or contains itself
            state.calls[index] = call = replace(call, status="failed", error=exc)
            self._answer(call, error_payload(
                "invalid_result", f"the tool ran, but its result cannot be delivered: {exc}",
                exc.location))
            return None
        self._deliver(index, tool, value, result_text)
        seg.deadline.check()  # tool time counts against the total
        return None

    def _deliver(self, index: int, tool: Tool, value: Any, result_json: str) -> None:
        call = replace(self.state.calls[index], status="completed", result=value,
                       result_json=result_json)
        delivered = result_json
        if self.config.result_hook is not None:
            delivered = self.config.result_hook(call, delivered)
            if not isinstance(delivered, str):
                raise InvalidArgumentError(
                    f"the result_hook must return the text for the model (str), got "
                    f"{type(delivered).__name__}")
            if unicode_safe(delivered) != delivered:
                raise InvalidArgumentError(
                    "the result_hook returned text with a lone surrogate (not Unicode): "
                    f"{ascii(delivered[:80])}")
        delivered = self._fit(delivered)
        call = replace(call, delivered=delivered)
        self.state.calls[index] = call
        self.state.fields.extend(display_fields(tool, call))
        self._answer(call, delivered)

    def _answer(self, call: ToolCall, payload: str) -> None:
        self.state.results.append(result_block(call.call_id, call.tool or "", payload))

    # -- fitting results into the context ----------------------------------
    def _fit(self, text: str) -> str:
        budget = self._result_budget()
        if budget is None or len(text.encode("utf-8")) <= budget:
            return text  # a token covers at least one byte: it fits
        size = self._count(text)
        if size <= budget:
            return text
        marker = f"\n...[result cut to fit the context; {len(text)} characters in full]"
        keep = len(text) * budget // size
        while keep > 0 and self._count(text[:keep] + marker) > budget:
            keep = keep * 9 // 10
        return text[:keep] + marker

    def _result_budget(self) -> int | None:
        if self.config.max_result_tokens is not None:
            return self.config.max_result_tokens
        info = getattr(self.config.model, "info", None)
        length = getattr(info, "context_length", None)
        return int(length) // 4 if isinstance(length, int) and length > 0 else None

    def _count(self, text: str) -> int:
        tokenize = getattr(self.config.model, "tokenize", None)
        if tokenize is None:
            return len(text.encode("utf-8"))
        return len(tokenize(text, add_bos=False, special=False))


_RUN_ENDED = {"cancelled": "the run was cancelled", "failed": "the run failed"}


def close_turn(conversation: Conversation, state: RunState, reason: str) -> None:
    """Ends the current turn of a run that stops early (`reason`: its status)
    and tells the model what became of each call left: a call that never
    started did not run; one that started and was cancelled, or abandoned
    at the deadline, may have had its side effects, and its result was
    discarded — the model must not take it for "not run" and repeat a
    non-idempotent action blindly.  The conversation stays well formed for
    the next run."""
    ended = _RUN_ENDED.get(reason, f"the run ended ({reason})")
    for index in state.queue:
        call = state.calls[index]
        if call.status == "invalid":
            payload = _error_of(call.error)
        elif call.status == "abandoned":
            payload = error_payload("abandoned", (
                f"the call started, but {ended} (its total deadline passed) before it "
                "returned: it was abandoned, and its result will be discarded. It may still "
                "be running and may have had side effects: check before calling it again."))
        elif call.started:
            state.calls[index] = call = replace(call, status="cancelled")
            payload = error_payload("cancelled_after_start", (
                f"the call started, then {ended}: its result was discarded. It may have had "
                "side effects: check before calling it again."))
        else:
            state.calls[index] = call = replace(call, status="cancelled")
            payload = error_payload(reason, f"not run: {ended}")
        state.results.append(result_block(call.call_id, call.tool or "", payload))
    state.queue.clear()
    if state.proposal is not None:
        state.proposal._void()
        state.proposal = None
    if state.results:
        conversation.append("user", "\n".join(state.results))
        state.results.clear()


class _AllText(VisibleText):
    """The TextDelta filter of turns without tools: all text is shown."""

    def feed(self, text: str) -> str:
        return text

    def end(self) -> str:
        return ""


def _error_of(error: BaseException | None) -> str:
    location = getattr(error, "location", None)
    code = getattr(error, "code", "invalid_call")
    return error_payload(str(code), str(error), location)


def _assistant_text(text: str, bodies: list[str], *, forced: bool) -> str:
    """What the conversation keeps of a turn with calls: up to the last call."""
    if forced:
        return f"{CALL_OPEN}{bodies[0]}{CALL_CLOSE}"
    end = text.rfind(CALL_CLOSE)
    return text[: end + len(CALL_CLOSE)] if end >= 0 else text


def _capabilities(model: object) -> str:
    """What a model lists as its capabilities, for a message."""
    listed = getattr(model, "capabilities", None)
    if listed is None:
        return "not listed"
    try:
        return ", ".join(str(c) for c in listed) or "none"
    except TypeError:
        return "not listed"
