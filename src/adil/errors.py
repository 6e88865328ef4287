"""The ADIL error hierarchy.

Every exception the SDK raises derives from :class:`AdilError` and carries a
stable ``code``; branch on the class or the code, never on the message::

    AdilError                      code
    ├── ServiceConnectionError     connection_error
    ├── DeadlineError              timeout            (.limit: connect | read | total)
    ├── ModelNotReadyError         model_not_ready
    ├── ContextLengthError         context_length_exceeded
    ├── CapabilityError            unsupported_capability
    ├── OutputValidationError      output_validation_failed  (.location, .text)
    ├── BusyError                  busy
    ├── PermissionDeniedError      permission_denied
    ├── ComponentRefusedError      library_refused | host_refused
    ├── ToolSchemaError            tool_schema_invalid       (.location)
    ├── ModelFormatError           model_format_invalid
    ├── ModelFileError             model_file_unreadable
    ├── CancelledError             cancelled
    ├── InvalidArgumentError       invalid_argument   (also ValueError, TypeError)
    ├── EngineMemoryError          out_of_memory
    └── EngineInternalError        internal_error

HTTP-path errors also carry ``.status`` (the HTTP status) and
``.request_id``; both are ``None`` in-process.

Each engine status (``adil_status`` in ``adil.h``) maps onto exactly one
class, by name: :data:`STATUS_CLASSES`.

:func:`check_real` and :func:`check_int` are the argument checks of the
settings objects (``Timeout``, ``RetryPolicy``, ``Sampling``): a bad value is
refused when the object is built, with :class:`InvalidArgumentError`, never
later as a plain ``TypeError`` or ``OverflowError`` deep inside a run.
"""

from __future__ import annotations

import math
from typing import ClassVar, Literal

__all__ = [
    "AdilError",
    "BusyError",
    "CancelledError",
    "CapabilityError",
    "ComponentRefusedError",
    "ContextLengthError",
    "DeadlineError",
    "EngineInternalError",
    "EngineMemoryError",
    "InvalidArgumentError",
    "ModelFileError",
    "ModelFormatError",
    "ModelNotReadyError",
    "OutputValidationError",
    "PermissionDeniedError",
    "STATUS_CLASSES",
    "ServiceConnectionError",
    "ToolSchemaError",
    "check_int",
    "check_real",
    "error_for_code",
]


class AdilError(Exception):
    """Base class of every SDK error; ``code`` is stable, the message is not."""

    code: ClassVar[str] = "adil_error"

    def __init__(
        self,
        message: str = "",
        *,
        status: int | None = None,
        request_id: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.request_id = request_id

    def __str__(self) -> str:
        text = self.message or self.code
        if self.request_id:
            text += f" (request id {self.request_id})"
        return text


class ServiceConnectionError(AdilError):
    """The local service is not reachable, or the connection dropped."""

    code = "connection_error"

    def __init__(self, message: str = "", *, refused: bool = False, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.refused = refused


DeadlineLimit = Literal["connect", "read", "total"]


class DeadlineError(AdilError):
    """A connect, read or total deadline expired; ``limit`` says which."""

    code = "timeout"

    def __init__(self, message: str = "", *, limit: DeadlineLimit = "total", **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.limit: DeadlineLimit = limit


class ModelNotReadyError(AdilError):
    """The model is still loading, or the service failed."""

    code = "model_not_ready"


class ContextLengthError(AdilError):
    """Prompt plus output exceed the context window."""

    code = "context_length_exceeded"


class CapabilityError(AdilError):
    """The engine or model cannot do this (forcing a tool, n > 1, images...)."""

    code = "unsupported_capability"


class OutputValidationError(AdilError):
    """Structured output or a tool call was invalid JSON, broke the schema,
    or was truncated.  ``location``: the JSON Pointer of the value at fault
    (None when unknown); ``text``: the output generated so far when a
    generation raised it (None otherwise)."""

    code = "output_validation_failed"

    def __init__(self, message: str = "", *, location: str | None = None,
                 text: str | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.location = location
        self.text = text


class BusyError(AdilError):
    """The model or service handles one operation at a time."""

    code = "busy"


class PermissionDeniedError(AdilError):
    """A request came from a browser page that is not allowed."""

    code = "permission_denied"


class ComponentRefusedError(AdilError):
    """The engine or host is not the expected version-2 component set.

    ``code`` is ``library_refused`` (the engine library was refused by the
    host) or ``host_refused`` (the engine refused the host)."""

    code: str = "library_refused"  # type: ignore[misc]

    def __init__(
        self,
        message: str = "",
        *,
        code: Literal["library_refused", "host_refused"] = "library_refused",
        **kw: object,
    ) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.code = code


class ToolSchemaError(AdilError):
    """A tool definition was refused at registration; ``location`` is the
    JSON Pointer of the offending keyword."""

    code = "tool_schema_invalid"

    def __init__(self, message: str = "", *, location: str | None = None, **kw: object) -> None:
        super().__init__(message, **kw)  # type: ignore[arg-type]
        self.location = location


class ModelFormatError(AdilError):
    """The model file (or stub script) is malformed."""

    code = "model_format_invalid"


class ModelFileError(AdilError):
    """The model file cannot be opened or read."""

    code = "model_file_unreadable"


class CancelledError(AdilError):
    """The operation stopped because it was cancelled."""

    code = "cancelled"


class InvalidArgumentError(AdilError, ValueError, TypeError):
    """An argument is out of range or of the wrong kind.  Also a
    ``ValueError`` and a ``TypeError``, so ``except ValueError`` habits keep
    working; branch on ``AdilError`` / ``.code`` in new code."""

    code = "invalid_argument"


class EngineMemoryError(AdilError):
    """The engine could not allocate memory."""

    code = "out_of_memory"


class EngineInternalError(AdilError):
    """A bug in the engine."""

    code = "internal_error"


# adil_status name (adil.h) -> the one class that stands for it (ADIL_OK has
# none).  The binding turns it into a table by value (_binding.STATUS_ERRORS)
# and checks at import that it covers every status up to ADIL_STATUS_LAST.
STATUS_CLASSES: dict[str, type[AdilError]] = {
    "ADIL_STATUS_CANCELLED": CancelledError,
    "ADIL_STATUS_DEADLINE": DeadlineError,
    "ADIL_STATUS_BUSY": BusyError,
    "ADIL_STATUS_MODEL_NOT_READY": ModelNotReadyError,
    "ADIL_STATUS_CONTEXT_LENGTH": ContextLengthError,
    "ADIL_STATUS_CAPABILITY": CapabilityError,
    "ADIL_STATUS_OUTPUT_VALIDATION": OutputValidationError,
    "ADIL_STATUS_MODEL_FORMAT": ModelFormatError,
    "ADIL_STATUS_HOST_REFUSED": ComponentRefusedError,
    "ADIL_STATUS_INVALID_ARGUMENT": InvalidArgumentError,
    "ADIL_STATUS_IO": ModelFileError,
    "ADIL_STATUS_OUT_OF_MEMORY": EngineMemoryError,
    "ADIL_STATUS_INTERNAL": EngineInternalError,
}

_BY_CODE: dict[str, type[AdilError]] = {cls.code: cls for cls in STATUS_CLASSES.values()}
_BY_CODE.update(
    {
        ServiceConnectionError.code: ServiceConnectionError,
        PermissionDeniedError.code: PermissionDeniedError,
        ToolSchemaError.code: ToolSchemaError,
        "host_refused": ComponentRefusedError,
    }
)


def error_for_code(code: str) -> type[AdilError]:
    """The class for a stable code (used by the service client); unknown
    codes give :class:`AdilError` itself."""
    return _BY_CODE.get(code, AdilError)


# -- argument checks ----------------------------------------------------------


def check_real(
    label: str, value: object, *, low: float = -math.inf, high: float = math.inf,
    low_open: bool = False, high_open: bool = False,
) -> float:
    """`value` when it is a finite int or float (not a bool) within the range
    (`low_open`/`high_open`: the bound itself is excluded); otherwise
    :class:`InvalidArgumentError` naming `label` and the range."""
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if is_number:
        try:
            number = float(value)  # type: ignore[arg-type]
        except OverflowError:  # an int beyond any float
            number = math.inf
        in_range = (math.isfinite(number)
                    and (number > low if low_open else number >= low)
                    and (number < high if high_open else number <= high))
        if in_range:
            return value  # type: ignore[return-value]
    raise InvalidArgumentError(f"{label} must be {_range(low, high, low_open, high_open)}, "
                               f"got {value!r}")


def check_int(label: str, value: object, *, low: int, high: int | None = None) -> int:
    """`value` when it is an int (not a bool) in ``[low, high]``; otherwise
    :class:`InvalidArgumentError`."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= low and (
            high is None or value <= high):
        return value
    upper = "" if high is None else f" and <= {high}"
    raise InvalidArgumentError(f"{label} must be an integer >= {low}{upper}, got {value!r}")


def _range(low: float, high: float, low_open: bool, high_open: bool) -> str:
    if low == -math.inf and high == math.inf:
        return "a finite number"
    if high == math.inf:
        return f"a finite number {'>' if low_open else '>='} {low:g}"
    if low == -math.inf:
        return f"a finite number {'<' if high_open else '<='} {high:g}"
    return f"a number in {'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"
