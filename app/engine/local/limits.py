"""How long the model worker may take, and what the app says when it takes too long or fails
to load.

Guarantees: a generation's default time budget (`deadline_for`) is generous for the slowest
machine and grows with the prompt and the token budget; a load error names, in words, the
stage where it stopped (vocabulary and metadata, weights with the share read, context set-up)
or why it failed, and keeps llama.cpp's own words (and its warnings) for the error's `details`.
"""

from __future__ import annotations

from collections.abc import Sequence
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
            LoadProblem.CANCELLED,
            path,
            "loading was cancelled",
            "The model worker did not stop within 5 s of the cancel and was killed.",
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
        f"it gave no sign of progress for {waited:.0f} s {stage}, so loading was stopped",
        f"llama.cpp reported no progress for {waited:.0f} s; the model worker was killed.",
    )


def load_error(msg: Any, path: str | Path, arch: str, said: Sequence[str] = ()) -> ModelLoadError:
    """The `ModelLoadError` for a failed load (`LoadFailed` by stage, or a refusal); `said` is
    what llama.cpp logged at warning level or above during the load (for the details)."""
    facts = "\n".join(["llama.cpp said:", *said] if said else [])
    if isinstance(msg, Refused):
        return ModelLoadError(LoadProblem.LOAD_FAILED, path, msg.message, facts)
    assert isinstance(msg, LoadFailed)
    facts = "\n".join(x for x in (f"The model worker: {msg.message}", facts) if x)
    if msg.cancelled:
        return ModelLoadError(LoadProblem.CANCELLED, path, "loading was cancelled", facts)
    if msg.stage in ("draft", "projector"):  # the draft model, the projector: their own words
        return ModelLoadError(LoadProblem.LOAD_FAILED, path, msg.message, facts)
    if msg.stage == "vocabulary":
        return ModelLoadError(
            LoadProblem.UNSUPPORTED_ARCHITECTURE,
            path,
            f"this version of llama.cpp cannot read it (its architecture “{arch}”, settings or"
            " tokenizer are not supported)",
            facts,
        )
    return ModelLoadError(
        LoadProblem.LOAD_FAILED, path, "its weights are incomplete or damaged", facts
    )
