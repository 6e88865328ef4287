"""Engine and Model: the in-process path to an ADIL engine library.

    engine = adil.Engine.open()                           # the bundled CPU engine
    stub = adil.Engine.open(library=adil.STUB_LIBRARY)    # the reference stub
    model = engine.load_model("model.gguf", threads=2, context_length=4096)

Lifetimes: every handle is freed by the garbage collector, or at once by
``close()`` (idempotent) or a ``with`` block.  A child keeps its parent
alive, and ``Engine.close()`` closes the engine's models first.
"""

from __future__ import annotations

import json
import math
import os
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from . import __version__
from ._binding import ENGINE_LIBRARY as _ENGINE_LIBRARY
from ._binding import HOST_MAJOR, HOST_MINOR, HOST_NAME, Library, check, ffi, open_library
from .cancel import CancelToken
from .chat import render_chat
from .errors import (
    BusyError,
    CapabilityError,
    ComponentRefusedError,
    DeadlineError,
    InvalidArgumentError,
)
from .generation import Completion, Generation
from .sampling import Sampling
from .timeouts import Timeout

__all__ = ["Engine", "EngineInfo", "Model", "ModelInfo"]


@dataclass(frozen=True)
class EngineInfo:
    """The component set: the engine library and this host."""

    library: str
    abi_major: int
    abi_minor: int
    host_name: str
    host_major: int
    host_minor: int
    host_version: str
    engine_name: str
    engine_version: str
    backends: tuple[str, ...]
    cpu_features: tuple[str, ...]
    kernels: str = ""  # the kernel set that runs: scalar, avx2, avx512 ("" for the stub)

    @property
    def abi(self) -> str:
        return f"{self.abi_major}.{self.abi_minor}"


@dataclass(frozen=True)
class ModelInfo:
    path: str
    architecture: str
    name: str
    chat_template: str | None
    n_vocab: int
    context_length: int
    n_ctx_train: int
    bos_token: int | None
    eos_token: int | None
    eot_token: int | None
    add_bos: bool
    n_params: int
    size_bytes: int
    threads: int


class Engine:
    """An opened engine library (any version-2 engine, by path)."""

    def __init__(self, library: Library, handle: Any, host: Any) -> None:
        self._library = library
        self._handle = handle
        self._host = host  # adil_host_info and its strings stay alive with the engine
        self._models: weakref.WeakSet[Model] = weakref.WeakSet()
        self.info = EngineInfo(
            library=library.path,
            abi_major=library.abi_major,
            abi_minor=library.abi_minor,
            host_name=HOST_NAME,
            host_major=HOST_MAJOR,
            host_minor=HOST_MINOR,
            host_version=__version__,
            engine_name=library.engine_name,
            engine_version=library.engine_version,
            backends=library.backends,
            cpu_features=tuple(f for f in library.cpu_features if "=" not in f),
            kernels=next((f.split("=", 1)[1] for f in library.cpu_features
                          if f.startswith("kernels=")), ""),
        )

    @classmethod
    def open(
        cls,
        library: str | os.PathLike[str] | None = None,
        *,
        threads: int | None = None,
        backend: str | None = None,
    ) -> Engine:
        """Loads the engine at `library` (default: the bundled CPU engine),
        checks it is a version-2 engine, and opens it for this host.

        Raises ComponentRefusedError (``library_refused`` or ``host_refused``)."""
        lib = open_library(library if library is not None else _ENGINE_LIBRARY)
        keep: list[Any] = []
        host = ffi.new("adil_host_info *")
        host.struct_size = ffi.sizeof("adil_host_info")
        host.host_major, host.host_minor = HOST_MAJOR, HOST_MINOR
        host.host_name = _cstr(HOST_NAME, keep)
        host.host_version = _cstr(__version__, keep)
        params = ffi.new("adil_engine_params *")
        lib.lib.adil_engine_default_params(params)
        if threads is not None:
            params.n_threads = _positive("threads", threads)
        if backend is not None:
            params.backend = _cstr(backend, keep)
        out = ffi.new("adil_engine **")
        status = lib.lib.adil_engine_open(host, params, out)
        if status == 9:  # ADIL_STATUS_HOST_REFUSED: name the library too
            message = ffi.string(lib.lib.adil_last_error()).decode("utf-8", "replace")
            raise ComponentRefusedError(
                f"engine library {lib.path} refused this host ({HOST_NAME} {HOST_MAJOR}."
                f"{HOST_MINOR}): {message}",
                code="host_refused",
            )
        check(lib.lib, status)
        return cls(lib, ffi.gc(out[0], lib.lib.adil_engine_close), (host, keep))

    @property
    def library(self) -> Library:
        return self._library

    def load_model(
        self,
        path: str | os.PathLike[str],
        *,
        threads: int | None = None,
        context_length: int | None = None,
        use_mmap: bool = True,
    ) -> Model:
        """Loads a model file (GGUF; a JSON script for the stub)."""
        handle = self._require_open()
        lib = self._library.lib
        params = ffi.new("adil_model_params *")
        lib.adil_model_default_params(params)
        if threads is not None:
            params.n_threads = _positive("threads", threads)
        params.use_mmap = 1 if use_mmap else 0
        out = ffi.new("adil_model **")
        check(lib, lib.adil_model_load(handle, os.fsencode(os.fspath(path)), params, out))
        # The destructor holds the engine handle, so the engine outlives it.
        model_handle = ffi.gc(out[0], lambda p, _engine=handle: lib.adil_model_free(p))
        model = Model(self, model_handle, os.fspath(path), threads, context_length)
        self._models.add(model)
        return model

    def _require_open(self) -> Any:
        if self._handle is None:
            raise InvalidArgumentError("the engine is closed")
        return self._handle

    def close(self) -> None:
        """Closes the engine's models, then the engine.  Idempotent."""
        for model in list(self._models):
            model.close()
        handle, self._handle = self._handle, None
        if handle is not None:
            ffi.release(handle)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        info = self.info
        return f"<adil.Engine {info.engine_name} {info.engine_version} ABI {info.abi}>"


class Model:
    """A loaded model with one context (its KV cache is reused across calls
    that share a prefix).  One generation at a time: another concurrent one
    gets :class:`BusyError`."""

    def __init__(
        self,
        engine: Engine,
        handle: Any,
        path: str,
        threads: int | None,
        context_length: int | None,
    ) -> None:
        self.engine = engine
        self._library = engine.library
        self._lib = engine.library.lib
        self._handle: Any = handle
        self._context: Any = None
        self._context_length = context_length
        self._threads = threads
        self._busy = threading.Lock()  # guards the context between calls
        self._pieces: dict[int, bytes] = {}
        self._info_raw = self._read_info()
        self.path = path

    # -- information ----------------------------------------------------
    def _read_info(self) -> Any:
        raw = ffi.new("adil_model_info *")
        raw.struct_size = ffi.sizeof("adil_model_info")
        check(self._lib, self._lib.adil_model_get_info(self._require_open(), raw))
        return raw

    @property
    def info(self) -> ModelInfo:
        raw = self._info_raw
        ctx = self._ensure_context()
        return ModelInfo(
            path=self.path,
            architecture=_str(raw.architecture),
            name=_str(raw.name),
            chat_template=_str(raw.chat_template) or None,
            n_vocab=raw.n_vocab,
            context_length=int(self._lib.adil_context_size(ctx)),
            n_ctx_train=raw.n_ctx_train,
            bos_token=raw.bos_token if raw.bos_token >= 0 else None,
            eos_token=raw.eos_token if raw.eos_token >= 0 else None,
            eot_token=raw.eot_token if raw.eot_token >= 0 else None,
            add_bos=bool(raw.add_bos),
            n_params=raw.n_params,
            size_bytes=raw.size_bytes,
            threads=raw.n_threads,
        )

    @property
    def n_vocab(self) -> int:
        return int(self._info_raw.n_vocab)

    def ready(self) -> bool:
        """True when the model can serve a generation now."""
        return bool(self._lib.adil_model_ready(self._require_open()) == 0)

    # -- tokens ---------------------------------------------------------
    def tokenize(
        self, text: str | bytes, add_bos: bool | None = None, special: bool = True
    ) -> npt.NDArray[np.int32]:
        """Token ids of `text` (str, or raw bytes even if not valid UTF-8).
        Defaults as llama.cpp's: BOS when the model asks for it, special
        tokens such as ``<start_of_turn>`` parsed."""
        data = text.encode("utf-8") if isinstance(text, str) else bytes(text)
        bos = -1 if add_bos is None else int(bool(add_bos))
        n = ffi.new("size_t *")
        capacity = len(data) + 8
        while True:
            ids = np.empty(capacity, dtype=np.int32)
            check(self._lib, self._lib.adil_tokenize(
                self._require_open(), data, len(data), bos, int(special),
                ffi.cast("int32_t *", ids.ctypes.data), capacity, n))
            if n[0] <= capacity:
                return ids[: n[0]].copy()
            capacity = int(n[0])

    def token_bytes(self, token: int, special: bool = False) -> bytes:
        """The bytes of one token (may be part of a UTF-8 character)."""
        key = token if not special else ~token
        cached = self._pieces.get(key)
        if cached is not None:
            return cached
        n = ffi.new("size_t *")
        buf = ffi.new("char[]", 64)
        check(self._lib, self._lib.adil_token_to_piece(
            self._require_open(), token, int(special), buf, 64, n))
        if n[0] > 64:
            buf = ffi.new("char[]", n[0])
            check(self._lib, self._lib.adil_token_to_piece(
                self._require_open(), token, int(special), buf, n[0], n))
        piece = bytes(ffi.buffer(buf, n[0]))
        self._pieces[key] = piece
        return piece

    def detokenize(self, ids: Sequence[int] | npt.NDArray[np.int32], special: bool = False) -> str:
        """Text of token ids (invalid UTF-8 replaced)."""
        return b"".join(self.token_bytes(int(t), special) for t in ids).decode("utf-8", "replace")

    def render_chat(
        self, messages: Sequence[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The prompt for `messages`, from the model's chat template."""
        info = self._info_raw
        return render_chat(
            _str(info.chat_template) or None,
            messages,
            add_generation_prompt=add_generation_prompt,
            bos_token=self._special_text(info.bos_token),
            eos_token=self._special_text(info.eos_token),
        )

    def _special_text(self, token: int) -> str:
        return self.detokenize([token], special=True) if token >= 0 else ""

    # -- evaluation -----------------------------------------------------
    def logits(self, ids: Sequence[int] | npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
        """Teacher-forced logits, one row per position: (len(ids), n_vocab)."""
        tokens = np.ascontiguousarray(ids, dtype=np.int32)
        out = np.empty((len(tokens), self.n_vocab), dtype=np.float32)
        with self._exclusive():
            check(self._lib, self._lib.adil_context_logits(
                self._ensure_context(), ffi.cast("int32_t *", tokens.ctypes.data), len(tokens),
                ffi.cast("float *", out.ctypes.data), out.size))
        return out

    def cancel_token(self) -> CancelToken:
        """A new cancelled flag of this model's engine."""
        return CancelToken(self._library)

    def generate(
        self,
        prompt: str | Sequence[int] | npt.NDArray[np.int32],
        *,
        max_tokens: int = 256,
        sampling: Sampling | None = None,
        schema: dict[str, Any] | None = None,
        timeout: Timeout | None = None,
        cancel: CancelToken | None = None,
        stop: Sequence[str] = (),
        n: int = 1,
        images: Sequence[Any] | None = None,
        ignore_eos: bool = False,
    ) -> Generation:
        """Starts a generation and returns its stream of pieces.

        Raises BusyError, ModelNotReadyError, ContextLengthError,
        CapabilityError (n != 1, images, schema without grammar support) at
        once; DeadlineError (``limit`` read or total) while streaming.
        ``ignore_eos`` keeps generating past end-of-text (benchmarks)."""
        if n != 1:
            raise CapabilityError(f"this engine produces one choice per request; n={n} asked")
        if images:
            raise CapabilityError("this engine and model cannot take images")
        if max_tokens < 0:
            raise InvalidArgumentError(f"max_tokens must be >= 0, got {max_tokens}")
        timeout = timeout or Timeout()
        if timeout.total is not None and timeout.total <= 0:
            raise DeadlineError("total timeout expired before the generation started",
                                limit="total")
        ids = self.tokenize(prompt) if isinstance(prompt, str) else np.ascontiguousarray(
            prompt, dtype=np.int32)
        if cancel is not None and cancel.library is not self._library:
            raise InvalidArgumentError("the cancel token belongs to another engine")
        if not self._busy.acquire(blocking=False):
            raise BusyError("the model already serves a generation (one at a time)")
        try:
            return self._start(ids, max_tokens, sampling or Sampling(), schema, timeout, cancel,
                               stop, ignore_eos)
        except BaseException:
            self._busy.release()
            raise

    def _start(
        self,
        ids: npt.NDArray[np.int32],
        max_tokens: int,
        sampling: Sampling,
        schema: dict[str, Any] | None,
        timeout: Timeout,
        cancel: CancelToken | None,
        stop: Sequence[str],
        ignore_eos: bool,
    ) -> Generation:
        lib = self._lib
        keep: list[Any] = [ids]
        params = ffi.new("adil_run_params *")
        lib.adil_run_default_params(params)
        params.max_tokens = max_tokens
        params.sampling = c_sampling = sampling.to_c(lib)
        keep.append(c_sampling)
        if schema is not None:
            grammar = self._compile_grammar(schema)
            params.grammar = grammar
            keep.append(grammar)
        if cancel is not None:
            params.cancel_flag = cancel.handle
            keep.append(cancel)
        params.total_timeout_ms = _ms(timeout.total)
        params.read_timeout_ms = _ms(timeout.read)
        params.ignore_eos = int(ignore_eos)
        out = ffi.new("adil_run **")
        prompt = ffi.cast("int32_t *", ids.ctypes.data)
        check(lib, lib.adil_run_start(self._ensure_context(), prompt, len(ids), params, out))
        run = ffi.gc(out[0], lib.adil_run_free)
        keep.append(params)
        return Generation(self._library, run, self.token_bytes, stop, keep, self._busy.release)

    def _compile_grammar(self, schema: dict[str, Any]) -> Any:
        text = json.dumps(schema).encode("utf-8")
        out = ffi.new("adil_grammar **")
        check(self._lib, self._lib.adil_grammar_compile(self._require_open(), text, len(text), out))
        return ffi.gc(out[0], self._lib.adil_grammar_free)

    def complete(
        self,
        prompt: str | Sequence[int] | npt.NDArray[np.int32],
        **kwargs: Any,
    ) -> Completion:
        """Runs a generation to its end: the generated text, tokens, stop
        reason and stats.  Same arguments as :meth:`generate`."""
        with self.generate(prompt, **kwargs) as generation:
            return generation.completion()

    # -- lifetime -------------------------------------------------------
    def _require_open(self) -> Any:
        if self._handle is None:
            raise InvalidArgumentError("the model is closed")
        return self._handle

    def _ensure_context(self) -> Any:
        if self._context is None:
            params = ffi.new("adil_context_params *")
            self._lib.adil_context_default_params(params)
            if self._context_length is not None:
                params.n_ctx = _positive("context_length", self._context_length)
            if self._threads is not None:
                params.n_threads = self._threads
            out = ffi.new("adil_context **")
            model = self._require_open()
            check(self._lib, self._lib.adil_context_new(model, params, out))
            lib = self._lib
            self._context = ffi.gc(out[0], lambda p, _model=model: lib.adil_context_free(p))
        return self._context

    def _exclusive(self) -> _Exclusive:
        return _Exclusive(self._busy)

    def close(self) -> None:
        """Frees the context and the model.  Idempotent.  A generation still
        streaming must be closed first (else BusyError)."""
        if self._handle is None:
            return
        if not self._busy.acquire(blocking=False):
            raise BusyError("close the model's running generation first")
        try:
            context, self._context = self._context, None
            if context is not None:
                ffi.release(context)
            handle, self._handle = self._handle, None
            ffi.release(handle)
        finally:
            self._busy.release()

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<adil.Model {self.path!r}>"


class _Exclusive:
    """A non-blocking hold of the model: BusyError when it is taken."""

    def __init__(self, lock: threading.Lock) -> None:
        self._lock = lock

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            raise BusyError("the model already serves a generation (one at a time)")

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


def _cstr(text: str, keep: list[Any]) -> Any:
    value = ffi.new("char[]", text.encode("utf-8"))
    keep.append(value)
    return value


def _str(ptr: Any) -> str:
    return "" if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "replace")


def _positive(name: str, value: int) -> int:
    if not isinstance(value, int) or value <= 0:
        raise InvalidArgumentError(f"{name} must be a positive integer, got {value!r}")
    return value


def _ms(seconds: float | None) -> int:
    """Seconds as whole milliseconds for the engine (0 = no limit)."""
    if seconds is None:
        return 0
    return max(1, min(2**32 - 1, math.ceil(seconds * 1000)))
