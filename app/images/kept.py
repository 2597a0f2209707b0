"""Where an image's bytes are found again from the sha256 a message records.

Guarantees: `remember` holds a checked picture in memory (the images of this run: attached,
pasted, sent to the server or returned by a tool), up to `MEMORY_BYTES` in all, the least
recently used dropped first; `forget` drops them all (what a restart does); `find` gives the
picture of a sha256 from memory, else from the attached files kept with the conversations
(`app/documents/kept.py`), checked again as an image; None when neither has it (the caller
says which image is missing; nothing is guessed). `keep` stores the bytes of a message's
images with its conversation among those kept files, under a key the caller names (a user's
message version, the reply whose tool messages carry a tool's images), once per content, and
names each image it could not find to keep.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Iterable
from pathlib import Path

from app.domain.messages import ImageContent
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


def forget() -> None:
    """Drop every picture held for this run (what a restart does: what is kept on disk stays)."""
    with _lock:
        _memory.clear()


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


def keep(
    images: Iterable[ImageContent], conversation: str, key: str, folder: Path | None = None
) -> list[str]:
    """Store the bytes of `images` with message `key` of `conversation` (see the module
    guarantees) in `folder`'s kept files (None: the data folder's); the name of each image
    that was not found, in order. Raises `OSError` or `sqlite3.Error` when the kept files
    cannot be written."""
    from app.documents.kept import KeptFiles

    lost: list[str] = []
    kept = KeptFiles(folder)
    try:
        for number, image in enumerate(images, 1):
            picture = find(image.sha256, image.name)
            if picture is None:
                lost.append(image.name or f"image {number}")
                continue
            kept.keep_bytes(picture.data, image.name or f"image-{number}", conversation, key)
    finally:
        kept.close()
    return lost


__all__ = ["MEMORY_BYTES", "find", "forget", "keep", "look_in", "remember"]
