"""The cffi binding: declarations, loading an engine by path, and the
version-2 component check.  Policy lives in the modules above this one.

Loading follows the rules at the top of adil.h: dlopen the file, read ``adil_abi_version()``
before resolving any other symbol, then check every required symbol and the
engine's struct sizes (adil.h's rule: each at least its 2.0 size, larger for
a later minor that appended fields).  A field a minor appended is read from an
engine only when its minor is at least that one and the size it reports
covers the field (:meth:`Library.has_fields`); a function a minor appended
(_cdef.FUNCTION_MINORS) is required only of an engine of that minor or later
and resolved only from one (:meth:`Library.has_function`).  Anything wrong raises
:class:`~adil.errors.ComponentRefusedError` naming the file, what was found
and what was expected; the process never crashes and can load another
engine afterwards.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import cffi

from ._cdef import CDEF, CONSTANTS, FUNCTION_MINORS, LAST_FIELDS
from .errors import STATUS_CLASSES, AdilError, ComponentRefusedError, DeadlineError

__all__ = [
    "ENGINE_LIBRARY",
    "HOST_MAJOR",
    "HOST_MINOR",
    "Library",
    "STATUSES",
    "STATUS_ERRORS",
    "STOP_REASONS",
    "STUB_LIBRARY",
    "check",
    "ffi",
    "library_dir",
    "open_library",
    "token_logprobs",
]

ffi = cffi.FFI()
ffi.cdef(CDEF)

# The binding speaks the header's ABI major and needs at least this minor of it.
ABI_MAJOR = int(CONSTANTS["ADIL_ABI_MAJOR"])
ABI_MINOR_REQUIRED = 0
# What this host tells engines about itself.
HOST_MAJOR = int(CONSTANTS["ADIL_HOST_MAJOR"])
HOST_MINOR = 0
HOST_NAME = "adil-python"

# adil_status and adil_stop_reason of the header: name -> value.
STATUSES: dict[str, int] = dict(ffi.typeof("adil_status").relements)
STOP_REASONS: dict[str, int] = dict(ffi.typeof("adil_stop_reason").relements)
ADIL_OK = STATUSES["ADIL_OK"]


def _status_errors() -> dict[int, type[AdilError]]:
    """errors.STATUS_CLASSES by value; every status from 1 to ADIL_STATUS_LAST
    must have its class."""
    table = {STATUSES[name]: cls for name, cls in STATUS_CLASSES.items()}
    last = int(CONSTANTS["ADIL_STATUS_LAST"])
    names = {value: name for name, value in STATUSES.items()}
    missing = [names.get(value, str(value)) for value in range(1, last + 1) if value not in table]
    if missing:
        raise ImportError(f"adil.errors.STATUS_CLASSES has no class for {', '.join(missing)}")
    return table


# adil_status value -> the one error class that stands for it.
STATUS_ERRORS: dict[int, type[AdilError]] = _status_errors()

# Every function of the header.
FUNCTIONS: tuple[str, ...] = tuple(
    dict.fromkeys(re.findall(r"^(?!typedef)[^\n]*?\b(adil_\w+)\(", CDEF, flags=re.M))
)
# The functions of the base ABI: every engine must export all of them.
REQUIRED_SYMBOLS: tuple[str, ...] = tuple(f for f in FUNCTIONS if f not in FUNCTION_MINORS)


def required_symbols(minor: int) -> tuple[str, ...]:
    """The functions an engine of ABI 2.`minor` must export: the base ABI's and
    those appended in minors up to its own."""
    return tuple(f for f in FUNCTIONS if FUNCTION_MINORS.get(f, 0) <= minor)


# Capability -> the function an engine needs for it; an engine that reports the
# capability without the function (or of a minor before it) is taken not to have it.
CAPABILITY_FUNCTIONS: dict[str, str] = {"logprobs": "adil_run_token_logprobs"}
# component-info field size_X -> the struct adil_X whose size it reports.
STRUCT_SIZE_FIELDS: dict[str, str] = {
    name: "adil_" + name.removeprefix("size_")
    for name, _ in ffi.typeof("adil_component_info").fields
    if name.startswith("size_")
}


def _size_through(struct: str, name: str) -> int:
    """adil.h's ADIL_SIZE_THROUGH(struct, name): the offset of the field plus
    its size."""
    field = dict(ffi.typeof(struct).fields)[name]
    return int(field.offset) + int(ffi.sizeof(field.type))


# minor -> struct -> its size in that minor (adil.h's ADIL_SIZE_2_<minor>_*),
# for the structs that minor appended to (minor 0: every struct).
SIZES: dict[int, dict[str, int]] = {
    minor: {struct: _size_through(struct, last) for struct, last in fields.items()}
    for minor, fields in LAST_FIELDS.items()
}
# struct -> its 2.0 size: the least struct_size an engine may report or take.
SIZES_2_0: dict[str, int] = SIZES[0]

_LIBRARY_NAMES = {"engine": "libadil_engine.so", "stub": "libadil_stub.so"}


def library_dir() -> Path:
    """Where the bundled libraries are: $ADIL_LIBRARY_DIR, else the package's
    ``_lib`` folder.  An editable install spreads the package over two folders
    (sources in the checkout, built libraries in site-packages): search both."""
    override = os.environ.get("ADIL_LIBRARY_DIR")
    if override:
        return Path(override)
    package = sys.modules[__package__ or "adil"]
    folders = [Path(p) / "_lib" for p in getattr(package, "__path__", [])]
    here = Path(__file__).resolve().parent / "_lib"
    return next((folder for folder in folders if folder.is_dir()), here)


ENGINE_LIBRARY = str(library_dir() / _LIBRARY_NAMES["engine"])
STUB_LIBRARY = str(library_dir() / _LIBRARY_NAMES["stub"])


@dataclass(frozen=True)
class Library:
    """An engine library that passed the version-2 check."""

    path: str
    lib: Any  # the cffi library object
    abi_major: int
    abi_minor: int
    host_major_accepted: int
    engine_name: str
    engine_version: str
    backends: tuple[str, ...]
    cpu_features: tuple[str, ...]
    capabilities: tuple[str, ...] = ()  # () for a 2.0 engine (no such field)
    # struct -> the size the engine reports for it (adil_component_info: its struct_size).
    sizes: dict[str, int] = field(default_factory=dict, compare=False, hash=False)

    def has_fields(self, struct: str, minor: int) -> bool:
        """Whether this engine's `struct` holds the fields that `minor`
        appended: its minor is at least that one and the size it reports
        covers them (adil.h: a host reads an appended field only then)."""
        least = SIZES.get(minor, {}).get(struct)
        return least is not None and self.abi_minor >= minor and self.sizes.get(struct, 0) >= least

    def has_function(self, name: str) -> bool:
        """Whether `name` may be called: a base-ABI function, or one a minor
        appended (_cdef.FUNCTION_MINORS) when this engine is of that minor or
        later (and so exports it; checked at load)."""
        if name not in FUNCTIONS:
            return False
        return self.abi_minor >= FUNCTION_MINORS.get(name, 0)


_cache: dict[str, Library] = {}
_cache_lock = threading.Lock()


def open_library(path: str | os.PathLike[str]) -> Library:
    """Loads and checks the engine at `path` (once per real path)."""
    real = os.path.realpath(os.fspath(path))
    with _cache_lock:
        cached = _cache.get(real)
        if cached is None:
            cached = _cache[real] = _load_checked(os.fspath(path), real)
        return cached


def _refuse(path: str, found: str, expected: str) -> NoReturn:
    raise ComponentRefusedError(
        f"engine library {path} refused: found {found}; expected {expected}",
        code="library_refused",
    )


def _load_checked(path: str, real: str) -> Library:
    if not os.path.exists(real):
        _refuse(path, "no such file", "an ADIL version-2 engine library")
    try:
        lib = ffi.dlopen(real, ffi.RTLD_NOW | ffi.RTLD_LOCAL)
    except OSError as exc:
        raise ComponentRefusedError(
            f"engine library {path} refused: found a file the dynamic loader cannot load "
            f"({exc}); expected an ADIL version-2 engine shared library",
            code="library_refused",
        ) from exc
    try:
        return _check_component(path, lib)
    except ComponentRefusedError:
        ffi.dlclose(lib)
        raise


def _check_component(path: str, lib: Any) -> Library:
    # The version comes first: nothing else is resolved before it is known.
    try:
        version_fn = lib.adil_abi_version
    except AttributeError:
        _refuse(path, "a shared library that does not export adil_abi_version",
                "an ADIL engine")
    version = int(version_fn())
    major, minor = version >> 16, version & 0xFFFF
    if major != ABI_MAJOR or minor < ABI_MINOR_REQUIRED:
        _refuse(path, f"ABI version {major}.{minor}",
                f"ABI version {ABI_MAJOR}.x with x >= {ABI_MINOR_REQUIRED}")
    missing = [name for name in required_symbols(minor) if not _has_symbol(lib, name)]
    if missing:
        _refuse(path, f"ABI {major}.{minor} without the symbol(s) {', '.join(missing)}",
                f"every function of the version-2 ABI up to 2.{minor}")
    info = lib.adil_component()
    least = SIZES_2_0["adil_component_info"]
    if info == ffi.NULL or info.struct_size < least:
        found = "no component info" if info == ffi.NULL else (
            f"a component info of {info.struct_size} bytes")
        _refuse(path, found, f"adil_component_info of at least {least} bytes (its 2.0 size)")
    if (info.abi_major, info.abi_minor) != (major, minor):
        _refuse(path, f"component info saying ABI {info.abi_major}.{info.abi_minor}",
                f"the ABI of adil_abi_version(), {major}.{minor}")
    sizes = {"adil_component_info": int(info.struct_size)}
    for name, struct in STRUCT_SIZE_FIELDS.items():
        theirs, least = int(getattr(info, name)), SIZES_2_0[struct]
        if theirs < least:
            _refuse(path, f"sizeof({struct}) = {theirs}",
                    f"at least {least} (its 2.0 size; a later minor may append fields)")
        sizes[struct] = theirs
    library = Library(
        path=path,
        lib=lib,
        abi_major=major,
        abi_minor=minor,
        host_major_accepted=int(info.host_major_accepted),
        engine_name=_string(info.engine_name),
        engine_version=_string(info.engine_version),
        backends=_list(info.backends),
        cpu_features=_list(info.cpu_features),
        sizes=sizes,
    )
    if not library.has_fields("adil_component_info", 1):
        return library  # a 2.0 engine: no capabilities field to read
    capabilities = tuple(
        name for name in _list(info.capabilities)
        if name not in CAPABILITY_FUNCTIONS or library.has_function(CAPABILITY_FUNCTIONS[name])
    )
    return replace(library, capabilities=capabilities)


def _has_symbol(lib: Any, name: str) -> bool:
    try:
        getattr(lib, name)
    except AttributeError:
        return False
    return True


def _string(ptr: Any) -> str:
    return "" if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "replace")


def _list(ptr: Any) -> tuple[str, ...]:
    return tuple(item for item in _string(ptr).split(",") if item)


MAX_LOGPROBS = int(CONSTANTS["ADIL_MAX_LOGPROBS"])


def token_logprobs(lib: Any, run: Any, index: int) -> tuple[float, tuple[tuple[int, float], ...]]:
    """adil_run_token_logprobs for the index-th generated token of `run` (started
    with n_logprobs > 0 on an engine with "logprobs"): its log-probability and
    the (token, logprob) alternatives, most likely first.  NaN and () where the
    engine did not compute that position's logits (a forced token).  Raises the
    status's error class (InvalidArgumentError for an index not yet generated)."""
    logprob = ffi.new("float *")
    ids = ffi.new("int32_t[]", MAX_LOGPROBS)
    values = ffi.new("float[]", MAX_LOGPROBS)
    n_top = ffi.new("size_t *")
    check(lib, lib.adil_run_token_logprobs(run, index, logprob, ids, values, MAX_LOGPROBS, n_top))
    n = min(int(n_top[0]), MAX_LOGPROBS)
    return float(logprob[0]), tuple((int(ids[i]), float(values[i])) for i in range(n))


# adil_stop_reason -> the Timeout field whose deadline it is.
_DEADLINE_LIMITS = {
    STOP_REASONS["ADIL_STOP_DEADLINE_TOTAL"]: "total",
    STOP_REASONS["ADIL_STOP_DEADLINE_READ"]: "read",
}


def check(lib: Any, status: int, *, stop_reason: int = STOP_REASONS["ADIL_STOP_NONE"]) -> None:
    """Raises the error class of `status` (see STATUS_ERRORS) with the
    engine's per-thread message; returns for ADIL_OK."""
    if status == ADIL_OK:
        return
    message = _string(lib.adil_last_error()) or _string(lib.adil_status_string(status))
    cls = STATUS_ERRORS.get(status)
    if cls is None:
        raise ComponentRefusedError(
            f"engine returned unknown status {status}: {message}", code="library_refused"
        )
    if cls is ComponentRefusedError:
        raise ComponentRefusedError(message, code="host_refused")
    if cls is DeadlineError:
        limit = _DEADLINE_LIMITS.get(stop_reason, "total")
        raise DeadlineError(message, limit=limit)  # type: ignore[arg-type]
    raise cls(message)
