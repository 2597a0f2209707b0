"""Where a model runs and how its cache is kept: the load settings turned into llama.cpp's
arguments.

Guarantees: `gpu_layers` auto (None) offloads every layer when llama.cpp reports GPU offload
(`llama_supports_gpu_offload`), else none; -1 is all, N is N (capped at the model's layers);
a sliding-window model (gpt-oss, window 128; Gemma 3, window 512) keeps a full-size window
cache (`swa_full`) unless the user turns it off: a rollback of any length stays exact in it
(Harmony prompts drop the analysis of every finished turn, hundreds of tokens each turn), and
only its states can be restored exactly (`kv_snapshots.py`: snapshots, the prompt cache); it
costs the memory of the window layers' whole context and their attention over it. With the
small window cache (`swa_full` off) the worker evaluates the prompt again when a rollback
crosses the window, and keeps no states. Either way reuse is exact. A q8_0 cache turns flash
attention on (llama.cpp quantizes the V cache only with it). Several sequences and speculative
decoding leave it as chosen: llama.cpp's CPU attention takes other kernels by the rows of one
sequence in a step with it on (a tile from 64 rows; a split of the cache for one row from 512
cached tokens, 1.08 logits away on Gemma 3) and without it (one row against several: 0.3 of
a logit on SmolLM2), so no choice makes a batch of one sequence's tokens round as one token at
a time does; off, the default, keeps prompts, reuse and snapshots exact, and a checked draft
can change a greedy answer only at a near-tie (`tests/engine/test_parallel.py`). A
`rope_scale` above 1 loads the model with YaRN RoPE scaling by that factor from its trained
context (`<arch>.context_length`), as llama-server's `--rope-scaling yarn --rope-scale N
--yarn-orig-ctx TRAINED` does; at 1 llama.cpp keeps the model's own RoPE (nothing is passed).
The result says what was chosen, for the status bar and the debug pane.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from app.domain.placement import LoadSettings, Placement

KV_TYPES = {"f16": 1, "q8_0": 8}  # ggml type ids
ROPE_YARN = 2  # llama.cpp's LLAMA_ROPE_SCALING_TYPE_YARN


def _int(metadata: dict[str, Any], key: str) -> int:
    try:
        return int(metadata.get(key, 0) or 0)
    except (TypeError, ValueError):
        return 0


def placement_for(settings: LoadSettings, metadata: dict[str, Any], offload: bool) -> Placement:
    """The placement `settings` give for a model with this GGUF `metadata`."""
    arch = str(metadata.get("general.architecture", ""))
    layers = _int(metadata, f"{arch}.block_count")
    window = _int(metadata, f"{arch}.attention.sliding_window")
    wanted = settings.gpu_layers
    if wanted is None:
        wanted = -1 if offload else 0
    gpu_layers = 0 if not offload else layers if wanted < 0 else min(wanted, layers)
    kv_type = settings.kv_type if settings.kv_type in KV_TYPES else "f16"
    flash_attn = settings.flash_attn or kv_type != "f16"
    swa_full = settings.swa_full if settings.swa_full is not None else window > 0
    scale = max(1.0, settings.rope_scale)
    trained = _int(metadata, f"{arch}.context_length") if scale > 1.0 else 0
    return Placement(
        offload, gpu_layers, layers, flash_attn, kv_type, swa_full, window, scale, trained
    )


def llama_arguments(placement: Placement) -> dict[str, Any]:
    """The `Llama(...)` arguments of `placement`."""
    n_gpu_layers = -1 if placement.gpu_layers >= placement.n_layers > 0 else placement.gpu_layers
    kv = KV_TYPES[placement.kv_type]
    return {
        "n_gpu_layers": n_gpu_layers,
        "flash_attn": placement.flash_attn,
        "type_k": kv,
        "type_v": kv,
        "swa_full": placement.swa_full,
        **_rope_arguments(placement),
    }


def _rope_arguments(placement: Placement) -> dict[str, Any]:
    """YaRN's `Llama(...)` arguments, none for the model's own RoPE."""
    if placement.rope_scale <= 1.0:
        return {}
    return {
        "rope_scaling_type": ROPE_YARN,
        "rope_freq_scale": 1.0 / placement.rope_scale,
        "yarn_orig_ctx": placement.yarn_orig_ctx,
    }


def as_loaded(placement: Placement, model_params: Any, context_params: Any) -> Placement:
    """`placement` as llama.cpp's parameters say it was loaded (read back, not assumed)."""
    names = {v: k for k, v in KV_TYPES.items()}
    asked = int(model_params.n_gpu_layers)
    layers = placement.n_layers if asked < 0 else min(asked, placement.n_layers)
    return dataclasses.replace(
        placement,
        gpu_layers=layers if placement.gpu_offload else 0,
        flash_attn=int(context_params.flash_attn_type) == 1,
        kv_type=names.get(int(context_params.type_k), str(context_params.type_k)),
        swa_full=bool(context_params.swa_full),
        **_rope_as_loaded(context_params),
    )


def _rope_as_loaded(context_params: Any) -> dict[str, Any]:
    """The RoPE scaling llama.cpp's context parameters hold (1, 0: the model's own)."""
    freq_scale = float(context_params.rope_freq_scale)
    if int(context_params.rope_scaling_type) != ROPE_YARN or not 0.0 < freq_scale < 1.0:
        return {"rope_scale": 1.0, "yarn_orig_ctx": 0}
    return {
        "rope_scale": round(1.0 / freq_scale, 4),
        "yarn_orig_ctx": int(context_params.yarn_orig_ctx),
    }


__all__ = ["KV_TYPES", "ROPE_YARN", "as_loaded", "llama_arguments", "placement_for"]
