"""Errors on the wire: HTTP status of each stable code, and the JSON body.

``{"error": {"code", "message", "request_id", "status"}}``; OpenAI-style
routes also get ``"type"`` (= code) and ``"param": null`` so the official
``openai`` client reads them.  ``Retry-After: 1`` comes with ``busy`` and
``model_not_ready``: a client may try again.  ``x-should-retry`` (read by
the official OpenAI clients, which otherwise retry every 408, 409, 429 and
5xx) says ``true`` for those two and ``false`` for the others it would
retry: a failed load, 501, 500, 504, 507 and a slow sender's 408 stay as
they are.
"""

from __future__ import annotations

from typing import Any

from ..errors import AdilError, OutputValidationError

__all__ = ["STATUS_OF_CODE", "error_body", "error_headers", "status_of"]

STATUS_OF_CODE: dict[str, int] = {
    "invalid_argument": 400,
    "context_length_exceeded": 400,
    "tool_schema_invalid": 400,
    "permission_denied": 403,
    "unsupported_capability": 501,
    "output_validation_failed": 422,
    "busy": 503,
    "model_not_ready": 503,
    "timeout": 504,
    "internal_error": 500,
    "out_of_memory": 507,
    # a failed load, reported by the routes that need the model
    "model_file_unreadable": 503,
    "model_format_invalid": 503,
    "library_refused": 503,
    "host_refused": 503,
    "cancelled": 499,
    "connection_error": 502,
}

# A failed load (model_file_unreadable, ..., host_refused) is 503 too, but
# permanent: no Retry-After.
RETRY_CODES = frozenset({"busy", "model_not_ready"})


def status_of(error: AdilError) -> int:
    """`error`'s own ``.status`` when set (413, 401...), else its code's."""
    if error.status is not None:
        return error.status
    return STATUS_OF_CODE.get(error.code, 500)


def error_headers(error: AdilError) -> list[tuple[str, str]]:
    """``Retry-After: 1`` and ``x-should-retry`` as the module says;
    WWW-Authenticate for a 401."""
    headers: list[tuple[str, str]] = []
    status = status_of(error)
    if error.code in RETRY_CODES and status == 503:
        headers += [("retry-after", "1"), ("x-should-retry", "true")]
    elif status in (408, 409, 429) or status >= 500:
        headers.append(("x-should-retry", "false"))
    if status == 401:
        headers.append(("www-authenticate", 'Bearer realm="adil"'))
    return headers


def error_body(error: AdilError, request_id: str, *, openai: bool = False) -> dict[str, Any]:
    """The JSON error object of `error`."""
    inner: dict[str, Any] = {
        "code": error.code,
        "message": error.message or error.code,
        "request_id": request_id,
        "status": status_of(error),
    }
    if isinstance(error, OutputValidationError):
        inner["location"] = error.location
        inner["text"] = error.text
    location = getattr(error, "location", None)
    if location is not None:
        inner["location"] = location
    limit = getattr(error, "limit", None)
    if limit is not None:
        inner["limit"] = limit
    if openai:
        inner["type"] = error.code
        inner["param"] = None
    return {"error": inner}
