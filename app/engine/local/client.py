"""`WorkerClient`: the app side of the model worker process.

Guarantees:
- llama.cpp never runs in the app's process; only plain values cross the pipe, each with its
  request id (`app/engine/protocol.py`); replies reach the caller that asked (`Router`).
- Loading errors are `ModelLoadError`s with a `LoadProblem` (missing file, not a GGUF,
  truncated, unsupported architecture, not enough memory, load failed, cancelled), checked
  before loading where the header allows it; they never take the app down. A load cannot hang:
  a worker silent for `LOAD_STALL_S` (no progress, no answer) while loading, or for 5 s after
  a cancel, is killed and the error says at which stage it stalled. Each error's sentence is
  for the user; llama.cpp's words and the warnings it logged while loading are its `details`.
- llama.cpp's log lines reach the debug pane (`take_log`) and the `llama` logger: its warnings
  and errors at their level, its info chatter at DEBUG (a normal load logs nothing above).
- `generate` yields `TokenStep`s and ends with one `GenerationDone` or one `TurnFailed` (with
  its code: `E-CONTEXT` for a prompt that does not fit, `E-WORKER` for a worker that died);
  cancelling (the `cancel` event) sends a `Cancel` for that request, which ends it within a
  token or two and leaves the worker ready.
- No generation holds the worker: each has a deadline (`deadline_s`, else `deadline_for` its
  prompt and budget); past it the generation is cancelled and ends as a `TurnFailed` that says
  so (`E-WORKER`); a worker that has not ended it `GRACE_S` later is stopped (killed if need
  be), and the next request starts a new one and reloads the model.
- A worker that dies (killed, aborted, out of memory) becomes `TurnFailed` with a reason in
  words and the partial ids; the next request starts a new worker and reloads the model.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.domain.library import Fit
from app.domain.placement import LoadSettings
from app.engine.cores import default_threads
from app.engine.local.generation import Generations
from app.engine.local.limits import (
    LOAD_STALL_S,
    load_error,
    stalled_error,
)
from app.engine.local.memory import estimate_memory, with_projector
from app.engine.local.process import WorkerProcess
from app.engine.local.questions import QuickQuestions
from app.engine.local.router import Router
from app.engine.protocol import (
    Cancel,
    Loaded,
    LoadProgress,
    LoadRequest,
    ModelInfo,
    NativeLog,
    RequestState,
    SnapshotSettings,
    WorkerState,
    check_transition,
)
from app.errors import LoadProblem, ModelLoadError, WorkerError
from app.gguf.info import GgufInfo, read_model

_native = logging.getLogger("llama")  # the worker's llama.cpp lines, for the app's log file


class WorkerClient(Generations, QuickQuestions):
    """Owns one worker process and the model loaded in it."""

    load_stall_s = LOAD_STALL_S

    def __init__(self) -> None:
        self._router: Router | None = None
        self.state = WorkerState.UNLOADED
        self.info: ModelInfo | None = None
        self.native_log: collections.deque[str] = collections.deque(maxlen=500)
        self._warned: collections.deque[str] = collections.deque(maxlen=20)  # for load errors
        self._last_load: LoadRequest | None = None
        self._stage = "weights"  # the load's stage the worker last said (see `load`)
        self._use: collections.Counter[str] = collections.Counter()  # generations under way

    # --- process --------------------------------------------------------------------

    def _set(self, state: WorkerState) -> None:
        check_transition(self.state, state)
        self.state = state

    def _logged(self, message: NativeLog) -> None:
        """llama.cpp's own lines: the debug pane takes them all; the log file takes its
        warnings and errors at their level and its load chatter at DEBUG only (see
        `app/engine/worker/native_log.py` for the levels and the harmless warnings)."""
        for level, text in message.lines:
            _native.log(level if level >= logging.WARNING else logging.DEBUG, text)
            if level >= logging.WARNING:
                self._warned.append(text)
        self.native_log.extend(text for _, text in message.lines)

    def _ensure_process(self) -> Router:
        if self._router is None:
            self._router = Router(WorkerProcess(), self._logged)
        return self._router

    @property
    def pid(self) -> int | None:
        return self._router.process.pid if self._router is not None else None

    def close(self) -> None:
        """Stop the worker process."""
        if self._router is not None:
            self._router.process.stop()
            self._router = None
        self.state = WorkerState.UNLOADED
        self.info = None

    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def take_log(self) -> list[str]:
        """llama.cpp's lines since the last call (for the debug pane)."""
        lines = list(self.native_log)
        self.native_log.clear()
        return lines

    def _died(self) -> None:
        self.state = WorkerState.FAILED
        self.info = None
        if self._router is not None:
            self._router.process.reap()
            self._router = None

    # --- loading --------------------------------------------------------------------

    def load(
        self,
        path: str | Path,
        *,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        on_progress: Callable[[float], None] | None = None,
        cancel: threading.Event | None = None,
        settings: LoadSettings | None = None,
        snapshots: SnapshotSettings | None = None,
        sequences: int = 1,
        reserved: int = 0,
        always_draft: bool = False,
        projector: str | Path | None = None,
    ) -> ModelInfo:
        """Load a GGUF model (replacing any loaded one) with its load `settings` (GPU layers,
        flash attention, cache type, speculative decoding), where its KV snapshots go (None:
        the defaults), and `sequences` answers decoded at once, each with `n_ctx` tokens of
        context, `reserved` of them for the window's own turns; with a `projector` (an
        mmproj GGUF) the model sees images."""
        header = self._checked_header(path, n_ctx, sequences, projector)
        threads = n_threads or default_threads()
        router = self._begin_loading()
        try:
            settings, snapshots = settings or LoadSettings(), snapshots or SnapshotSettings.of(2)
            request = LoadRequest(router.new_id(), str(path), n_ctx, threads)
            request = dataclasses.replace(
                request,
                settings=settings,
                snapshots=snapshots,
                sequences=max(1, sequences),
                reserved=min(reserved, sequences - 1),
                always_draft=always_draft,
                projector=str(projector or ""),
            )
            self._stage = "weights"
            router.send(request)
            return self._await_load(router, path, header.architecture, on_progress, cancel, request)
        except WorkerError as exc:
            self._died()
            raise self._load_failed(exc, path, projector) from exc

    def _begin_loading(self) -> Router:
        """The worker's router, with the client now LOADING and no model or warnings held."""
        router = self._ensure_process()
        if self.state is WorkerState.FAILED:
            self.state = WorkerState.UNLOADED
        self._set(WorkerState.LOADING)
        self.info = None
        self._warned.clear()
        return router

    @staticmethod
    def _checked_header(
        path: str | Path, n_ctx: int, sequences: int, projector: str | Path | None
    ) -> GgufInfo:
        """The model's GGUF header, once it names an architecture and the model (with its
        projector, `sequences` contexts of `n_ctx`) is not too big for this machine."""
        header = read_model(path)
        if not header.architecture:
            raise ModelLoadError(
                LoadProblem.UNSUPPORTED_ARCHITECTURE,
                path,
                "its header names no model architecture",
                "The metadata key general.architecture is missing or empty.",
            )
        memory = estimate_memory(with_projector(header, projector), n_ctx, sequences=sequences)
        if memory.verdict is Fit.TOO_BIG:
            raise ModelLoadError(LoadProblem.NOT_ENOUGH_MEMORY, path, memory.words().rstrip("."))
        return header

    def _load_failed(
        self, exc: WorkerError, path: str | Path, projector: str | Path | None
    ) -> ModelLoadError:
        """The load error for a worker that died while loading, with what llama.cpp warned;
        a death at the projector stage blames the projector."""
        said = "\n".join(["llama.cpp said:", *self._warned] if self._warned else [])
        if self._stage == "projector":
            name = Path(str(projector)).name
            return ModelLoadError(
                LoadProblem.LOAD_FAILED,
                path,
                f"llama.cpp stopped while loading its projector {name}: the projector is"
                " damaged or not one this version of llama.cpp can read",
                said,
            )
        return ModelLoadError(
            LoadProblem.LOAD_FAILED, path, f"while loading it, {exc.message}", said
        )

    def _await_load(
        self,
        router: Router,
        path: str | Path,
        arch: str,
        on_progress: Callable[[float], None] | None,
        cancel: threading.Event | None,
        request: LoadRequest,
    ) -> ModelInfo:
        heard, fraction, cancelled_at = time.monotonic(), -1.0, 0.0
        while True:
            msg = router.next(request.request, timeout=0.05)
            if cancel is not None and cancel.is_set():
                self._cancel(router, request.request)
                cancelled_at = cancelled_at or time.monotonic()
            if msg is None:
                waited = time.monotonic() - heard
                if waited > self.load_stall_s or (
                    cancelled_at and time.monotonic() - cancelled_at > 5
                ):
                    self._stop_stalled(router)
                    raise stalled_error(path, fraction, waited, cancelled=bool(cancelled_at))
                continue
            heard = time.monotonic()
            if isinstance(msg, LoadProgress):
                fraction, self._stage = msg.fraction, msg.stage
                if on_progress is not None:
                    on_progress(msg.fraction)
                continue
            if isinstance(msg, Loaded):
                self._set(WorkerState.READY)
                self.info, self._last_load = msg.info, request
                return msg.info
            self.state = WorkerState.UNLOADED
            raise load_error(msg, path, arch, list(self._warned))

    def _stop_stalled(self, router: Router) -> None:
        """Kill a worker that stopped answering (it is not asked: it cannot listen)."""
        pid = router.process.pid
        if pid is not None:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self._died()

    def _ensure_ready(self) -> Router:
        if self.state is WorkerState.FAILED and self._last_load is not None:
            last = self._last_load
            kept: dict[str, Any] = {
                "settings": last.settings,
                "snapshots": last.snapshots,
                "sequences": last.sequences,
                "reserved": last.reserved,
                "projector": last.projector,
            }
            self.load(last.path, n_ctx=last.n_ctx, n_threads=last.n_threads, **kept)
        if self.state is not WorkerState.READY or self._router is None:
            raise WorkerError(f"the model worker is {self.state}, not ready")
        return self._router

    @staticmethod
    def _cancel(router: Router, request: int) -> None:
        """Ask the worker to stop `request` (once)."""
        if router.states.get(request) in (RequestState.SENT, RequestState.ANSWERING):
            router.move(request, RequestState.CANCELLING)
            router.send(Cancel(request))

    def sequence_use(self) -> dict[str, int]:
        """The worker's sequences: how many, how many kept for the window, and the server's
        clients' generations decoding and queued (as this client counts them)."""
        info = self.info
        total = info.sequences if info is not None else 1
        reserved = self._last_load.reserved if self._last_load is not None and total > 1 else 0
        shared = max(1, total - reserved)
        clients = self._use["clients"] + (self._use["window"] if not reserved else 0)
        return {
            "total": total,
            "reserved": reserved,
            "busy": min(clients, shared) + (min(self._use["window"], reserved)),
            "queued": max(0, clients - shared),
        }
