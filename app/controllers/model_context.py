"""The loaded model's context length as Model settings shows it, and the memory it would take.

Guarantees: the bounds are the smallest context the settings allow (256) and the context the
model was trained for, as the worker reported it (the settings' own bound when it reported
none); a model's own context length is remembered with its other choices
(`ModelChoice.context_length`; None: the settings' `context_length`) and used when it loads
(`ModelHost.load`); `sizing` reads the model's GGUF header once, off the GUI thread, and then
`Sizing.words` is plain arithmetic per value: the same estimate, in the same words, as the
models page and the check before a load, with the share of the layers llama.cpp put on the
GPU counted there. Every verdict the window and `models list` show (`estimate`) counts the
KV cache once per answer decoded at once (the settings' `parallel`, as the window loads the
model) and says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.domain.library import MemoryEstimate
from app.engine.local.memory import Sized, available_memory, estimate_memory
from app.errors import HarmonyDeskError
from app.settings import Settings, load_settings

if TYPE_CHECKING:
    from app.controllers.model_host import ModelHost

LOWEST = 256
HIGHEST = 1_048_576  # the settings' own bound


@dataclass(frozen=True)
class ContextFacts:
    """What the dialog says about the model's context."""

    loaded: int  # the context the model runs with now (0: not known)
    trained: int  # the context it was trained for (0: not known)
    own: int | None  # chosen for this model in Model settings
    default: int  # the settings' context length (models without their own)

    @property
    def highest(self) -> int:
        return min(self.trained, HIGHEST) if self.trained >= LOWEST else HIGHEST

    def bounded(self, value: int) -> int:
        return max(LOWEST, min(value, self.highest))

    @property
    def start(self) -> int:
        """The value the dialog opens with: the model's own, else the settings'."""
        return self.bounded(self.own if self.own is not None else self.default)

    def chosen(self, value: int) -> int | None:
        """What to remember for `value`: None while it is the settings' (or untouched)."""
        if self.own is None and value == self.start:
            return None
        return None if value == self.bounded(self.default) else value

    def words(self) -> str:
        """ "Loaded now with 8,192 tokens; trained for 131,072." """
        parts = [f"Loaded now with {self.loaded:,} tokens"] if self.loaded else []
        if self.trained:
            parts.append(f"trained for {self.trained:,}")
        said = "; ".join(parts)
        return f"{said[:1].upper()}{said[1:]}." if said else ""


def facts(host: ModelHost, settings: Settings | None = None) -> ContextFacts:
    """The loaded model's context facts (reads two small files: its choices, the settings)."""
    trained = host.info.n_ctx_train if host.info is not None else 0
    settings = settings or load_settings()
    return ContextFacts(host.n_ctx, trained, host.choice().context_length, settings.context_length)


def estimate(
    model: Sized, n_ctx: int, *, sequences: int, available: int | None, gpu_share: float = 0.0
) -> MemoryEstimate:
    """The estimate at `n_ctx` tokens with a cache for each of `sequences` answers at once
    (the settings' `parallel`, as the window loads the model); its words say so."""
    return estimate_memory(
        model, n_ctx, available=available, gpu_share=gpu_share, sequences=max(1, sequences)
    )


@dataclass(frozen=True)
class Sizing:
    """A model's size facts and the answers decoded at once, read once, and the memory free
    then."""

    model: Sized
    available: int | None
    gpu_share: float
    sequences: int

    def words(self, n_ctx: int) -> str:
        """The estimate at `n_ctx` tokens, in the models page's words."""
        return estimate(
            self.model,
            n_ctx,
            sequences=self.sequences,
            available=self.available,
            gpu_share=self.gpu_share,
        ).words()


def sizing(host: ModelHost) -> Sizing | None:
    """The loaded model's sizing (call off the GUI thread: it reads the file's header); None
    for a model with no file (the scripted source) or a header that cannot be read."""
    from app.gguf.info import read_model

    if not host.path:
        return None
    try:
        model = read_model(host.path)
    except (HarmonyDeskError, OSError):
        return None
    placement = host.info.placement if host.info is not None else None
    share = 0.0
    if placement is not None and placement.gpu_offload and placement.n_layers > 0:
        share = min(1.0, max(0, placement.gpu_layers) / placement.n_layers)
    return Sizing(model, available_memory(), share, load_settings().parallel)


__all__ = ["HIGHEST", "LOWEST", "ContextFacts", "Sizing", "estimate", "facts", "sizing"]
