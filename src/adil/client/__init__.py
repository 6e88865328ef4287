"""The service clients: :class:`Client` (an ``adil serve`` service) and
the :class:`RemoteModel` it hands out (see :mod:`adil.client.client` and
:mod:`adil.client.remote_model`); :class:`OpenAIClient` (any
OpenAI-compatible server) and its :class:`OpenAIModel` (see
:mod:`adil.client.openai_client`, :mod:`adil.client.openai_model`).
httpx (the ``service`` extra) is imported only when a client is made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import Client
from .openai_client import OpenAIClient

if TYPE_CHECKING:
    from .openai_model import OpenAIChatStream, OpenAIGeneration, OpenAIModel
    from .remote_model import RemoteCancelToken, RemoteGeneration, RemoteModel

__all__ = ["Client", "OpenAIChatStream", "OpenAIClient", "OpenAIGeneration", "OpenAIModel",
           "RemoteCancelToken", "RemoteGeneration", "RemoteModel"]


def __getattr__(name: str) -> Any:
    if name in ("RemoteCancelToken", "RemoteGeneration", "RemoteModel"):
        from . import remote_model

        return getattr(remote_model, name)
    if name in ("OpenAIChatStream", "OpenAIGeneration", "OpenAIModel"):
        from . import openai_model

        return getattr(openai_model, name)
    raise AttributeError(f"module 'adil.client' has no attribute {name!r}")
