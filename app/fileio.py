"""Atomic file writes: a reader never sees half a file, and a failed write leaves the old one.

Writes go to a temporary file in the same folder, are flushed and fsynced, then renamed
over the target. A full disk or a missing folder is an `OutputError` that names the file.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from app.errors import ErrorCode, HarmonyDeskError


class OutputError(HarmonyDeskError):
    """A file could not be written; the previous file, if any, is untouched."""

    code = ErrorCode.RESOURCE


def write_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write `text` (UTF-8, lines as written) to `path` atomically."""
    write_atomic_bytes(path, text.encode("utf-8"))


def write_atomic_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    """Write `data` to `path` atomically."""
    target = Path(path)
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
