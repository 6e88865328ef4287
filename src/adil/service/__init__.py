"""``adil serve``: one model behind a local HTTP service (native routes and
OpenAI-compatible ones).  See :mod:`adil.service.server`."""

from __future__ import annotations

from .app import Handler, Request, Response, Route, Router, StreamingResponse, sse_event
from .server import Server

__all__ = [
    "Handler",
    "Request",
    "Response",
    "Route",
    "Router",
    "Server",
    "StreamingResponse",
    "sse_event",
]
