"""cffi access to the engine's test hooks (tests/native/hooks/adil_internal.h):
the GGUF reader, the weight-type kernels, the CPU level and grammars.  The hooks are
not part of the ABI and not in the shipped libadil_engine: they live in the
test-only libadil_engine_hooks, built with -DADIL_BUILD_TESTS=ON next to the
engine (point ADIL_LIBRARY_DIR at that build's lib/).  The declarations are
read from the hooks' header and adil.h, never copied here."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cffi import FFI

import adil._cdef

ROOT = Path(__file__).resolve().parent.parent
HOOKS_HEADER = ROOT / "tests" / "native" / "hooks" / "adil_internal.h"
HOOKS_LIBRARY = "libadil_engine_hooks.so"


def _hooks_cdef() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import gen_cdef
    finally:
        sys.path.pop(0)
    return str(gen_cdef.header_to_cdef(HOOKS_HEADER.read_text(encoding="utf-8")))


CDEF = adil._cdef.CDEF + _hooks_cdef()
_DECLARED = FFI()
_DECLARED.cdef(CDEF)
_STATUSES: dict[str, int] = _DECLARED.typeof("adil_status").relements
ADIL_OK = _STATUSES["ADIL_OK"]
ADIL_STATUS_MODEL_FORMAT = _STATUSES["ADIL_STATUS_MODEL_FORMAT"]
ADIL_STATUS_INVALID_ARGUMENT = _STATUSES["ADIL_STATUS_INVALID_ARGUMENT"]
ADIL_STATUS_IO = _STATUSES["ADIL_STATUS_IO"]


def hooks_library_path() -> Path | None:
    """$ADIL_LIBRARY_DIR/libadil_engine_hooks.so; None without ADIL_LIBRARY_DIR
    (an installed package has no test hooks)."""
    override = os.environ.get("ADIL_LIBRARY_DIR")
    return Path(override) / HOOKS_LIBRARY if override else None


def require_hooks_library() -> Path:
    """The hooks library under test; skips when it is not built."""
    path = hooks_library_path()
    if path is None or not path.exists():
        pytest.skip(f"{HOOKS_LIBRARY} not found ({path or 'ADIL_LIBRARY_DIR unset'}): build with "
                    "-DADIL_BUILD_TESTS=ON and set ADIL_LIBRARY_DIR to the build's lib/")
    return path


@dataclass(frozen=True)
class Hooks:
    ffi: FFI
    lib: Any

    def last_error(self) -> str:
        return self.ffi.string(self.lib.adil_last_error()).decode("utf-8", "replace")

    # ---- GGUF ----------------------------------------------------------

    def gguf_check(self, data: bytes) -> tuple[int, str]:
        """Status and message of opening `data` as a GGUF image.  The bytes
        are copied into a buffer of exactly their size, so ASan sees any read
        past the end."""
        buf = self.ffi.new("unsigned char[]", max(len(data), 1))
        self.ffi.memmove(buf, data, len(data))
        status = self.lib.adil_internal_gguf_check(buf, len(data))
        return status, self.last_error() if status != ADIL_OK else ""

    def gguf_check_file(self, path: str | os.PathLike[str]) -> tuple[int, str]:
        status = self.lib.adil_internal_gguf_check_file(os.fsencode(path))
        return status, self.last_error() if status != ADIL_OK else ""

    # ---- kernels ---------------------------------------------------------

    def row_size(self, qtype: int, n: int) -> int:
        return int(self.lib.adil_internal_row_size(qtype, n))

    def _check(self, status: int) -> None:
        if status != ADIL_OK:
            raise AssertionError(f"status {status}: {self.last_error()}")

    def _ptr(self, array: np.ndarray, ctype: str) -> Any:
        assert array.flags["C_CONTIGUOUS"]
        return self.ffi.cast(ctype, self.ffi.from_buffer(array))

    def dequantize(self, qtype: int, raw: np.ndarray, n: int) -> np.ndarray:
        out = np.zeros(n, dtype=np.float32)
        self._check(
            self.lib.adil_internal_dequantize(
                qtype, self._ptr(raw, "void *"), n, self._ptr(out, "float *")
            )
        )
        return out

    def quantize(self, qtype: int, x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = np.zeros(self.row_size(qtype, x.size), dtype=np.uint8)
        self._check(
            self.lib.adil_internal_quantize(
                qtype, self._ptr(x, "float *"), x.size, self._ptr(out, "void *")
            )
        )
        return out

    def vec_dot(self, qtype: int, raw: np.ndarray, x: np.ndarray) -> float:
        x = np.ascontiguousarray(x, dtype=np.float32)
        out = self.ffi.new("float *")
        self._check(
            self.lib.adil_internal_vec_dot(
                qtype, x.size, self._ptr(raw, "void *"), self._ptr(x, "float *"), out
            )
        )
        return float(out[0])

    def matmul(
        self, qtype: int, raw: np.ndarray, rows: int, cols: int, x: np.ndarray, n_threads: int
    ) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32).reshape(-1, cols)
        y = np.zeros((x.shape[0], rows), dtype=np.float32)
        self._check(
            self.lib.adil_internal_matmul(
                qtype,
                rows,
                cols,
                self._ptr(raw, "void *"),
                x.shape[0],
                self._ptr(x, "float *"),
                self._ptr(y, "float *"),
                n_threads,
            )
        )
        return y

    def get_rows(
        self, qtype: int, raw: np.ndarray, rows: int, cols: int, ids: np.ndarray
    ) -> tuple[int, np.ndarray]:
        ids = np.ascontiguousarray(ids, dtype=np.int32)
        out = np.zeros((ids.size, cols), dtype=np.float32)
        status = self.lib.adil_internal_get_rows(
            qtype,
            rows,
            cols,
            self._ptr(raw, "void *"),
            self._ptr(ids, "int32_t *"),
            ids.size,
            self._ptr(out, "float *"),
        )
        return status, out

    # ---- grammars ----------------------------------------------------------
    # The hooks library is a whole engine: open a model and compile a grammar
    # through its ABI (self.lib.adil_engine_open, adil_model_load,
    # adil_grammar_compile), then walk token sequences with these.

    def _tokens(self, tokens: Any) -> tuple[Any, int]:
        """A C array of `tokens` that owns its memory (a pointer into a numpy
        array made here would dangle once this returns)."""
        ids = np.ascontiguousarray(tokens, dtype=np.int32)
        if not ids.size:
            return self.ffi.NULL, 0
        return self.ffi.new("int32_t[]", [int(t) for t in ids]), int(ids.size)

    def grammar_check(
        self, grammar: Any, tokens: Any, cross_check: bool = False
    ) -> tuple[int, int, str]:
        """(status, first_bad, message) of walking `tokens` through `grammar`:
        ADIL_OK with first_bad == len(tokens) when every token is allowed."""
        ids, n = self._tokens(tokens)
        first_bad = self.ffi.new("size_t *")
        status = self.lib.adil_hooks_grammar_check(grammar, ids, n, int(cross_check), first_bad)
        return status, int(first_bad[0]), self.last_error() if status != ADIL_OK else ""

    def grammar_position(self, grammar: Any, tokens: Any) -> int:
        """0 inside the document, 1 the output may end, 2 the document is
        complete, after `tokens`; AssertionError when one is refused."""
        ids, n = self._tokens(tokens)
        position = self.ffi.new("int32_t *")
        self._check(self.lib.adil_hooks_grammar_position(grammar, ids, n, position))
        return int(position[0])

    def grammar_forced(self, grammar: Any, tokens: Any, capacity: int = 256) -> bytes:
        """The bytes forced after `tokens` (at most `capacity`)."""
        ids, n = self._tokens(tokens)
        buf = self.ffi.new("uint8_t[]", max(capacity, 1))
        length = self.ffi.new("size_t *")
        self._check(self.lib.adil_hooks_grammar_forced(grammar, ids, n, buf, capacity, length))
        return bytes(self.ffi.buffer(buf, length[0]))

@cache
def _load(path: str) -> Hooks:
    ffi = FFI()
    ffi.cdef(CDEF)
    return Hooks(ffi, ffi.dlopen(path))


def hooks() -> Hooks:
    """The hooks of the engine under test; skips when they are not built."""
    return _load(str(require_hooks_library()))
