"""The one seam between the app and a model: what a session and its tokenizer ask of a backend
(`ModelBackend`), and what the window's model host asks of one that loads models itself
(`ModelLoader`).

Guarantees: a backend is reached only through these methods — nothing probes it for others; the
values that cross are the pipe's own (`app/engine/protocol.py`): plain and picklable, nothing of
llama.cpp. The worker process's client (`engine/local/client.py`) and the scripted test double
(`engine/local/scripted.py`) implement them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from app.constrain.constraint import Constraint
from app.domain.events import GenerationEvent
from app.domain.placement import LoadSettings
from app.domain.sampling import Sampling
from app.engine.protocol import Keep, ModelInfo, SnapshotSettings, Specials


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
        constraint: Constraint | None = None,
        cancel: threading.Event | None = None,
        keep: Keep | None = None,
    ) -> Iterator[GenerationEvent]: ...

    def tokenize(self, text: str, special: bool) -> list[int]: ...

    def token_table(self) -> list[bytes]: ...

    def special_bytes(self, ids: Sequence[int]) -> list[bytes]: ...

    def specials(self) -> Specials: ...


class ModelLoader(ModelBackend, Protocol):
    """A backend that loads models itself: the worker process (`WorkerClient`), or a test's
    stand-in for it. The window's model host holds one and asks it, never probing."""

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
    ) -> ModelInfo: ...

    def take_log(self) -> list[str]: ...

    def sequence_use(self) -> dict[str, int]: ...

    def close(self) -> None: ...


__all__ = ["ModelBackend", "ModelLoader"]
