"""How much memory a model needs at a context length, and how much the computer has free.

Guarantees: one estimate for the whole app (the library's table, the command line and the
check before a load): weights (the tensor data of every part) + an f16 KV cache of the
context's length (llama.cpp's full-size cache, as it allocates by default) + llama.cpp's
compute buffer, which grows with the batch and the vocabulary (one batch of logits), plus a
fixed margin. Meant as an upper bound: a test checks the KV figure against what llama.cpp
reports, and that the worker's peak resident memory stays under the total (measured here:
0.65-0.75 of it for the bundled model).
"""

from __future__ import annotations

import os
from typing import Protocol

from app.domain.library import MemoryEstimate
from app.engine.protocol import LoadRequest

N_BATCH: int = LoadRequest("", 0, 0).n_batch
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


def estimate_memory(
    model: Sized, n_ctx: int, *, n_batch: int = N_BATCH, available: int | None = -1
) -> MemoryEstimate:
    """The estimate for `model` at `n_ctx` tokens; `available` -1 reads the free memory."""
    buffers = n_batch * model.vocab_size * 4 + FIXED
    return MemoryEstimate(
        n_ctx=n_ctx,
        weights=model.weights_bytes,
        kv_cache=model.kv_bytes_per_token * n_ctx,
        buffers=buffers,
        available=available_memory() if available == -1 else available,
    )
