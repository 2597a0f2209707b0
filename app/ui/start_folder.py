"""The app's file dialogs and the folder they start in.

Guarantees: every file dialog the app opens goes through this module and starts in the user's
Downloads folder when there is one, else in their home folder — never in the working directory
the app was started from (a clone, a system folder); a dialog given a start of its own (the
folder of the model in use, a suggested file name) starts there, and a bare file name is put in
that same start folder. The dialogs are Qt's static ones with no option turned off, so each
platform shows its native dialog where it has one and Qt's own only where it has none (the
offscreen platform, a bare X server with no desktop). A dialog closed without a choice gives ""
(or no paths).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QStandardPaths
from PySide6.QtWidgets import QFileDialog, QWidget


def start_folder() -> str:
    """The user's Downloads folder when it exists, else their home folder."""
    location = QStandardPaths.StandardLocation.DownloadLocation
    downloads = QStandardPaths.writableLocation(location)
    home = Path.home()
    if downloads and Path(downloads).is_dir() and Path(downloads).resolve() != home.resolve():
        return downloads
    return str(home)


def start_in(start: str = "") -> str:
    """Where a dialog starts: `start` when it names a folder or a path, a bare file name put in
    the start folder, nothing given the start folder itself."""
    if not start:
        return start_folder()
    if Path(start).is_absolute():
        return start
    return str(Path(start_folder()) / start)


def open_file(parent: QWidget | None, caption: str, kinds: str = "", start: str = "") -> str:
    """One existing file the user picks ("" when none)."""
    path, _ = QFileDialog.getOpenFileName(parent, caption, start_in(start), kinds)
    return path


def open_files(parent: QWidget | None, caption: str, kinds: str = "") -> list[str]:
    """Existing files the user picks (none when the dialog is closed)."""
    paths, _ = QFileDialog.getOpenFileNames(parent, caption, start_in(), kinds)
    return list(paths)


def save_file(parent: QWidget | None, caption: str, name: str, kinds: str) -> tuple[str, str]:
    """The file to write, suggested `name` in the start folder, and the kind chosen."""
    path, chosen = QFileDialog.getSaveFileName(parent, caption, start_in(name), kinds)
    return path, chosen


def choose_folder(parent: QWidget | None, caption: str) -> str:
    """A folder the user picks ("" when none)."""
    return QFileDialog.getExistingDirectory(parent, caption, start_in())


__all__ = ["choose_folder", "open_file", "open_files", "save_file", "start_folder", "start_in"]
