"""The settings of one ``adil serve``: what is listened on, who may call,
and the limits on receiving a request."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from ..errors import InvalidArgumentError, check_int, check_real

__all__ = ["DEFAULT_PORT", "ServiceConfig", "is_loopback"]

DEFAULT_PORT = 8765
DEFAULT_MAX_BODY_BYTES = 1 << 20
# A request head larger than this is refused (431) by h11 before it is parsed.
DEFAULT_MAX_HEAD_BYTES = 32 * 1024


@dataclass(frozen=True)
class ServiceConfig:
    """``model``: a path or an alias of :mod:`adil.models`; ``library``: the
    engine library (default: the bundled CPU engine).  ``allow_origins``:
    browser origins that may call (``*``: any); ``allow_hosts``: Host names
    accepted besides the loopback ones (``*``: any).  ``head_timeout`` /
    ``body_timeout``: seconds for receiving a request's head / body (slow
    senders are cut off); ``idle_timeout``: a kept-alive connection with no
    new request is closed after this long; ``write_timeout``: a client that
    reads nothing of its answer for this long is treated as gone (its run is
    cancelled)."""

    model: str
    library: str | None = None
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_origins: tuple[str, ...] = ()
    allow_hosts: tuple[str, ...] = ()
    api_key: str | None = None
    threads: int | None = None
    context_length: int | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    max_head_bytes: int = DEFAULT_MAX_HEAD_BYTES
    head_timeout: float = 10.0
    body_timeout: float = 30.0
    idle_timeout: float = 60.0
    write_timeout: float = 60.0
    public: bool = False
    model_name: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise InvalidArgumentError("model must be a non-empty path or alias")
        check_int("port", self.port, low=0, high=65535)
        check_int("max_body_bytes", self.max_body_bytes, low=1)
        check_int("max_head_bytes", self.max_head_bytes, low=1024)
        for name in ("head_timeout", "body_timeout", "idle_timeout", "write_timeout"):
            check_real(name, getattr(self, name), low=0, low_open=True)
        if self.api_key is not None and (not isinstance(self.api_key, str) or not self.api_key):
            raise InvalidArgumentError("api_key must be a non-empty string or None")
        if not is_loopback(self.host) and not self.public:
            raise InvalidArgumentError(
                f"binding {self.host!r} exposes the model beyond this machine; pass "
                "--i-know-this-is-public (Server(public=True)) to do so")

    @property
    def announced_name(self) -> str:
        """The model name /health and /v1/models announce."""
        if self.model_name:
            return self.model_name
        base = self.model.replace("\\", "/").rsplit("/", 1)[-1]
        for suffix in (".gguf", ".json"):
            if base.endswith(suffix):
                return base[: -len(suffix)]
        return base


def is_loopback(host: str) -> bool:
    """True for ``localhost`` (and ``*.localhost``) and loopback addresses."""
    name = host.strip("[]").lower().rstrip(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
