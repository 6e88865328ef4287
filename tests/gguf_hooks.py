"""cffi access to the engine's internal test hooks (native/engine/internal/
adil_internal.h): the GGUF reader and the weight-type kernels.  Test-only;
the hooks are not part of the ABI."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cffi import FFI

ADIL_OK = 0
ADIL_STATUS_MODEL_FORMAT = 8
ADIL_STATUS_INVALID_ARGUMENT = 10
ADIL_STATUS_IO = 11

CDEF = """
typedef int adil_status;
const char *adil_last_error(void);
adil_status adil_internal_gguf_check(const void *data, size_t size);
adil_status adil_internal_gguf_check_file(const char *path);
size_t adil_internal_row_size(uint32_t type, int64_t n);
adil_status adil_internal_dequantize(uint32_t type, const void *src, int64_t n, float *dst);
adil_status adil_internal_quantize(uint32_t type, const float *src, int64_t n, void *dst);
adil_status adil_internal_vec_dot(uint32_t type, int64_t n, const void *weight_row,
                                  const float *x, float *out);
adil_status adil_internal_matmul(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                 int64_t n_tokens, const float *x, float *y, int n_threads);
adil_status adil_internal_get_rows(uint32_t type, int64_t rows, int64_t cols, const void *w,
                                   const int32_t *ids, int64_t n_ids, float *dst);
"""


def engine_library_path() -> Path:
    """$ADIL_LIBRARY_DIR/libadil_engine.so, else the installed package's copy."""
    override = os.environ.get("ADIL_LIBRARY_DIR")
    if override:
        return Path(override) / "libadil_engine.so"
    import adil._binding

    return adil._binding.library_dir() / "libadil_engine.so"


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


@cache
def _load(path: str) -> Hooks:
    ffi = FFI()
    ffi.cdef(CDEF)
    return Hooks(ffi, ffi.dlopen(path))


def hooks() -> Hooks:
    """The hooks of the engine under test; skips when it is not built."""
    path = engine_library_path()
    if not path.exists():
        pytest.skip(f"engine library not built: {path}")
    return _load(str(path))
