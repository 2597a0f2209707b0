"""How a model is loaded and where it runs: the user's load settings and llama.cpp's answer.

Guarantees: plain frozen values (they cross the worker's pipe); `LoadSettings()` is the
default every model starts from (auto GPU offload, f16 cache, exact reuse on sliding-window
models, the model's own RoPE, see `app/engine/worker/placement.py`); `Placement.words` is what
the status bar says; `Placement.rope_words` says a context extension ("" without one).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LoadSettings:
    """How a model is loaded: its placement and its cache (per model, in `settings.json`)."""

    gpu_layers: int | None = None  # None: auto (all that fit where offload is possible); -1: all
    flash_attn: bool = False
    kv_type: str = "f16"  # or "q8_0": half the cache memory
    swa_full: bool | None = None  # None: a full-size window cache for a sliding-window model
    speculative: str = "lookup"  # "off", "lookup" (n-gram drafts from the context) or "draft"
    draft_model: str = ""  # the draft model's GGUF (same vocabulary) for "draft"
    rope_scale: float = 1.0  # > 1: the context extended by YaRN RoPE scaling by this factor


@dataclass(frozen=True)
class Placement:
    """Where the model runs, as llama.cpp reports it after loading."""

    gpu_offload: bool  # llama.cpp was built with a GPU backend and found a device
    gpu_layers: int  # layers given to the GPU (0: all on the CPU)
    n_layers: int
    flash_attn: bool
    kv_type: str
    swa_full: bool
    sliding_window: int  # 0: the model attends to its whole context on every layer
    rope_scale: float = 1.0  # YaRN scaling by this factor (1: the model's own RoPE)
    yarn_orig_ctx: int = 0  # the trained context YaRN extends (0: no extension)

    def rope_words(self) -> str:
        """The context extension in a few words ("YaRN x4 of 8,192"), "" without one."""
        if self.rope_scale <= 1.0:
            return ""
        return f"YaRN x{self.rope_scale:g} of {self.yarn_orig_ctx:,}"

    def words(self) -> str:
        if self.gpu_layers <= 0:
            return "CPU"
        if self.gpu_layers >= self.n_layers:
            return "GPU"
        return f"GPU {self.gpu_layers}/{self.n_layers} layers, rest CPU"


__all__ = ["LoadSettings", "Placement"]
