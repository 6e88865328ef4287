"""Runs a reproducer in a child Python, so a crash (SIGSEGV, SIGBUS) or a
hang fails one test with its output instead of taking pytest down."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def sigint_as_at_a_terminal() -> None:
    """For a child's preexec_fn: SIGINT back to its default.  A test run
    started from a background job inherits SIGINT ignored, and a Python
    started so installs no KeyboardInterrupt handler: nothing to test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def run_child(code: str, *, prelude: str = "", timeout: float = 120,
              args: tuple[str, ...] = ()) -> str:
    """Runs `prelude` then `code` (each dedented) in a new interpreter with
    the same adil; fails
    on a non-zero exit, a signal or a hang past `timeout` seconds.  Returns
    its stdout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "tests"), *[p for p in sys.path if p]])
    try:
        done = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(prelude) + textwrap.dedent(code), *args],
            capture_output=True, text=True, timeout=timeout, env=env,
            preexec_fn=sigint_as_at_a_terminal)
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(
            f"the child hung for {timeout} s\nstdout: {exc.stdout!r}\nstderr: {exc.stderr!r}"
        ) from exc
    assert done.returncode == 0, (
        f"the child exited with {done.returncode}\nstdout:\n{done.stdout}\n"
        f"stderr:\n{done.stderr}")
    return done.stdout
