"""Empty chats never pile up (review L8: "empty 'New chat' rows accumulate; I had 4 after an
hour"): on the real window, sidebar and history file, offscreen, an empty "New chat" the user
switches away from is dropped from the sidebar and the store — not sent to the trash — and one
the user has started on is kept: one with instructions, a draft in the message box, or a
message queued while another chat's answer streams."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.store.history import HistoryStore
from app.ui.window.main_window import MainWindow
from tests.ui.test_chat_queue import LONG, SHORT, _enter, _new_chat, _open, _stream
from tests.ui.test_window import TURN, make_window, send


def listed(window: MainWindow) -> list[str]:
    """The conversations in the sidebar, as its rows hold them."""
    rows = window.sidebar.list
    ids = [rows.item(i).data(Qt.ItemDataRole.UserRole) for i in range(rows.count())]
    return [i for i in ids if i]


def stored(store: HistoryStore) -> set[str]:
    return store.all_ids()


def test_new_chats_left_empty_do_not_pile_up(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    window, _ = make_window(qtbot, tmp_path, [TURN], store=store)
    send(qtbot, window, "A chat with a message")
    first = window.controller.doc.id
    left_behind = []
    for _ in range(3):  # New chat, change one's mind, back to the chat with a message
        _new_chat(qtbot, window)
        left_behind.append(window.controller.doc.id)
        qtbot.waitUntil(lambda: window.controller.doc.id in listed(window))  # it shows while open
        _open(qtbot, window, first)
        window.controller.settle()
    assert listed(window) == [first], listed(window)
    assert stored(store) == {first}  # gone from the store, not in the trash
    assert not {t[0] for t in window.controller.trash()} & set(left_behind)


def test_an_empty_chat_the_user_started_on_is_kept(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    window, _ = make_window(qtbot, tmp_path, [TURN], store=store)
    c = window.controller
    send(qtbot, window, "A chat with a message")
    first = c.doc.id
    _new_chat(qtbot, window)
    instructed = c.doc.id
    window.instructions_fold.edited.emit("Answer in French.")  # as the instructions editor does
    _open(qtbot, window, first)
    _new_chat(qtbot, window)
    drafted = c.doc.id
    window.composer.box.setPlainText("half a question")
    _open(qtbot, window, first)
    c.settle()
    assert set(listed(window)) == {first, instructed, drafted}
    assert stored(store) == {first, instructed, drafted}
    _open(qtbot, window, drafted)
    assert window.composer.box.toPlainText() == "half a question"  # the draft came back with it
    window.composer.box.clear()  # the draft given up: the chat is empty again
    _open(qtbot, window, first)
    c.settle()
    assert set(listed(window)) == {first, instructed} and drafted not in stored(store)


def test_a_chat_holding_a_queued_message_is_kept_and_answered(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    window, _ = make_window(qtbot, tmp_path, [LONG, SHORT], delay_s=0.012, store=store)
    c = window.controller
    _stream(qtbot, window, "Write a long story")
    story = c.doc.id
    _new_chat(qtbot, window)
    waiting = c.doc.id
    _enter(qtbot, window, "What is 2+2?")  # queued: the story streams
    assert [q.doc_id for q in c.queue.items] == [waiting] and not c.doc.turns
    _open(qtbot, window, story)
    c.settle()
    assert waiting in listed(window) and waiting in stored(store)
    qtbot.waitUntil(lambda: not c.queue.items and not c.busy, timeout=30_000)
    c.settle()
    answered = store.get(waiting)
    assert answered is not None and answered.turns[-1].version.user_text == "What is 2+2?"


def test_deleting_an_empty_chat_still_sends_it_to_the_trash(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    store = HistoryStore(tmp_path / "history.db")
    window, _ = make_window(qtbot, tmp_path, [TURN], store=store)
    c = window.controller
    send(qtbot, window, "A chat with a message")
    _new_chat(qtbot, window)
    empty = c.doc.id
    c.delete(empty)
    c.settle()
    assert empty in {t[0] for t in c.trash()}  # Undo can bring it back
    c.undo_delete()
    c.settle()
    assert empty in listed(window)
