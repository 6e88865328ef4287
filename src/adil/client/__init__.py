"""The service client: :class:`Client` and the :class:`RemoteModel` it
hands out (see :mod:`adil.client.client` and :mod:`adil.client.remote_model`).
httpx (the ``service`` extra) is imported only when a Client is made."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .client import Client

if TYPE_CHECKING:
    from .remote_model import RemoteCancelToken, RemoteGeneration, RemoteModel

__all__ = ["Client", "RemoteCancelToken", "RemoteGeneration", "RemoteModel"]


def __getattr__(name: str) -> Any:
    if name in ("RemoteCancelToken", "RemoteGeneration", "RemoteModel"):
        from . import remote_model

        return getattr(remote_model, name)
    raise AttributeError(f"module 'adil.client' has no attribute {name!r}")
