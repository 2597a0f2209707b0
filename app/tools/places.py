"""Where tool plugins that are not installed live: the plugin folders.

They are the user's `plugins` folder in the config folder, the checkout's `plugins/` when
running from source (or the bundle's `plugins/` in a frozen build), and those listed in
`$HARMONY_DESK_PLUGINS`, in that order.

Guarantees: pure path logic — nothing is read, imported or created here; the answer depends
only on the config folder, where this file lies (or the frozen bundle) and the environment.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from app.paths import config_dir


def shipped_plugins() -> Path | None:
    """The example plugins that ship with Harmony Desk: a checkout's `plugins/`, or the
    bundle's. They are the app's own code, trusted like it."""
    checkout = Path(__file__).resolve().parents[2] / "plugins"
    bundled = getattr(sys, "_MEIPASS", None)  # a frozen bundle carries the example plugins
    if (checkout.parent / "pyproject.toml").is_file():
        return checkout
    return Path(bundled) / "plugins" if bundled is not None else None


def plugin_folders() -> list[Path]:
    """The folders scanned for plugins that are not installed (see the module docstring)."""
    folders = [config_dir() / "plugins"]
    shipped = shipped_plugins()
    if shipped is not None:
        folders.append(shipped)
    extra = os.environ.get("HARMONY_DESK_PLUGINS", "")
    folders += [Path(p) for p in extra.split(os.pathsep) if p]
    return folders


__all__ = ["plugin_folders", "shipped_plugins"]
