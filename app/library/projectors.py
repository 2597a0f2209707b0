"""Which multimodal projector (an `mmproj` GGUF) goes with a model.

Guarantees:
- `is_projector` says whether a GGUF is a projector (llama.cpp's `clip` architecture, or, when
  its header cannot be read, a name starting with `mmproj`): the library lists it with its
  model, never as a model of its own;
- `projector_for` gives the projector to load with a model: the one chosen for it (a path;
  "" when the user chose none), else the projector in the model's own folder — of several,
  the one whose name shares the longest start with the model's once `mmproj` is taken off,
  then the first by name — else None. A projector in the folder whose header says it was made
  for another model is not paired with this one (`fits`: one written by llama.cpp's converter,
  `general.type` "mmproj", records the text model's width as `clip.vision.projection_dim`;
  where the width is not recorded so, the names decide). A chosen projector is never second-
  guessed; one that is not there is an `InvalidInputError` saying so, never a silent load
  without images;
- `Projectors` pairs many models at once (the library's list) with the same answers, reading
  each folder's projectors once.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from app.errors import HarmonyDeskError, InvalidInputError

_PREFIX = re.compile(r"^mmproj[-_.]?(model[-_.]?)?", re.I)


@dataclass(frozen=True)
class _Facts:
    """What pairing needs of a GGUF's header."""

    readable: bool
    architecture: str = ""
    width: int = 0  # a model's embedding width; a projector's recorded text width (0: unknown)


def _facts(path: Path) -> _Facts:
    """The header facts of `path`, read once per file version."""
    try:
        st = path.stat()
    except OSError:
        return _Facts(False)
    return _read_facts(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=512)
def _read_facts(path: str, _size: int, _mtime: int) -> _Facts:
    from app.gguf.info import read_gguf

    try:
        info = read_gguf(path)
        arch = info.architecture
        if arch == "clip":
            made = info.get("general.type") == "mmproj"  # llama.cpp's converter: width is exact
            width = info.get("clip.vision.projection_dim") if made else 0
        else:
            width = info.arch_value("embedding_length", 0)
    except (HarmonyDeskError, OSError, ValueError):
        return _Facts(False)
    exact = isinstance(width, int) and not isinstance(width, bool)
    return _Facts(True, arch, width if exact else 0)


def is_projector(path: Path) -> bool:
    """Whether `path` is a multimodal projector (see the module guarantees)."""
    facts = _facts(path)
    if facts.readable:
        return facts.architecture == "clip"
    return path.name.lower().startswith("mmproj")


def fits(model: Path, projector: Path) -> bool:
    """False when the headers say the projector was made for a model of another width."""
    width, into = _facts(model).width, _facts(projector).width
    return not (width and into and width != into)


def _shared(a: str, b: str) -> int:
    """How many characters two names share from their start (case aside)."""
    return next(
        (i for i, (x, y) in enumerate(zip(a.lower(), b.lower(), strict=False)) if x != y),
        min(len(a), len(b)),
    )


def projectors_in(folder: Path) -> list[Path]:
    """The projectors in `folder` itself (not below it), by name; none when it cannot be read."""
    try:
        named = sorted(p for p in folder.glob("*.gguf") if "mmproj" in p.name.lower())
    except OSError:
        return []
    return [p for p in named if is_projector(p)]


def best_match(model: Path, found: list[Path]) -> Path | None:
    """Of the projectors `found`, the one whose name is nearest the model's (module guarantees)."""
    found = sorted(p for p in found if p != model and fits(model, p))
    if not found:
        return None
    return max(found, key=lambda p: _shared(_PREFIX.sub("", p.stem), model.stem))


def chosen_projector(chosen: str) -> Path | None:
    """The projector a user chose ("": none), checked to be there."""
    if not chosen:
        return None
    path = Path(chosen)
    if not path.is_file():
        raise InvalidInputError(f"the projector chosen for this model, {path.name}, is gone")
    return path


def projector_for(model: str | Path, chosen: str | None = None) -> Path | None:
    """The projector to load with `model` (see the module guarantees)."""
    if chosen is not None:
        return chosen_projector(chosen)
    model = Path(model)
    return best_match(model, projectors_in(model.parent))


class Projectors:
    """`projector_for` over many models, each folder's projectors read once."""

    def __init__(self) -> None:
        self._found: dict[Path, list[Path]] = {}

    def pair(self, model: str | Path, chosen: str | None = None) -> Path | None:
        if chosen is not None:
            return chosen_projector(chosen)
        model = Path(model)
        if model.parent not in self._found:
            self._found[model.parent] = projectors_in(model.parent)
        return best_match(model, self._found[model.parent])


__all__ = [
    "Projectors",
    "best_match",
    "chosen_projector",
    "fits",
    "is_projector",
    "projector_for",
    "projectors_in",
]
