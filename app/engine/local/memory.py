"""How much memory a model needs at a context length, and how much the computer has free.

Guarantees: one estimate for the whole app (the library's table, the command line and the check
before a load): weights (the tensor data of every part) + an f16 KV cache of the context's
length (llama.cpp's full-size cache, as it allocates by default) + llama.cpp's compute buffer,
which grows with the batch and the vocabulary (one batch of logits), plus a fixed margin; the
share of the layers given to the GPU is counted in its memory, not the computer's (a sliding-
window model's full-size cache, kept for exact reuse, is what is counted); a model loaded with
an image projector (`with_projector`) counts the projector's file with its weights (llama.cpp
loads all of it, on the GPU with the layers when they go there). Meant as an upper bound: a test
checks the KV figure against what llama.cpp reports, and that the worker's peak resident memory
stays under the total (measured here: 0.65-0.75 of it for the bundled model).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from app.domain.library import Fit, MemoryEstimate
from app.domain.placement import LoadSettings
from app.engine.protocol import N_BATCH

FIXED = 64 << 20


def available_memory() -> int | None:
    """Bytes of memory available to a new process (MemAvailable on Linux), or None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


class Sized(Protocol):
    """What the estimate needs of a model: a header (`GgufInfo`) or a library `ModelEntry`."""

    @property
    def weights_bytes(self) -> int: ...
    @property
    def kv_bytes_per_token(self) -> int: ...
    @property
    def vocab_size(self) -> int: ...


@dataclass(frozen=True)
class WithProjector:
    """A model and its image projector, sized together: the projector's bytes join the
    weights; the cache and the buffers are the model's."""

    model: Sized
    projector_bytes: int

    @property
    def weights_bytes(self) -> int:
        return self.model.weights_bytes + self.projector_bytes

    @property
    def kv_bytes_per_token(self) -> int:
        return self.model.kv_bytes_per_token

    @property
    def vocab_size(self) -> int:
        return self.model.vocab_size


def projector_bytes(projector: str | Path | None) -> int:
    """The size of the projector's file (0 for none, or one that is not there)."""
    if not projector:
        return 0
    try:
        return Path(projector).stat().st_size
    except OSError:
        return 0


def with_projector(model: Sized, projector: str | Path | None) -> Sized:
    """`model` as loaded with `projector` (None or "": the model alone)."""
    size = projector_bytes(projector)
    return WithProjector(model, size) if size else model


def estimate_memory(
    model: Sized,
    n_ctx: int,
    *,
    n_batch: int = N_BATCH,
    available: int | None = -1,
    gpu_share: float = 0.0,
    sequences: int = 1,
) -> MemoryEstimate:
    """The estimate for `model` at `n_ctx` tokens for each of `sequences` answers decoded at
    once (each holds its own cache); `available` -1 reads the free memory; `gpu_share` of the
    layers go to the GPU (`gpu_share_of`)."""
    buffers = n_batch * model.vocab_size * 4 + FIXED
    return MemoryEstimate(
        n_ctx=n_ctx,
        weights=model.weights_bytes,
        kv_cache=model.kv_bytes_per_token * n_ctx * max(1, sequences),
        buffers=buffers,
        available=available_memory() if available == -1 else available,
        gpu_share=gpu_share,
        sequences=max(1, sequences),
    )


SMALLEST_CONTEXT = 2048  # a server's context is not halved below this to fit


def context_that_fits(
    model: Sized,
    trained: int,
    *,
    sequences: int = 1,
    available: int | None = -1,
    gpu_share: float = 0.0,
) -> tuple[int, MemoryEstimate]:
    """The model's trained context (4,096 when its file says none), halved until the estimate
    for `sequences` answers at once fits the free memory (not below `SMALLEST_CONTEXT`: that one
    is tried and refused with its figures by the load); the context and its estimate."""
    n_ctx = trained if trained > 0 else 4096
    free = available_memory() if available == -1 else available
    while True:
        estimate = estimate_memory(
            model, n_ctx, available=free, gpu_share=gpu_share, sequences=sequences
        )
        if estimate.verdict is not Fit.TOO_BIG or n_ctx <= SMALLEST_CONTEXT:
            return n_ctx, estimate
        n_ctx = max(SMALLEST_CONTEXT, n_ctx // 2)


def gpu_share_of(settings: LoadSettings, layers: int, offload: bool) -> float:
    """The share of a model's `layers` its load settings give the GPU (0 without offload)."""
    if not offload or settings.gpu_layers == 0:
        return 0.0
    if settings.gpu_layers is None or settings.gpu_layers < 0 or layers <= 0:
        return 1.0
    return min(1.0, settings.gpu_layers / layers)
