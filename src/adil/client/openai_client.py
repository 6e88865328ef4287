"""``adil.OpenAIClient``: the SDK's client of a plain OpenAI-compatible
server — llama.cpp's ``llama-server``, vLLM, or ``adil serve``'s own
``/v1`` routes — so that an application that outgrows one machine keeps
its Agent code and points it at an existing serving engine::

    client = adil.OpenAIClient("http://gpu-box:8080", model="qwen2.5-7b-instruct",
                               timeout=adil.Timeout(connect=2, read=30, total=120))
    agent = adil.Agent(client.model(), tools=[...])   # runs unchanged

``base_url``: the server's root (a trailing ``/v1``, as the openai package
takes it, is dropped).  ``model``: the served model's id, sent with each
request (vLLM needs it; llama-server ignores it; ``adil serve`` checks
it).  ``chat_template``: the served model's Jinja chat template, with
which the Agent's prompts are rendered here (default: the one
llama-server reports in ``GET /props``).  ``bos_token``/``eos_token``: the
template's ``bos_token``/``eos_token`` (defaults: "", since the server adds
the BOS itself, and llama-server's ``eos_token``).  ``timeout``,
``retry``/``max_retries``, ``api_key``, ``headers``: as
:class:`adil.Client`'s (the same deadlines, retries and errors).  What each
model call sends: :mod:`adil.client.openai_model`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgumentError
from ..retry import RetryPolicy
from ..timeouts import Timeout, as_timeout
from .client import make_transport

if TYPE_CHECKING:
    from .openai_model import OpenAIModel
    from .transport import Transport

__all__ = ["OpenAIClient"]

_DEFAULT_RETRY = RetryPolicy()


class OpenAIClient:
    """A connection to one OpenAI-compatible server (see the module
    docstring).  Thread-safe; close it (or use ``with``) to free its
    connections."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8080",
        *,
        model: str | None = None,
        chat_template: str | None = None,
        bos_token: str = "",
        eos_token: str | None = None,
        timeout: Timeout | float | None = None,
        retry: RetryPolicy | None = _DEFAULT_RETRY,
        max_retries: int | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        if model is not None and (not isinstance(model, str) or not model):
            raise InvalidArgumentError(f"model must be the served model's id, got {model!r}")
        for name, token in (("bos_token", bos_token), ("eos_token", eos_token)):
            if token is not None and not isinstance(token, str):
                raise InvalidArgumentError(f"{name} must be a str, got {token!r}")
        if isinstance(base_url, str):
            base_url = base_url.rstrip("/")
            base_url = base_url[:-3] if base_url.endswith("/v1") else base_url
        from .openai_model import openai_error

        self._transport: Transport = make_transport(
            base_url, timeout=timeout, retry=retry, max_retries=max_retries, api_key=api_key,
            headers=headers, errors=openai_error)
        self._model = model
        self._template = chat_template
        self._bos = bos_token
        self._eos = eos_token

    @property
    def base_url(self) -> str:
        return self._transport.base_url

    @property
    def timeout(self) -> Timeout:
        return self._transport.timeout

    @property
    def retry(self) -> RetryPolicy | None:
        return self._transport.retry

    def models(self, *, timeout: Timeout | float | None = None) -> list[str]:
        """The ids the server lists in ``GET /v1/models``."""
        body: Any = self._transport.request("GET", "/v1/models", timeout=as_timeout(timeout))
        data = body.get("data") if isinstance(body, dict) else None
        return [str(m["id"]) for m in data or () if isinstance(m, dict) and "id" in m]

    def model(self) -> OpenAIModel:
        """The served model, with the interface the Agent needs
        (``adil.Agent(client.model(), ...)``)."""
        from .openai_model import OpenAIModel

        return OpenAIModel(self._transport, model=self._model, chat_template=self._template,
                           bos_token=self._bos, eos_token=self._eos)

    def close(self) -> None:
        self._transport.close()

    def __enter__(self) -> OpenAIClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"adil.OpenAIClient({self.base_url!r}, model={self._model!r})"
