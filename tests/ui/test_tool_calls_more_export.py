"""The Tool calls view's Export button and its status line, in the window on the offscreen
platform, with the real MCP server "time" over stdio and the scripted model calling it (the
fixture of `test_tool_calls_view.py`):

- Export opens the app's file dialog (Qt's own, offscreen) in the user's Downloads folder and
  writes the open chat's calls — what ran, with what, the result, who approved — as JSON Lines
  or Markdown, the kind the user picked, the file's suffix added when the name has none; the
  JSON Lines are the audit's own entries, the Markdown what a person reads;
- a dialog closed without a choice writes nothing; a file that cannot be written is said in a
  sentence, never raised;
- the status line names the audit file shortened (`~/…` under the home folder, else its name)
  with the whole path in its tooltip.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication, QFileDialog

from app.controllers.tool_calls_view import Exported, ToolCallsView
from app.tools.audit import AuditLog
from app.ui.tool_calls.dialog import ToolCallsDialog
from app.ui.window.main_window import MainWindow
from tests.ui.test_tool_calls_view import open_calls, run_the_call, window

__all__ = ["window"]

JSONL = "JSON Lines (*.jsonl)"
MARKDOWN = "Markdown (*.md)"


def home_at(monkeypatch: pytest.MonkeyPatch, home: Path) -> Path:
    """A private home folder with a Downloads folder (the file dialog's start)."""
    (home / "Downloads").mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.delenv("XDG_DOWNLOAD_DIR", raising=False)
    return home


def answer_dialog(choose: Callable[[QFileDialog], None], seen: dict[str, Any]) -> None:
    """When the file dialog is up: note where it starts and its kinds, then `choose`."""

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        if isinstance(dialog, QFileDialog) and dialog.isVisible():
            seen["folder"] = Path(dialog.directory().absolutePath())
            seen["kinds"] = dialog.nameFilters()
            choose(dialog)
        else:
            QTimer.singleShot(20, look)

    QTimer.singleShot(0, look)


def pick(path: Path, kind: str) -> Callable[[QFileDialog], None]:
    def choose(dialog: QFileDialog) -> None:
        dialog.selectNameFilter(kind)
        dialog.selectFile(str(path))
        dialog.accept()

    return choose


def export(qtbot: Any, dialog: ToolCallsDialog, path: Path, kind: str) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    answer_dialog(pick(path, kind), seen)
    with qtbot.waitSignal(dialog.exported, timeout=10_000):
        dialog.export_button.click()
    return seen


def test_export_writes_the_chats_calls_as_json_lines(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_at(monkeypatch, tmp_path / "home")
    run_the_call(qtbot, window)
    dialog = open_calls(qtbot, window)
    assert dialog.export_button.isEnabled() and dialog.export_button.text() == "Export…"
    target = home / "Downloads" / "oslo-calls"  # no suffix typed: the kind's is added
    seen = export(qtbot, dialog, target, JSONL)
    assert seen["folder"] == home / "Downloads"
    assert JSONL in seen["kinds"] and MARKDOWN in seen["kinds"]
    written = target.with_suffix(".jsonl")
    lines = written.read_text(encoding="utf-8").splitlines()
    entries = [json.loads(line) for line in lines]
    assert entries == AuditLog().read(window.controller.doc.id).entries and len(entries) == 1
    (entry,) = entries
    assert entry["tool"] == "functions.time__get_current_time"
    assert json.loads(entry["arguments_sent"]) == {"timezone": "America/Oslo"}
    assert entry["arguments_run"] == {"timezone": "Europe/Oslo"}
    assert entry["decision"].startswith("asked: allowed") and entry["ok"]
    assert entry["result"]["timezone"] == "Europe/Oslo"
    assert "1 call" in dialog.status.text() and written.name in dialog.status.text()


def test_export_writes_the_chats_calls_as_markdown_a_person_reads(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_at(monkeypatch, tmp_path / "home")
    run_the_call(qtbot, window)
    dialog = open_calls(qtbot, window)
    target = home / "Downloads" / "calls.md"
    export(qtbot, dialog, target, MARKDOWN)
    text = target.read_text(encoding="utf-8")
    assert text.startswith("# Tool calls") and "get_current_time · time" in text
    assert "functions.time__get_current_time" in text  # as the model called it
    assert "You, when asked (Run)" in text and "Done in " in text
    sent, ran = text.index('"America/Oslo"'), text.index("Arguments that ran (edited)")
    assert sent < ran < text.index('"Europe/Oslo"')
    assert '"datetime"' in text and "```" in text  # the result, fenced
    detail = dialog.detail.toPlainText()
    assert detail.splitlines()[1].removeprefix("When: ") in text  # the same call as the view's


def test_export_closed_without_a_choice_writes_nothing(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = home_at(monkeypatch, tmp_path / "home")
    run_the_call(qtbot, window)
    dialog = open_calls(qtbot, window)
    before = dialog.status.text()
    seen: dict[str, Any] = {}
    answer_dialog(lambda d: d.reject(), seen)
    dialog.export_button.click()  # modal: returns once the dialog is closed
    assert seen["folder"] == home / "Downloads"
    assert list((home / "Downloads").iterdir()) == [] and dialog.status.text() == before


def test_the_status_names_the_audit_shortened_with_the_whole_path_in_its_tooltip(
    qtbot: Any, window: MainWindow, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    audit = tmp_path / "data" / "tool-audit.jsonl"  # the fixture's data folder
    run_the_call(qtbot, window)
    home_at(monkeypatch, tmp_path)  # the audit is in the home folder: ~/…
    dialog = open_calls(qtbot, window)
    status = dialog.status.text()
    assert "(from ~/data/tool-audit.jsonl)" in status and str(tmp_path) not in status, status
    assert dialog.status.toolTip() == str(audit)
    home_at(monkeypatch, tmp_path / "elsewhere")  # not under the home folder: its name
    with qtbot.waitSignal(dialog.shown, timeout=10_000):
        dialog.refresh_button.click()
    status = dialog.status.text()
    assert "(from tool-audit.jsonl)" in status and str(tmp_path) not in status, status
    assert dialog.status.toolTip() == str(audit)


def test_an_export_that_cannot_be_written_is_said_never_raised(qtbot: Any, tmp_path: Path) -> None:
    audit = AuditLog(tmp_path / "audit.jsonl")
    audit.path.write_text('{"conversation": "chat-a", "tool": "python", "ok": true}\n')
    view = ToolCallsView(audit, servers=list)
    blocked = tmp_path / "a file" / "calls.md"  # its folder is a file: nothing can be written
    blocked.parent.write_text("not a folder")
    with qtbot.waitSignal(view.exported, timeout=10_000) as heard:
        view.export("chat-a", str(blocked), "md")
    done = heard.args[0]
    assert isinstance(done, Exported) and done.calls == 0 and done.path == str(blocked)
    assert done.problem.startswith(f"The tool calls could not be exported to {blocked}: ")
    written = tmp_path / "calls.md"
    with qtbot.waitSignal(view.exported, timeout=10_000) as heard:
        view.export("chat-a", str(written), "md", "A title")
    assert heard.args[0] == Exported(str(written), 1)
    assert written.read_text(encoding="utf-8").startswith("# Tool calls — A title\n")
