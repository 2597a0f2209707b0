"""The model library's nouns: a model found on disk, its memory estimate, a download's progress.

Guarantees: plain frozen values (they cross from the scanning and download threads to the
window); whether a model fits in memory is decided in one place (`MemoryEstimate.verdict`),
with the sentence the window and the command line show, which says when the KV cache is
counted for several answers at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

GIB = 1 << 30
TIGHT = 0.8  # above this share of the available memory a model "fits, but only just"


def human_size(n: float) -> str:
    """Bytes in words a user reads: `12.1 GiB`, `640 MiB`, `512 bytes`."""
    for unit, size in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


def human_count(n: int) -> str:
    """A parameter count: `20.9B`, `268M`, `25.9M`."""
    for unit, size in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            value = n / size
            return f"{value:.1f}{unit}" if value < 100 else f"{value:.0f}{unit}"
    return str(n)


class Fit(StrEnum):
    FITS = "fits"
    TIGHT = "tight"
    TOO_BIG = "too big"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class MemoryEstimate:
    """Memory a model needs at one context length, next to what the computer has free."""

    n_ctx: int
    weights: int
    kv_cache: int
    buffers: int  # compute buffer and logits: grow with the batch size and the vocabulary
    available: int | None
    gpu_share: float = 0.0  # the share of the layers (weights and cache) given to the GPU
    sequences: int = 1  # answers decoded at once, each with its own cache of `n_ctx` tokens

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache + self.buffers

    @property
    def vram(self) -> int:
        """What goes to the GPU's memory: its share of the weights and the cache."""
        return int((self.weights + self.kv_cache) * self.gpu_share)

    @property
    def ram(self) -> int:
        """What stays in the computer's memory (the verdict compares this with what is free)."""
        return self.total - self.vram

    @property
    def verdict(self) -> Fit:
        if self.available is None or self.available <= 0:
            return Fit.UNKNOWN
        if self.ram > self.available:
            return Fit.TOO_BIG
        return Fit.TIGHT if self.ram > TIGHT * self.available else Fit.FITS

    def short(self) -> str:
        """`1.2 GiB of 9.8 GiB` — the table cell."""
        have = f" of {human_size(self.available)}" if self.available else ""
        return f"{human_size(self.total)}{have}"

    def at_once(self) -> str:
        """ " for 4 answers at once" where the cache is counted for several; "" for one."""
        return f" for {self.sequences} answers at once" if self.sequences > 1 else ""

    def words(self) -> str:
        """The estimate as a sentence, with what to do when the model will not fit."""
        need = (
            f"needs about {human_size(self.total)} at {self.n_ctx:,} tokens of context"
            f" (weights {human_size(self.weights)}, KV cache {human_size(self.kv_cache)}"
            f"{self.at_once()}, buffers {human_size(self.buffers)})"
        )
        if self.vram:
            need += (
                f"; about {human_size(self.vram)} of it on the GPU and {human_size(self.ram)} in"
                " the computer's memory (the GPU's free memory is checked when it loads)"
            )
        have = human_size(self.available or 0)
        verdict = self.verdict
        if verdict is Fit.TOO_BIG:
            return (
                f"Will not fit: it {need}, and {have} is available. Close other programs, choose"
                " a shorter context or a smaller quantisation of this model."
            )
        if verdict is Fit.TIGHT:
            return f"Fits, but only just: it {need}, and {have} is available."
        if verdict is Fit.FITS:
            return f"Fits: it {need}; {have} is available."
        return f"It {need}; the memory available could not be read."


@dataclass(frozen=True)
class ModelEntry:
    """One model in the library: a GGUF file, or the parts of a split one, read from the header."""

    name: str
    path: str  # the file to load: the first part of a split model
    files: tuple[str, ...]
    file_size: int  # all parts together
    modified: float = 0.0
    architecture: str = ""
    parameters: int = 0
    quantization: str = ""
    context_length: int = 0
    vocab_size: int = 0
    has_chat_template: bool = False
    template: str = ""
    weights_bytes: int = 0
    kv_bytes_per_token: int = 0
    layers: int = 0
    problem: str = ""  # why it cannot be used (unreadable, a part missing); empty when usable
    bundled: bool = False  # the app's default model, assembled from its packages

    @property
    def usable(self) -> bool:
        return not self.problem

    @property
    def folder(self) -> str:
        return str(Path(self.path).parent)


@dataclass(frozen=True)
class DownloadProgress:
    """Where one download stands; `total` is None while the size is unknown."""

    job_id: str
    url: str
    target: str
    state: str  # queued, running, paused, verifying, done, failed, cancelled
    done: int = 0
    total: int | None = None
    rate: float = 0.0  # bytes per second, smoothed
    message: str = ""  # the error, or what happened

    @property
    def fraction(self) -> float | None:
        return self.done / self.total if self.total else None

    @property
    def eta_s(self) -> float | None:
        if not self.total or self.rate <= 0:
            return None
        return max(self.total - self.done, 0) / self.rate

    def line(self) -> str:
        """`1.2 GiB of 12.1 GiB · 48.0 MiB/s · 3 min 47 s left`."""
        parts = [human_size(self.done) + (f" of {human_size(self.total)}" if self.total else "")]
        if self.rate > 0 and self.state == "running":
            parts.append(f"{human_size(self.rate)}/s")
            eta = self.eta_s
            if eta is not None:
                parts.append(f"{human_duration(eta)} left")
        return " · ".join(parts)


def human_duration(seconds: float) -> str:
    s = int(seconds + 0.5)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s"
    return f"{s // 3600} h {s % 3600 // 60} min"
