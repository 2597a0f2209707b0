"""Each chat sends on its own: while one chat's answer streams, another chat's composer never
shows or acts on that chat's Stop; Enter there queues the message (shown above the composer,
editable, removable, sendable now) and it is sent into its own chat when the answer ends; Stop
and Esc stop only what streams in the open chat; switching chats keeps each chat's own state.
Real widgets on Qt's offscreen platform, the real controllers and store, a scripted model
paced so that an answer is still streaming while the test acts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.domain.history import ChatDoc
from app.store.history import HistoryStore
from app.ui.composer.queue_panel import QueueRow
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import make_window

STORY = "<|channel|>final<|message|>" + "word " * 2000 + "<|return|>"  # cut at 1,024: 12 s
LONG = "<|channel|>final<|message|>" + "word " * 300 + "<|return|>"
SHORT = "<|channel|>final<|message|>Four.<|return|>"
ALSO = "<|channel|>final<|message|>Also done.<|return|>"


def _window(qtbot: Any, tmp_path: Path, scripts: list[str]) -> MainWindow:
    # 12 ms a token: an answer streams for seconds, while the test acts, even on a loaded machine
    window, _ = make_window(
        qtbot, tmp_path, scripts, delay_s=0.012, store=HistoryStore(tmp_path / "h.db")
    )
    return window


def _enter(qtbot: Any, window: MainWindow, text: str) -> None:
    window.composer.box.setPlainText(text)
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)


def _stream(qtbot: Any, window: MainWindow, text: str) -> ChatDoc:
    """Start an answer in the shown chat (Enter) and wait until its first text arrives; the
    chat that answers."""
    with qtbot.waitSignal(window.controller.segmentText, timeout=10_000):
        _enter(qtbot, window, text)
    return window.controller.doc


def _new_chat(qtbot: Any, window: MainWindow) -> ChatDoc:
    """A new chat, shown (File ▸ New chat)."""
    c = window.controller
    before = c.doc.id
    window.new_action.trigger()
    qtbot.waitUntil(lambda: c.doc.id != before and not c.doc.turns)
    c.settle()
    return c.doc


def _drained(qtbot: Any, window: MainWindow) -> None:
    """Wait until nothing answers, is queued or is on its way; then save what is open."""
    c = window.controller
    qtbot.waitUntil(
        lambda: not c.busy and not c.queue.items and not c.queue.sending, timeout=20_000
    )
    c.saved()


def _stored(tmp_path: Path, doc_id: str) -> ChatDoc:
    """Chat `doc_id` as the history database holds it."""
    stored = HistoryStore(tmp_path / "h.db").load(doc_id)
    assert stored is not None
    return stored


def _user_texts(doc: ChatDoc) -> list[str]:
    return [t.version.user_text for t in doc.turns]


def _open(qtbot: Any, window: MainWindow, doc_id: str) -> None:
    """Select chat `doc_id` in the sidebar, as the user does."""
    c, rows = window.controller, window.sidebar.list
    qtbot.waitUntil(
        lambda: any(
            rows.item(i).data(Qt.ItemDataRole.UserRole) == doc_id for i in range(rows.count())
        )
    )
    rows.setCurrentRow(
        next(
            i for i in range(rows.count()) if rows.item(i).data(Qt.ItemDataRole.UserRole) == doc_id
        )
    )
    qtbot.waitUntil(lambda: c.doc.id == doc_id)


def _queued_texts(window: MainWindow) -> list[str]:
    panel = window.composer.queued
    return [panel.rows[item.id].text.full for item in panel.items()] if panel.isVisible() else []


def _first_row(qtbot: Any, window: MainWindow) -> QueueRow:
    """The shown chat's first queued row, once it is laid out (a user sees it before clicking)."""
    panel = window.composer.queued
    row = panel.rows[panel.items()[0].id]
    qtbot.waitUntil(lambda: row.isVisible() and row.remove.width() > 0 and row.remove.height() > 0)
    return row


def _stop_story(qtbot: Any, window: MainWindow, story_id: str) -> None:
    """Open the story's chat and stop it there (its partial answer kept)."""
    _open(qtbot, window, story_id)
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        qtbot.mouseClick(window.composer.send, Qt.MouseButton.LeftButton)


def test_enter_in_another_chat_while_one_streams_never_stops_it_and_the_message_is_sent(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """H1 of the newcomer review: in a new chat, the composer showed the streaming chat's Stop,
    and Enter there stopped the story in the other chat without sending the new message."""
    window = _window(qtbot, tmp_path, [LONG, SHORT])
    c = window.controller
    story = _stream(qtbot, window, "Write a very long story")
    second = _new_chat(qtbot, window)
    composer = window.composer
    assert composer.send.text() != "Stop" and "Stop" not in composer.send.accessibleName()
    _enter(qtbot, window, "What is 2+2?")
    assert c.busy and c.answering is story  # the story goes on
    assert composer.box.toPlainText() == ""  # taken: the message is queued, not lost
    with qtbot.waitSignal(c.replyFinished, timeout=20_000):
        pass  # the story ends unseen, then the second chat's answer: shown, so painted
    reply = story.turns[-1].version.reply
    assert reply is not None and reply.state == "done" and reply.visible_text().count("word") == 300
    assert second.turns[-1].version.user_text == "What is 2+2?"
    assert "Four." in second.turns[-1].version.reply.visible_text()  # type: ignore[union-attr]
    assert not composer.queued.isVisible() and composer.send.text() == "Send"


def test_stop_and_esc_act_only_on_the_open_chats_answer(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY])
    c = window.controller
    story = _stream(qtbot, window, "Tell a long story")
    _new_chat(qtbot, window)
    composer = window.composer
    assert (composer.send.text(), composer.send.property("role")) == ("Queue", "primary")
    assert "Tell a long story" in composer.send.toolTip()  # it names the chat that answers
    composer.box.setFocus()
    qtbot.keyClick(composer.box, Qt.Key.Key_Escape)  # in the box
    qtbot.keyClick(window.sidebar.new, Qt.Key.Key_Escape)  # and from elsewhere in the window
    qtbot.mouseClick(composer.send, Qt.MouseButton.LeftButton)  # Queue with nothing typed
    c.stop_shown()  # the window's Stop, however reached
    assert c.busy and c.answering is story and not c.queue.items
    _open(qtbot, window, story.id)
    assert composer.send.text() == "Stop"  # its own chat: its own Stop
    qtbot.keyClick(composer.box, Qt.Key.Key_Return)  # an empty box's Enter stops nothing
    assert c.busy
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.keyClick(window.sidebar.new, Qt.Key.Key_Escape)  # Esc from anywhere, in its chat
    reply = story.turns[-1].version.reply
    assert (
        reply is not None
        and reply.state == "stopped"
        and 0 < reply.visible_text().count("word") < 1000
    )


def test_each_chat_keeps_its_own_state_and_its_own_queue(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY, SHORT, ALSO])
    c, composer = window.controller, window.composer
    story = _stream(qtbot, window, "Tell a long story")
    _enter(qtbot, window, "And then a poem?")  # the streaming chat's own next message
    assert composer.send.text() == "Stop" and c.answering is story
    assert _queued_texts(window) == ["And then a poem?"]
    assert composer.queued.heading.text() == "1 message queued: sent when this answer ends"
    second = _new_chat(qtbot, window)
    assert not composer.queued.isVisible()  # another chat: not the story's queue
    _enter(qtbot, window, "What is 2+2?")
    assert _queued_texts(window) == ["What is 2+2?"] and composer.send.text() == "Queue"
    assert "“Tell a long story”" in composer.queued.heading.text()
    assert _first_row(qtbot, window).send_now.text() == "Send next"
    _new_chat(qtbot, window)
    assert not composer.queued.isVisible() and composer.send.text() == "Queue"
    _open(qtbot, window, second.id)
    assert _queued_texts(window) == ["What is 2+2?"] and composer.send.text() == "Queue"
    _open(qtbot, window, story.id)
    assert _queued_texts(window) == ["And then a poem?"] and composer.send.text() == "Stop"
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.mouseClick(composer.send, Qt.MouseButton.LeftButton)  # Stop: the story only
    _drained(qtbot, window)
    assert _user_texts(story) == ["Tell a long story", "And then a poem?"]
    assert story.turns[0].version.reply.state == "stopped"  # type: ignore[union-attr]
    assert story.turns[1].version.reply.visible_text() == "Four."  # type: ignore[union-attr]
    stored = _stored(tmp_path, second.id)  # sent unseen, into its own chat
    assert _user_texts(stored) == ["What is 2+2?"]
    assert stored.turns[0].version.reply.visible_text() == "Also done."  # type: ignore[union-attr]
    _open(qtbot, window, second.id)
    assert window.transcript.turns[-1].user.text() == "What is 2+2?"


def test_a_queued_message_can_be_edited_and_the_edit_is_what_is_sent(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY, SHORT])
    c = window.controller
    story = _stream(qtbot, window, "Tell a long story")
    second = _new_chat(qtbot, window)
    _enter(qtbot, window, "What is 2+2?")
    row = _first_row(qtbot, window)
    qtbot.mouseClick(row.edit, Qt.MouseButton.LeftButton)
    assert (
        row.editor.isVisible()
        and row.editor.toPlainText() == "What is 2+2?"
        and not row.send_now.isVisible()
    )
    row.editor.selectAll()
    qtbot.keyClicks(row.editor, "   ")  # nothing left to send: refused, the editor stays
    qtbot.mouseClick(row.save, Qt.MouseButton.LeftButton)
    assert row.editor.isVisible() and c.queue.items[0].text == "What is 2+2?"
    row.editor.selectAll()
    qtbot.keyClicks(row.editor, "What is 3+3?")
    qtbot.keyClick(row.editor, Qt.Key.Key_Escape)  # Esc cancels
    assert not row.editor.isVisible() and row.text.full == "What is 2+2?"
    qtbot.mouseClick(row.edit, Qt.MouseButton.LeftButton)
    row.editor.selectAll()
    qtbot.keyClicks(row.editor, "What is 3+3?")
    _new_chat(qtbot, window)  # the queue changes around an open editor: it keeps its draft
    _open(qtbot, window, second.id)
    row = _first_row(qtbot, window)
    assert row.editing and row.editor.toPlainText() == "What is 3+3?"
    _stop_story(qtbot, window, story.id)  # the answer ends while the message is edited
    assert not c.busy and [i.text for i in c.queue.items] == ["What is 2+2?"]  # held, not sent
    _open(qtbot, window, second.id)
    row = _first_row(qtbot, window)
    assert row.editing and not second.turns
    with qtbot.waitSignal(c.replyFinished, timeout=20_000):
        qtbot.keyClick(
            row.editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier
        )  # saves: it goes
    assert not c.queue.items and window.transcript.turns[-1].user.text() == "What is 3+3?"
    c.saved()
    assert _user_texts(_stored(tmp_path, second.id)) == ["What is 3+3?"]


def test_a_removed_message_is_never_sent(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [STORY, SHORT])
    composer = window.composer
    story = _stream(qtbot, window, "Tell a long story")
    second = _new_chat(qtbot, window)
    _enter(qtbot, window, "First question")
    _enter(qtbot, window, "Second question")
    assert _queued_texts(window) == ["First question", "Second question"]
    assert composer.queued.heading.text().startswith("2 messages queued")
    first = _first_row(qtbot, window)
    qtbot.mouseClick(first.remove, Qt.MouseButton.LeftButton)
    assert _queued_texts(window) == ["Second question"]
    _stop_story(qtbot, window, story.id)
    _drained(qtbot, window)
    assert _user_texts(_stored(tmp_path, second.id)) == ["Second question"]


def test_send_now_stops_its_own_chats_answer_and_sends_at_once(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY, SHORT])
    c, composer = window.controller, window.composer
    story = _stream(qtbot, window, "Tell a long story")
    _enter(qtbot, window, "Shorter, please")
    row = _first_row(qtbot, window)
    assert row.send_now.text() == "Send now" and "Stop this chat's answer" in row.send_now.toolTip()
    with qtbot.waitSignals([c.replyFinished, c.replyFinished], timeout=20_000):
        qtbot.mouseClick(row.send_now, Qt.MouseButton.LeftButton)
    assert [t.version.user_text for t in story.turns] == ["Tell a long story", "Shorter, please"]
    assert story.turns[0].version.reply.state == "stopped"  # type: ignore[union-attr]
    assert story.turns[1].version.reply.visible_text() == "Four."  # type: ignore[union-attr]
    assert (
        not composer.queued.isVisible()
        and window.transcript.turns[-1].user.text() == "Shorter, please"
    )


def test_send_next_goes_first_without_stopping_another_chats_answer(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY, SHORT, ALSO])
    c = window.controller
    story = _stream(qtbot, window, "Tell a long story")
    early = _new_chat(qtbot, window)
    _enter(qtbot, window, "Queued first")
    late = _new_chat(qtbot, window)
    _enter(qtbot, window, "Queued second")
    row = _first_row(qtbot, window)
    qtbot.mouseClick(row.send_now, Qt.MouseButton.LeftButton)  # "Send next"
    assert c.busy and c.answering is story  # the other chat's answer goes on
    assert [i.text for i in c.queue.items] == ["Queued second", "Queued first"]
    _stop_story(qtbot, window, story.id)
    _drained(qtbot, window)
    replies = {d.id: _stored(tmp_path, d.id).turns[-1].version.reply for d in (early, late)}
    answers = {k: r.visible_text() for k, r in replies.items() if r is not None}
    assert answers == {late.id: "Four.", early.id: "Also done."}  # the moved one went first


def test_a_queued_message_keeps_its_files_and_json_mode(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMONY_DESK_DATA", str(tmp_path / "data"))
    window = _window(
        qtbot, tmp_path, [STORY, '<|channel|>final<|message|>{"answer": "ok"}<|return|>']
    )
    composer = window.composer
    story = _stream(qtbot, window, "Tell a long story")
    second = _new_chat(qtbot, window)
    notes = tmp_path / "notes.md"
    notes.write_text("The lighthouse keeper's name is Ada.", encoding="utf-8")
    composer.add_files([notes])
    qtbot.mouseClick(composer.json_mode, Qt.MouseButton.LeftButton)
    _enter(qtbot, window, "Who keeps the lighthouse?")
    assert not composer.files and "(1 file)" in _queued_texts(window)[0]
    _stop_story(qtbot, window, story.id)  # it is sent unseen, into its own chat
    _drained(qtbot, window)
    stored = _stored(tmp_path, second.id)
    assert len(stored.turns) == 1
    version = stored.turns[0].version
    assert "Who keeps the lighthouse?" in version.user_text and "Ada" in version.user_text
    assert version.json_schema is not None and version.json_schema["required"] == ["answer"]


def test_a_chat_sent_to_the_trash_takes_its_queued_messages(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [STORY])
    c, composer = window.controller, window.composer
    story = _stream(qtbot, window, "Tell a long story")
    second = _new_chat(qtbot, window)
    _enter(qtbot, window, "Never mind")
    assert c.queue.of(second.id)
    c.delete(second.id)
    qtbot.waitUntil(lambda: c.doc.id != second.id)
    assert not c.queue.items and not composer.queued.isVisible()
    _stop_story(qtbot, window, story.id)
    assert not c.busy and len(story.turns) == 1
