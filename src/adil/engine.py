"""Engine and Model: the in-process path to an ADIL engine library.

    engine = adil.Engine.open()                           # the bundled CPU engine
    stub = adil.Engine.open(library=adil.STUB_LIBRARY)    # the reference stub
    model = engine.load_model("model.gguf", threads=2, context_length=4096)

Lifetimes: every handle is freed by the garbage collector, or at once by
``close()`` (idempotent) or a ``with`` block.  A child keeps its parent
alive, and ``Engine.close()`` closes the engine's models first.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import numpy.typing as npt

from . import __version__, chat_api
from ._binding import ENGINE_LIBRARY as _ENGINE_LIBRARY
from ._binding import HOST_MAJOR, HOST_MINOR, HOST_NAME, Library, check, ffi, open_library
from ._cdef import CONSTANTS
from ._validate import c_text, milliseconds, path_bytes, text_bytes, token_ids, uint32
from .cancel import CancelToken
from .chat import DEFAULT_TIMEOUT as CHAT_TIMEOUT
from .constraints import GRAMMAR, Constraint
from .errors import (
    BusyError,
    CapabilityError,
    ComponentRefusedError,
    ContextLengthError,
    DeadlineError,
    InvalidArgumentError,
)
from .generation import Completion, Generation
from .options import keywords_of
from .sampling import Sampling, resolve_sampling
from .structured import OutputSchema, output_schema
from .timeouts import Deadline, Timeout, as_timeout

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .aio import AsyncGeneration
    from .chat_api import ChatResponse, ChatStream
    from .messages import ChatMessage
    from .options import ChatOptions, GenerateOptions
    from .tools import Tool

__all__ = ["Engine", "EngineInfo", "Model", "ModelInfo"]

# The largest context window adil.h lets an engine be asked for (adil_context_new).
MAX_CONTEXT_LENGTH = 1 << 20
# The most alternatives logprobs=k may ask for per token (adil.h).
MAX_LOGPROBS = int(CONSTANTS["ADIL_MAX_LOGPROBS"])
# The engine capability that logprobs= needs (ABI 2.2).
LOGPROBS = "logprobs"
# speculative= -> the adil_speculative value and the engine capability it needs (ABI 2.3).
SPECULATIVE: dict[str, tuple[int, str]] = {
    "lookup": (int(ffi.typeof("adil_speculative").relements["ADIL_SPECULATIVE_LOOKUP"]), "lookup"),
}
# kv_type= -> the adil_kv_cache_type value (ABI 2.6); None leaves the engine's default.
KV_TYPES: dict[str, int] = {
    name: int(ffi.typeof("adil_kv_cache_type").relements[f"ADIL_KV_CACHE_{name.upper()}"])
    for name in ("f16", "f32", "q8_0")
}
KvType = Literal["f16", "f32", "q8_0"]


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
    # Optional features of the engine, e.g. ("grammar", "logits"); () for a 2.0 engine.
    capabilities: tuple[str, ...] = ()

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
    # bytes of the KV cache of the model's context (adil_model_kv_bytes: keys
    # and values of every layer for context_length positions); 0 for an
    # engine that keeps none (the stub), None for one before ABI 2.4
    kv_cache_bytes: int | None = None
    # bytes of weights one decoded token reads (adil_model_info.decode_bytes:
    # a mixture of experts counts the experts a token is routed through, on
    # average); None for an engine before ABI 2.5, 0 for one without weights
    decode_bytes: int | None = None
    # weights one decoded token multiplies by (adil_model_info.decode_params,
    # counted as decode_bytes is: a token's multiply-adds before attention)
    decode_params: int | None = None
    # the width of the residual stream (adil_model_info.n_embd; 0 for the
    # stub, None before ABI 2.5)
    n_embd: int | None = None


class Engine:
    """An opened engine library (any version-2 engine, by path)."""

    def __init__(self, library: Library, handle: Any, host: Any) -> None:
        self._library = library
        self._handle = handle
        self._host = host  # adil_host_info and its strings stay alive with the engine
        self._models: weakref.WeakSet[Model] = weakref.WeakSet()
        self._lock = threading.Lock()  # load_model vs close
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
            capabilities=library.capabilities,
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

        `backend`: "auto" (default: the best backend that can run, today the
        CPU), "cpu", or "cuda", which raises CapabilityError naming why it
        cannot be had (an engine built without CUDA, no driver, no device,
        and, until the CUDA forward pass exists, even with a device).

        Raises ComponentRefusedError (``library_refused`` or ``host_refused``)."""
        lib = open_library(library if library is not None else _ENGINE_LIBRARY)
        keep: list[Any] = []
        host = ffi.new("adil_host_info *")
        host.struct_size = ffi.sizeof("adil_host_info")
        host.host_major, host.host_minor = HOST_MAJOR, HOST_MINOR
        host.host_name = _cstr("host name", HOST_NAME, keep)
        host.host_version = _cstr("host version", __version__, keep)
        params = ffi.new("adil_engine_params *")
        lib.lib.adil_engine_default_params(params)
        if threads is not None:
            params.n_threads = uint32("threads", threads, minimum=1)
        if backend is not None:
            params.backend = _cstr("backend", backend, keep)
        out = ffi.new("adil_engine **")
        status = lib.lib.adil_engine_open(host, params, out)
        if status == lib.lib.ADIL_STATUS_HOST_REFUSED:  # name the library too
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
        kv_type: KvType | None = None,
    ) -> Model:
        """Loads a model file (GGUF; a JSON script for the stub).  The context
        (KV cache) is made at the first generation or logits call, not here;
        a context length outside 1..2**20 fails here (InvalidArgumentError),
        one the machine has no memory for at that first call
        (EngineMemoryError).  ``context_length=None``: the model's trained
        length, at most ADIL_DEFAULT_N_CTX_CAP (4096) tokens.

        ``kv_type``: how the context stores cached keys and values: ``"f16"``
        (the CPU engine's default), ``"f32"`` (exact, twice the bytes) or
        ``"q8_0"`` (8-bit blocks, 53% of f16's bytes; the CPU engine needs
        head widths that are multiples of 32, else CapabilityError here);
        None: the engine's default.  Another value: InvalidArgumentError; an
        engine before ABI 2.6 (which would not read the field):
        CapabilityError."""
        c_path = path_bytes("path", path)
        lib = self._library.lib
        params = ffi.new("adil_model_params *")
        lib.adil_model_default_params(params)
        if threads is not None:
            params.n_threads = uint32("threads", threads, minimum=1)
        if context_length is not None:
            uint32("context_length", context_length, minimum=1, maximum=MAX_CONTEXT_LENGTH)
        params.use_mmap = 1 if use_mmap else 0
        kv = self._check_kv_type(kv_type)
        # `out` owns the model from the moment the engine writes it, even if
        # an exception (Ctrl-C) lands before the Model object exists.
        with self._lock:
            engine = self._require_open()
            out = ffi.gc(ffi.new("adil_model **"), _free_model_out(lib, engine))
            check(lib, lib.adil_model_load(engine, c_path, params, out))
            model = Model(self, out, os.fsdecode(c_path), threads, context_length, kv)
            self._models.add(model)
        return model

    def _check_kv_type(self, kv_type: str | None) -> int:
        """The adil_kv_cache_type value of `kv_type` (None: 0, the default),
        refused by an engine that would not read it."""
        if kv_type is None:
            return 0
        if kv_type not in KV_TYPES:
            raise InvalidArgumentError(
                f"kv_type: expected None or one of {', '.join(map(repr, KV_TYPES))}, "
                f"got {kv_type!r}")
        if not self._library.has_fields("adil_context_params", 6):
            raise CapabilityError(
                f"kv_type: the engine {self.info.engine_name} (ABI {self.info.abi}) has no "
                f"KV cache type option (ABI 2.6)")
        return KV_TYPES[kv_type]

    def int8_peak(self, threads: int | None = None) -> float | None:
        """The int8 multiply-accumulate peak of this CPU in MAC/s, measured
        now (about 60 ms) on ``threads`` threads (None: the engine's default)
        by a register-resident micro-kernel of the engine's kernel level
        (adil_engine_int8_peak).  None from an engine before ABI 2.5 or one
        with no int8 kernel to measure (the stub, the scalar level)."""
        if not self._library.has_function("adil_engine_int8_peak"):
            return None
        n_threads = 0 if threads is None else uint32("threads", threads, minimum=1)
        lib = self._library.lib
        out = ffi.new("double *")
        with self._lock:
            status = lib.adil_engine_int8_peak(self._require_open(), n_threads, out)
        if status == lib.ADIL_STATUS_CAPABILITY:
            return None
        check(lib, status)
        return float(out[0])

    def _require_open(self) -> Any:
        if self._handle is None:
            raise InvalidArgumentError("the engine is closed")
        return self._handle

    def close(self) -> None:
        """Closes the engine's models, then the engine.  Idempotent.
        BusyError when one of its models still has a generation open."""
        with self._lock:
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
    that share a prefix), made at the first generation or logits call.

    Threads: every method may be called from any thread.  Calls into the
    engine are serialised on the model (a second thread waits for the
    first's call to return, a step of a generation at most); one generation
    at a time: another one started while it is open gets :class:`BusyError`,
    and so does ``close()``.  After ``close()`` every method raises
    :class:`InvalidArgumentError`; ``info`` and ``render_chat`` keep working
    on the copies taken at load."""

    def __init__(
        self,
        engine: Engine,
        handle_out: Any,
        path: str,
        threads: int | None,
        context_length: int | None,
        kv_type: int = 0,
    ) -> None:
        self.engine = engine
        self._library = engine.library
        self._lib = engine.library.lib
        # Held across every engine call on the model or its context; reentrant
        # so a destructor that runs inside a call (GC) cannot deadlock.
        self._calls = threading.RLock()
        self._handle_out: Any = handle_out  # adil_model **, freed by its destructor
        self._context: Any = None
        # The model's one run lives in this slot, owned by the model: the
        # engine writes it inside adil_run_start, so a Ctrl-C landing between
        # that and the Generation taking it cannot lose it (see _reap).
        self._run_out: Any = ffi.new("adil_run **")
        self._run_keep: list[Any] = []  # params, grammar, cancel flag of that run
        self._run_owner: weakref.ref[Generation] | None = None
        self._run_serial = 0  # which run the slot holds (addresses are reused)
        self._cancel_lock = threading.Lock()  # a cancel never sees a freed run
        self._pieces: dict[int, bytes] = {}
        self.path = path
        self._context_params = (threads, context_length, kv_type)  # adil_kv_cache_type
        self._info = self._read_info(context_length)
        if self._library.has_function("adil_model_kv_bytes"):
            self._info = dataclasses.replace(self._info, kv_cache_bytes=self._kv_cache_bytes(
                *self._context_params))

    # -- information ----------------------------------------------------
    def _read_info(self, context_length: int | None) -> ModelInfo:
        raw = ffi.new("adil_model_info *")
        raw.struct_size = ffi.sizeof("adil_model_info")
        with self._calls:
            check(self._lib, self._lib.adil_model_get_info(self._require_open(), raw))
        # The window adil_context_new will choose (adil.h): the length asked
        # for, else the trained length capped at ADIL_DEFAULT_N_CTX_CAP.
        n_ctx = context_length if context_length is not None else min(
            int(raw.n_ctx_train), int(CONSTANTS["ADIL_DEFAULT_N_CTX_CAP"]))
        since_2_5 = self._library.has_fields("adil_model_info", 5)
        return ModelInfo(
            path=self.path,
            architecture=_str(raw.architecture),
            name=_str(raw.name),
            chat_template=_str(raw.chat_template) or None,
            n_vocab=raw.n_vocab,
            context_length=n_ctx,
            n_ctx_train=raw.n_ctx_train,
            bos_token=raw.bos_token if raw.bos_token >= 0 else None,
            eos_token=raw.eos_token if raw.eos_token >= 0 else None,
            eot_token=raw.eot_token if raw.eot_token >= 0 else None,
            add_bos=bool(raw.add_bos),
            n_params=raw.n_params,
            size_bytes=raw.size_bytes,
            threads=raw.n_threads,
            decode_bytes=int(raw.decode_bytes) if since_2_5 else None,
            decode_params=int(raw.decode_params) if since_2_5 else None,
            n_embd=int(raw.n_embd) if since_2_5 else None,
        )

    def _kv_cache_bytes(self, threads: int | None, context_length: int | None,
                        kv_type: int) -> int:
        """What adil_model_kv_bytes says the context will allocate (it also
        refuses a kv_type the model cannot keep: CapabilityError at load)."""
        params = self._context_params_struct(threads, context_length, kv_type)
        out = ffi.new("uint64_t *")
        with self._calls:
            check(self._lib, self._lib.adil_model_kv_bytes(self._require_open(), params, out))
        return int(out[0])

    @property
    def info(self) -> ModelInfo:
        """What the model is (read once at load; no KV cache is made for it).
        ``context_length``: the window its context has (or will have);
        ``kv_cache_bytes``: the KV cache that context has (or will have)."""
        return self._info

    @property
    def n_vocab(self) -> int:
        return self._info.n_vocab

    @property
    def capabilities(self) -> tuple[str, ...]:
        """The optional features of the model's engine (``EngineInfo.capabilities``):
        ``grammar`` when it takes ``schema=`` and ``constraint=``."""
        return self.engine.info.capabilities

    def ready(self) -> bool:
        """True when the model can serve a generation now."""
        with self._calls:
            return bool(self._lib.adil_model_ready(self._require_open()) == 0)

    # -- tokens ---------------------------------------------------------
    def tokenize(
        self, text: str | bytes, *, add_bos: bool | None = None, special: bool = True
    ) -> npt.NDArray[np.int32]:
        """Token ids of `text` (str, or raw bytes even if not valid UTF-8).
        Defaults as llama.cpp's: BOS when the model asks for it, special
        tokens such as ``<start_of_turn>`` parsed."""
        data = text_bytes("text", text)
        bos = -1 if add_bos is None else int(bool(add_bos))
        n = ffi.new("size_t *")
        capacity = len(data) + 8
        while True:
            ids = np.empty(capacity, dtype=np.int32)
            with self._calls:
                check(self._lib, self._lib.adil_tokenize(
                    self._require_open(), data, len(data), bos, int(bool(special)),
                    ffi.cast("int32_t *", ids.ctypes.data), capacity, n))
            if n[0] <= capacity:
                return ids[: n[0]].copy()
            capacity = int(n[0])

    def token_bytes(self, token: int, *, special: bool = False) -> bytes:
        """The bytes of one token (may be part of a UTF-8 character)."""
        token = uint32("token", token, maximum=2**31 - 1)
        key = token if not special else ~token
        cached = self._pieces.get(key)
        if cached is not None:
            return cached
        n = ffi.new("size_t *")
        buf = ffi.new("char[]", 64)
        with self._calls:
            check(self._lib, self._lib.adil_token_to_piece(
                self._require_open(), token, int(special), buf, 64, n))
            if n[0] > 64:
                buf = ffi.new("char[]", n[0])
                check(self._lib, self._lib.adil_token_to_piece(
                    self._require_open(), token, int(special), buf, n[0], n))
        piece = bytes(ffi.buffer(buf, n[0]))
        self._pieces[key] = piece
        return piece

    def detokenize(
        self, ids: Sequence[int] | npt.NDArray[np.int32], *, special: bool = False
    ) -> str:
        """Text of token ids (invalid UTF-8 replaced)."""
        tokens = token_ids("ids", ids)
        return b"".join(self.token_bytes(int(t), special=special) for t in tokens).decode(
            "utf-8", "replace")

    def render_chat(
        self, messages: Sequence[Mapping[str, Any] | ChatMessage], *,
        add_generation_prompt: bool = True, tools: Sequence[Tool | Mapping[str, Any]] | None = None,
        chat_template: str | None = None, timeout: float | None = CHAT_TIMEOUT,
        deadline: Deadline | None = None,
    ) -> str:
        """The prompt for `messages` (OpenAI-shaped, see :mod:`adil.messages`)
        with `tools` presented, from `chat_template`, the model's own
        template or a built-in one (:mod:`adil.chat_templates`), rendered
        within `timeout` seconds and a caller's `deadline` (see
        :func:`adil.chat.render_chat`)."""
        from .chat_api import render_prompt

        return render_prompt(self, messages, add_generation_prompt=add_generation_prompt,
                             tools=tools, chat_template=chat_template, timeout=timeout,
                             deadline=deadline).text

    @overload
    def chat(self, messages: Sequence[Mapping[str, Any] | ChatMessage], *,
             stream: Literal[False] = False, **options: Unpack[ChatOptions]) -> ChatResponse: ...

    @overload
    def chat(self, messages: Sequence[Mapping[str, Any] | ChatMessage], *,
             stream: Literal[True], **options: Unpack[ChatOptions]) -> ChatStream: ...

    @overload
    def chat(self, messages: Sequence[Mapping[str, Any] | ChatMessage], *,
             stream: bool = False, **options: Unpack[ChatOptions]
             ) -> ChatResponse | ChatStream: ...

    @keywords_of(chat_api.chat)
    def chat(self, messages: Sequence[Mapping[str, Any] | ChatMessage], *,
             stream: bool = False, **options: Unpack[ChatOptions]
             ) -> ChatResponse | ChatStream:
        """One assistant turn for OpenAI-style `messages`: a
        :class:`~adil.chat_api.ChatResponse` (``message``, ``text``,
        ``finish_reason``, ``usage``, ``stats``), or with ``stream=True`` a
        :class:`~adil.chat_api.ChatStream` of content chunks.  Tools are
        returned as calls, never run.  See :mod:`adil.chat_api`; the keywords
        and their defaults: :class:`adil.options.ChatOptions`."""
        return chat_api.chat(self, messages, stream=stream, **options)

    # -- evaluation -----------------------------------------------------
    def logits(self, ids: Sequence[int] | npt.NDArray[np.int32]) -> npt.NDArray[np.float32]:
        """Teacher-forced logits, one row per position: (len(ids), n_vocab)."""
        tokens = token_ids("ids", ids)
        if len(tokens) > self._info.context_length:  # before allocating the rows
            raise ContextLengthError(
                f"{len(tokens)} tokens exceed the context window of "
                f"{self._info.context_length} tokens")
        out = np.empty((len(tokens), self.n_vocab), dtype=np.float32)
        with self._calls:
            check(self._lib, self._lib.adil_context_logits(
                self._require_context(), ffi.cast("int32_t *", tokens.ctypes.data), len(tokens),
                ffi.cast("float *", out.ctypes.data), out.size))
        return out

    def cancel_token(self) -> CancelToken:
        """A new cancelled flag of this model's engine."""
        return CancelToken(self._library)

    def generate(
        self,
        prompt: str | bytes | Sequence[int] | npt.NDArray[np.int32],
        *,
        max_tokens: int | None = 256,
        sampling: Sampling | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        top_k: int | None = None,
        min_p: float | None = None,
        seed: int | None = None,
        repeat_penalty: float | None = None,
        schema: Any = None,
        timeout: Timeout | float | None = None,
        cancel: CancelToken | None = None,
        stop: str | Sequence[str] = (),
        n: int = 1,
        images: Sequence[Any] | None = None,
        ignore_eos: bool = False,
        constraint: Constraint | None = None,
        logprobs: int | None = None,
        stop_tokens: Sequence[int] | npt.NDArray[np.int32] = (),
        speculative: Literal["lookup"] | None = None,
    ) -> Generation:
        """Starts a generation and returns its stream of pieces.

        The keywords, what they do and their defaults:
        :class:`adil.options.GenerateOptions` (``sampling`` and the keywords
        that set one of its fields: :class:`adil.options.SamplingOptions`).
        ``schema`` (structured output, see :mod:`adil.structured`): once the
        stream ends ``value`` holds the document, read and validated.

        Raises BusyError, ModelNotReadyError, ContextLengthError,
        CapabilityError (n != 1, images, schema or constraint without grammar
        support, logprobs without logprobs support, speculative="lookup"
        without lookup support), ToolSchemaError (a
        schema outside the subset, with ``.location``), InvalidArgumentError
        at once; DeadlineError (``limit`` read or total) and
        OutputValidationError (output invalid, not matching the schema or
        truncated) while streaming.
        Ctrl-C while it runs cancels the run within a layer's time (prefill
        included) and raises KeyboardInterrupt; the model stays usable."""
        if n != 1:
            raise CapabilityError(f"this engine produces one choice per request; n={n} asked")
        if images:
            raise CapabilityError("this engine and model cannot take images")
        limit = 0 if max_tokens is None else uint32("max_tokens", max_tokens, minimum=1)
        stops = _stop_strings(stop)
        chosen = resolve_sampling(sampling, temperature=temperature, top_p=top_p, top_k=top_k,
                                  min_p=min_p, seed=seed, repeat_penalty=repeat_penalty)
        timeout = as_timeout(timeout) or Timeout()
        n_logprobs = self._check_logprobs(logprobs)
        speculation = self._check_speculative(speculative)
        extra_stops = token_ids("stop_tokens", stop_tokens)
        output = None if schema is None else output_schema(schema)
        if output is not None and constraint is not None:
            raise InvalidArgumentError("give schema or constraint, not both")
        if constraint is not None and not isinstance(constraint, Constraint):
            raise InvalidArgumentError(
                f"constraint must be an adil.constraints.Constraint, got {constraint!r}")
        constraint = output.constraint if output is not None else constraint
        if constraint is not None and GRAMMAR not in self.capabilities:
            raise CapabilityError(
                f"the engine {self.engine.info.engine_name} has no grammar support (its "
                f"capabilities: {', '.join(self.capabilities) or 'none'}): it cannot constrain "
                "its output to a schema")
        if cancel is not None and (not isinstance(cancel, CancelToken)
                                   or cancel.library is not self._library):
            raise InvalidArgumentError("cancel must be a CancelToken of this model's engine")
        if timeout.total is not None and timeout.total <= 0:
            raise DeadlineError("total timeout expired before the generation started",
                                limit="total")
        ids = self.tokenize(prompt) if isinstance(prompt, (str, bytes)) else token_ids(
            "prompt", prompt)
        return self._start(ids, _RunOptions(limit, chosen, timeout, cancel, stops, ignore_eos,
                                            extra_stops, n_logprobs, speculation),
                           _Output(constraint, output))

    def _check_speculative(self, speculative: str | None) -> int:
        """The adil_speculative value of `speculative` (None: 0), checked
        against the engine's capabilities."""
        if speculative is None:
            return 0
        if speculative not in SPECULATIVE:
            raise InvalidArgumentError(
                f"speculative: expected None or one of {', '.join(map(repr, SPECULATIVE))}, "
                f"got {speculative!r}")
        value, capability = SPECULATIVE[speculative]
        if capability not in self.capabilities or not self._library.has_fields(
                "adil_run_params", 3):
            raise CapabilityError(
                f"the engine {self.engine.info.engine_name} has no {speculative} decoding "
                f"(its capabilities: {', '.join(self.capabilities) or 'none'})")
        return value

    def _check_logprobs(self, logprobs: int | None) -> int | None:
        """`logprobs` checked (None, or 0..MAX_LOGPROBS) against the engine's
        capabilities."""
        if logprobs is None:
            return None
        k = uint32("logprobs", logprobs, maximum=MAX_LOGPROBS)
        if LOGPROBS not in self.capabilities or not self._library.has_fields("adil_run_params", 2):
            raise CapabilityError(
                f"the engine {self.engine.info.engine_name} cannot report log-probabilities "
                f"(its capabilities: {', '.join(self.capabilities) or 'none'})")
        return k

    def _start(self, ids: npt.NDArray[np.int32], options: _RunOptions, output: _Output
               ) -> Generation:
        lib = self._lib
        keep: list[Any] = [ids]
        params = ffi.new("adil_run_params *")
        lib.adil_run_default_params(params)
        params.max_tokens = options.max_tokens
        params.sampling = c_sampling = options.sampling.to_c(lib)
        keep.append(c_sampling)
        if output.constraint is not None:
            grammar = self._compile_grammar(output.constraint)
            params.grammar = grammar
            keep.append(grammar)
        if options.cancel is not None:
            params.cancel_flag = options.cancel.handle
            keep.append(options.cancel)
        if len(options.stop_tokens):
            params.stop_tokens = ffi.cast("int32_t *", options.stop_tokens.ctypes.data)
            params.n_stop_tokens = len(options.stop_tokens)
            keep.append(options.stop_tokens)
        if options.logprobs is not None:  # 0 alternatives still reads each token's logprob
            params.n_logprobs = max(options.logprobs, 1)
        params.total_timeout_ms = milliseconds("timeout.total", options.timeout.total)
        params.read_timeout_ms = milliseconds("timeout.read", options.timeout.read)
        params.ignore_eos = int(bool(options.ignore_eos))
        if options.speculative:  # never set for an engine before 2.3 (it reads no such field)
            params.speculative = options.speculative
        keep.append(params)
        # At once, not after waiting for the call lock: a generation stepping
        # on another thread takes that lock for every step and may take it
        # again before this thread gets it, until its whole run has ended.
        if self._serving():
            raise BusyError("the model already serves a generation (one at a time)")
        with self._calls:
            self._reap()
            if self._run_out[0] != ffi.NULL:
                raise BusyError("the model already serves a generation (one at a time)")
            context = self._require_context()
            self._run_keep = keep
            self._run_serial += 1
            check(lib, lib.adil_run_start(
                context, ffi.cast("int32_t *", ids.ctypes.data), len(ids),
                params, self._run_out))
            generation = Generation(self, self._run_out[0], self._run_serial, self.token_bytes,
                                    options.stop, constraint=output.constraint,
                                    schema=output.schema, max_tokens=options.max_tokens,
                                    logprobs=options.logprobs)
            self._run_owner = weakref.ref(generation)
        return generation

    # -- the run slot (Generation calls these) ----------------------------
    def _run_is(self, serial: int) -> bool:
        """True while run number `serial` is the model's live run."""
        return serial == self._run_serial and self._run_out[0] != ffi.NULL

    def _free_run(self, serial: int) -> None:
        """Frees run number `serial` if it is still live (idempotent)."""
        with self._calls, self._cancel_lock:
            if self._run_is(serial):
                run = self._run_out[0]
                self._run_out[0] = ffi.NULL  # no signal check between this and the free
                self._lib.adil_run_free(run)

    def _cancel_run(self, serial: int) -> None:
        with self._cancel_lock:
            if self._run_is(serial):
                self._lib.adil_run_cancel(self._run_out[0])

    def _serving(self) -> bool:
        """True while a live Generation owns the model's run (read without
        the call lock: a run that ends meanwhile is seen under it)."""
        owner = self._run_owner() if self._run_owner is not None else None
        return (self._run_out[0] != ffi.NULL and owner is not None
                and owner._owns(self._run_serial))

    def _reap(self) -> None:
        """Frees a run whose Generation is gone: one an exception (Ctrl-C)
        cut off before a Generation took it, or whose Generation was
        collected without freeing it.  Called under the call lock."""
        if self._run_out[0] != ffi.NULL and not self._serving():
            self._free_run(self._run_serial)
            self._run_owner = None
            self._run_keep = []

    def _compile_grammar(self, constraint: Constraint) -> Any:
        """The engine's compiled grammar of `constraint` (freed by the
        garbage collector); generate() calls it, adil.bench times it.
        CapabilityError or InvalidArgumentError naming the JSON Pointer of
        what the engine's compiler refuses."""
        text = constraint.text.encode("utf-8")
        out = ffi.new("adil_grammar **")
        with self._calls:
            check(self._lib, self._lib.adil_grammar_compile(
                self._require_open(), text, len(text), out))
        return ffi.gc(out[0], self._lib.adil_grammar_free)

    @keywords_of(generate)
    def complete(
        self,
        prompt: str | bytes | Sequence[int] | npt.NDArray[np.int32],
        **options: Unpack[GenerateOptions],
    ) -> Completion:
        """Runs a generation to its end: the generated text, tokens, stop
        reason, stats (and value, logprobs).  Same arguments as
        :meth:`generate`."""
        with self.generate(prompt, **options) as generation:
            return generation.completion()

    # -- asyncio (adil.aio) ---------------------------------------------
    @keywords_of(generate)
    def agenerate(
        self,
        prompt: str | bytes | Sequence[int] | npt.NDArray[np.int32],
        **options: Unpack[GenerateOptions],
    ) -> AsyncGeneration:
        """:meth:`generate` as an async iterator of pieces
        (``async for piece in model.agenerate(...)``); cancelling the reading
        task cancels the run (see :func:`adil.aio.agenerate`)."""
        from .aio import agenerate

        return agenerate(self, prompt, **options)

    @keywords_of(chat_api.chat, exclude=("stream",))
    async def achat(
        self,
        messages: Sequence[Mapping[str, Any] | ChatMessage],
        **options: Unpack[ChatOptions],
    ) -> ChatResponse:
        """:meth:`chat` awaited (the whole response; no ``stream``): the chat
        runs in a worker thread, and cancelling the awaiting task cancels
        its run (see :func:`adil.aio.achat`)."""
        from .aio import achat

        return await achat(self, messages, **options)

    # -- lifetime -------------------------------------------------------
    def _require_open(self) -> Any:
        handle = self._handle_out[0] if self._handle_out is not None else ffi.NULL
        if handle == ffi.NULL:
            raise InvalidArgumentError("the model is closed")
        return handle

    def _require_context(self) -> Any:
        """The model's context, made on first use (under the call lock, so
        two threads never make two)."""
        with self._calls:
            self._require_open()
            if self._context is None:
                self._context = self._new_context(*self._context_params)
            return self._context

    def _context_params_struct(self, threads: int | None, context_length: int | None,
                               kv_type: int) -> Any:
        params = ffi.new("adil_context_params *")
        self._lib.adil_context_default_params(params)
        if context_length is not None:
            params.n_ctx = context_length
        if threads is not None:
            params.n_threads = threads
        if kv_type:  # never set for an engine before 2.6 (Engine._check_kv_type)
            params.kv_type = kv_type
        return params

    def _new_context(self, threads: int | None, context_length: int | None,
                     kv_type: int) -> Any:
        params = self._context_params_struct(threads, context_length, kv_type)
        out = ffi.new("adil_context **")
        lib = self._lib
        check(lib, lib.adil_context_new(self._require_open(), params, out))
        # The destructor holds the model's slot: the model outlives it.
        context = ffi.gc(out[0], lambda p, _model=self._handle_out: lib.adil_context_free(p))
        n_ctx = int(lib.adil_context_size(context))
        if n_ctx != self._info.context_length:  # an engine that chose another window
            self._info = dataclasses.replace(self._info, context_length=n_ctx)
        return context

    def close(self) -> None:
        """Frees the context and the model.  Idempotent.  A generation still
        open must be closed first (else BusyError); a call of another thread
        in progress (tokenize, a step) is waited for."""
        with self._calls:
            if self._handle_out is None:
                return
            self._reap()
            if self._run_out[0] != ffi.NULL:
                raise BusyError("close the model's running generation first")
            context, self._context = self._context, None
            if context is not None:
                ffi.release(context)
            slot, self._handle_out = self._handle_out, None
            if slot is not None:
                ffi.release(slot)

    def __del__(self) -> None:
        # Collected without close(): the run (if any) goes before the context.
        if getattr(self, "_run_out", None) is not None:
            self._free_run(self._run_serial)

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<adil.Model {self.path!r}>"


@dataclass(frozen=True)
class _RunOptions:
    """A run's checked settings, as generate() passes them to _start()."""

    max_tokens: int  # 0: up to the end of the context
    sampling: Sampling
    timeout: Timeout
    cancel: CancelToken | None
    stop: tuple[str, ...]
    ignore_eos: bool
    stop_tokens: npt.NDArray[np.int32]
    logprobs: int | None
    speculative: int = 0  # adil_speculative


@dataclass(frozen=True)
class _Output:
    """What constrains a run's output, and how its value is read (schema)."""

    constraint: Constraint | None = None
    schema: OutputSchema | None = None


def _free_model_out(lib: Any, engine_handle: Any) -> Callable[[Any], None]:
    """The destructor of a model slot; it holds the engine handle, so the
    engine outlives the model."""

    def free(slot: Any, _engine: Any = engine_handle) -> None:
        handle = slot[0]
        slot[0] = ffi.NULL
        if handle != ffi.NULL:
            lib.adil_model_free(handle)

    return free


def _stop_strings(stop: str | Sequence[str]) -> tuple[str, ...]:
    stops = (stop,) if isinstance(stop, str) else stop
    if not all(isinstance(s, str) for s in stops):
        raise InvalidArgumentError(f"stop must be a str or a sequence of str, got {stop!r}")
    return tuple(stops)


def _cstr(name: str, text: str, keep: list[Any]) -> Any:
    value = ffi.new("char[]", c_text(name, text))
    keep.append(value)
    return value


def _str(ptr: Any) -> str:
    return "" if ptr == ffi.NULL else ffi.string(ptr).decode("utf-8", "replace")
