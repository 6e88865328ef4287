"""The documentation pages "Permissions and confirmation", "Cancellation
and deadlines" and "Structured output": their examples run as written (on
the stub engine), and their tables carry every row of the product page."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
PAGES = ["permissions-and-confirmation.md", "cancellation-and-deadlines.md",
         "structured-output.md"]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def blocks(page: str) -> list[str]:
    return BLOCK.findall((DOCS / page).read_text(encoding="utf-8"))


@pytest.mark.parametrize("page", PAGES)
def test_examples_run(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code = blocks(page)
    assert len(code) >= 3
    # A module of its own, so that dataclasses and typing can find it by name.
    module = types.ModuleType(f"docs_{page.replace('-', '_').removesuffix('.md')}")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for i, source in enumerate(code):
        exec(compile(source, f"{page}[block {i}]", "exec"), module.__dict__)


@pytest.mark.parametrize(("page", "rows"), [
    ("cancellation-and-deadlines.md", [
        "Cancelled before the tool starts", "The tool never starts",
        "Cancelled after the tool has started", "the result is discarded",
        "A side effect that already happened stays", "Cancelling one agent",
        "Stops only that agent's own run and voids only its own pending proposal",
        "It does not interrupt other agents or a generation in progress",
        "Cancel acknowledged but output returned",
        "If a late answer must not be shown, drop it in your application",
        "Retries only cover a busy", "never exceed the total deadline",
        "Make tools idempotent or transactional and check for cancellation before each",
        "All SDK exceptions derive from", "Connection error", "Timeout", "Model not ready",
        "Context length", "Capability error", "Output validation", "Busy",
        "Permission denied", "Library or host refusal",
    ]),
    ("permissions-and-confirmation.md", [
        "Your application classifies each tool. The engine cannot tell which tools are",
        "State-changing tools always wait for confirmation",
        "reads_private_data=True", "sends_out=True", "confirmation_required=True",
        "**not** a confirmation by a person", "The SDK never approves a proposal itself",
        "Keep enforcing your own authorisation", "additionalProperties", "$ref",
        "number", "integer", "boolean", "quoted_text", "enum",
        "delivered unchanged", "right JSON type", "quoted data",
        "not a replacement for confirmation",
    ]),
])
def test_pages_cover_the_product_page(page: str, rows: list[str]) -> None:
    text = " ".join((DOCS / page).read_text(encoding="utf-8").split())
    missing = [row for row in rows if " ".join(row.split()) not in text]
    assert missing == []


def test_threads_page_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (source,) = blocks("threads-and-signals.md")
    exec(compile(source, "threads-and-signals.md", "exec"), {"__name__": "docs_threads"})
