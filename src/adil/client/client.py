"""``adil.Client``: the SDK's client of an ``adil serve`` service.

    client = adil.Client("http://127.0.0.1:8765",
                         timeout=adil.Timeout(connect=2, read=30, total=60))
    agent = adil.Agent(client.model(), tools=[...])   # runs unchanged

``timeout``: an :class:`adil.Timeout` (or plain seconds: the total) for every
call; a call's own ``timeout=`` replaces the fields it sets.  ``retry``: the
:class:`adil.retry.RetryPolicy` for busy, not ready and refused connections
(None: no retries; ``max_retries=n`` is a shortcut for
``RetryPolicy(max_retries=n)``).  ``api_key``: sent as a bearer token.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError, check_int
from ..retry import RetryPolicy
from ..timeouts import Timeout, as_timeout

if TYPE_CHECKING:
    from .remote_model import RemoteModel
    from .transport import Transport

__all__ = ["Client", "make_transport"]

_DEFAULT_RETRY = RetryPolicy()


def make_transport(base_url: str, *, timeout: Timeout | float | None,
                   retry: RetryPolicy | None, max_retries: int | None, api_key: str | None,
                   headers: Mapping[str, str] | None, errors: Any = None) -> Transport:
    """The checked arguments of a client as its :class:`Transport`
    (`errors`: the error body reader, None for an adil service's)."""
    if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
        raise InvalidArgumentError(f"base_url must be an http(s) URL, got {base_url!r}")
    if retry is not None and not isinstance(retry, RetryPolicy):
        raise InvalidArgumentError(f"retry must be an adil.retry.RetryPolicy or None, "
                                   f"got {retry!r}")
    if max_retries is not None:
        check_int("max_retries", max_retries, low=0)
        retry = RetryPolicy(max_retries=max_retries) if retry is None else RetryPolicy(
            max_retries=max_retries, initial_delay=retry.initial_delay,
            max_delay=retry.max_delay, multiplier=retry.multiplier, jitter=retry.jitter)
    try:  # httpx is the service extra's: import adil works without it
        from .transport import Transport
    except ImportError as exc:
        raise ImportError("adil.Client needs httpx: pip install 'adil[service]'") from exc
    all_headers = dict(headers or {})
    if api_key is not None:
        if not isinstance(api_key, str) or not api_key:
            raise InvalidArgumentError("api_key must be a non-empty str")
        all_headers["authorization"] = f"Bearer {api_key}"
    extra = {} if errors is None else {"errors": errors}
    return Transport(base_url, timeout=as_timeout(timeout) or Timeout(), retry=retry,
                     headers=all_headers, **extra)


class Client:
    """A connection to one ``adil serve`` service (see the module docstring).
    Thread-safe; close it (or use ``with``) to free its connections."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8765",
        *,
        timeout: Timeout | float | None = None,
        retry: RetryPolicy | None = _DEFAULT_RETRY,
        max_retries: int | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._transport: Transport = make_transport(
            base_url, timeout=timeout, retry=retry, max_retries=max_retries, api_key=api_key,
            headers=headers)

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def timeout(self) -> Timeout:
        return self._transport.timeout

    @property
    def retry(self) -> RetryPolicy | None:
        return self._transport.retry

    def health(self, *, timeout: Timeout | float | None = None) -> dict[str, Any]:
        """``/health``: ``status`` (loading, ready, failed), ``error``,
        ``model`` and ``components`` (the component set, None until the
        engine opened).  Never busy; a failed load still answers 200."""
        body: dict[str, Any] = self._transport.request("GET", "/health",
                                                       timeout=as_timeout(timeout))
        return body

    def info(self, *, timeout: Timeout | float | None = None) -> dict[str, Any]:
        """``/adil/v1/info``: ``model`` (ModelInfo's fields) and
        ``components``; ModelNotReadyError while the model loads."""
        body: dict[str, Any] = self._transport.request("GET", "/adil/v1/info",
                                                       timeout=as_timeout(timeout))
        return body

    def model(self) -> RemoteModel:
        """The service's model, with the Model protocol of an in-process
        model (``adil.Agent(client.model(), ...)``)."""
        from .remote_model import RemoteModel

        return RemoteModel(self._transport)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"adil.Client({self.base_url!r})"
