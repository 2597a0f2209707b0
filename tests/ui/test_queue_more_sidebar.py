"""The sidebar marks a chat that has queued messages ("⏳ 2", said to a screen reader and in
the tooltip) beside the ● of the chat whose answer streams, and follows the queue as it
changes. Real widgets offscreen, the real controllers and SQLite store, a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidgetItem

from app.ui.window.main_window import MainWindow
from tests.ui.test_chat_queue import (
    STORY,
    _drained,
    _enter,
    _first_row,
    _new_chat,
    _stop_story,
    _stream,
    _window,
)


def _row(window: MainWindow, doc_id: str) -> QListWidgetItem | None:
    rows = window.sidebar.list
    for i in range(rows.count()):
        if rows.item(i).data(Qt.ItemDataRole.UserRole) == doc_id:
            return rows.item(i)
    return None


def _said(window: MainWindow, doc_id: str) -> tuple[str, str, str]:
    """(text, accessible text, tooltip) of the chat's row."""
    row = _row(window, doc_id)
    assert row is not None
    return (
        row.text(),
        str(row.data(Qt.ItemDataRole.AccessibleTextRole)),
        row.toolTip(),
    )


def test_a_chat_with_queued_messages_is_marked_in_the_sidebar(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY])
    c = window.controller
    story = _stream(qtbot, window, "Tell a long story")
    second = _new_chat(qtbot, window)
    qtbot.waitUntil(lambda: _row(window, second.id) is not None)
    assert "⏳" not in _said(window, second.id)[0]
    _enter(qtbot, window, "First question")
    qtbot.waitUntil(lambda: "⏳ 1" in _said(window, second.id)[0])
    _, said, tip = _said(window, second.id)
    assert "1 queued" in said and "1 message queued" in tip
    _enter(qtbot, window, "Second question")
    qtbot.waitUntil(lambda: "⏳ 2" in _said(window, second.id)[0])
    assert "2 queued" in _said(window, second.id)[1]
    story_text = _said(window, story.id)[0]
    assert "●" in story_text and "⏳" not in story_text  # its own marks: answering, none queued
    qtbot.mouseClick(_first_row(qtbot, window).remove, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "⏳ 1" in _said(window, second.id)[0])
    c.queue.remove(c.queue.of(second.id)[0].id)
    qtbot.waitUntil(lambda: "⏳" not in _said(window, second.id)[0])
    _stop_story(qtbot, window, story.id)
    _drained(qtbot, window)
    assert "●" not in _said(window, story.id)[0]
