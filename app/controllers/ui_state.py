"""Small window choices remembered between runs: one JSON file, written atomically.

Guarantees: a missing or damaged file reads as "no choices" (the defaults), never an error,
a hang or a crash (a damaged one is set aside: `app/readback.py`);
each change rewrites the file atomically (`ui-state.json` in the config folder); `set_later`
writes on a background thread, one write at a time in the order asked, so the GUI thread never
waits for the disk and the last choice is the one kept.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
from pathlib import Path

from app.fileio import write_atomic
from app.paths import config_dir
from app.readback import read_back

UI_STATE_LIMIT = 4 << 20  # bytes: a few small choices


class UiState:
    """Small window choices remembered between runs (`ui-state.json` in the config folder)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_dir() / "ui-state.json"
        self._writer = cf.ThreadPoolExecutor(max_workers=1, thread_name_prefix="ui-state")

    def set_later(self, key: str, value: object) -> cf.Future[None]:
        """`set`, on the writer thread (ordered)."""
        return self._writer.submit(self.set, key, value)

    def get(self, key: str, default: object = None) -> object:
        data = read_back(self.path, UI_STATE_LIMIT)
        return data.get(key, default) if isinstance(data, dict) else default

    def set(self, key: str, value: object) -> None:
        data = read_back(self.path, UI_STATE_LIMIT)
        data = data if isinstance(data, dict) else {}
        data[key] = value
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps(data, indent=1))
