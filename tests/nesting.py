"""Deeply nested values for the depth-limit tests."""

from __future__ import annotations

from typing import Any


def deep_list(levels: int) -> list[Any]:
    """A list nested `levels` deep: [[[...]]] (built without recursion)."""
    root: list[Any] = []
    node = root
    for _ in range(levels - 1):
        child: list[Any] = []
        node.append(child)
        node = child
    return root
