"""Files the app writes: atomic, and the user's only.

Guarantees:
- `write_atomic` / `write_atomic_bytes`: a reader never sees half a file, and a failed write
  leaves the old one. Writes go to a temporary file in the same folder (made 0600 by
  `mkstemp`), are flushed and fsynced, then renamed over the target, which is therefore 0600
  too; when the target is in one of the app's folders (`app.paths.app_dirs`), the folders from
  that one down to the target's are made 0700 before anything is written, whoever made them.
  A full disk or a missing folder is an `OutputError` that names the file.
- `private_folder` makes a folder and its missing parents 0700 and `private_file` makes a file
  0600 before anything is written in it, whatever the umask (set with `chmod` right after the
  creation, not left to the umask); `connect_private` opens an SQLite file that way, so its
  `-wal`, `-shm` and `-journal` files, which SQLite gives the mode of the database, are 0600 too.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from app.errors import ErrorCode, HarmonyDeskError
from app.paths import app_dirs

FOLDER_MODE = 0o700
FILE_MODE = 0o600


class OutputError(HarmonyDeskError):
    """A file could not be written; the previous file, if any, is untouched."""

    code = ErrorCode.RESOURCE


def private_folder(path: str | os.PathLike[str]) -> Path:
    """`path` as a folder; those of it made now (it and missing parents) are 0700."""
    folder = Path(path)
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    for made in reversed(missing):
        try:
            made.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by another process, which makes it private too
        os.chmod(made, FOLDER_MODE)
    return folder


def private_file(path: str | os.PathLike[str]) -> Path:
    """`path` as a file (made empty if missing, its folder with `private_folder`), mode 0600."""
    target = Path(path)
    private_folder(target.parent)
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        with contextlib.suppress(OSError):  # not ours to change (another owner, read-only)
            os.chmod(target, FILE_MODE)
        return target
    try:
        os.fchmod(fd, FILE_MODE)
    finally:
        os.close(fd)
    return target


def connect_private(path: str | os.PathLike[str], **options: Any) -> sqlite3.Connection:
    """`sqlite3.connect(path, **options)`, the file and its companions made 0600 first."""
    target = private_file(path)
    for companion in ("-wal", "-shm", "-journal"):
        made = target.with_name(target.name + companion)
        if made.exists():
            with contextlib.suppress(OSError):
                os.chmod(made, FILE_MODE)
    connection: sqlite3.Connection = sqlite3.connect(target, **options)
    return connection


def _private_parents(folder: Path) -> None:
    """The folders from the app folder holding `folder` down to it, made 0700 (see above)."""
    with contextlib.suppress(OSError):
        folder = folder.resolve()
        for root in (r.resolve() for r in app_dirs()):
            if folder == root or root in folder.parents:
                for inside in (folder, *folder.parents[: len(folder.parts) - len(root.parts)]):
                    if stat.S_IMODE(inside.stat().st_mode) != FOLDER_MODE:
                        os.chmod(inside, FOLDER_MODE)
                return


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8, lines as written) to `path` atomically."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically."""
    target = Path(path)
    _private_parents(target.parent)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent or ".")
    except OSError as exc:
        raise OutputError(f"cannot write {target}: {exc.strerror}") from exc
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise OutputError(f"cannot write {target}: {exc.strerror}; nothing was changed") from exc


def write_output(name: str, text: str) -> None:
    """`text` to stdout when `name` is "-", else atomically to the file `name`."""
    if name == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    write_atomic(name, text)


__all__ = [
    "OutputError",
    "connect_private",
    "private_file",
    "private_folder",
    "write_atomic",
    "write_atomic_bytes",
    "write_output",
]
