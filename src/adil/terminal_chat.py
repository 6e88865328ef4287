"""``adil chat``: a conversation with a model at the terminal.

Each answer streams as it is generated.  Without ``--tools`` the messages
go to ``model.chat(messages, stream=True)``; with ``--tools module.py`` an
:class:`adil.Agent` answers and may call the module's tools (every
:class:`adil.Tool` object in it, or its ``TOOLS`` list).  A call that needs
a person's confirmation is asked at the terminal: only ``y`` or ``yes``
approves it, anything else rejects it.  Display fields of tool results are
printed on lines of their own (``  [tool get_weather] city: "Oslo"``), apart
from the model's text; quoted text stays in quotes, as data.

Commands: /reset, /system TEXT, /save FILE, /help, /exit.

Ctrl-C while an answer streams stops that answer (the generation or the
agent is cancelled) and returns to the prompt; a second Ctrl-C (at the
prompt, or within 2 s of the first) leaves; so does Ctrl-D.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import importlib.util
import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any, Protocol, TextIO

from .errors import AdilError, InvalidArgumentError
from .sampling import Sampling
from .tools import Tool

__all__ = ["DOUBLE_INTERRUPT_S", "HELP", "load_tools", "run_terminal_chat"]

DOUBLE_INTERRUPT_S = 2.0  # a second Ctrl-C within this many seconds leaves

HELP = """\
/reset        forget the conversation
/system TEXT  set the system message (with --tools: the conversation starts over)
/save FILE    write the conversation to FILE (a JSON list of messages)
/help         this text
/exit         leave (also Ctrl-D, or Ctrl-C twice)
Ctrl-C while an answer streams stops it."""

_YES = {"y", "yes"}


class _Leave(KeyboardInterrupt):
    """The second Ctrl-C: leave the chat (a KeyboardInterrupt, so that code
    that cleans up on Ctrl-C does so on this one too)."""


class _Session(Protocol):
    """One way of answering: the model's chat, or an agent."""

    def answer(self, text: str) -> None: ...

    def reset(self) -> None: ...

    def set_system(self, text: str | None) -> None: ...

    def messages(self) -> list[dict[str, Any]]: ...


class _Terminal:
    """Reading lines and writing text; the one place that touches stdin."""

    def __init__(self, out: TextIO, read_line: Callable[[str], str]) -> None:
        self.out = out
        self.read_line = read_line

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def ask(self, prompt: str) -> str:
        return self.read_line(prompt)


# -- plain chat -------------------------------------------------------------------

class _ChatSession:
    """messages -> model.chat(messages, stream=True), one turn at a time."""

    def __init__(self, model: Any, terminal: _Terminal, *, system: str | None,
                 max_tokens: int, sampling: Sampling) -> None:
        self.model = model
        self.terminal = terminal
        self.system = system
        self.max_tokens = max_tokens
        self.sampling = sampling
        self.history: list[dict[str, Any]] = []

    def messages(self) -> list[dict[str, Any]]:
        head = [{"role": "system", "content": self.system}] if self.system else []
        return head + [dict(m) for m in self.history]

    def reset(self) -> None:
        self.history.clear()

    def set_system(self, text: str | None) -> None:
        self.system = text

    def answer(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})
        shown: list[str] = []
        message: dict[str, Any] | None = None
        stream: Any = None
        try:
            stream = self._stream(self.messages())
            for chunk in stream:
                shown.append(chunk.text)
                self.terminal.write(chunk.text)
            message = self._final_message(stream)
        finally:
            # Also on Ctrl-C or an error: the run is cancelled; a part that
            # was shown stays in the conversation (the person saw it), a turn
            # that showed nothing is dropped (so it cannot fail every later turn).
            if stream is not None:
                stream.close()
            if message is not None or shown:
                self.history.append(message or {"role": "assistant", "content": "".join(shown)})
            else:
                self.history.pop()
            self.terminal.write("\n")

    def _stream(self, messages: list[dict[str, Any]]) -> Any:
        chat = getattr(self.model, "chat", None)
        if chat is not None:
            return chat(messages, stream=True, max_tokens=self.max_tokens,
                        sampling=self.sampling)
        # Before Model.chat: the model's own template (never an invented one).
        return self.model.generate(self.model.render_chat(messages), max_tokens=self.max_tokens,
                                   sampling=self.sampling)

    @staticmethod
    def _final_message(stream: Any) -> dict[str, Any] | None:
        response = getattr(stream, "response", None)
        message = getattr(response, "message", None)
        if message is None:
            return None
        as_dict: dict[str, Any] = message.to_dict()
        return as_dict


# -- agent with tools ------------------------------------------------------------------

class _AgentSession:
    """An adil.Agent over the module's tools; proposals asked y/N."""

    def __init__(self, model: Any, tools: Sequence[Tool], terminal: _Terminal, *,
                 system: str | None, max_tokens: int, sampling: Sampling, user: str) -> None:
        self.model = model
        self.tools = tuple(tools)
        self.terminal = terminal
        self.max_tokens = max_tokens
        self.sampling = sampling
        self.user = user
        self.agent = self._new_agent(system)

    def _new_agent(self, system: str | None) -> Any:
        from .agent import Agent

        return Agent(self.model, self.tools, instructions=system or "",
                     max_tokens=self.max_tokens, sampling=self.sampling)

    def messages(self) -> list[dict[str, Any]]:
        return [dict(m) for m in self.agent.messages]

    def reset(self) -> None:
        self.agent.reset()

    def set_system(self, text: str | None) -> None:
        self.agent = self._new_agent(text)

    def answer(self, text: str) -> None:
        outcome = self._run(functools.partial(self._start, text))
        while outcome.status == "awaiting_confirmation" and outcome.proposal is not None:
            self._decide(outcome.proposal)
            outcome = self._run(functools.partial(self._start_resume, outcome.proposal))
        if outcome.status == "failed" and outcome.error is not None:
            raise outcome.error
        if outcome.status == "cancelled":
            self.terminal.write("[cancelled]\n")

    # The agent's stream API when it has one (text as it is generated), else
    # start() in a thread with the final text printed at the end.
    def _start(self, text: str) -> Any:
        stream = getattr(self.agent, "stream", None)
        return stream(text) if stream is not None else self.agent.start(text)

    def _start_resume(self, proposal: Any) -> Any:
        stream_resume = getattr(self.agent, "stream_resume", None)
        if stream_resume is not None:
            return stream_resume(proposal)
        return self.agent.start_resume(proposal)

    def _run(self, start: Callable[[], Any]) -> Any:
        running = start()
        try:
            if hasattr(running, "__iter__"):
                outcome = self._follow(running)
            else:
                while not running.wait(0.1):
                    pass
                outcome = running.result()
                if outcome.text:
                    self.terminal.write(outcome.text)
        except KeyboardInterrupt:
            self.agent.cancel()  # stops the generation, a tool not yet started, the proposal
            _finish_quietly(running)
            self.terminal.write("\n")
            raise
        if outcome.text or outcome.display_fields:
            self.terminal.write("\n")
        self._show_calls(outcome)
        return outcome

    def _follow(self, stream: Any) -> Any:
        from .agent import events

        outcome = None
        for event in stream:
            if isinstance(event, events.TextDelta):
                self.terminal.write(event.text)
            elif isinstance(event, events.RunFinished):
                outcome = event.outcome
        if outcome is None:
            outcome = stream.outcome
        return outcome

    def _show_calls(self, outcome: Any) -> None:
        """Display fields, one line per call, apart from the model's text;
        calls that did not complete, with their status."""
        by_call: dict[str, list[Any]] = {}
        for field in outcome.display_fields:
            by_call.setdefault(field.call_id, []).append(field)
        for call in outcome.tool_calls:
            fields = by_call.get(call.call_id)
            name = call.tool or "?"
            if fields:
                shown = "  ".join(f"{f.name}: {f.render()}" for f in fields)
                self.terminal.write(f"  [tool {name}] {shown}\n")
            elif call.status not in ("completed", "awaiting_confirmation", "queued"):
                self.terminal.write(f"  [tool {name}: {call.status}]\n")

    def _decide(self, proposal: Any) -> None:
        arguments = ", ".join(f"{k}={v!r}" for k, v in proposal.arguments.items())
        question = f"Run {proposal.tool}({arguments})? [y/N] "
        try:
            reply = self.terminal.ask(question)
        except EOFError:
            reply = ""
        except KeyboardInterrupt:
            proposal.reject(reason="the person pressed Ctrl-C instead of answering")
            self.terminal.write("\n")
            raise
        if reply.strip().lower() in _YES:
            proposal.approve(confirmed_by=self.user)
        else:
            proposal.reject(reason="the person declined at the terminal")


def _finish_quietly(running: Any) -> None:
    """Waits for a cancelled run to end, so the agent is free for the next
    one (a second Ctrl-C meanwhile propagates: it leaves)."""
    if hasattr(running, "__iter__"):
        for _ in running:
            pass
        close = getattr(running, "close", None)
        if close is not None:
            close()
    else:
        running.result()


# -- the loop ---------------------------------------------------------------------------

class _Chat:
    def __init__(self, session: _Session, terminal: _Terminal,
                 clock: Callable[[], float]) -> None:
        self.session = session
        self.terminal = terminal
        self.clock = clock
        self.last_interrupt = -float("inf")
        self.armed = False  # a Ctrl-C since the last line the person sent

    def on_sigint(self, signum: int, frame: FrameType | None) -> None:
        now = self.clock()
        previous, self.last_interrupt = self.last_interrupt, now
        if now - previous < DOUBLE_INTERRUPT_S:
            raise _Leave
        raise KeyboardInterrupt

    def loop(self) -> int:
        self.terminal.write("adil chat: /help for commands, Ctrl-D to leave\n")
        while True:
            try:
                line = self.terminal.ask("> ")
            except EOFError:
                self.terminal.write("\n")
                return 0
            except _Leave:
                self.terminal.write("\n")
                return 0
            except KeyboardInterrupt:
                if self.armed:
                    self.terminal.write("\n")
                    return 0
                self.armed = True
                self.terminal.write("\n(Ctrl-C again or Ctrl-D to leave)\n")
                continue
            self.armed = False
            try:
                if not self.dispatch(line):
                    return 0
            except _Leave:
                self.terminal.write("\n")
                return 0
            except KeyboardInterrupt:
                self.armed = True
                self.terminal.write("[stopped]\n")

    def dispatch(self, line: str) -> bool:
        """Runs one line; False to leave."""
        text = line.strip()
        if not text:
            return True
        if text.startswith("/"):
            return self.command(text)
        try:
            self.session.answer(text)
        except AdilError as error:
            message = " ".join(str(error).split())
            self.terminal.write(f"\nadil: error [{error.code}]: {message}\n")
        return True

    def command(self, text: str) -> bool:
        name, _, rest = text.partition(" ")
        rest = rest.strip()
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            self.terminal.write(HELP + "\n")
        elif name == "/reset":
            self.session.reset()
            self.terminal.write("(conversation cleared)\n")
        elif name == "/system":
            self.session.set_system(rest or None)
            self.terminal.write("(system message set)\n" if rest else
                                "(system message removed)\n")
        elif name == "/save":
            self.save(rest)
        else:
            self.terminal.write(f"unknown command {name}; /help lists them\n")
        return True

    def save(self, file: str) -> None:
        if not file:
            self.terminal.write("usage: /save FILE\n")
            return
        try:
            Path(file).write_text(json.dumps(self.session.messages(), indent=2,
                                             ensure_ascii=False) + "\n", encoding="utf-8")
        except OSError as error:
            self.terminal.write(f"cannot write {file}: {error.strerror}\n")
            return
        self.terminal.write(f"(saved to {file})\n")


# -- tools from a file ------------------------------------------------------------------

def load_tools(file: str) -> list[Tool]:
    """The tools of the Python file `file`: its ``TOOLS`` list if it has
    one, else every :class:`adil.Tool` object in the module, in the order
    they are defined."""
    module = _import_file(file)
    listed = getattr(module, "TOOLS", None)
    if listed is not None:
        if not isinstance(listed, (list, tuple)) or not all(isinstance(t, Tool)
                                                             for t in listed):
            raise InvalidArgumentError(f"{file}: TOOLS must be a list of adil.Tool objects")
        tools = list(listed)
    else:
        tools = [value for value in vars(module).values() if isinstance(value, Tool)]
    if not tools:
        raise InvalidArgumentError(f"{file} defines no adil.Tool (decorate functions with "
                                   "@adil.tool, or list them in TOOLS)")
    return tools


def _import_file(file: str) -> ModuleType:
    path = Path(file)
    if not path.is_file():
        raise InvalidArgumentError(f"--tools {file!r}: no such file")
    spec = importlib.util.spec_from_file_location(f"adil_chat_tools_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise InvalidArgumentError(f"--tools {file!r}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # the person's own code, as `python module.py` would
    return module


def _user() -> str:
    try:
        return getpass.getuser()
    except (OSError, KeyError, ImportError):
        return "terminal user"


def _input_with_editing() -> Callable[[str], str]:
    try:
        import readline  # noqa: F401 - line editing and history for input()
    except ImportError:
        return input

    def read_line(prompt: str) -> str:
        _drain_terminal()
        return input(prompt)

    return read_line


def _drain_terminal() -> None:
    """Waits until the terminal took the text written to it.  readline
    waits for that too before it watches the keys, and a Ctrl-C during its
    wait is seen only at the next key (Python runs signal handlers when
    readline's select() is interrupted, not before): here the wait is
    interruptible, so a quick second Ctrl-C after an answer still leaves."""
    try:
        import termios
    except ImportError:
        return  # not POSIX
    try:
        sys.stdout.flush()
        termios.tcdrain(sys.stdin.fileno())
    except (AttributeError, OSError, ValueError, termios.error):
        pass  # not a terminal: nothing to wait for


def run_terminal_chat(
    model: Any,
    *,
    tools_file: str | None = None,
    system: str | None = None,
    max_tokens: int = 512,
    sampling: Sampling | None = None,
    out: TextIO | None = None,
    read_line: Callable[[str], str] | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Runs the chat until the person leaves; returns the exit status."""
    from .sampling import DEFAULT_SAMPLING

    terminal = _Terminal(out or sys.stdout, read_line or _input_with_editing())
    chosen = sampling if sampling is not None else DEFAULT_SAMPLING
    session: _Session
    if tools_file is not None:
        session = _AgentSession(model, load_tools(tools_file), terminal, system=system,
                                max_tokens=max_tokens, sampling=chosen, user=_user())
    else:
        session = _ChatSession(model, terminal, system=system, max_tokens=max_tokens,
                               sampling=chosen)
    chat = _Chat(session, terminal, clock)
    with _sigint(chat.on_sigint):
        return chat.loop()


@contextlib.contextmanager
def _sigint(handler: Callable[[int, FrameType | None], None]) -> Iterator[None]:
    """`handler` for SIGINT meanwhile (main thread only: elsewhere signals
    cannot be handled), the previous one restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
