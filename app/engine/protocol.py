"""The seam between the app and a model backend, and the messages that cross the worker pipe.

Everything here is a plain, picklable value. `Sampling` is the one declaration of the
sampling knobs (validation, settings dialog and tooltips read it). `WorkerState` is the
worker's state machine; an illegal move raises with a sentence saying why.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from app.domain.events import (
    FinishReason as FinishReason,
)
from app.domain.events import (
    GenerationDone as GenerationDone,
)
from app.domain.events import (
    GenerationEvent as GenerationEvent,
)
from app.domain.events import (
    Timings as Timings,
)
from app.domain.events import (  # re-exported: the one event union lives in domain
    TokenStep as TokenStep,
)
from app.domain.events import (
    TurnFailed as TurnFailed,
)
from app.domain.placement import LoadSettings as LoadSettings
from app.domain.placement import Placement as Placement
from app.domain.sampling import Sampling
from app.errors import HarmonyDeskError


class WorkerState(StrEnum):
    UNLOADED = "unloaded"
    LOADING = "loading"
    READY = "ready"
    GENERATING = "generating"
    CANCELLING = "cancelling"
    FAILED = "failed"


_ALLOWED: dict[WorkerState, frozenset[WorkerState]] = {
    WorkerState.UNLOADED: frozenset({WorkerState.LOADING, WorkerState.FAILED}),
    WorkerState.LOADING: frozenset({WorkerState.READY, WorkerState.UNLOADED, WorkerState.FAILED}),
    WorkerState.READY: frozenset(
        {WorkerState.GENERATING, WorkerState.LOADING, WorkerState.UNLOADED, WorkerState.FAILED}
    ),
    WorkerState.GENERATING: frozenset(
        {WorkerState.READY, WorkerState.CANCELLING, WorkerState.FAILED}
    ),
    WorkerState.CANCELLING: frozenset({WorkerState.READY, WorkerState.FAILED}),
    WorkerState.FAILED: frozenset({WorkerState.LOADING, WorkerState.UNLOADED}),
}

_WHY = {
    WorkerState.UNLOADED: "no model is loaded",
    WorkerState.LOADING: "a model is still loading",
    WorkerState.GENERATING: "a generation is running",
    WorkerState.CANCELLING: "a generation is being cancelled",
    WorkerState.FAILED: "the worker failed and must be restarted by loading a model",
    WorkerState.READY: "the worker is idle",
}


class IllegalTransition(HarmonyDeskError, RuntimeError):
    """A bug: the client asked the worker for something its state does not allow."""


def check_transition(current: WorkerState, new: WorkerState) -> None:
    """Raise `IllegalTransition` unless `current → new` is a legal move."""
    if new not in _ALLOWED[current]:
        raise IllegalTransition(f"cannot go from {current} to {new}: {_WHY[current]}")


# --- generation results (what `generate` yields) ------------------------------------------


@dataclass(frozen=True)
class ModelInfo:
    path: str
    n_vocab: int
    n_ctx: int
    n_ctx_train: int
    architecture: str
    n_threads: int
    load_ms: float
    metadata: dict[str, Any] = field(default_factory=dict, repr=False)
    placement: Placement | None = None  # where llama.cpp put the model, as it reports it


# --- pipe messages ------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenBatch:
    """Tokens sent together over the pipe (the worker batches them; the client yields each)."""

    steps: tuple[TokenStep, ...]


@dataclass(frozen=True)
class LoadRequest:
    path: str
    n_ctx: int
    n_threads: int
    n_batch: int = 256
    extra_buffers: bool = False  # llama.cpp's repack/AMX buffers: faster on some CPUs, crashed here
    settings: LoadSettings = field(default_factory=LoadSettings)


@dataclass(frozen=True)
class GenerateRequest:
    prompt_ids: tuple[int, ...]
    stop_ids: tuple[int, ...]
    sampling: Sampling
    max_tokens: int
    grammar: str | None = None  # an llguidance grammar the tokens must follow
    consumed: tuple[int, ...] = ()  # tokens the grammar has already read (a continuation)
    banned: tuple[int, ...] = ()  # not allowed as the first new token (JSON mode's retry)
    closing: str = ""  # how JSON mode ends the answer within `max_tokens` (`app/engine/closing`)
    top_logprobs: int = 0  # > 0: each token with its log-probability and this many others


@dataclass(frozen=True)
class CallRequest:
    """A quick question to the loaded model: `tokenize`, `token_bytes`, `vocab`."""

    name: str
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ShutdownRequest:
    pass


@dataclass(frozen=True)
class LoadProgress:
    fraction: float


@dataclass(frozen=True)
class LoadFailed:
    stage: str  # "vocabulary" (architecture, hyper-parameters, tokenizer) or "weights"
    message: str
    cancelled: bool = False


@dataclass(frozen=True)
class CallResult:
    value: Any = None
    error: str | None = None


class ModelBackend(Protocol):
    """The one seam to a model: what the chat session and tokenizer need of a backend."""

    @property
    def info(self) -> ModelInfo | None: ...

    def generate(
        self,
        prompt_ids: Sequence[int],
        *,
        stop_ids: Sequence[int],
        sampling: Sampling | None = None,
        max_tokens: int = 512,
        constraint: object = None,
        cancel: threading.Event | None = None,
    ) -> Iterator[GenerationEvent]: ...

    def call(self, name: str, *args: object) -> Any: ...


@dataclass(frozen=True)
class NativeLog:
    """llama.cpp's own log lines (level, text) since the worker last sent any."""

    lines: tuple[tuple[int, str], ...]
