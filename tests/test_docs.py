"""The documentation pages carry every row of the product page (their
examples run in tests/test_docs_examples.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"


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
    ("tools-and-agents.md", [
        "Schemas outside the supported subset (for example references with `$ref`) are "
        "refused at registration with an error that names the offending location",
        "Set `additionalProperties` to `false` so that invented fields are rejected",
        "Numbers are accepted only when the engine can hand your tool exactly the value it "
        "validated", "Use strings for larger or exact-decimal identifiers",
        "Your application classifies each tool. The engine cannot tell which tools are sensitive",
        "State-changing tools always wait for confirmation",
        "Tools that read private data or send anything out must be registered as "
        "confirmation-required",
        'A policy callback that answers "allow" is not a confirmation by a person',
        "The SDK never approves a proposal itself; you decide",
        "you keep enforcing your own authorisation inside the tool",
        "only from results the engine delivered unchanged, and only when the JSON type matches",
        "show quoted strings as quoted data", "not a replacement for confirmation",
        "Cancelled before the tool starts", "The tool never starts",
        "A side effect that already happened stays",
        "Stops only that agent's own run and voids only its own pending proposal",
        "If a late answer must not be shown, drop it in your application",
        "never exceed the total deadline",
        "Make tools idempotent or transactional and check for cancellation before each",
        "All SDK exceptions derive from one base class",
        "Branch on the exception class or on its stable `.code`, never on message text",
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

