"""The window's layout, measured on real widgets (offscreen): the conversation's share of the
height, a small window, the folding sidebar, the empty state, the answers' actions from the
keyboard, Cancel in edit mode and each answer's figures."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QGraphicsOpacityEffect, QWidget

from app.domain.figures import Figures
from app.ui.window.main_window import MainWindow, UiState
from tests.ui.test_window import TURN, make_window, send

SHORT = "<|channel|>final<|message|>Fine, thanks.<|return|>"


def share(window: MainWindow) -> float:
    """The conversation's share of the window's height: the transcript's viewport (the scroll
    area has no frame, so the two are the same height) over the whole window, menu bar, header
    row, composer and status bar included."""
    assert window.transcript.viewport().height() == window.transcript.height()
    return window.transcript.height() / window.height()


def opacity(button: QWidget) -> float:
    effect = button.graphicsEffect()
    assert isinstance(effect, QGraphicsOpacityEffect)
    return effect.opacity()


def test_the_conversation_takes_three_quarters_of_the_default_window(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    assert (window.width(), window.height()) == (1100, 760)

    def tall() -> None:
        assert share(window) >= 0.75, f"{window.transcript.height()} of {window.height()} px"

    qtbot.waitUntil(tall, timeout=3000)  # the first run: the welcome is inside the empty state
    assert window.welcome is not None and window.transcript.isAncestorOf(window.welcome)
    assert not window.instructions.isVisible()  # folded into the header's button
    send(qtbot, window, "What is 6*7?")
    qtbot.waitUntil(tall, timeout=3000)
    column = window.transcript.page.width()
    assert 700 <= column <= 820  # a readable measure, centred
    left = window.transcript.page.mapTo(window.transcript, QPoint(0, 0)).x()
    right = window.transcript.viewport().width() - left - column
    assert abs(left - right) <= 2


def test_a_640_by_480_window_keeps_the_conversation_usable(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    assert window.minimumWidth() <= 640 and window.minimumHeight() <= 480
    window.resize(640, 480)
    qtbot.waitUntil(lambda: (window.width(), window.height()) == (640, 480), timeout=3000)
    assert not window.sidebar_shown() and not window.sidebar.isVisible()  # folded by itself
    qtbot.waitUntil(lambda: window.transcript.viewport().height() >= 200, timeout=3000)
    composer = window.composer
    assert composer.isVisible() and composer.box.isVisible() and composer.send.isVisible()
    bottom_right = composer.mapTo(window, QPoint(composer.width(), composer.height()))
    assert window.rect().contains(bottom_right - QPoint(1, 1))  # all of it inside the window
    assert window.transcript.horizontalScrollBar().maximum() == 0  # no sideways scrolling
    window.resize(1100, 760)
    qtbot.waitUntil(window.sidebar_shown, timeout=3000)  # wide again: the user's choice


def test_the_sidebar_toggles_and_the_choice_is_remembered(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    button = window.header.sidebar_button
    assert window.sidebar_shown() and window.sidebar.isVisible() and button.isChecked()
    window.toggle_sidebar()
    assert not window.sidebar_shown() and not window.sidebar.isVisible() and not button.isChecked()
    qtbot.waitUntil(lambda: UiState(tmp_path / "ui-state.json").get("sidebar") is False)
    again, _ = make_window(qtbot, tmp_path, [])
    assert not again.sidebar_shown()
    again.header.sidebar_button.click()  # the header's button does the same
    assert again.sidebar_shown() and again.sidebar.isVisible()
    qtbot.waitUntil(lambda: UiState(tmp_path / "ui-state.json").get("sidebar") is True)
    again.resize(640, 480)
    qtbot.waitUntil(lambda: not again.sidebar_shown(), timeout=3000)
    again.toggle_sidebar()  # a narrow window: opened for now, the choice left as it was
    assert again.sidebar_shown()
    assert UiState(tmp_path / "ui-state.json").get("sidebar") is True


def test_an_empty_conversation_offers_starter_prompts_that_fill_the_message_box(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [SHORT])
    empty = window.transcript.empty_state
    assert empty.isVisible() and empty.title.text() and "Enter" in window.transcript.empty.text()
    assert len(empty.starters) >= 3 and all(b.accessibleName().startswith("Starter prompt") for b in empty.starters)
    assert window.welcome is not None and "on this computer" in window.welcome.text.text()
    window.welcome.close_button.click()  # the short facts stay
    assert empty.facts.isVisible() and "on this computer" in empty.facts.text()
    starter = empty.starters[1]
    starter.click()
    box = window.composer.box
    assert box.toPlainText() == starter.toolTip() and window.focusWidget() is box
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        qtbot.keyClick(box, Qt.Key.Key_Return)
    assert not empty.isVisible() and window.transcript.turns[-1].user.text() == starter.toolTip()


def test_the_answer_actions_are_reached_by_tab_and_pressed_by_the_keyboard(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    turn = window.transcript.turns[-1]
    assert opacity(turn.copy) == 0.0 and turn.copy.toolTip() and turn.copy.text() == "Copy"
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)
    window.composer.box.setFocus()
    for _ in range(300):  # Tab, as a keyboard user would, until Copy has the focus
        if turn.copy.hasFocus():
            break
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
    assert turn.copy.hasFocus()
    qtbot.waitUntil(lambda: opacity(turn.copy) == 1.0, timeout=2000)  # focus reveals it
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None and "The **answer** is 42." in reply.visible_text()
    QGuiApplication.clipboard().setText("")
    qtbot.keyClick(turn.copy, Qt.Key.Key_Space)
    assert QGuiApplication.clipboard().text() == reply.visible_text()
    QGuiApplication.clipboard().setText("")
    qtbot.keyClick(turn.copy, Qt.Key.Key_Return)
    assert QGuiApplication.clipboard().text() == reply.visible_text()


def test_cancel_and_esc_close_the_editor_and_change_nothing(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, client = make_window(qtbot, tmp_path, [SHORT])
    send(qtbot, window, "How are you?")
    turn = window.transcript.turns[0]
    turn.edit_button.click()
    assert turn.editor.isVisible() and turn.resend.isVisible() and turn.cancel.isVisible()
    assert not turn.user.isVisible() and turn.editor.toPlainText() == "How are you?"
    turn.editor.setPlainText("Something else")
    turn.cancel.click()
    assert not turn.editor.isVisible() and not turn.cancel.isVisible() and turn.user.isVisible()
    assert turn.user.text() == "How are you?" and len(window.controller.doc.turns[0].versions) == 1
    turn.edit_button.click()
    assert turn.editor.toPlainText() == "How are you?"  # the cancelled edit is gone
    turn.editor.setPlainText("Another thing")
    qtbot.keyClick(turn.editor, Qt.Key.Key_Escape)
    assert not turn.editor.isVisible() and turn.user.isVisible()
    assert [v.user_text for v in window.controller.doc.turns[0].versions] == ["How are you?"]
    assert len(client.prompts) == 1  # nothing was sent again


def test_a_finished_answer_shows_its_figures_under_it(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None and reply.debug.timings.get("generated")  # the scripted model's
    footer = window.transcript.turns[-1].footer
    expected = Figures.of(reply.debug.timings, reply.debug.stop_reason, reply.model).footer()
    assert footer.isVisible() and footer.text() == expected
    assert f"{reply.debug.timings['generated']} tokens" in expected and "finished" in expected
    assert reply.model and expected.startswith(reply.model)


def test_a_stored_answers_figures_are_read_off_the_gui_thread(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
    from app.engine.local.scripted import ScriptedClient
    from app.store.history import HistoryStore

    readers: list[str] = []
    gate = threading.Event()

    class Gated(HistoryStore):
        """The real store, noting which thread reads a debug record, and holding it back."""

        def debug(self, reply_id: str) -> Any:
            readers.append(threading.current_thread().name)
            gate.wait(10)
            return super().debug(reply_id)

    path = tmp_path / "history.db"
    doc = ChatDoc(title="Stored")
    reply = Reply(segments=[Segment("answer", "Stored answer.", complete=True)], state="done", model="tiny-model")
    reply.debug.timings = {"tokens_per_s": 12.5, "generated": 30, "first_token_ms": 240.0, "prompt_tokens": 9}
    reply.debug.stop_reason = "length"
    doc.turns.append(Turn([Version("A stored question?", replies=[reply])]))
    seed = HistoryStore(path)
    seed.save(doc)
    seed.close()
    host = ModelHost(EngineBridge())
    host.use(ScriptedClient([]), "harmony")
    window = MainWindow(ChatController(host, Gated(path)), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    view = window.transcript
    qtbot.waitUntil(lambda: len(view.turns) == 1, timeout=10_000)  # the conversation was read
    loaded = window.controller.doc.turns[0].version.reply
    assert loaded is not None and not loaded.debug_loaded  # asked for, held back: not on this thread
    footer = view.turns[0].footer
    assert not footer.isVisible() and footer.text() == ""
    with qtbot.waitSignal(window.controller.debugChanged, timeout=10_000):
        gate.set()
    qtbot.waitUntil(lambda: footer.text() == "tiny-model · 12.5 tok/s · 30 tokens · first token 240 ms"
                    " · cut at the token limit", timeout=5000)
    assert footer.isVisible() and loaded.debug_loaded
    assert readers and "MainThread" not in readers
    window.controller.settle()
