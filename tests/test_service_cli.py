"""``adil serve`` as a process: the first stdout line names the address,
requests are served, SIGTERM and Ctrl-C (SIGINT) stop it with status 0, a
non-loopback bind needs --i-know-this-is-public, the API key may come from
$ADIL_API_KEY.  Loopback only, bounded waits."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import pytest

import adil

WAIT = 30.0


@contextmanager
def serving(script: str, *args: str, env: dict[str, str] | None = None
            ) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "adil", "serve", "--library", adil.STUB_LIBRARY, "--model", script,
         "--port", "0", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        first = process.stdout.readline().strip()
        assert first.startswith("listening on http://127.0.0.1:"), first
        yield process, first[len("listening on "):]
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate(timeout=WAIT)


def wait_ready(url: str, headers: dict[str, str] | None = None) -> None:
    with httpx.Client(base_url=url, timeout=WAIT, headers=headers) as http:
        for _ in range(int(WAIT * 20)):
            if http.get("/health").json()["status"] != "loading":
                return
            threading.Event().wait(0.05)
        raise AssertionError("the model never loaded")


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_serve_runs_and_stops_cleanly(write_script: Callable[..., str],
                                      stop_signal: signal.Signals) -> None:
    script = write_script({"turns": [{"text": "served"}]})
    with serving(script) as (process, url):
        wait_ready(url)
        with httpx.Client(base_url=url, timeout=WAIT) as http:
            result = http.post("/adil/v1/generate", json={"prompt": "x"}).json()
        assert result["text"] == "served"
        process.send_signal(stop_signal)
        assert process.wait(WAIT) == 0
        assert process.stderr is not None
        err = process.stderr.read()
    assert "loading" in err and "stopped" in err and "Traceback" not in err


def test_serve_api_key_from_environment(write_script: Callable[..., str]) -> None:
    script = write_script({"turns": [{"text": "ok"}]})
    env = {**os.environ, "ADIL_API_KEY": "from-env"}
    with serving(script, env=env) as (process, url):
        with httpx.Client(base_url=url, timeout=WAIT) as http:
            assert http.get("/health").status_code == 401
        wait_ready(url, {"authorization": "Bearer from-env"})
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0


def test_serve_public_bind_needs_the_flag(write_script: Callable[..., str]) -> None:
    script = write_script({"turns": [{"text": "ok"}]})
    done = subprocess.run(
        [sys.executable, "-m", "adil", "serve", "--library", adil.STUB_LIBRARY, "--model", script,
         "--host", "0.0.0.0", "--port", "0"], capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2
    assert done.stdout == ""
    assert "--i-know-this-is-public" in done.stderr


def test_serve_failed_load_keeps_serving(tmp_path: object) -> None:
    missing = os.path.join(str(tmp_path), "missing.json")
    with serving(missing) as (process, url):
        wait_ready(url)
        with httpx.Client(base_url=url, timeout=WAIT) as http:
            health = http.get("/health").json()
        assert health["status"] == "failed"
        assert health["error"]["code"] == "model_file_unreadable"
        process.send_signal(signal.SIGTERM)
        assert process.wait(WAIT) == 0


def test_serve_help_lists_serve() -> None:
    done = subprocess.run([sys.executable, "-m", "adil", "serve", "--help"],
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 0
    assert "--allow-origin" in done.stdout and "--i-know-this-is-public" in done.stdout
