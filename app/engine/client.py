"""`WorkerClient`: the app side of the model worker process.

Guarantees:
- llama.cpp never runs in the app's process; only plain values cross the pipe.
- Loading errors are `ModelLoadError`s with a `LoadProblem` (missing file, not a GGUF,
  truncated, unsupported architecture, not enough memory, load failed, cancelled), checked
  before loading where the header allows it; they never take the app down.
- `generate` yields `TokenStep`s and ends with one `GenerationDone` or one `TurnFailed`;
  cancelling (the `cancel` event) ends it within a token or two and leaves the worker ready.
- A worker that dies (killed, aborted, out of memory) becomes `TurnFailed` with a reason in
  words and the partial ids; the next request starts a new worker and reloads the model.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import multiprocessing as mp
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from app.domain.library import Fit
from app.domain.sampling import Sampling
from app.engine.constraint import Constraint
from app.engine.cores import default_threads
from app.engine.gguf_info import read_model
from app.engine.memory import estimate_memory
from app.engine.protocol import (
    CallRequest,
    CallResult,
    GenerateRequest,
    GenerationDone,
    GenerationEvent,
    LoadFailed,
    LoadProgress,
    LoadRequest,
    LoadSettings,
    ModelInfo,
    NativeLog,
    ShutdownRequest,
    TokenBatch,
    TurnFailed,
    WorkerState,
    check_transition,
)
from app.engine.worker import serve
from app.errors import LoadProblem, ModelLoadError, WorkerError

_SIGNALS = {
    signal.SIGKILL: "it was killed (SIGKILL) — by the system when memory ran out, or by a user",
    signal.SIGABRT: "llama.cpp aborted (SIGABRT), usually an assertion on a bad model file",
    signal.SIGSEGV: "it crashed (SIGSEGV)",
    signal.SIGTERM: "it was terminated (SIGTERM)",
}


_native = logging.getLogger("llama")  # the worker's llama.cpp lines, in the app's log file


def death_reason(exitcode: int | None) -> str:
    """The worker's exit, in words."""
    if exitcode is None:
        return "the model worker stopped answering"
    if exitcode < 0:
        sig = signal.Signals(-exitcode)
        return f"the model worker stopped: {_SIGNALS.get(sig, f'signal {sig.name}')}"
    return f"the model worker exited with status {exitcode}"


class WorkerClient:
    """Owns one worker process and the model loaded in it. Not thread-safe: one caller."""

    def __init__(self) -> None:
        self._ctx = mp.get_context("spawn")
        self._process: Any = None
        self._conn: Any = None
        self._cancel = self._ctx.Event()
        self.state = WorkerState.UNLOADED
        self.info: ModelInfo | None = None
        self.native_log: collections.deque[str] = collections.deque(maxlen=500)
        self._last_load: LoadRequest | None = None

    # --- process --------------------------------------------------------------------

    def _set(self, state: WorkerState) -> None:
        check_transition(self.state, state)
        self.state = state

    def _start(self) -> None:
        parent, child = self._ctx.Pipe()
        self._process = self._ctx.Process(
            target=serve, args=(child, self._cancel), daemon=True, name="harmony-desk-worker"
        )
        self._process.start()
        child.close()
        self._conn = parent

    def _stop(self) -> None:
        if self._process is None:
            return
        with contextlib.suppress(OSError, EOFError):
            self._conn.send(ShutdownRequest())
        self._process.join(timeout=5)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()
        self._process = self._conn = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """Stop the worker process."""
        self._stop()
        self.state = WorkerState.UNLOADED
        self.info = None

    def __enter__(self) -> WorkerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recv(self, timeout: float | None = None) -> Any:
        """The next message, None on timeout; `WorkerError` when the worker is gone."""
        try:
            if timeout is not None and not self._conn.poll(timeout):
                if not self._process.is_alive():
                    raise WorkerError(death_reason(self._process.exitcode))
                return None
            message = self._conn.recv()
        except (EOFError, OSError) as exc:
            self._process.join(timeout=2)
            raise WorkerError(death_reason(self._process.exitcode)) from exc
        if isinstance(message, NativeLog):  # llama.cpp's own lines: the log file and the pane
            for level, text in message.lines:
                _native.log(level, text)
            self.native_log.extend(text for _, text in message.lines)
            return None
        return message

    def take_log(self) -> list[str]:
        """llama.cpp's lines since the last call (for the debug pane)."""
        lines = list(self.native_log)
        self.native_log.clear()
        return lines

    def _died(self) -> None:
        self.state = WorkerState.FAILED
        self.info = None
        if self._process is not None:
            self._process.join(timeout=2)
            self._conn.close()
            self._process = self._conn = None

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
    ) -> ModelInfo:
        """Load a GGUF model (replacing any loaded one) with its load `settings` (GPU layers,
        flash attention, cache type; the defaults when None)."""
        header = read_model(path)
        if not header.architecture:
            raise ModelLoadError(
                LoadProblem.UNSUPPORTED_ARCHITECTURE, path, "it names no architecture"
            )
        memory = estimate_memory(header, n_ctx)
        if memory.verdict is Fit.TOO_BIG:
            raise ModelLoadError(LoadProblem.NOT_ENOUGH_MEMORY, path, memory.words().rstrip("."))
        threads = n_threads or default_threads()
        if self._process is None:
            self._start()
        if self.state is WorkerState.FAILED:
            self.state = WorkerState.UNLOADED
        self._set(WorkerState.LOADING)
        self._cancel.clear()
        self.info = None
        request = LoadRequest(str(path), n_ctx, threads, settings=settings or LoadSettings())
        self._conn.send(request)
        try:
            return self._await_load(path, header.architecture, on_progress, cancel, request)
        except WorkerError as exc:
            self._died()
            raise ModelLoadError(
                LoadProblem.LOAD_FAILED, path, f"{exc.message} while loading it"
            ) from exc

    def _await_load(
        self,
        path: str | Path,
        arch: str,
        on_progress: Callable[[float], None] | None,
        cancel: threading.Event | None,
        request: LoadRequest,
    ) -> ModelInfo:
        while True:
            msg = self._recv(timeout=0.05)
            if cancel is not None and cancel.is_set():
                self._cancel.set()
            if msg is None:
                continue
            if isinstance(msg, LoadProgress):
                if on_progress is not None:
                    on_progress(msg.fraction)
                continue
            if isinstance(msg, ModelInfo):
                self._set(WorkerState.READY)
                self.info, self._last_load = msg, request
                return msg
            self.state = WorkerState.UNLOADED
            assert isinstance(msg, LoadFailed)
            if msg.cancelled:
                raise ModelLoadError(LoadProblem.CANCELLED, path, "loading was cancelled")
            if msg.stage == "vocabulary":
                raise ModelLoadError(
                    LoadProblem.UNSUPPORTED_ARCHITECTURE,
                    path,
                    f"llama.cpp cannot read its architecture {arch!r}, hyper-parameters"
                    f" or tokenizer ({msg.message})",
                )
            raise ModelLoadError(
                LoadProblem.LOAD_FAILED,
                path,
                f"its weights are incomplete or damaged ({msg.message})",
            )

    def _ensure_ready(self) -> None:
        if self.state is WorkerState.FAILED and self._last_load is not None:
            last = self._last_load
            self.load(last.path, n_ctx=last.n_ctx, n_threads=last.n_threads, settings=last.settings)
        if self.state is not WorkerState.READY:
            raise WorkerError(f"the model worker is {self.state}, not ready")

    # --- generation -----------------------------------------------------------------

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
        constraint: object = None,
        cancel: threading.Event | None = None,
        top_logprobs: int = 0,
    ) -> Iterator[GenerationEvent]:
        """Stream the generation for `prompt_ids`; see the module guarantees. A `Constraint`
        makes every token follow its grammar (JSON mode)."""
        self._ensure_ready()
        self._set(WorkerState.GENERATING)
        self._cancel.clear()
        grammar = constraint.grammar if isinstance(constraint, Constraint) else None
        consumed = constraint.consumed if isinstance(constraint, Constraint) else ()
        banned = constraint.banned if isinstance(constraint, Constraint) else ()
        closing = constraint.closing if isinstance(constraint, Constraint) else ""
        request = GenerateRequest(
            tuple(prompt_ids),
            tuple(stop_ids),
            sampling or Sampling(),
            max_tokens,
            grammar,
            consumed,
            banned,
            closing,
            top_logprobs,
        )
        partial: list[int] = []
        try:
            self._conn.send(request)
            while True:
                msg = self._recv(timeout=0.02)
                if cancel is not None and cancel.is_set() and self.state is WorkerState.GENERATING:
                    self._set(WorkerState.CANCELLING)
                    self._cancel.set()
                if msg is None:
                    continue
                if isinstance(msg, TokenBatch):
                    for step in msg.steps:
                        partial.append(step.token)
                        yield step
                    continue
                self._set(WorkerState.READY)
                if isinstance(msg, CallResult):
                    yield TurnFailed(msg.error or "the generation failed", tuple(partial))
                    return
                assert isinstance(msg, GenerationDone)
                yield msg
                return
        except WorkerError as exc:
            self._died()
            yield TurnFailed(exc.message, tuple(partial))
        except GeneratorExit:
            self._abandon()
            raise

    def _abandon(self) -> None:
        """The caller stopped reading mid-generation: cancel and drain to stay in step."""
        if (
            self.state not in (WorkerState.GENERATING, WorkerState.CANCELLING)
            or self._process is None
        ):
            return
        self._cancel.set()
        try:
            while not isinstance(self._recv(timeout=5), GenerationDone | CallResult):
                pass
            self.state = WorkerState.READY
        except WorkerError:
            self._died()

    # --- quick calls ----------------------------------------------------------------

    def call(self, name: str, *args: object) -> Any:
        """Ask the loaded model something quick (`tokenize`, `token_table`, ...)."""
        self._ensure_ready()
        self._conn.send(CallRequest(name, args))
        deadline = time.monotonic() + 120
        try:
            while (msg := self._recv(timeout=0.1)) is None:
                if time.monotonic() > deadline:
                    raise WorkerError(f"the model worker did not answer {name!r}")
        except WorkerError:
            self._died()
            raise
        if msg.error:
            raise WorkerError(msg.error)
        return msg.value
