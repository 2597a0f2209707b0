"""Work that takes time before an answer's first token, as immutable values with the words every
frontend says of them: a long prompt being read (`PromptRead`), an image being encoded by the
model's projector (`ImageEncoding`), the model being loaded (`ModelLoading`).

Guarantees: `said()` is the one sentence for each — the window's inline note and the terminal
chat print exactly it — and never raises (a zero total reads as 0 %); a share is rounded down,
so "100 %" is said only when the work is done; these values carry nothing of the reply (the
reply builder folds them into no change). `Progress` is their union; the first two are turn
events too (`app/domain/events.py`).
"""

from __future__ import annotations

from dataclasses import dataclass


def _share(done: float, total: float) -> int:
    return int(100 * done / total) if total > 0 else 0


@dataclass(frozen=True)
class PromptRead:
    """How far the model has read the prompt before its first token: `done` of the `total`
    tokens it evaluates (those no cache held), after each batch of a prompt longer than one."""

    done: int
    total: int

    def said(self) -> str:
        """ "Reading 3,626 tokens… 40 %" """
        return f"Reading {self.total:,} tokens… {_share(self.done, self.total)} %"


@dataclass(frozen=True)
class ImageEncoding:
    """The prompt's reading reached image `index` (from 1) of its `count`: the model's
    projector encodes it now (an image its cache already holds is not encoded, so not said)."""

    index: int
    count: int

    def said(self) -> str:
        """ "Encoding image 1 of 2…" """
        return f"Encoding image {self.index} of {self.count}…"


@dataclass(frozen=True)
class ModelLoading:
    """The model is being loaded: `fraction` of it (0 to 1) is in; `stage` is "weights", or
    "projector" once the weights are in and its image projector loads."""

    fraction: float
    stage: str = "weights"

    def said(self) -> str:
        """ "Loading the model… 40 %", or "Loading the model's image projector…" """
        if self.stage == "projector":
            return "Loading the model's image projector…"
        return f"Loading the model… {_share(min(max(self.fraction, 0.0), 1.0), 1.0)} %"


Progress = PromptRead | ImageEncoding | ModelLoading

__all__ = ["ImageEncoding", "ModelLoading", "Progress", "PromptRead"]
