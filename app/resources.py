"""The one accessor for files bundled under `resources/`.

Works the same from a source checkout, an installed wheel (where `resources/` is the
package `harmony_desk_resources`) and a frozen bundle (PyInstaller's `sys._MEIPASS`).
Never touches the network.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from app.errors import ResourceError

_PACKAGE = "harmony_desk_resources"


def resources_dir() -> Path:
    """The folder that holds the bundled resources in this installation."""
    frozen = getattr(sys, "_MEIPASS", None)
    if frozen is not None:
        return Path(frozen) / "resources"
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(__file__).resolve().parent.parent / "resources"


def resource_path(name: str) -> Path:
    """Path of the bundled resource `name`; a clear error if it is not there."""
    path = resources_dir() / name
    if not path.is_file():
        raise ResourceError(
            f"The bundled resource {name!r} is missing (looked for {path}). "
            "Reinstall Harmony Desk to restore it."
        )
    return path
