"""`WorkerClient`: the app side of the model worker process.

Guarantees:
- llama.cpp never runs in the app's process; only plain values cross the pipe, each with its
  request id (`app/engine/protocol.py`); replies reach the caller that asked (`Router`).
- Loading errors are `ModelLoadError`s with a `LoadProblem` (missing file, not a GGUF,
  truncated, unsupported architecture, not enough memory, load failed, cancelled), checked
  before loading where the header allows it; they never take the app down.
- `generate` yields `TokenStep`s and ends with one `GenerationDone` or one `TurnFailed` (with
  its code: `E-CONTEXT` for a prompt that does not fit, `E-WORKER` for a worker that died);
  cancelling (the `cancel` event) sends a `Cancel` for that request, which ends it within a
  token or two and leaves the worker ready.
- A worker that dies (killed, aborted, out of memory) becomes `TurnFailed` with a reason in
  words and the partial ids; the next request starts a new worker and reloads the model.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from app.constrain.constraint import Constraint
from app.domain.events import GenerationEvent, TurnFailed
from app.domain.library import Fit
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.cores import default_threads
from app.engine.local.memory import estimate_memory
from app.engine.local.process import WorkerProcess
from app.engine.local.router import Router
from app.engine.protocol import (
    Answer,
    Cancel,
    Finished,
    GenerateRequest,
    Loaded,
    LoadFailed,
    LoadProgress,
    LoadRequest,
    Logits,
    ModelInfo,
    NativeLog,
    Query,
    Refused,
    RequestState,
    SpecialBytes,
    SpecialIds,
    Specials,
    TokenBatch,
    Tokenize,
    TokenTable,
    WorkerState,
    check_transition,
)
from app.errors import ErrorCode, LoadProblem, ModelLoadError, WorkerError
from app.gguf.info import read_model

_native = logging.getLogger("llama")  # the worker's llama.cpp lines, in the app's log file
QUERY_TIMEOUT_S = 120.0


class WorkerClient:
    """Owns one worker process and the model loaded in it."""

    def __init__(self) -> None:
        self._router: Router | None = None
        self.state = WorkerState.UNLOADED
        self.info: ModelInfo | None = None
        self.native_log: collections.deque[str] = collections.deque(maxlen=500)
        self._last_load: LoadRequest | None = None

    # --- process --------------------------------------------------------------------

    def _set(self, state: WorkerState) -> None:
        check_transition(self.state, state)
        self.state = state

    def _logged(self, message: NativeLog) -> None:
        """llama.cpp's own lines: the log file and the debug pane."""
        for level, text in message.lines:
            _native.log(level, text)
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
        router = self._ensure_process()
        if self.state is WorkerState.FAILED:
            self.state = WorkerState.UNLOADED
        self._set(WorkerState.LOADING)
        self.info = None
        try:
            request = LoadRequest(
                router.new_id(), str(path), n_ctx, threads, settings=settings or LoadSettings()
            )
            router.send(request)
            return self._await_load(router, path, header.architecture, on_progress, cancel, request)
        except WorkerError as exc:
            self._died()
            raise ModelLoadError(
                LoadProblem.LOAD_FAILED, path, f"{exc.message} while loading it"
            ) from exc

    def _await_load(
        self,
        router: Router,
        path: str | Path,
        arch: str,
        on_progress: Callable[[float], None] | None,
        cancel: threading.Event | None,
        request: LoadRequest,
    ) -> ModelInfo:
        while True:
            msg = router.next(request.request, timeout=0.05)
            if cancel is not None and cancel.is_set():
                self._cancel(router, request.request)
            if msg is None:
                continue
            if isinstance(msg, LoadProgress):
                if on_progress is not None:
                    on_progress(msg.fraction)
                continue
            if isinstance(msg, Loaded):
                self._set(WorkerState.READY)
                self.info, self._last_load = msg.info, request
                return msg.info
            self.state = WorkerState.UNLOADED
            raise _load_error(msg, path, arch)

    def _ensure_ready(self) -> Router:
        if self.state is WorkerState.FAILED and self._last_load is not None:
            last = self._last_load
            self.load(last.path, n_ctx=last.n_ctx, n_threads=last.n_threads, settings=last.settings)
        if self.state is not WorkerState.READY or self._router is None:
            raise WorkerError(f"the model worker is {self.state}, not ready")
        return self._router

    @staticmethod
    def _cancel(router: Router, request: int) -> None:
        """Ask the worker to stop `request` (once)."""
        if router.states.get(request) in (RequestState.SENT, RequestState.ANSWERING):
            router.move(request, RequestState.CANCELLING)
            router.send(Cancel(request))

    # --- generation -----------------------------------------------------------------

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
        constraint: Constraint | None = None,
        cancel: threading.Event | None = None,
        top_logprobs: int = 0,
    ) -> Iterator[GenerationEvent]:
        """Stream the generation for `prompt_ids`; see the module guarantees. A `Constraint`
        makes every token follow its grammar (JSON mode)."""
        router = self._ensure_ready()
        request = router.new_id()
        message = GenerateRequest(
            request,
            tuple(prompt_ids),
            tuple(stop_ids),
            sampling or Sampling(),
            max_tokens,
            constraint.grammar if constraint is not None else None,
            constraint.consumed if constraint is not None else (),
            constraint.banned if constraint is not None else (),
            constraint.closing if constraint is not None else "",
            top_logprobs,
        )
        partial: list[int] = []
        try:
            router.send(message)
            while True:
                msg = router.next(request, timeout=0.02)
                if cancel is not None and cancel.is_set():
                    self._cancel(router, request)
                if msg is None:
                    continue
                if isinstance(msg, TokenBatch):
                    for step in msg.steps:
                        partial.append(step.token)
                        yield step
                    continue
                if isinstance(msg, Refused):
                    yield TurnFailed(msg.message, msg.code, tuple(partial))
                    return
                assert isinstance(msg, Finished)
                yield msg.done
                return
        except WorkerError as exc:
            self._died()
            yield TurnFailed(exc.message, ErrorCode.WORKER, tuple(partial))
        except GeneratorExit:
            self._abandon(router, request)
            raise

    def _abandon(self, router: Router, request: int) -> None:
        """The caller stopped reading mid-generation: cancel it and drain its replies."""
        if request not in router.states or self._router is not router:
            return
        try:
            self._cancel(router, request)
            deadline = time.monotonic() + 5
            while request in router.states and time.monotonic() < deadline:
                router.next(request, timeout=0.1)
            router.finish(request, RequestState.FAILED)
        except WorkerError:
            self._died()

    # --- quick questions ------------------------------------------------------------

    def _ask(self, make: Callable[[int], Query]) -> Any:
        """The answer to one quick question; `WorkerError` when the worker cannot give it."""
        router = self._ensure_ready()
        query = make(router.new_id())
        deadline = time.monotonic() + QUERY_TIMEOUT_S
        try:
            router.send(query)
            while (msg := router.next(query.request, timeout=0.1)) is None:
                if time.monotonic() > deadline:
                    router.finish(query.request, RequestState.FAILED)
                    raise WorkerError(f"the model worker did not answer {type(query).__name__}")
        except WorkerError:
            self._died()
            raise
        if isinstance(msg, Refused):
            raise WorkerError(msg.message)
        assert isinstance(msg, Answer)
        return msg.value

    def tokenize(self, text: str, special: bool) -> list[int]:
        ids: list[int] = self._ask(lambda r: Tokenize(r, text, special))
        return ids

    def token_table(self) -> list[bytes]:
        table: list[bytes] = self._ask(TokenTable)
        return table

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]:
        pieces: list[bytes] = self._ask(lambda r: SpecialBytes(r, tuple(ids)))
        return pieces

    def specials(self) -> Specials:
        found: Specials = self._ask(SpecialIds)
        return found

    def logits(self, prompt: Sequence[int]) -> tuple[int, bytes]:
        """How much of `prompt` the KV cache kept, and the next token's logits (float32)."""
        answer: tuple[int, bytes] = self._ask(lambda r: Logits(r, tuple(prompt)))
        return answer


def _load_error(msg: Any, path: str | Path, arch: str) -> ModelLoadError:
    """The `ModelLoadError` for a failed load (`LoadFailed` by stage, or a refusal)."""
    if isinstance(msg, Refused):
        return ModelLoadError(LoadProblem.LOAD_FAILED, path, msg.message)
    assert isinstance(msg, LoadFailed)
    if msg.cancelled:
        return ModelLoadError(LoadProblem.CANCELLED, path, "loading was cancelled")
    if msg.stage == "vocabulary":
        return ModelLoadError(
            LoadProblem.UNSUPPORTED_ARCHITECTURE,
            path,
            f"llama.cpp cannot read its architecture {arch!r}, hyper-parameters"
            f" or tokenizer ({msg.message})",
        )
    return ModelLoadError(
        LoadProblem.LOAD_FAILED, path, f"its weights are incomplete or damaged ({msg.message})"
    )
