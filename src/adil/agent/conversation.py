"""The agent's conversation: chat messages for ``model.render_chat``."""

from __future__ import annotations

import threading

from .syntax import unicode_safe

__all__ = ["Conversation"]


class Conversation:
    """Messages in order.  Two messages of one role in a row are merged,
    because many chat templates (gemma's among them) require roles to
    alternate.  Text is kept Unicode-safe (:func:`~.syntax.unicode_safe`):
    nothing appended can make a later render fail."""

    def __init__(self, system: str | None) -> None:
        self._system = system
        self._lock = threading.Lock()
        self._messages: list[dict[str, str]] = []
        self.clear()

    def clear(self) -> None:
        with self._lock:
            self._messages = [{"role": "system", "content": self._system}] if self._system else []

    def append(self, role: str, content: str) -> None:
        content = unicode_safe(content)
        with self._lock:
            last = self._messages[-1] if self._messages else None
            if last is not None and last["role"] == role:
                last["content"] = f"{last['content']}\n\n{content}"
            else:
                self._messages.append({"role": role, "content": content})

    def snapshot(self) -> list[dict[str, str]]:
        with self._lock:
            return [dict(m) for m in self._messages]
