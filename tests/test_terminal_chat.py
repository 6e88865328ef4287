"""``adil chat`` in a real terminal: tmux runs ``python -m adil chat`` on the
stub engine with scripted answers; the tests type into it (send-keys) and
read the screen (capture-pane).  Skipped when tmux is not installed."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import adil
from adil.terminal_chat import load_tools

ROOT = Path(__file__).resolve().parent.parent
TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install "
                                                     "tmux); the terminal tests drive it")
WAIT_S = 60.0  # generous: a slow CI machine; never a timing assertion

TOOLS_MODULE = '''
import json
import os

import adil


@adil.tool(effect="read_only", display={"temp_c": "number", "city": "quoted_text"})
def get_weather(city: str) -> dict:
    """Current weather of a city.

    Args:
        city: The city name.
    """
    return {"temp_c": 21.5, "city": city}


@adil.tool(effect="state_changing", sends_out=True, confirmation_required=True)
def send_email(to: str, body: str, ctx: adil.tools.ToolContext) -> dict:
    """Sends an email."""
    with open(os.environ["SENT_LOG"], "a") as log:
        log.write(json.dumps({"to": to, "by": ctx.confirmed_by}) + "\\n")
    return {"status": "sent"}
'''


class Terminal:
    """One tmux server (its own socket) running one command."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        assert TMUX is not None
        self.socket = f"adil-test-{uuid.uuid4().hex[:12]}"
        self.target = "chat"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        # The shell prints the exit status and stays, so the screen can be read.
        shell = (f"cd {shlex.quote(str(cwd))} && env {exports} {shlex.join(command)}; "
                 f"echo EXITED rc=$?; sleep 600")
        self.tmux("new-session", "-d", "-s", self.target, "-x", "120", "-y", "40", shell)

    def tmux(self, *args: str) -> str:
        assert TMUX is not None
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True,
                              text=True, timeout=30, check=True)
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", self.target)

    def send(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", self.target, *keys)

    def type(self, line: str) -> None:
        self.tmux("send-keys", "-t", self.target, "-l", line)
        self.send("Enter")

    def wait_for(self, predicate: Callable[[str], bool], what: str, poll: float = 0.1) -> str:
        deadline = time.monotonic() + WAIT_S
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"waited {WAIT_S} s for {what}; the screen:\n{screen}")
            time.sleep(poll)

    def wait_text(self, text: str, count: int = 1, poll: float = 0.1) -> str:
        return self.wait_for(lambda s: s.count(text) >= count, f"{text!r} x{count}", poll)

    def pid(self) -> int:
        """The command's process: the child of the pane's shell (Linux /proc;
        the test is skipped without it)."""
        shell = self.tmux("display-message", "-p", "-t", self.target, "#{pane_pid}").strip()
        children = Path(f"/proc/{shell}/task/{shell}/children")
        if not children.exists():
            pytest.skip("needs /proc/PID/task/TID/children (Linux) to find the chat's process")
        return int(children.read_text().split()[0])

    def wait_handled(self, pid: int, signum: int, screen_text: str) -> None:
        """Until process `pid` took `signum` and ran on for a moment (its
        main thread had 1 ms more of CPU; or `screen_text` showed): a signal
        sent while the last one is pending in the kernel, or before Python
        ran its handler for it, is merged into it."""
        bit = 1 << (signum - 1)
        schedstat = Path(f"/proc/{pid}/task/{pid}/schedstat")
        ran_from: int | None = None
        deadline = time.monotonic() + WAIT_S
        while True:
            if ran_from is None:
                fields = dict(line.split(":", 1) for line in
                              Path(f"/proc/{pid}/status").read_text().splitlines()
                              if ":" in line)
                if not (int(fields["ShdPnd"], 16) | int(fields["SigPnd"], 16)) & bit:
                    ran_from = int(schedstat.read_text().split()[0])  # ns on a CPU
            elif int(schedstat.read_text().split()[0]) - ran_from >= 1_000_000:
                return
            if screen_text in self.screen():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"signal {signum} not handled after {WAIT_S} s")
            time.sleep(0.001)

    def prompts(self) -> int:
        return sum(1 for line in self.screen().splitlines() if line.startswith("> "))

    def close(self) -> None:
        subprocess.run([TMUX or "tmux", "-L", self.socket, "kill-server"], capture_output=True,
                       timeout=30, check=False)


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[Callable[..., Terminal]]:
    opened: list[Terminal] = []

    def start(script: dict[str, Any], *args: str) -> Terminal:
        script_file = tmp_path / f"script{len(opened)}.json"
        script_file.write_text(json.dumps(script))
        env = {"PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                              os.environ.get("PYTHONPATH", "")]),
               "SENT_LOG": str(tmp_path / "sent.log"), "USER": "tester", "TERM": "xterm"}
        if "ADIL_LIBRARY_DIR" in os.environ:
            env["ADIL_LIBRARY_DIR"] = os.environ["ADIL_LIBRARY_DIR"]
        command = [sys.executable, "-m", "adil", "chat", "--library", adil.STUB_LIBRARY,
                   "--model", str(script_file), *args]
        terminal = Terminal(command, env, tmp_path)
        opened.append(terminal)
        terminal.wait_text("adil chat:")
        return terminal

    yield start
    for terminal in opened:
        terminal.close()


@needs_tmux
def test_turns_reset_and_save(chat: Callable[..., Terminal], tmp_path: Path) -> None:
    term = chat({"turns": [{"text": "First answer."}, {"text": "Second answer."},
                           {"text": "After reset."}]})
    term.type("hello")
    term.wait_text("First answer.")
    term.type("and again")
    term.wait_text("Second answer.")
    term.type("/save saved.json")
    term.wait_text("(saved to saved.json)")
    saved = json.loads((tmp_path / "saved.json").read_text())
    assert [(m["role"], m["content"]) for m in saved] == [
        ("user", "hello"), ("assistant", "First answer."),
        ("user", "and again"), ("assistant", "Second answer.")]
    term.type("/reset")
    term.wait_text("(conversation cleared)")
    term.type("/system Be brief.")
    term.wait_text("(system message set)")
    term.type("third")
    term.wait_text("After reset.")
    term.type("/save after.json")
    term.wait_text("(saved to after.json)")
    after = json.loads((tmp_path / "after.json").read_text())
    assert [(m["role"], m["content"]) for m in after] == [
        ("system", "Be brief."), ("user", "third"), ("assistant", "After reset.")]
    term.type("/help")
    term.wait_text("/save FILE")
    term.type("/exit")
    term.wait_text("EXITED rc=0")


@needs_tmux
def test_ctrl_c_stops_an_answer_then_the_next_turn_is_normal(
    chat: Callable[..., Terminal], tmp_path: Path
) -> None:
    long_answer = "word " * 2000  # 20 ms a byte: minutes, unless stopped
    term = chat({"turns": [{"text": long_answer}, {"text": "Short."}], "token_delay_ms": 20})
    term.type("talk a lot")
    term.wait_text("word word word")
    term.send("C-c")
    term.wait_text("[stopped]")
    time.sleep(2.5)  # past the double-press window: the next Ctrl-C would be a first one
    term.type("now briefly")
    term.wait_text("Short.")
    term.type("/save s.json")
    term.wait_text("(saved to s.json)")
    saved = json.loads((tmp_path / "s.json").read_text())
    assert [m["role"] for m in saved] == ["user", "assistant", "user", "assistant"]
    assert saved[1]["content"].startswith("word word") and len(saved[1]["content"]) < 10000
    assert saved[3]["content"] == "Short."
    assert "EXITED" not in term.screen()
    term.send("C-d")
    term.wait_text("EXITED rc=0")


@needs_tmux
def test_double_ctrl_c_at_the_prompt_leaves(chat: Callable[..., Terminal]) -> None:
    term = chat({"turns": [{"text": "Hi."}]})
    term.send("C-c")
    term.wait_text("Ctrl-C again")
    term.send("C-c")
    screen = term.wait_text("EXITED rc=")
    assert "EXITED rc=0" in screen and "Traceback" not in screen


@needs_tmux
def test_double_ctrl_c_during_an_answer_leaves(chat: Callable[..., Terminal]) -> None:
    term = chat({"turns": [{"text": "word " * 2000}], "token_delay_ms": 20})
    term.type("talk")
    term.wait_text("word word word")
    term.send("C-c")
    # Apart by a moment: the second comes once the first stopped the answer
    # (both within one engine step: the test below).
    time.sleep(0.3)
    term.send("C-c")
    screen = term.wait_text("EXITED rc=")
    assert "EXITED rc=0" in screen and "Traceback" not in screen


@needs_tmux
def test_double_ctrl_c_back_to_back_during_an_answer_leaves(
    chat: Callable[..., Terminal]
) -> None:
    """Two presses milliseconds apart: each reaches the chat's handler
    (adil.generation hands every SIGINT of a step on; the prompt drains the
    terminal where a signal interrupts the wait, before readline's own
    wait, which would hold it until the next key).
    The second is sent once the process took the first: a SIGINT sent
    while one is still pending in the kernel is merged into it, and so is
    one that comes before Python ran its handler for the last (a loaded
    machine that has not run the process meanwhile): no program sees two.
    A single send-keys C-c C-c is one SIGINT too (the terminal flushes its
    input on ^C)."""
    term = chat({"turns": [{"text": "word " * 2000}], "token_delay_ms": 20})
    term.type("talk")
    term.wait_text("word word word")
    pid = term.pid()
    term.send("C-c")
    term.wait_text("^C", poll=0.002)  # the terminal echoes ^C as it raises SIGINT
    term.wait_handled(pid, signal.SIGINT, "[stopped]")
    term.send("C-c")
    screen = term.wait_text("EXITED rc=")
    assert "EXITED rc=0" in screen and "Traceback" not in screen


@needs_tmux
def test_tools_display_fields_and_a_proposal_answered_n_then_y(
    chat: Callable[..., Terminal], tmp_path: Path
) -> None:
    (tmp_path / "my_tools.py").write_text(TOOLS_MODULE)
    email = {"name": "send_email", "arguments": {"to": "a@b", "body": "Noon?"}}
    term = chat({"turns": [
        {"text": "Checking. ", "tool_call": {"name": "get_weather",
                                             "arguments": {"city": "Oslo"}}},
        {"text": "It is 21.5 degrees in Oslo."},
        {"text": "", "tool_call": email},
        {"text": "Not sent."},
        {"text": "", "tool_call": email},
        {"text": "Sent now."},
    ]}, "--tools", "my_tools.py")
    term.type("weather in Oslo?")
    screen = term.wait_text("It is 21.5 degrees in Oslo.")
    assert '  [tool get_weather] temp_c: 21.5  city: "Oslo"' in screen
    term.type("mail a@b")
    term.wait_text("Run send_email(to='a@b', body='Noon?')? [y/N]")
    term.type("n")
    term.wait_text("Not sent.")
    assert not (tmp_path / "sent.log").exists()
    term.type("mail a@b, really")
    term.wait_text("Run send_email(to='a@b', body='Noon?')? [y/N]", count=2)
    term.type("y")
    term.wait_text("Sent now.")
    sent = [json.loads(line) for line in (tmp_path / "sent.log").read_text().splitlines()]
    assert sent == [{"to": "a@b", "by": "tester"}]
    term.send("C-d")
    screen = term.wait_text("EXITED rc=0")
    assert "Traceback" not in screen


# -- without a terminal ---------------------------------------------------------------

def test_load_tools_takes_tool_objects_or_a_tools_list(tmp_path: Path) -> None:
    module = tmp_path / "tools_a.py"
    module.write_text(TOOLS_MODULE)
    assert [t.name for t in load_tools(str(module))] == ["get_weather", "send_email"]
    listed = tmp_path / "tools_b.py"
    listed.write_text(TOOLS_MODULE + "\nTOOLS = [get_weather]\n")
    assert [t.name for t in load_tools(str(listed))] == ["get_weather"]
    empty = tmp_path / "tools_c.py"
    empty.write_text("x = 1\n")
    with pytest.raises(adil.InvalidArgumentError, match="defines no adil.Tool"):
        load_tools(str(empty))
    with pytest.raises(adil.InvalidArgumentError, match="no such file"):
        load_tools(str(tmp_path / "missing.py"))


def test_chat_without_a_terminal_reads_lines_until_eof(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "One."}, {"text": "Two."}]}))
    done = subprocess.run(
        [sys.executable, "-m", "adil", "chat", "--library", adil.STUB_LIBRARY, "--model",
         str(script)], input="hi\n/nonsense\nmore\n", capture_output=True, text=True,
        timeout=120)
    assert done.returncode == 0, done.stderr
    assert "One." in done.stdout and "Two." in done.stdout
    assert "unknown command /nonsense" in done.stdout


def test_chat_with_a_bad_tools_file_is_a_one_line_error(tmp_path: Path) -> None:
    script = tmp_path / "s.json"
    script.write_text(json.dumps({"turns": [{"text": "One."}]}))
    done = subprocess.run(
        [sys.executable, "-m", "adil", "chat", "--library", adil.STUB_LIBRARY, "--model",
         str(script), "--tools", str(tmp_path / "none.py")], input="", capture_output=True,
        text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("adil: error [invalid_argument]: ")


def scripted_lines(lines: list[str]) -> Callable[[str], str]:
    """read_line for run_terminal_chat: the lines, then EOF; prompts echoed
    into `asked`."""
    pending = list(lines)

    def read_line(prompt: str) -> str:
        scripted_lines.asked.append(prompt)  # type: ignore[attr-defined]
        if not pending:
            raise EOFError
        return pending.pop(0)

    scripted_lines.asked = []  # type: ignore[attr-defined]
    return read_line


@pytest.mark.parametrize("agent_stream", [True, False], ids=["agent.stream", "agent.start"])
def test_agent_session_in_process(
    stub_engine: adil.Engine, write_script: Callable[..., str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, agent_stream: bool
) -> None:
    import io

    from adil.agent import Agent
    from adil.terminal_chat import run_terminal_chat

    if not agent_stream:  # the agent API before streams: start() and the final text
        monkeypatch.delattr(Agent, "stream", raising=False)
        monkeypatch.delattr(Agent, "stream_resume", raising=False)
    elif not hasattr(Agent, "stream"):
        pytest.skip("this Agent has no stream()")
    (tmp_path / "my_tools.py").write_text(TOOLS_MODULE)
    monkeypatch.setenv("SENT_LOG", str(tmp_path / "sent.log"))
    email = {"name": "send_email", "arguments": {"to": "a@b", "body": "Hi"}}
    model = stub_engine.load_model(write_script({"turns": [
        {"text": "", "tool_call": email}, {"text": "Not sent."},
        {"text": "", "tool_call": email}, {"text": "Sent."}]}))
    out = io.StringIO()
    status = run_terminal_chat(model, tools_file=str(tmp_path / "my_tools.py"), out=out,
                               read_line=scripted_lines(["mail", "no", "mail", "YES"]))
    assert status == 0
    text = out.getvalue()
    assert "Not sent." in text and "Sent." in text
    assert "  [tool send_email: rejected]" in text
    asked = scripted_lines.asked  # type: ignore[attr-defined]
    assert asked.count("Run send_email(to='a@b', body='Hi')? [y/N] ") == 2
    sent = (tmp_path / "sent.log").read_text().splitlines()
    assert len(sent) == 1 and json.loads(sent[0])["to"] == "a@b"


def test_a_failed_turn_is_reported_and_left_out_of_the_conversation(
    stub_engine: adil.Engine, write_script: Callable[..., str], tmp_path: Path
) -> None:
    import io

    from adil.terminal_chat import run_terminal_chat

    model = stub_engine.load_model(write_script({
        "turns": [{"text": "Fine."}], "faults": [{"on_call": 1, "status": "context_length"}]}))
    out = io.StringIO()
    saved = tmp_path / "c.json"
    assert run_terminal_chat(model, out=out, system="Be brief.",
                             read_line=scripted_lines(["first", "second", f"/save {saved}"])) == 0
    assert "adil: error [context_length_exceeded]:" in out.getvalue()
    assert [(m["role"], m["content"]) for m in json.loads(saved.read_text())] == [
        ("system", "Be brief."), ("user", "second"), ("assistant", "Fine.")]
