"""A desktop trash of the test's own: `$XDG_DATA_HOME/Trash` in a temporary folder.

send2trash's freedesktop backend reads `XDG_DATA_HOME` once, when it is first imported, so the
module's copies are pointed at the test's folder too (they are restored after the test).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest


def use_private_trash(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """Trash into `home/Trash`; returns the folder the trashed files land in."""
    import send2trash.plat_other as freedesktop

    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    monkeypatch.setattr(freedesktop, "XDG_DATA_HOME", os.fsencode(home))
    monkeypatch.setattr(freedesktop, "HOMETRASH_B", os.fsencode(home / "Trash"))
    monkeypatch.setattr(freedesktop, "HOMETRASH", str(home / "Trash"))
    return home / "Trash" / "files"
