"""Prompt assembly: the system message that presents the tools and the
tool-call syntax (see :mod:`.syntax`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..tools import MAX_EXACT, Tool
from .syntax import CALL_CLOSE, CALL_OPEN

__all__ = ["system_message"]

_TOOL_RULES = f"""\
You can call tools. To call one, write exactly
{CALL_OPEN}{{"name":"TOOL_NAME","arguments":{{...}}}}{CALL_CLOSE}
and end your turn. Arguments must match the tool's parameters schema; write
numbers as plain JSON numbers within ±{MAX_EXACT} and use strings for larger
or exact-decimal identifiers. Each result comes back in a <tool_result>
block. Some tools wait for a person to confirm them; a rejected call did not
run.
Available tools:"""


def system_message(instructions: str, tools: Sequence[Tool]) -> str | None:
    """The system text: the instructions, then the tools (if any)."""
    parts = [instructions.strip()] if instructions.strip() else []
    if tools:
        lines = [json.dumps(t.spec(), ensure_ascii=False) for t in tools]
        parts.append(_TOOL_RULES + "\n" + "\n".join(lines))
    return "\n\n".join(parts) if parts else None
