"""Regenerate, Edit and Continue wait their turn like a sent message: in a chat while another
chat's answer streams they are not disabled but queued (shown above the composer with Remove
and Send next, an edit with its new text, editable), and they run in their own chat, shown or
not, when the window is free. Real widgets on Qt's offscreen platform, the real controllers
and SQLite store, a scripted model paced so that an answer is still streaming while the test
acts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt

from app.domain.history import ChatDoc
from app.ui.transcript.turn_widget import TurnWidget
from app.ui.window.main_window import MainWindow
from tests.ui.test_chat_queue import (
    LONG,
    STORY,
    _drained,
    _first_row,
    _new_chat,
    _open,
    _queued_texts,
    _stop_story,
    _stored,
    _stream,
    _window,
)
from tests.ui.test_window import send

FIRST = "<|channel|>final<|message|>First answer.<|return|>"
AGAIN = "<|channel|>final<|message|>Second answer.<|return|>"
EDITED = "<|channel|>final<|message|>Ten.<|return|>"
MORE = "more words.<|return|>"  # a stopped answer's continuation: the same message goes on


def _answered(qtbot: Any, window: MainWindow, text: str) -> ChatDoc:
    """A chat whose message `text` has its answer (the shown chat)."""
    send(qtbot, window, text)
    return window.controller.doc


def _turn(qtbot: Any, window: MainWindow, index: int = 0) -> TurnWidget:
    """Turn `index` of the shown chat, laid out (a user sees it before clicking)."""
    turn = window.transcript.turns[index]
    qtbot.waitUntil(lambda: turn.isVisible() and turn.width() > 0)
    turn.reveal(True)  # the pointer is over it
    return turn


def test_regenerate_while_another_chat_streams_queues_and_runs_in_its_chat_when_free(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [FIRST, STORY, AGAIN])
    c = window.controller
    first = _answered(qtbot, window, "What is 2+2?")
    _new_chat(qtbot, window)
    story = _stream(qtbot, window, "Tell a long story")
    _open(qtbot, window, first.id)
    turn = _turn(qtbot, window)
    assert turn.regenerate.isEnabled()  # another chat's answer does not lock this one
    qtbot.mouseClick(turn.regenerate, Qt.MouseButton.LeftButton)
    assert c.answering is story and len(first.turns[0].version.replies) == 1  # not yet
    row = _first_row(qtbot, window)
    assert "Regenerate" in row.text.full and "What is 2+2?" in row.text.full
    assert row.edit.isHidden()  # a regenerate has no text to edit
    assert row.send_now.text() == "Send next" and "Tell a long story" in row.send_now.toolTip()
    assert "1 queued" in window.composer.queued.heading.text()
    qtbot.mouseClick(turn.regenerate, Qt.MouseButton.LeftButton)  # asked twice: queued once
    assert len(c.queue.of(first.id)) == 1
    _stop_story(qtbot, window, story.id)  # it runs unseen, in its own chat
    _drained(qtbot, window)
    replies = _stored(tmp_path, first.id).turns[0].version.replies
    assert [r.visible_text() for r in replies] == ["First answer.", "Second answer."]
    _open(qtbot, window, first.id)
    assert window.transcript.turns[0].replies.text() == "2/2"


def test_a_removed_regenerate_never_runs(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [FIRST, STORY, AGAIN])
    c = window.controller
    first = _answered(qtbot, window, "What is 2+2?")
    _new_chat(qtbot, window)
    story = _stream(qtbot, window, "Tell a long story")
    _open(qtbot, window, first.id)
    qtbot.mouseClick(_turn(qtbot, window).regenerate, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(_first_row(qtbot, window).remove, Qt.MouseButton.LeftButton)
    assert not c.queue.items and not window.composer.queued.isVisible()
    _stop_story(qtbot, window, story.id)
    _drained(qtbot, window)
    assert len(_stored(tmp_path, first.id).turns[0].version.replies) == 1


def test_an_edit_while_another_chat_streams_is_queued_with_its_new_text_and_sent(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [FIRST, LONG, EDITED])
    c = window.controller
    first = _answered(qtbot, window, "What is 2+2?")
    _new_chat(qtbot, window)
    story = _stream(qtbot, window, "Tell a story")
    _open(qtbot, window, first.id)
    first = c.doc  # as read again from the store, and shown while the edit runs
    turn = _turn(qtbot, window)
    assert turn.edit_button.isEnabled()
    qtbot.mouseClick(turn.edit_button, Qt.MouseButton.LeftButton)
    turn.editor.setPlainText("What is 3+3?")
    qtbot.mouseClick(turn.resend, Qt.MouseButton.LeftButton)
    assert turn.editor.isHidden() and c.answering is story  # queued: the editor closes
    assert len(first.turns[0].versions) == 1
    assert any("What is 3+3?" in text for text in _queued_texts(window))
    row = _first_row(qtbot, window)
    qtbot.mouseClick(row.edit, Qt.MouseButton.LeftButton)  # the queued edit's text, edited
    assert row.editor.toPlainText() == "What is 3+3?"
    row.editor.setPlainText("What is 5+5?")
    qtbot.mouseClick(row.save, Qt.MouseButton.LeftButton)
    assert "What is 5+5?" in row.text.full
    qtbot.waitUntil(lambda: len(first.turns[0].versions) == 2, timeout=20_000)  # the story ends
    _drained(qtbot, window)
    assert [v.user_text for v in first.turns[0].versions] == ["What is 2+2?", "What is 5+5?"]
    assert first.turns[0].version.reply.visible_text() == "Ten."  # type: ignore[union-attr]
    shown = window.transcript.turns[0]
    assert shown.user.text() == "What is 5+5?" and shown.versions.text() == "2/2"
    assert story.turns[0].version.reply.state == "done"  # type: ignore[union-attr]
    stored = _stored(tmp_path, first.id)
    assert stored.turns[0].version.user_text == "What is 5+5?"


def test_continue_while_another_chat_streams_is_queued_and_goes_on_from_the_cut(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [LONG, STORY, MORE])
    c = window.controller
    cut = _stream(qtbot, window, "Talk")
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Escape)
    reply = cut.turns[0].version.reply
    assert reply is not None and reply.state == "stopped"
    partial = reply.visible_text()
    _new_chat(qtbot, window)
    story = _stream(qtbot, window, "Tell a long story")
    _open(qtbot, window, cut.id)
    turn = _turn(qtbot, window)
    assert turn.continue_.isVisible() and turn.continue_.isEnabled()
    qtbot.mouseClick(turn.continue_, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(turn.continue_, Qt.MouseButton.LeftButton)  # asked twice: queued once
    assert [item.kind for item in c.queue.of(cut.id)] == ["continue"]
    assert "Continue" in _first_row(qtbot, window).text.full
    _stop_story(qtbot, window, story.id)  # it runs unseen, in its own chat
    _drained(qtbot, window)
    stored = _stored(tmp_path, cut.id).turns[0].version
    assert len(stored.replies) == 1 and stored.reply is not None
    assert stored.reply.state == "done"
    assert stored.reply.visible_text().startswith(partial.rstrip())
    assert stored.reply.visible_text().endswith("more words.")


def test_the_chats_own_answer_still_locks_its_turn_actions(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """Only another chat's answer makes them queue: while this chat's own answer streams,
    Regenerate and Edit of its turns stay off (the answer is still being written)."""
    window = _window(qtbot, tmp_path, [FIRST, STORY])
    first = _answered(qtbot, window, "What is 2+2?")
    _stream(qtbot, window, "Tell a long story")
    assert window.controller.answering is first
    turn = _turn(qtbot, window)
    assert not turn.regenerate.isEnabled() and not turn.edit_button.isEnabled()
    window.controller.stop()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=10_000)


def test_a_queued_continue_that_no_longer_applies_is_dropped_and_said(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """Regenerate then Continue queued on a cut answer: the regenerate runs first and its new
    answer ends whole, so there is nothing left to continue — the continue is not run on the
    new answer, and the user is told."""
    window = _window(qtbot, tmp_path, [LONG, STORY, AGAIN])
    c = window.controller
    cut = _stream(qtbot, window, "Talk")
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Escape)
    _new_chat(qtbot, window)
    story = _stream(qtbot, window, "Tell a long story")
    _open(qtbot, window, cut.id)
    turn = _turn(qtbot, window)
    qtbot.mouseClick(turn.regenerate, Qt.MouseButton.LeftButton)
    qtbot.mouseClick(turn.continue_, Qt.MouseButton.LeftButton)
    assert [item.kind for item in c.queue.of(cut.id)] == ["regenerate", "continue"]
    assert window.composer.queued.heading.text().startswith("2 queued")
    with qtbot.waitSignal(
        c.notice, check_params_cb=lambda said: "was not run" in said, timeout=30_000
    ):
        _stop_story(qtbot, window, story.id)
    _drained(qtbot, window)
    replies = _stored(tmp_path, cut.id).turns[0].version.replies
    assert [r.state for r in replies] == ["stopped", "done"]
    assert replies[1].visible_text() == "Second answer."  # nothing appended to it
