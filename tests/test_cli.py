"""`adil info` reports the component set."""

from __future__ import annotations

import json
import subprocess
import sys

import adil


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adil", *args], capture_output=True, text=True)


def test_info_json_on_the_bundled_engine() -> None:
    result = run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["abi_major"] == 2 and info["abi"].startswith("2.")
    assert info["engine_name"] == "adil-cpu"
    assert info["host_name"] == "adil-python" and info["host_major"] == 2
    assert "cpu" in info["backends"]
    assert info["kernels"] in {"scalar", "avx2", "avx512"}
    assert not any("=" in feature for feature in info["cpu_features"])
    assert info["library"] == adil.ENGINE_LIBRARY


def test_info_text_on_the_stub() -> None:
    result = run_cli("info", "--library", adil.STUB_LIBRARY)
    assert result.returncode == 0, result.stderr
    assert "adil-stub" in result.stdout and "ABI" in result.stdout


def test_info_refusal_is_a_clean_error() -> None:
    result = run_cli("info", "--library", "/nonexistent/libx.so")
    assert result.returncode == 2
    assert "library_refused" in result.stderr and "Traceback" not in result.stderr
