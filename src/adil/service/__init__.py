"""``adil serve``: one model behind a local HTTP service, with the native
routes ``adil.Client`` speaks (``/health``, ``/adil/v1/...``) and the
OpenAI-compatible ones (``/v1/...``)::

    with adil.service.Server("model.gguf", port=0) as server:   # loads in the background
        print(server.url)                                       # http://127.0.0.1:PORT

Modules: :mod:`~adil.service.server` (the HTTP server: asyncio + h11),
:mod:`~adil.service.app` (the router, requests and responses that route
modules use), :mod:`~adil.service.native` and ``openai_compat`` (the
routes), :mod:`~adil.service.security` (Host, Origin, API key, request ids),
:mod:`~adil.service.model_host` (the model's load and its run slot),
:mod:`~adil.service.errors_http` (statuses and error bodies),
:mod:`~adil.service.config`, :mod:`~adil.service.serve_command` (``adil
serve``)."""

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
