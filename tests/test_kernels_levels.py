"""The kernel correctness suite at every CPU level this machine supports.

The engine picks its kernels once per process (ADIL_CPU=scalar|avx2|avx512
forces a level, never above what the CPU has), so each level runs in a
subprocess: first a check that the library really dispatches to the level
asked for, then tests/test_weight_types.py (the kernels against the gguf
package's reference, matmul against vec_dot bit for bit) under that level.
A level the CPU lacks is skipped, and asking for it must fall back to the
best supported level with a note, not fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gguf_hooks import require_hooks_library

LEVELS = ("scalar", "avx2", "avx512")
TESTS = Path(__file__).resolve().parent

LEVEL_SCRIPT = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
from gguf_hooks import _load
hooks = _load(sys.argv[1])
print(hooks.ffi.string(hooks.lib.adil_internal_cpu_level()).decode())
print(hooks.ffi.string(hooks.lib.adil_internal_cpu_level_note()).decode())
"""


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def supported_levels() -> list[str]:
    flags = cpu_flags()
    levels = ["scalar"]
    if {"avx2", "fma", "f16c"} <= flags:
        levels.append("avx2")
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512_vnni"} <= flags:
            levels.append("avx512")
    return levels


def level_in_subprocess(requested: str) -> tuple[str, str]:
    env = dict(os.environ, ADIL_CPU=requested)
    out = subprocess.run(
        [sys.executable, "-c", LEVEL_SCRIPT, str(require_hooks_library())],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.splitlines()
    return out[0], out[1] if len(out) > 1 else ""


@pytest.mark.parametrize("level", LEVELS)
def test_level_is_selected(level: str) -> None:
    best = supported_levels()[-1]
    selected, note = level_in_subprocess(level)
    if level in supported_levels():
        assert (selected, note) == (level, "")
    else:
        assert selected == best
        assert f"ADIL_CPU={level}: this CPU supports at most {best}" in note


def test_unknown_level_falls_back_with_a_note() -> None:
    selected, note = level_in_subprocess("avx9000")
    assert selected == supported_levels()[-1]
    assert "expected scalar, avx2 or avx512" in note


@pytest.mark.parametrize("level", LEVELS)
def test_weight_types_at_level(level: str) -> None:
    if level not in supported_levels():
        pytest.skip(f"this CPU does not support {level}")
    require_hooks_library()
    env = dict(os.environ, ADIL_CPU=level)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            str(TESTS / "test_weight_types.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and "skipped" not in result.stdout
