"""Which multimodal projector (an `mmproj` GGUF) goes with a model.

Guarantees:
- `is_projector` says whether a GGUF is a projector (llama.cpp's `clip` architecture, or, when
  its header cannot be read, a name starting with `mmproj`): the library lists it with its
  model, never as a model of its own;
- `projector_for` gives the projector to load with a model: the one chosen for it (a path;
  "" when the user chose none), else the projector in the model's own folder — of several,
  the one whose name shares the longest start with the model's once `mmproj` is taken off,
  then the first by name — else None. A chosen projector that is not there is an
  `InvalidInputError` saying so, never a silent load without images.
"""

from __future__ import annotations

import re
from pathlib import Path

from app.errors import HarmonyDeskError, InvalidInputError

_PREFIX = re.compile(r"^mmproj[-_.]?(model[-_.]?)?", re.I)


def is_projector(path: Path) -> bool:
    """Whether `path` is a multimodal projector (see the module guarantees)."""
    from app.gguf.info import read_gguf

    try:
        return str(read_gguf(path).architecture) == "clip"
    except (HarmonyDeskError, OSError, ValueError):
        return path.name.lower().startswith("mmproj")


def _shared(a: str, b: str) -> int:
    """How many characters two names share from their start (case aside)."""
    return next((i for i, (x, y) in enumerate(zip(a.lower(), b.lower(), strict=False)) if x != y),
                min(len(a), len(b)))  # fmt: skip


def projector_for(model: str | Path, chosen: str | None = None) -> Path | None:
    """The projector to load with `model` (see the module guarantees)."""
    if chosen is not None:
        if not chosen:
            return None
        path = Path(chosen)
        if not path.is_file():
            raise InvalidInputError(f"the projector chosen for this model, {path.name}, is gone")
        return path
    model = Path(model)
    try:
        found = [p for p in model.parent.glob("*.gguf")
                 if "mmproj" in p.name.lower() and p != model and is_projector(p)]  # fmt: skip
    except OSError:
        return None
    if not found:
        return None
    stem = model.stem
    return max(sorted(found), key=lambda p: _shared(_PREFIX.sub("", p.stem), stem))


__all__ = ["is_projector", "projector_for"]
