"""Descriptions from a docstring: the text before the first section becomes
the tool's description; parameter lines of a Google-style ``Args:`` section,
a NumPy-style ``Parameters`` section or Sphinx ``:param x:`` fields become
the parameters' descriptions."""

from __future__ import annotations

import inspect
import re

__all__ = ["parse_docstring"]

_GOOGLE_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params)\s*:\s*$")
_NUMPY_SECTION = re.compile(r"^(Parameters)\s*$")
_ANY_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns?|Yields?|Raises|Examples?|Notes?|See Also)"
    r"\s*:?\s*$"
)
_SPHINX_FIELD = re.compile(r"^:(\w+)(?:\s+(\w+))?\s*:\s*(.*)$")
_GOOGLE_PARAM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_PARAM = re.compile(r"^(\w+)\s*(?::.*)?$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a docstring."""
    lines = inspect.cleandoc(doc or "").splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines):
        line = lines[i].strip()
        if _SPHINX_FIELD.match(line) or _ANY_SECTION.match(line):
            break
        summary.append(line)
        i += 1
    while i < len(lines):
        i = _read_section(lines, i, params)
    return " ".join(" ".join(summary).split()), params


def _read_section(lines: list[str], i: int, params: dict[str, str]) -> int:
    line = lines[i].strip()
    field = _SPHINX_FIELD.match(line)
    if field:
        return _read_sphinx(lines, i, field, params)
    if _GOOGLE_SECTION.match(line):
        return _read_indented(lines, i + 1, _GOOGLE_PARAM, params)
    if _NUMPY_SECTION.match(line) and i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}:
        return _read_indented(lines, i + 2, _NUMPY_PARAM, params)
    return i + 1


def _read_sphinx(
    lines: list[str], i: int, field: re.Match[str], params: dict[str, str]
) -> int:
    words = [field.group(3)]
    i += 1
    while i < len(lines) and lines[i].startswith((" ", "\t")):
        words.append(lines[i].strip())
        i += 1
    if field.group(1) in ("param", "parameter", "arg", "argument") and field.group(2):
        params[field.group(2)] = " ".join(" ".join(words).split())
    return i


def _read_indented(
    lines: list[str], i: int, pattern: re.Pattern[str], params: dict[str, str]
) -> int:
    """Parameter entries: a name line, then deeper-indented continuation lines."""
    name: str | None = None
    base: int | None = None
    while i < len(lines):
        raw = lines[i]
        if raw.strip() and _ANY_SECTION.match(raw.strip()) and not raw.startswith((" ", "\t")):
            break
        indent = len(raw) - len(raw.lstrip())
        if not raw.strip():
            i += 1
            continue
        if base is None:
            base = indent
        match = pattern.match(raw.strip()) if indent == base else None
        if match:
            name = match.group(1).lstrip("*")
            first = match.group(2) if pattern is _GOOGLE_PARAM else ""
            params[name] = (first or "").strip()
        elif name is not None and indent > base:
            params[name] = (params[name] + " " + raw.strip()).strip()
        else:
            break
        i += 1
    return i
