"""Where an image's bytes are found again from the sha256 a message records.

Guarantees: `remember` holds a checked picture in memory (the images of this run: attached,
pasted or sent to the server), up to `MEMORY_BYTES` in all, the least recently used dropped
first; `find` gives the picture of a sha256 from memory, else from the attached files kept with
the conversations (`app/documents/kept.py`), checked again as an image; None when neither has
it (the caller says which image is missing; nothing is guessed).
"""

from __future__ import annotations

import collections
import threading
from pathlib import Path

from app.images.decode import ImageError, Picture, read

MEMORY_BYTES = 256 << 20

_lock = threading.Lock()
_memory: collections.OrderedDict[str, Picture] = collections.OrderedDict()
_folders: list[Path] = []  # where kept files are looked for (the data folder's, unless told)


def remember(picture: Picture) -> None:
    """Hold `picture` for this run (see the module guarantees)."""
    with _lock:
        _memory[picture.sha256] = picture
        _memory.move_to_end(picture.sha256)
        total = sum(len(p.data) for p in _memory.values())
        while total > MEMORY_BYTES and len(_memory) > 1:
            _, dropped = _memory.popitem(last=False)
            total -= len(dropped.data)


def look_in(folder: Path) -> None:
    """Also look for kept files in `folder` (tests, and a data folder chosen at start-up)."""
    with _lock:
        if folder not in _folders:
            _folders.insert(0, folder)


def _kept_file(sha256: str) -> Path | None:
    from app.documents.kept import KeptFiles

    for folder in [*_folders, None]:
        kept = KeptFiles(folder)
        try:
            stored = kept.stored(sha256)
        finally:
            kept.close()
        if stored is not None:
            return stored
    return None


def find(sha256: str, name: str = "") -> Picture | None:
    """The picture of `sha256` (see the module guarantees)."""
    with _lock:
        held = _memory.get(sha256)
        if held is not None:
            _memory.move_to_end(sha256)
            return held
    stored = _kept_file(sha256)
    if stored is None:
        return None
    try:
        picture = read(stored.read_bytes(), name)
    except (ImageError, OSError):
        return None
    if picture.sha256 != sha256:
        return None
    remember(picture)
    return picture


__all__ = ["MEMORY_BYTES", "find", "look_in", "remember"]
