"""Everything in the window: File ▸ Export conversation…, Export all conversations, Import
conversations… (a round trip through the real history store), Add to library (files and a
folder, then offered by the composer's "@"), Quit (Ctrl+Q) and View ▸ Sidebar (Ctrl+B) — the
real window on a scripted model, the file dialogs answered by the test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog

from app.store.history import HistoryStore
from app.ui.window.exchange_dialogs import WindowFiles, files_of
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import TURN, make_window, send


def answer(monkeypatch: pytest.MonkeyPatch, name: str, value: Any) -> None:
    """The file dialog `name` answers `value` at once, as if the user had chosen it."""
    monkeypatch.setattr(QFileDialog, name, staticmethod(lambda *args, **kwargs: value))


def titles(window: MainWindow) -> list[str]:
    return [window.sidebar.list.item(i).text() for i in range(window.sidebar.list.count())]


@pytest.fixture
def chatted(qtbot: Any, qloop: Any, tmp_path: Path) -> tuple[MainWindow, WindowFiles]:
    store = HistoryStore(tmp_path / "history.db")
    window, _ = make_window(qtbot, tmp_path, [TURN], store=store)
    send(qtbot, window, "What is 6*7?")
    return window, files_of(window)


def test_the_file_menu_holds_what_the_command_line_does(chatted: tuple[MainWindow, WindowFiles]) -> None:
    window, _ = chatted
    menu = window.menuBar().actions()[0].menu()
    assert menu is not None
    said = [a.text() for a in menu.actions()]
    for entry in ("Import conversations…", "Export conversation…", "Export all conversations", "Add to library",
                  "Trash", "Settings…", "Quit"):
        assert entry in said
    assert said[-1] == "Quit"
    for name in ("new_action", "open_action", "models_action", "settings_action", "preferences_action",
                 "debug_action", "search_action", "recent_menu", "trash_menu", "serve"):
        assert hasattr(window, name)  # the names the window's docs and tests use are kept


def test_export_then_import_from_the_menu_round_trips_into_the_sidebar(
    qtbot: Any, chatted: tuple[MainWindow, WindowFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, files = chatted
    exported = tmp_path / "six-by-seven"  # no suffix typed: the filter's is added
    answer(monkeypatch, "getSaveFileName", (str(exported), "OpenChatML (*.ocm)"))
    with qtbot.waitSignal(files.exchange.done, timeout=10_000):
        files.export_action.trigger()
    written = exported.with_suffix(".ocm")
    assert "<|start|>user<|message|>What is 6*7?<|end|>" in written.read_text()
    assert str(written) in window.statusBar().currentMessage()
    before = {d.id for d in window.controller.listing}
    answer(monkeypatch, "getOpenFileName", (str(written), ""))
    with qtbot.waitSignal(files.exchange.imported, timeout=10_000) as got:
        files.import_action.trigger()
    (new_id,) = got.args[0]
    assert new_id not in before
    qtbot.waitUntil(lambda: new_id in {d.id for d in window.controller.listing} and window.controller.doc.id == new_id,
                    timeout=10_000)
    assert titles(window).count("What is 6*7?") == 2  # the original and the imported one
    shown = window.controller.doc
    assert shown.turns[0].version.user_text == "What is 6*7?"
    reply = shown.turns[0].version.reply
    assert reply is not None and "The **answer** is 42." in reply.visible_text()
    assert HistoryStore(tmp_path / "history.db").load(new_id) is not None  # stored, not only shown


def test_markdown_by_its_filter_and_every_conversation_into_a_folder(
    qtbot: Any, chatted: tuple[MainWindow, WindowFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, files = chatted
    answer(monkeypatch, "getSaveFileName", (str(tmp_path / "chat"), "Markdown (*.md)"))
    with qtbot.waitSignal(files.exchange.done, timeout=10_000):
        files.export_action.trigger()
    text = (tmp_path / "chat.md").read_text()
    assert "**You:**" in text and "zebra-analysis-text" not in text  # what a reader saw, never analysis
    folder = tmp_path / "all"
    folder.mkdir()
    answer(monkeypatch, "getExistingDirectory", str(folder))
    with qtbot.waitSignal(files.exchange.done, timeout=10_000):
        next(a for a in files.export_all_menu.actions() if a.objectName() == "export_all_json").trigger()
    assert sorted(p.name for p in folder.iterdir()) == [f"{window.controller.doc.id}.json"]


def test_a_file_that_is_no_conversation_is_said_in_the_banner_and_nothing_stored(
    qtbot: Any, chatted: tuple[MainWindow, WindowFiles], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window, files = chatted
    bad = tmp_path / "notes.json"
    bad.write_text('{"hello": "world"}')
    before = len(HistoryStore(tmp_path / "history.db").listed())
    answer(monkeypatch, "getOpenFileName", (str(bad), ""))
    with qtbot.waitSignal(files.exchange.failed, timeout=10_000):
        files.import_action.trigger()
    assert window.banner.isVisible() and "Could not import notes.json" in window.banner.label.text()
    assert len(HistoryStore(tmp_path / "history.db").listed()) == before
    gone = tmp_path / "gone" / "chat.ocm"  # its folder went away while the dialog was open
    answer(monkeypatch, "getSaveFileName", (str(gone), "OpenChatML (*.ocm)"))
    with qtbot.waitSignal(files.exchange.failed, timeout=10_000):
        files.export_action.trigger()
    assert window.banner.label.text() == f"Could not export to {gone}: No such file or directory."


def test_an_empty_chat_is_not_exported(qtbot: Any, chatted: tuple[MainWindow, WindowFiles],
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    window, files = chatted
    window.controller.new_chat()
    asked: list[object] = []
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: asked.append(a) or ("", "")))
    files.export_action.trigger()
    assert asked == [] and "nothing to export" in window.banner.label.text()


def test_added_files_and_folders_are_indexed_and_offered_by_the_at_picker(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.documents.index import DocumentIndex

    monkeypatch.setenv("HARMONY_DESK_DATA", str(tmp_path / "data"))
    window, _ = make_window(qtbot, tmp_path, [])
    files = files_of(window)
    note = tmp_path / "pump-manual.md"
    note.write_text("# Pump\n\nUnscrew the blue valve first, then drain the tank before the frost.\n")
    answer(monkeypatch, "getOpenFileNames", ([str(note)], ""))
    with qtbot.waitSignal(files.library.finished, timeout=60_000):
        files.add_files_action.trigger()
        assert not files.library_menu.isEnabled()  # one indexing at a time
    assert files.library_menu.isEnabled() and "1 document in the library" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: window.composer.documents == [note.resolve()], timeout=10_000)  # "@" offers it
    folder = tmp_path / "reports"
    folder.mkdir()
    (folder / "q1.txt").write_text("First quarter: apples sold well.")
    (folder / "q2.txt").write_text("Second quarter: pears sold better.")
    answer(monkeypatch, "getExistingDirectory", str(folder))
    with qtbot.waitSignal(files.library.finished, timeout=60_000):
        files.add_folder_action.trigger()
    index = DocumentIndex()
    try:
        assert index.folders() == [str(folder.resolve())]  # remembered: later files are found
        paths = {Path(str(d["path"])).name for d in index.documents()}
        assert paths == {"pump-manual.md", "q1.txt", "q2.txt"}
        assert index.search("apples", 1)[0].file.endswith("q1.txt")
    finally:
        index.close()
    qtbot.waitUntil(lambda: len(window.composer.documents or []) == 3, timeout=10_000)


def test_ctrl_b_shows_and_hides_the_sidebar_and_the_view_menu_says_which(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    files = files_of(window)
    shown = window.sidebar_shown()
    qtbot.keyClick(window.composer.box, Qt.Key.Key_B, Qt.KeyboardModifier.ControlModifier)
    assert window.sidebar_shown() is not shown and files.sidebar_action.isChecked() is not shown
    files.sidebar_action.trigger()
    assert window.sidebar_shown() is shown and files.sidebar_action.isChecked() is shown
    view = window.menuBar().actions()[1].menu()
    assert view is not None and files.sidebar_action in view.actions()


def test_ctrl_q_closes_the_window(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    assert files_of(window).quit_action.shortcut().toString() == "Ctrl+Q"
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not window.isVisible(), timeout=2000)
