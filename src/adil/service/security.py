"""Who may call: the Host check (DNS rebinding), the Origin allow-list with
CORS headers, the API key (compared in constant time), and request ids."""

from __future__ import annotations

import hmac
import re
import secrets

from ..errors import PermissionDeniedError
from .config import ServiceConfig, is_loopback

__all__ = ["Gate", "request_id_of"]

_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
PREFLIGHT_HEADERS = [
    ("access-control-allow-methods", "GET, POST"),
    ("access-control-allow-headers", "content-type, authorization, x-request-id"),
    ("access-control-max-age", "600"),
]


def request_id_of(sent: str | None) -> str:
    """The client's id when well-formed (1..128 of ``[A-Za-z0-9._:-]``),
    else a new ``req_<24 hex>``."""
    if sent is not None and _REQUEST_ID.fullmatch(sent):
        return sent
    return "req_" + secrets.token_hex(12)


def _host_name(host: str) -> str:
    """The name part of a Host header (port dropped, IPv6 brackets kept off)."""
    host = host.strip()
    if host.startswith("["):
        return host[1:host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class Gate:
    """The checks of one service, in the order the server applies them."""

    def __init__(self, config: ServiceConfig) -> None:
        self._hosts = {h.lower().rstrip(".") for h in config.allow_hosts}
        self._origins = {o.lower().rstrip("/") for o in config.allow_origins}
        self._key = config.api_key.encode("utf-8") if config.api_key is not None else None

    def check_host(self, host: str | None) -> None:
        """A Host that names neither a loopback address/name nor an allowed
        host is refused: a page whose DNS name was rebound to 127.0.0.1
        sends its own name."""
        if host is None or "*" in self._hosts:
            return  # h11 requires Host on HTTP/1.1; browsers always send one
        name = _host_name(host).lower().rstrip(".")
        if is_loopback(name) or name in self._hosts:
            return
        raise PermissionDeniedError(
            f"Host {host!r} is not allowed (DNS rebinding guard); allow it with --allow-host")

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True
        return "*" in self._origins or origin.lower().rstrip("/") in self._origins

    def check_origin(self, origin: str | None) -> None:
        if not self.origin_allowed(origin):
            raise PermissionDeniedError(
                f"origin {origin!r} is not allowed to call this service; allow it with "
                "--allow-origin")

    def check_key(self, authorization: str | None) -> None:
        """``Authorization: Bearer KEY`` must match the key, when one is set."""
        if self._key is None:
            return
        sent = b""
        if authorization is not None:
            scheme, _, value = authorization.strip().partition(" ")
            if scheme.lower() == "bearer":
                sent = value.strip().encode("latin-1")  # the raw header bytes
        if not hmac.compare_digest(sent, self._key):
            raise PermissionDeniedError("missing or wrong API key (Authorization: Bearer KEY)",
                                        status=401)

    @staticmethod
    def cors_headers(origin: str | None) -> list[tuple[str, str]]:
        """For an allowed browser origin: that exact origin, and x-request-id
        readable by the page."""
        if origin is None:
            return []
        return [("access-control-allow-origin", origin), ("vary", "Origin"),
                ("access-control-expose-headers", "x-request-id")]
