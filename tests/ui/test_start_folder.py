"""File dialogs start in the user's folders (review L4: "Qt's own file dialog, opening in the
clone's folder"): in the user's Downloads folder when there is one, else their home folder,
never the working directory; every file dialog of the app goes through `app.ui.start_folder`;
the dialog is the platform's own where it has one (nothing turns native dialogs off) and Qt's
own offscreen, where the platform has none. Real dialogs, offscreen, a private HOME."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QCoreApplication, Qt, QTimer
from PySide6.QtWidgets import QApplication, QFileDialog

from app.ui.start_folder import start_folder, start_in
from tests.ui.test_window import TURN, make_window, send

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private home folder, and a working directory that is not in it."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))  # no user-dirs.dirs: the defaults
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    elsewhere = tmp_path / "clone"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return home


def test_the_start_is_downloads_else_home_never_the_working_directory(home: Path) -> None:
    assert Path(start_folder()) == home  # no Downloads folder yet: home
    (home / "Downloads").mkdir()
    assert Path(start_folder()) == home / "Downloads"
    assert Path.cwd() not in (Path(start_folder()), Path(start_in()))
    assert Path(start_in("chat.ocm.md")) == home / "Downloads" / "chat.ocm.md"  # a name: put there
    model_folder = home / "models"
    assert start_in(str(model_folder)) == str(model_folder)  # a start of its own is kept


def open_and_close(open_it: Any) -> dict[str, Any]:
    """Run `open_it` (which opens a modal file dialog): what the dialog met showed, read while
    it was open; it is then closed unchosen."""
    met: dict[str, Any] = {}

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog) and dialog.isVisible():
            met["folder"] = Path(dialog.directory().absolutePath())
            met["native off"] = dialog.testOption(QFileDialog.Option.DontUseNativeDialog)
            dialog.reject()
        else:
            QTimer.singleShot(20, look)

    QTimer.singleShot(0, look)
    open_it()
    assert met, "no file dialog opened"
    return met


def test_attach_opens_a_real_dialog_in_downloads(qtbot: Any, qloop: Any, tmp_path: Path, home: Path) -> None:
    (home / "Downloads").mkdir()
    window, _ = make_window(qtbot, tmp_path, [])
    met = open_and_close(window.composer.attach.click)
    assert met["folder"] == home / "Downloads"
    assert not met["native off"]  # the platform's own dialog wherever it has one
    assert not QCoreApplication.testAttribute(Qt.ApplicationAttribute.AA_DontUseNativeDialogs)
    assert window.composer.take_files() == []  # closed unchosen: nothing attached


def test_export_suggests_the_chats_file_in_downloads(qtbot: Any, qloop: Any, tmp_path: Path, home: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from app.store.history import HistoryStore
    from app.ui.window.exchange_dialogs import files_of

    (home / "Downloads").mkdir()
    window, _ = make_window(qtbot, tmp_path, [TURN], store=HistoryStore(tmp_path / "history.db"))
    send(qtbot, window, "What is 6*7?")
    asked: list[str] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName",
                        staticmethod(lambda _parent, _caption, start, _kinds: asked.append(start) or ("", "")))
    files_of(window).export_action.trigger()
    assert len(asked) == 1 and Path(asked[0]).parent == home / "Downloads", asked
    assert Path(asked[0]).name.startswith("What is 6")


def test_every_file_dialog_of_the_app_goes_through_the_start_folder() -> None:
    """No module but `start_folder` calls QFileDialog's dialogs (each would pick its own start)."""
    calls = []
    for path in (ROOT / "app").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "QFileDialog":
                calls.append(f"{path.relative_to(ROOT)}: {node.attr}")
    assert calls and all(call.startswith("app/ui/start_folder.py") for call in calls), calls
