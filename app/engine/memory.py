"""How much memory a model needs at a context length, and how much the computer has free.

Guarantees: one estimate for the whole app (the library's table, the command line and the
check before a load): weights (the tensor data of every part) + an f16 KV cache of the
context's length (llama.cpp's full-size cache, as it allocates by default) + the buffers that
grow with the batch and the vocabulary (llama.cpp's compute buffer and the logits array
llama-cpp-python keeps), plus a small fixed margin. A test checks the KV figure against what
llama.cpp reports and the total against the worker's peak resident memory.
"""

from __future__ import annotations

import os

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


def estimate_memory(
    weights: int,
    kv_bytes_per_token: int,
    vocab_size: int,
    n_ctx: int,
    *,
    n_batch: int = N_BATCH,
    available: int | None = -1,
) -> MemoryEstimate:
    """The estimate at `n_ctx` tokens; `available` -1 reads the computer's free memory."""
    buffers = 2 * n_batch * vocab_size * 4 + FIXED
    return MemoryEstimate(
        n_ctx=n_ctx,
        weights=weights,
        kv_cache=kv_bytes_per_token * n_ctx,
        buffers=buffers,
        available=available_memory() if available == -1 else available,
    )
