"""The window behaves while an answer streams and while the user types: "@" never takes a
keystroke, switching chats and Ctrl+N work during an answer (which goes on in its own chat),
Stop looks like Stop, Esc stops from anywhere, and an over-long paste offers its three ways on.
Real widgets on Qt's offscreen platform, the real controllers, a scripted model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.store.history import HistoryStore
from app.ui.composer.mention_picker import matching, mention_at
from app.ui.window.main_window import MainWindow
from tests.ui.test_window import make_window, send

LONG = "<|channel|>final<|message|>" + "word " * 300 + "<|return|>"
SHORT = "<|channel|>final<|message|>Done.<|return|>"


def _window(qtbot: Any, tmp_path: Path, scripts: list[str], delay_s: float = 0.0) -> MainWindow:
    window, _ = make_window(qtbot, tmp_path, scripts, delay_s=delay_s, store=HistoryStore(tmp_path / "h.db"))
    return window


# --- "@" -----------------------------------------------------------------------------------


def test_a_mention_starts_only_at_the_start_of_a_word() -> None:
    assert mention_at("email me at bob@example.com") is None
    assert mention_at("see @rep") == "rep" and mention_at("@") == "" and mention_at("a\n@x") == "x"
    assert mention_at("see @rep and more") is None
    docs = [Path("/d/notes.md"), Path("/d/report.docx"), Path("/d/annual-report.pdf")]
    assert matching(docs, "rep") == [Path("/d/report.docx"), Path("/d/annual-report.pdf")]
    assert matching(docs, "zzz") == []


def test_typing_an_address_or_a_decorator_keeps_every_character(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [])
    composer = window.composer
    asked: list[bool] = []
    composer.mentionRequested.connect(lambda: asked.append(True))
    composer.set_documents([Path("/docs/dataclasses.md"), Path("/docs/report.docx")])
    composer.box.setFocus()
    text = "email me at bob@example.com\n@dataclass\nclass Point:"
    qtbot.keyClicks(composer.box, "email me at bob@example.com")
    assert not composer.picker.isVisible()  # never inside a word
    composer.box.insertPlainText("\n")
    qtbot.keyClicks(composer.box, "@data")
    assert composer.picker.isVisible() and composer.picker.item(0).text() == "dataclasses.md"
    qtbot.keyClicks(composer.box, "class")  # every key still goes to the box
    assert composer.picker.isVisible()  # "dataclass" still matches dataclasses.md
    qtbot.keyClick(composer.box, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # a new line
    assert not composer.picker.isVisible()
    qtbot.keyClicks(composer.box, "class Point:")
    assert composer.box.toPlainText() == text and not composer.files and asked


def test_the_picker_takes_only_its_keys(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [])
    composer = window.composer
    composer.set_documents([Path("/docs/a-notes.md"), Path("/docs/b-notes.md")])
    qtbot.keyClicks(composer.box, "see @notes")
    assert composer.picker.isVisible() and composer.picker.count() == 2
    qtbot.keyClick(composer.box, Qt.Key.Key_Escape)  # closes the picker, stops nothing
    assert not composer.picker.isVisible() and composer.box.toPlainText() == "see @notes"
    qtbot.keyClicks(composer.box, "s")  # "@notess" matches nothing
    assert not composer.picker.isVisible()
    qtbot.keyClick(composer.box, Qt.Key.Key_Backspace)
    assert composer.picker.isVisible()
    qtbot.keyClick(composer.box, Qt.Key.Key_Down)
    qtbot.keyClick(composer.box, Qt.Key.Key_Return)  # after moving in the list, Enter picks
    assert [f.name for f in composer.files] == ["b-notes.md"] and composer.box.toPlainText() == "see "
    assert not window.controller.doc.turns


def test_an_empty_library_is_never_offered(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [])
    composer = window.composer
    composer.set_documents([])
    qtbot.keyClicks(composer.box, "look @")
    assert not composer.picker.isVisible()
    qtbot.keyClicks(composer.box, "x")
    qtbot.keyClick(composer.box, Qt.Key.Key_Escape)  # no picker: Esc is the box's own (stop)
    assert composer.box.toPlainText() == "look @x" and not composer.picker.isVisible()


# --- streaming never locks the window ---------------------------------------------------------


def test_switching_chats_and_ctrl_n_while_an_answer_streams(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [SHORT, LONG], delay_s=0.004)
    c = window.controller
    send(qtbot, window, "First chat")
    first = c.doc.id
    window.new_action.trigger()
    c.settle()
    with qtbot.waitSignal(c.segmentText, timeout=10_000):
        window.composer.box.setPlainText("Talk for a while")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    answering = c.doc
    window.sidebar.list.setCurrentRow(next(i for i in range(window.sidebar.list.count())
                                           if window.sidebar.list.item(i).data(Qt.ItemDataRole.UserRole) == first))
    qtbot.waitUntil(lambda: c.doc.id == first)
    assert c.busy and window.transcript.turns[-1].user.text() == "First chat"  # the transcript follows
    assert "Done." in window.transcript.turns[-1].segments[0].toPlainText()  # type: ignore[attr-defined]
    marked = [window.sidebar.list.item(i).text() for i in range(window.sidebar.list.count())]
    assert any(t.startswith("● ") and "Talk for a while" in t for t in marked)
    assert window.composer.send.text() == "Queue" and "Talk for a while" in window.composer.send.toolTip()
    qtbot.keyClick(window.composer.box, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: not c.doc.turns and c.doc.id not in (first, answering.id))
    assert c.busy and not window.transcript.turns
    c.select(answering.id)
    assert c.doc is answering  # the very object the answer is written to, shown at once
    with qtbot.waitSignal(c.replyFinished, timeout=20_000):
        pass
    shown = window.transcript.turns[-1].segments[0].toPlainText()  # type: ignore[attr-defined]
    assert shown.count("word") == 300  # nothing lost while away, nothing drawn twice
    c.saved()
    stored = HistoryStore(tmp_path / "h.db").load(answering.id)
    assert stored is not None and stored.turns[-1].version.reply.visible_text().count("word") == 300
    assert window.composer.send.text() == "Send"


def test_the_answering_chat_cannot_be_deleted_and_says_why(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [LONG], delay_s=0.004)
    c = window.controller
    notices: list[str] = []
    c.notice.connect(notices.append)
    with qtbot.waitSignal(c.segmentText, timeout=10_000):
        window.composer.box.setPlainText("Talk")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    c.delete(c.doc.id)
    assert notices and "stop it" in notices[-1] and c.doc.turns
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        c.stop()


# --- Stop, and Esc from anywhere --------------------------------------------------------------


def test_stop_looks_different_and_esc_stops_from_a_focused_button(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [LONG], delay_s=0.004)
    c = window.controller
    button = window.composer.send
    idle = button.grab().toImage()
    with qtbot.waitSignal(c.segmentText, timeout=10_000):
        window.composer.box.setPlainText("Talk")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    busy = button.grab().toImage()
    assert button.text() == "Stop" and button.accessibleName() == "Stop the answer"
    assert idle != busy  # drawn differently, not only named differently
    colours = {busy.pixelColor(x, busy.height() // 2).name() for x in range(busy.width())}
    assert len(colours) > 1  # a drawn button, not a blank
    window.sidebar.new.setFocus()  # focus far from the message box
    qtbot.waitUntil(window.sidebar.new.hasFocus)
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.keyClick(window.sidebar.new, Qt.Key.Key_Escape)
    assert c.doc.turns[-1].version.reply.state == "stopped"
    assert button.text() == "Send" and button.grab().toImage() == idle


# --- a message that cannot fit ----------------------------------------------------------------


@pytest.mark.parametrize("choice", ["attach", "raise", "cancel"])
def test_an_over_long_paste_offers_three_ways_on(qtbot: Any, qloop: Any, tmp_path: Path, choice: str,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARMONY_DESK_CACHE", str(tmp_path / "cache"))
    window = _window(qtbot, tmp_path, [SHORT])
    composer = window.composer
    loads: list[tuple[Any, Any]] = []
    monkeypatch.setattr(window, "load_model", lambda path=None, n_ctx=None, threads=None: loads.append((path, n_ctx)))
    composer.box.setPlainText("Summarise this: ")
    composer.box.moveCursor(composer.box.textCursor().MoveOperation.End)
    pasted = "A line of a long log file, pasted whole. " * 5000  # ~200 KB
    QGuiApplication.clipboard().setText(pasted)
    composer.box.paste()
    qtbot.waitUntil(composer.offer.isVisible, timeout=10_000)
    offer = composer.offer
    assert "pasted text" in offer.sentence.text() and "room for" in offer.sentence.text()
    assert [b.isVisible() for b in (offer.attach, offer.larger, offer.cancel)] == [True] * 3
    assert offer.larger.isEnabled() and "Raise the context to" in offer.larger.text()
    assert composer.count.fit is not None and not composer.count.fit.fits
    if choice == "attach":
        offer.attach.click()
        assert composer.box.toPlainText() == "Summarise this:" and len(composer.files) == 1
        assert composer.files[0].read_text(encoding="utf-8") == pasted
    elif choice == "raise":
        offer.larger.click()
        size = composer.count.fit.larger_context()
        assert loads == [(None, size)] and size is not None and size % 4096 == 0
        assert pasted in composer.box.toPlainText()  # kept, to send once the model reloads
    else:
        offer.cancel.click()
        assert composer.box.toPlainText() == "Summarise this: " and not composer.files
    assert not offer.isVisible() and not window.controller.doc.turns  # never sent to fail


def test_sending_a_message_that_cannot_fit_offers_instead_of_failing(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window = _window(qtbot, tmp_path, [SHORT])
    composer = window.composer
    composer.box.setPlainText("word " * 40_000)
    qtbot.keyClick(composer.box, Qt.Key.Key_Return)
    qtbot.waitUntil(composer.offer.isVisible, timeout=10_000)
    assert "This message is" in composer.offer.sentence.text() and not window.controller.doc.turns
    composer.box.setPlainText("A short one")
    qtbot.waitUntil(lambda: "tokens" in composer.count.text(), timeout=5_000)
    assert "left" in composer.count.text()
    send(qtbot, window, "A short one")
    assert window.controller.doc.turns[-1].version.reply.state == "done"


def test_a_conversation_that_outgrew_the_context_offers_no_continue(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.domain.events import TurnFailed
    from app.domain.reply import ReplyBuilder
    from app.errors import ErrorCode

    window = _window(qtbot, tmp_path, [SHORT])
    send(qtbot, window, "Hello")
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None
    ReplyBuilder(reply).apply(TurnFailed("the prompt has 5000 tokens; the context holds 4096", ErrorCode.CONTEXT))
    assert reply.state == "failed" and reply.error.startswith("E-CONTEXT")
    assert "no longer fits the model's context" in reply.segments[-1].text
    turn = window.transcript.turns[-1]
    turn.update_actions()
    assert turn.continue_.isHidden()
    reply.error = "the worker stopped"  # any other failure can be continued
    turn.update_actions()
    assert not turn.continue_.isHidden()
