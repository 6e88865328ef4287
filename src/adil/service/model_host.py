"""The served model: loaded in the background, and its one run slot.

States: ``loading`` (the service listens at once; operations answer
``model_not_ready``), ``ready``, ``failed`` (operations answer 503 with the
load error's code).  The slot is reserved and freed on the event loop's
thread only, so it needs no lock.
"""

from __future__ import annotations

import collections
import copy
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Literal

from ..errors import AdilError, BusyError, EngineInternalError, ModelFileError, ModelNotReadyError
from .config import ServiceConfig

if TYPE_CHECKING:
    from ..engine import Engine, EngineInfo, Model
    from .app import Request

__all__ = ["ModelHost", "open_model"]

log = logging.getLogger("adil.service")

LoadState = Literal["loading", "ready", "failed"]


def open_model(config: ServiceConfig, on_engine: Any) -> tuple[Engine, Model]:
    """Open the engine, then load the model (an existing path as it is, else
    an alias of :mod:`adil.models`, fetched on first use).  `on_engine` gets
    the engine as soon as it is open (its component set is known before the
    model loads).  Tests replace this function to make a load slow."""
    from .. import models
    from ..engine import Engine

    engine = Engine.open(config.library, threads=config.threads)
    on_engine(engine)
    name = config.model
    # An alias is fetched; anything else is a path the engine opens (a
    # missing file fails there, as model_file_unreadable).
    path = models.path(name) if name in models.ALIASES and not os.path.exists(name) else name
    model = engine.load_model(path, threads=config.threads, context_length=config.context_length)
    return engine, model


def components_of(info: EngineInfo) -> dict[str, Any]:
    return {
        "engine_name": info.engine_name,
        "engine_version": info.engine_version,
        "abi_major": info.abi_major,
        "abi_minor": info.abi_minor,
        "host_name": info.host_name,
        "host_major": info.host_major,
        "host_minor": info.host_minor,
        "host_version": info.host_version,
        "capabilities": list(info.capabilities),
        "backends": list(info.backends),
    }


class ModelHost:
    """One model behind the service (implements ``app.ServiceContext``)."""

    def __init__(self, config: ServiceConfig) -> None:
        self._config = config
        self._lock = threading.Lock()  # state vs the loader thread
        self._state: LoadState = "loading"
        self._error: AdilError | None = None
        self._engine: Engine | None = None
        self._model: Model | None = None
        self._components: dict[str, Any] | None = None
        self._closed = False
        self._slot: Request | None = None
        self._thread: threading.Thread | None = None
        # Runs: how many engine runs at once (at most one, by the slot), and
        # the last outcomes, newest last (what a cancelled client's run did).
        self._runs = threading.Condition()
        self.active_runs = 0
        self.max_active_runs = 0
        self.outcomes: collections.deque[dict[str, Any]] = collections.deque(maxlen=1000)

    # -- loading ----------------------------------------------------------
    def start_loading(self) -> None:
        self._thread = threading.Thread(target=self._load, name="adil-service-load", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        started = time.monotonic()
        log.info("loading %s ...", self._config.model)
        try:
            engine, model = open_model(self._config, self._engine_opened)
        except AdilError as exc:
            self._fail(exc)
            return
        except OSError as exc:
            self._fail(ModelFileError(f"cannot read {self._config.model}: {exc}"))
            return
        except Exception as exc:  # noqa: BLE001 - a failed load is reported, never lost
            self._fail(EngineInternalError(f"loading {self._config.model} failed: {exc!r}"))
            return
        with self._lock:
            if self._closed:  # stopped while loading: nobody will use it
                model.close()
                engine.close()
                return
            self._engine, self._model, self._state = engine, model, "ready"
            self._components = components_of(engine.info)
        log.info("model ready: %s (%.1f s)", self._config.announced_name,
                 time.monotonic() - started)

    def _engine_opened(self, engine: Engine) -> None:
        with self._lock:
            self._components = components_of(engine.info)

    def _fail(self, error: AdilError) -> None:
        error.status = 503
        with self._lock:
            self._state, self._error = "failed", error
        log.error("loading %s failed: %s: %s", self._config.model, error.code, error.message)

    def wait_loaded(self, timeout: float | None = None) -> LoadState:
        """Block until the load ended (or `timeout`); the state."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self._state

    # -- ServiceContext ---------------------------------------------------
    @property
    def model_name(self) -> str:
        return self._config.announced_name

    @property
    def state(self) -> LoadState:
        return self._state

    @property
    def error(self) -> AdilError | None:
        return self._error

    def components(self) -> dict[str, Any] | None:
        return self._components

    def ready_model(self) -> Model:
        with self._lock:
            state, model, error = self._state, self._model, self._error
        if state == "ready" and model is not None:
            return model
        if state == "failed" and error is not None:
            raise copy.copy(error)
        raise ModelNotReadyError(f"the model {self.model_name} is still loading; retry shortly",
                                 status=503)

    def take_slot(self, request: Request) -> None:
        if self._slot is not None and self._slot is not request:
            raise BusyError("the model is running another request; retry shortly")
        self._slot = request
        request.holds_slot = True

    def release_slot(self, request: Request) -> None:
        if self._slot is request:
            self._slot = None
        request.holds_slot = False

    def run_started(self, request: Request) -> None:
        with self._runs:
            self.active_runs += 1
            self.max_active_runs = max(self.max_active_runs, self.active_runs)

    def run_finished(self, request: Request, outcome: dict[str, Any]) -> None:
        record = {"request_id": request.request_id, **outcome}
        self.release_slot(request)  # the engine stopped: the next run may start
        with self._runs:
            self.active_runs -= 1
            self.outcomes.append(record)
            self._runs.notify_all()
        log.info("run %s: %s%s", request.request_id, outcome.get("stop_reason"),
                 " (client went away)" if request.disconnected.is_set() else "")

    def wait_outcome(self, request_id: str, timeout: float) -> dict[str, Any] | None:
        """The outcome of `request_id`'s run once it ended (None after
        `timeout` seconds)."""
        def find() -> dict[str, Any] | None:
            return next((o for o in self.outcomes if o["request_id"] == request_id), None)

        with self._runs:
            self._runs.wait_for(lambda: find() is not None, timeout)
            return find()

    @property
    def slot_taken(self) -> bool:
        return self._slot is not None

    def close(self) -> None:
        """Close the model and engine (a generation still open: left to the
        garbage collector; the engine refuses to close under it)."""
        with self._lock:
            self._closed = True
            model, engine = self._model, self._engine
            self._model = self._engine = None
        for thing in (model, engine):
            if thing is None:
                continue
            try:
                thing.close()
            except AdilError as exc:
                log.warning("closing %r: %s", thing, exc)
