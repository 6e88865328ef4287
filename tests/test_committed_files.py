"""Committed files carry no absolute paths of the machine that made them
(a report's model path under /root, a build folder under /work, ...):
bench/compare names such paths instead, and instructions use ~ or $PWD."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MACHINE_PATH = re.compile(rb"(?<![\w.~$-])/(?:work|root|home)/")


def committed_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [ROOT / name.decode() for name in out.stdout.split(b"\0") if name]


def test_no_machine_paths_in_committed_files() -> None:
    found = []
    for path in committed_files():
        if not path.is_file():
            continue  # deleted in the work tree
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary: GGUF fixtures, fuzz seeds
        for lineno, line in enumerate(data.splitlines(), 1):
            if MACHINE_PATH.search(line):
                found.append(f"{path.relative_to(ROOT)}:{lineno}: {line.decode(errors='replace')}")
    assert found == []
