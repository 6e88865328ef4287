"""JSON Pointers (RFC 6901): the ``.location`` of schema and argument errors."""

from __future__ import annotations

__all__ = ["join"]


def join(base: str, *tokens: str | int) -> str:
    """`base` extended by `tokens`, each escaped (``~`` → ``~0``, ``/`` → ``~1``)."""
    parts = [str(t).replace("~", "~0").replace("/", "~1") for t in tokens]
    return base + "".join("/" + p for p in parts)
