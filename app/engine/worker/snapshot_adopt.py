"""Adopting the KV snapshot files of the layout before keys had folders (pure file handling:
no llama.cpp).

Earlier versions kept every conversation's folder right in the cache's `kv/`, whoever's key
had written its files, so an install with another key (another data folder with its own key, a
test run beside the user's app) read the user's files, found their MACs wrong and set them
aside. Now each key has its own folder (`app/kvcache.py`).

Guarantees:
- `adopt(base, root, key, limit)` moves a file of the old layout (`kvcache.legacy_folders`,
  `*.kv`, and those set aside as `NAME.kv.unusable-…`, which an install with another key may
  have set aside wrongly) into the same conversation's folder in `root` (this key's), under
  its own name, only when both its MACs verify under `key` for that conversation
  (`snapshot_file.authentic`): it is then this key's own. Any other file — another key's, one
  damaged, a link, a FIFO, the old model hashes' memo — is never moved, renamed, changed or
  removed; a file of ours whose name is already taken in `root` (a copy) is removed. An old
  folder left empty is removed. Nothing is ever followed through a link.
- It never raises for what it finds (a file gone meanwhile, a folder it cannot write): a move
  that fails leaves the file where it was, logged.
"""

from __future__ import annotations

import contextlib
import logging
import os
from pathlib import Path

import app.kvcache as kvcache
from app.engine.worker import snapshot_file as files
from app.fileio import private_folder
from app.readback import ASIDE

log = logging.getLogger("engine")


def adopt(base: Path, root: Path, key: bytes, limit: int) -> int:
    """Move this key's files of the old layout in `base` into `root` (see the guarantees);
    how many were moved."""
    moved = 0
    for folder in kvcache.legacy_folders(base):
        for path in _candidates(folder):
            if files.authentic(path, key, folder.name, limit):
                moved += _move(path, root / folder.name / _own_name(path.name))
        with contextlib.suppress(OSError):
            folder.rmdir()  # only when empty
    if moved:
        log.info("%d KV snapshots of the old layout were moved into this key's folder", moved)
    return moved


def _candidates(folder: Path) -> list[Path]:
    """The snapshot files of an old folder, set aside or not (plain names only)."""
    try:
        found = list(folder.iterdir())
    except OSError:
        return []
    return [p for p in found if p.name.endswith(kvcache.SUFFIX) or _own_name(p.name) != p.name]


def _own_name(name: str) -> str:
    """The name a snapshot file had before it was set aside (itself when it was not)."""
    head, mark, _ = name.partition(kvcache.SUFFIX + ASIDE)
    return head + kvcache.SUFFIX if mark and not head.startswith(".") else name


def _move(path: Path, target: Path) -> int:
    """Move `path` to `target` (never over a file there); 1 when moved."""
    try:
        private_folder(target.parent)
        if os.path.lexists(target):
            path.unlink()  # ours, and already there: a copy
            return 0
        os.rename(path, target)
    except FileNotFoundError:
        return 0  # moved or removed meanwhile (another worker with this key)
    except OSError as exc:
        log.warning("a KV snapshot of the old layout could not be moved (%s)", exc.strerror)
        return 0
    return 1
