"""How long the model worker may take, and what the app says when it takes too long or fails
to load.

Guarantees: a generation's default time budget (`deadline_for`) is generous for the slowest
machine and grows with the prompt and the token budget; a load errors name the stage where it
stopped (vocabulary and metadata, weights with the share read, context set-up) or why it failed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.engine.protocol import LoadFailed, Refused
from app.errors import LoadProblem, ModelLoadError

GRACE_S = 5.0  # how long a cancelled generation past its deadline may take to end
LOAD_STALL_S = 120.0  # the longest a load may go without a word (progress) from the worker


def deadline_for(prompt_tokens: int, max_tokens: int) -> float:
    """The default time budget of a generation, in seconds: generous for the slowest machine
    (two seconds a generated token, a tenth of a second a prompt token, two minutes besides)."""
    return 120.0 + 2.0 * max_tokens + 0.1 * prompt_tokens


def stalled_error(
    path: str | Path, fraction: float, waited: float, cancelled: bool
) -> ModelLoadError:
    """The error for a load that gave no sign of life for `waited` seconds, saying its stage."""
    if cancelled:
        return ModelLoadError(
            LoadProblem.CANCELLED, path, "loading was cancelled (the worker was stopped)"
        )
    if fraction < 0:
        stage = "while reading its vocabulary and metadata, before its weights"
    elif fraction < 1:
        stage = f"while reading its weights ({fraction:.0%} read)"
    else:
        stage = "after reading its weights, while setting up its context"
    return ModelLoadError(
        LoadProblem.LOAD_FAILED,
        path,
        f"llama.cpp gave no sign of progress for {waited:.0f} s {stage}; the model worker was"
        " stopped",
    )


def load_error(msg: Any, path: str | Path, arch: str) -> ModelLoadError:
    """The `ModelLoadError` for a failed load (`LoadFailed` by stage, or a refusal)."""
    if isinstance(msg, Refused):
        return ModelLoadError(LoadProblem.LOAD_FAILED, path, msg.message)
    assert isinstance(msg, LoadFailed)
    if msg.cancelled:
        return ModelLoadError(LoadProblem.CANCELLED, path, "loading was cancelled")
    if msg.stage == "vocabulary":
        return ModelLoadError(
            LoadProblem.UNSUPPORTED_ARCHITECTURE,
            path,
            f"llama.cpp cannot read its architecture {arch!r}, hyper-parameters"
            f" or tokenizer ({msg.message})",
        )
    return ModelLoadError(
        LoadProblem.LOAD_FAILED, path, f"its weights are incomplete or damaged ({msg.message})"
    )
