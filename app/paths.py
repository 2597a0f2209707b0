"""Per-user folders of Harmony Desk (XDG on Linux), each overridable by an environment variable.

Guarantees: asking for a folder never creates it; whoever creates one, or anything in it, makes
it 0700 and its files 0600 (`app.fileio.private_folder`, `private_file`, `write_atomic`).
"""

from __future__ import annotations

import os
from pathlib import Path


def user_dir(override: str, xdg_variable: str, fallback: str) -> Path:
    """`$override` if set, else `$xdg_variable/harmony-desk`, else `~/<fallback>/harmony-desk`."""
    explicit = os.environ.get(override)
    if explicit:
        return Path(explicit)
    base = os.environ.get(xdg_variable) or str(Path.home() / fallback)
    return Path(base) / "harmony-desk"


def cache_dir() -> Path:
    """Re-creatable data (the assembled default model): `$HARMONY_DESK_CACHE` overrides it."""
    return user_dir("HARMONY_DESK_CACHE", "XDG_CACHE_HOME", ".cache")


def config_dir() -> Path:
    """The user's choices: `$HARMONY_DESK_CONFIG` overrides it."""
    return user_dir("HARMONY_DESK_CONFIG", "XDG_CONFIG_HOME", ".config")


def data_dir() -> Path:
    """What the user would lose (history, the tool audit log): `$HARMONY_DESK_DATA` overrides it."""
    return user_dir("HARMONY_DESK_DATA", "XDG_DATA_HOME", ".local/share")


def app_dirs() -> tuple[Path, Path, Path]:
    """The config, data and cache folders: everything in them is the user's only."""
    return config_dir(), data_dir(), cache_dir()
