"""Chats keep what is theirs (review L9, L8), offscreen on the real window and a real history
file: a draft typed in one chat stays with it when another is opened and comes back with it;
New chat while the open chat is empty keeps that one, so empty rows never pile up."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from app.store.history import HistoryStore
from tests.ui.test_window import TURN, make_window, send


def rows(window: Any) -> int:
    return len(window.controller.listing)


def test_a_draft_stays_with_the_chat_it_was_typed_in(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN, TURN], store=HistoryStore(tmp_path / "history.db"))
    send(qtbot, window, "First chat")
    first = window.controller.doc.id
    window.composer.box.setPlainText("half a thought for the first chat")
    with qtbot.waitSignal(window.controller.docChanged, timeout=5000):
        window.controller.new_chat()
    assert window.composer.box.toPlainText() == ""  # the new chat's own box
    send(qtbot, window, "Second chat")
    window.composer.box.setPlainText("the second chat's draft")
    with qtbot.waitSignal(window.controller.docChanged, timeout=5000):
        window.controller.select(first)
    assert window.composer.box.toPlainText() == "half a thought for the first chat"
    second = next(d.id for d in window.controller.listing if d.id != first)
    with qtbot.waitSignal(window.controller.docChanged, timeout=5000):
        window.controller.select(second)
    assert window.composer.box.toPlainText() == "the second chat's draft"


def test_new_chat_in_an_empty_chat_keeps_it(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN], store=HistoryStore(tmp_path / "history.db"))
    send(qtbot, window, "A chat with a message")
    with qtbot.waitSignal(window.controller.listChanged, timeout=5000):
        window.new_action.trigger()
    empty = window.controller.doc.id
    qtbot.waitUntil(lambda: any(d.id == empty for d in window.controller.listing), timeout=5000)
    before = rows(window)
    for _ in range(3):
        window.new_action.trigger()
    window.controller.settle()
    assert window.controller.doc.id == empty and rows(window) == before == 2
