"""Reading back the app's own files (settings, model choices and lists, caches, sidecars,
markers): bounded, never blocking, never a crash, and a bad file said once, not retried.

Guarantees:
- `read_back(path, limit)` is the JSON value of the file at `path`, or None. None with nothing
  said or moved when there is no file (each caller keeps its own default for that); None with
  the reason logged and the file set aside when it is unusable: not a regular file (a FIFO, a
  device, a folder: what the path names is checked before it is opened, so nothing blocks), a
  symbolic link (the app writes its files by renaming a whole file into place, so a link is not
  one it wrote, and is never followed), larger than `limit` (its size is known before a byte is
  read), unreadable, not UTF-8, not JSON, nested deeper than `inputs.MAX_DEPTH`. It raises
  nothing for what the file holds or is.
- `set_aside(path, why)` renames the file next to itself, `NAME.unusable-YYYYmmddTHHMMSS`
  (`-2`, `-3`, ... when that name is taken), so the user keeps what it held and the app never
  reads it again (no loop of the same failure); the reason and the new name are logged once. A
  caller that finds a well-formed file it cannot use sets it aside the same way. A rename that
  fails (a read-only folder) is logged and the file left where it is.
- `read_json(path, limit)` makes the same checks on a file the app reads but does not own (a
  bundled resource): it follows links, moves nothing, and refuses with `InvalidInputError`.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from app.errors import InvalidInputError
from app.inputs import load_json, open_regular, read_opened_text, read_text_file

log = logging.getLogger("store")

ASIDE = ".unusable-"  # what a set-aside file's name carries after its own
DEFAULT_LIMIT = 16 << 20


def read_back(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT) -> Any | None:
    """The JSON value of the app's own file at `path`; None when missing or unusable (see the
    guarantees)."""
    target = Path(path)
    try:
        fd, info = open_regular(target, follow=False)
        return load_json(read_opened_text(fd, info, target, limit))
    except FileNotFoundError:
        return None
    except InvalidInputError as exc:
        set_aside(target, exc.message)
    except json.JSONDecodeError as exc:
        set_aside(target, f"it is not JSON ({exc.msg} at line {exc.lineno})")
    return None


def read_json(path: str | os.PathLike[str], limit: int = DEFAULT_LIMIT) -> Any:
    """The JSON value of a file the app does not own; `InvalidInputError` says why not."""
    target = Path(path)
    text = read_text_file(target, limit)
    try:
        return load_json(text)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{target} is not JSON ({exc.msg} at line {exc.lineno})") from exc


def set_aside(
    path: str | os.PathLike[str], why: str, said: logging.Logger | None = None
) -> Path | None:
    """Rename the unusable file at `path` next to itself (see the guarantees), said on `said`
    (the `store` category unless given); its new path, or None when it could not be moved (or
    was gone)."""
    said = said or log
    target = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%S")
    aside = target.with_name(f"{target.name}{ASIDE}{stamp}")
    number = 1
    while os.path.lexists(aside):
        number += 1
        aside = target.with_name(f"{target.name}{ASIDE}{stamp}-{number}")
    try:
        os.rename(target, aside)
    except FileNotFoundError:
        return None
    except OSError as exc:
        said.warning(
            "%s is unusable (%s); it could not be set aside: %s", target, why, exc.strerror
        )
        return None
    said.warning("%s is unusable (%s); it was set aside as %s", target, why, aside.name)
    return aside


__all__ = ["ASIDE", "DEFAULT_LIMIT", "read_back", "read_json", "set_aside"]
