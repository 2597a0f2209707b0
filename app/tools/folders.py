"""Which folders model-written code may be given to write.

Guarantee: a folder is refused for writing when it is, contains or lies inside one of the
folders whose files the app itself trusts or keeps — the plugin folders (a file planted there
would run inside the app), the config folder (settings, templates, plugins) and the data
folder (history, the audit log) — except the python tool's own workspaces under
`<data>/workspaces`. Links are resolved before the comparison.
"""

from __future__ import annotations

from pathlib import Path

from app.errors import HarmonyDeskError
from app.paths import config_dir, data_dir
from app.tools.places import plugin_folders


class SandboxFolderError(HarmonyDeskError):
    """A folder the python tool may not be given (as asked)."""


def _related(a: Path, b: Path) -> bool:
    return a == b or a.is_relative_to(b) or b.is_relative_to(a)


def protected_folders() -> list[Path]:
    """The folders model-written code may never write into (see the module docstring)."""
    return [p.resolve() for p in [config_dir(), data_dir(), *plugin_folders()]]


def check_writable(folder: Path) -> None:
    """Raise `SandboxFolderError` when `folder` may not be given to the python tool to write."""
    target = folder.resolve()
    workspaces = (data_dir() / "workspaces").resolve()
    if target.is_relative_to(workspaces) and target != workspaces:
        for plugins in protected_folders()[2:]:
            if _related(target, plugins):
                break
        else:
            return
    for protected in protected_folders():
        if _related(target, protected):
            raise SandboxFolderError(
                f"the python tool may not write {target}: it overlaps {protected}, whose files"
                " Harmony Desk itself runs or keeps; grant it read-only, or pick another folder"
            )


__all__ = ["SandboxFolderError", "check_writable", "protected_folders"]
