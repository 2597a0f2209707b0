"""The window through its real controllers, on the offscreen platform: tests wait on signals."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QAbstractButton,
    QComboBox,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QTextEdit,
    QWidget,
)

from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.engine.local.scripted import ScriptedClient
from app.ui.markdown.view import MarkdownView
from app.ui.transcript.cards import JsonCard, ToolCard
from app.ui.window.main_window import MainWindow, UiState
from tests.gui_helpers import all_text

SECRET_THOUGHT = "zebra-analysis-text"
TURN = (f"<|channel|>analysis<|message|>{SECRET_THOUGHT} thinking.<|end|>"
        "<|start|>assistant<|channel|>commentary<|message|>A short preamble.<|end|>"
        "<|start|>assistant<|channel|>final<|message|>The **answer** is 42.\n\n```python\nprint(42)\n```\n<|return|>")


def make_window(
    qtbot: Any, tmp_path: Path, scripts: list[str], delay_s: float = 0.0, store: Any = None
) -> tuple[MainWindow, ScriptedClient]:
    """A window on a scripted model; conversations saved to `store` (a HistoryStore) if given."""
    client = ScriptedClient(scripts, delay_s=delay_s)
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    window = MainWindow(ChatController(host, store), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    window.controller.settle()  # the newest conversation is read off the GUI thread
    return window, client


def send(qtbot: Any, window: MainWindow, text: str, timeout: int = 10_000) -> None:
    with qtbot.waitSignal(window.controller.replyFinished, timeout=timeout):
        window.composer.box.setPlainText(text)
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)


def segments(window: MainWindow, turn: int = -1) -> list[QWidget]:
    return window.transcript.turns[turn].segments


def test_answer_and_preamble_stream_into_the_transcript_and_analysis_only_into_the_debug_pane(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "What is 6*7?")
    widgets = segments(window)
    assert [w.objectName() for w in widgets] == ["preamble", "answer"]
    answer = widgets[1]
    assert isinstance(answer, MarkdownView) and "The answer is 42." in answer.toPlainText()
    assert answer.code_blocks() == ["print(42)\n"]
    assert SECRET_THOUGHT not in all_text(window)  # debug pane off: nowhere in the widget tree
    qtbot.keyClick(window.composer.box, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert window.debug.isVisible() and SECRET_THOUGHT in window.debug.analysis.toPlainText()
    assert "prompt tokens" in window.debug.prompt_count.text() and "<|start|>" in window.debug.prompt.toPlainText()
    qtbot.waitUntil(lambda: "200002" in window.debug.tokens.toPlainText())  # <|return|>, a raw id
    window.transcript.turns[-1].copy.click()
    assert SECRET_THOUGHT not in QGuiApplication.clipboard().text()
    assert "A short preamble." in QGuiApplication.clipboard().text()
    qtbot.keyClick(window.composer.box, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert SECRET_THOUGHT not in all_text(window)
    qtbot.waitUntil(lambda: UiState(tmp_path / "ui-state.json").get("debug_pane") is False)
    assert window.transcript.turns[-1].user.text() == "What is 6*7?"


def test_stop_keeps_the_partial_answer_and_offers_continue(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    long = "<|channel|>final<|message|>" + "word " * 400 + "<|return|>"
    window, _ = make_window(qtbot, tmp_path, [long], delay_s=0.003)
    c = window.controller
    with qtbot.waitSignal(c.segmentText, timeout=10_000):
        window.composer.box.setPlainText("Talk")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    assert window.composer.send.text() == "Stop" and window.composer.send.isEnabled()
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Escape)
    reply = c.doc.turns[-1].version.reply
    assert reply is not None and reply.state == "stopped"
    text = segments(window)[0].toPlainText()  # type: ignore[attr-defined]
    assert text.startswith("word word") and text.count("word") < 400
    turn = window.transcript.turns[-1]
    assert turn.continue_.isVisible() and "Stopped." in all_text(window)


def test_regenerate_keeps_the_old_answer_as_an_alternative(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>First.<|return|>",
                                              "<|channel|>final<|message|>Second.<|return|>"])
    send(qtbot, window, "Hi")
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        window.transcript.turns[-1].regenerate.click()
    turn = window.transcript.turns[-1]
    assert turn.replies.text() == "2/2" and "Second." in segments(window)[0].toPlainText()  # type: ignore[attr-defined]
    turn.prev_reply.click()
    turn = window.transcript.turns[-1]
    assert turn.replies.text() == "1/2" and "First." in segments(window)[0].toPlainText()  # type: ignore[attr-defined]


def test_edit_resends_and_the_old_branch_comes_back(qtbot: Any, qloop: Any, tmp_path: Path, ) -> None:
    window, client = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>One.<|return|>",
                                                   "<|channel|>final<|message|>Two.<|return|>",
                                                   "<|channel|>final<|message|>Edited.<|return|>"])
    send(qtbot, window, "first")
    send(qtbot, window, "second")
    first = window.transcript.turns[0]
    first.edit_button.click()
    first.editor.setPlainText("first, edited")
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        first.resend.click()
    assert len(window.transcript.turns) == 1 and window.transcript.turns[0].versions.text() == "2/2"
    assert "first, edited" in client.encoding.decode(client.prompts[-1])
    assert "second" not in client.encoding.decode(client.prompts[-1])  # the later turn left with its branch
    window.transcript.turns[0].prev_version.click()
    assert [t.user.text() for t in window.transcript.turns] == ["first", "second"]


def tool_scripts(arguments: str) -> list[str]:
    return [f"<|channel|>commentary to=functions.calculate <|constrain|>json<|message|>{arguments}<|call|>",
            "<|channel|>final<|message|>Done.<|return|>"]


def pending_card(qtbot: Any, window: MainWindow) -> ToolCard:
    """The last tool card once it shows itself pending: its segment says so and the card has
    redrawn with its decisions (the segment changes first; the card redraws on the signal)."""

    def card_is_pending() -> None:
        cards = [w for w in segments(window) if isinstance(w, ToolCard)] if window.transcript.turns else []
        assert cards and cards[-1].data.get("state") == "pending" and cards[-1].run.isVisible()
    qtbot.waitUntil(card_is_pending, timeout=10_000)
    return [w for w in segments(window) if isinstance(w, ToolCard)][-1]


def test_a_tool_call_waits_for_approval_and_runs_the_edited_arguments(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, client = make_window(qtbot, tmp_path, tool_scripts('{"expression":"1+1"}'))
    window.controller.set_tools(("calculate",))
    window.composer.box.setPlainText("Add")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    assert "calculate" in card.title.text() and "read-only" in card.title.text() and card.run.isVisible()
    card.args.setPlainText("not json")
    card.run.click()
    assert "not JSON" in card.problem.text()  # the card waits for valid arguments
    card.args.setPlainText('{"expression": "2+3"}')
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        card.run.click()
    assert card.data["state"] == "ok" and '"result": 5' in card.result.toPlainText()
    assert "arguments edited" in card.state.text()
    assert '"result": 5' in client.encoding.decode(client.prompts[1])
    from app.tools.audit import AuditLog

    audited = AuditLog().read(window.controller.doc.id).entries  # the window audits, as the terminal does
    assert len(audited) == 1 and audited[0]["tool"] == "functions.calculate"
    assert "arguments edited" in audited[0]["decision"], audited[0]


def test_a_denied_tool_call_reaches_the_model_as_an_error(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, client = make_window(qtbot, tmp_path, tool_scripts('{"expression":"1+1"}'))
    window.controller.set_tools(("calculate",))
    window.composer.box.setPlainText("Add")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        card.deny.click()
    assert card.data["state"] == "error" and "E-TOOL-DENIED" in card.result.toPlainText()
    assert "E-TOOL-DENIED" in client.encoding.decode(client.prompts[1])


@pytest.mark.parametrize("body, valid", [('{"answer":"42"}', True), ('{"answer":42}', False)])
def test_json_mode_shows_the_verdict(qtbot: Any, qloop: Any, tmp_path: Path, body: str, valid: bool) -> None:
    # from before `42` twice, then (the last retry) from before the member
    retries = [] if valid else ["43}<|return|>", "44}<|return|>", '"answer":45}<|return|>']
    window, client = make_window(qtbot, tmp_path, [f"<|channel|>final<|message|>{body}<|return|>", *retries])
    window.composer.json_mode.setChecked(True)
    assert window.composer.schema_state.text() == "✓ schema is valid"
    window.composer.schema.setPlainText('{"type": "object", "not": {}}')
    assert window.composer.schema_state.text() == "✓ schema is valid; checked after generating: not at /"
    window.composer.schema.setPlainText('{"$ref": "https://example.com/s.json"}')
    assert "remote document" in window.composer.schema_state.text()
    window.composer.schema.setPlainText('{"type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}')
    send(qtbot, window, "Answer in JSON")
    card = next(w for w in segments(window) if isinstance(w, JsonCard))
    assert card.badge.text() == ("✓ valid JSON" if valid else "✗ invalid JSON")
    assert json.loads(card.body.toPlainText()) == json.loads(body if valid else '{"answer":45}')
    assert card.plan.text().startswith("Enforced while generating: properties, required, type")
    if not valid:  # the scripted source ignores the grammar; the retries found no other value
        assert "/answer" in card.reason.text() and "E-BODY-CONSTRAINT-VIOLATION" in card.reason.text()
        assert "Retried 3× (type at /answer;" in card.plan.text()
        shown = [g.text for g in window.controller.doc.turns[-1].version.reply.segments if g.kind == "answer"]
        assert shown == ['{"answer":45}']  # each retry took back what the last attempt wrote
    assert "Response Formats" in client.encoding.decode(client.prompts[0])


def test_conversations_new_search_rename_pin_delete_undo(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>Bonjour.<|return|>"])
    send(qtbot, window, "Say hello in French")
    first = window.controller.doc
    qtbot.keyClick(window.composer.box, Qt.Key.Key_N, Qt.KeyboardModifier.ControlModifier)
    assert window.controller.doc is not first and window.transcript.turns == []
    titles = lambda: [item.text() for i in range(window.sidebar.list.count())  # noqa: E731
                      if (item := window.sidebar.list.item(i)).data(Qt.ItemDataRole.UserRole)]  # not the date headers
    settle = window.controller.settle
    settle()
    assert titles() == ["New chat", "Say hello in French"]
    window.sidebar.search.setText("bonjour")  # visible text is searched, not only titles
    settle()
    assert titles() == ["Say hello in French"]
    window.sidebar.search.setText("")
    window.controller.rename(first.id, "French")
    window.controller.pin(first.id)
    settle()
    assert titles() == ["📌 French", "New chat"]
    window.sidebar.delete(first.id)
    settle()
    assert titles() == ["New chat"] and window.sidebar.undo.isVisible()
    window.sidebar.undo.click()
    settle()
    assert titles() == ["📌 French", "New chat"]
    window.sidebar.list.setCurrentRow(0)
    settle()
    assert window.controller.doc is first and len(window.transcript.turns) == 1


def test_a_load_error_is_shown_in_the_window(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 64)
    with qtbot.waitSignal(window.host.loadFailed, timeout=30_000):
        window.load_model(str(broken))
    assert window.banner.isVisible() and "broken.gguf" in window.banner.text()
    assert window.host.ready and window.model_label.text() == "scripted"  # the old model stays


def test_every_control_has_an_accessible_name(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [TURN])
    send(qtbot, window, "Hi")
    window.set_debug(True)
    kinds = (QAbstractButton, QLineEdit, QPlainTextEdit, QTextEdit, QComboBox, QListWidget)
    unnamed = [w for w in window.findChildren(QWidget) if isinstance(w, kinds) and not w.objectName().startswith("qt_")
               and w.focusPolicy() != Qt.FocusPolicy.NoFocus and not w.accessibleName()]
    assert unnamed == []


def test_the_real_default_model_answers_and_a_killed_worker_keeps_the_window(qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any) -> None:
    import os
    import signal

    from app.store.history import HistoryStore

    host = ModelHost(EngineBridge())
    window = MainWindow(ChatController(host, HistoryStore(tmp_path / "h.db")), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(host.loaded, timeout=180_000):
            window.load_model(None, n_ctx=1024, threads=1)  # the default model
        assert "smollm2" in window.model_label.text().lower()
        window.controller.max_tokens = 12
        send(qtbot, window, "The capital of France is", timeout=120_000)
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and reply.debug.timings["generated"] > 0
        assert (reply.state, reply.debug.stop_reason) in (("done", "stop"), ("incomplete", "length"))
        assert segments(window) and segments(window)[0].toPlainText().strip()  # type: ignore[attr-defined]
        assert "tok/s" in window.status_speed.text() and "context" in window.status_context.text()
        window.controller.max_tokens = 400
        with qtbot.waitSignal(window.controller.segmentText, timeout=120_000):
            window.composer.box.setPlainText("Write a long story about a lighthouse keeper.")
            qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        with qtbot.waitSignal(window.controller.replyFinished, timeout=60_000):
            os.kill(host.backend.pid, signal.SIGKILL)  # type: ignore[union-attr]
        reply = window.controller.doc.turns[-1].version.reply
        assert reply is not None and reply.state == "failed" and "worker" in reply.error.lower()
        assert reply.segments[0].kind == "answer" and reply.segments[0].text  # what had arrived is kept
        assert "The reply failed" in all_text(window) and window.isVisible()
        assert window.transcript.turns[-1].continue_.isVisible()
        window.controller.saved()  # the partial answer is in the database too
        saved = HistoryStore(tmp_path / "h.db").load(window.controller.doc.id)
        assert saved is not None and saved.turns[-1].version.reply is not None
        assert saved.turns[-1].version.reply.state == "failed"
        assert saved.turns[-1].version.reply.segments[0].text == reply.segments[0].text
        window.controller.max_tokens = 8
        send(qtbot, window, "Again:", timeout=180_000)  # the worker comes back for the next message
        again = window.controller.doc.turns[-1].version.reply
        assert again is not None and again.state in ("done", "incomplete") and again.segments
    finally:
        window.close()
        host.close()


def test_continue_goes_on_from_where_a_stopped_answer_ended(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    words = "<|channel|>final<|message|>" + "word " * 300
    window, client = make_window(qtbot, tmp_path, [words + "<|return|>", "more words.<|return|>"], delay_s=0.003)
    c = window.controller
    with qtbot.waitSignal(c.segmentText, timeout=10_000):
        window.composer.box.setPlainText("Talk")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        c.stop()
    reply = c.doc.turns[-1].version.reply
    assert reply is not None and reply.state == "stopped"
    partial = reply.segments[0].text
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        window.transcript.turns[-1].continue_.click()
    assert len(c.doc.turns[-1].version.replies) == 1 and reply.state == "done"
    assert [s.kind for s in reply.segments] == ["answer"]  # the "Stopped." notice is gone
    assert reply.segments[0].text == partial + "more words."
    assert segments(window)[0].toPlainText().strip() == (partial + "more words.").strip()  # type: ignore[attr-defined]
    generated = client.encoding.encode_with_specials("<|channel|>final<|message|>" + partial)
    assert client.prompts[1][-len(generated):] == generated  # the cut tokens follow the prompt
    assert reply.messages[-1].text == partial + "more words."


def test_model_settings_apply_to_the_next_message(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.ui.settings.model_settings import ModelSettings

    window, _ = make_window(qtbot, tmp_path, [])
    dialog = ModelSettings(window.host, window)
    qtbot.addWidget(dialog)
    assert dialog.template.currentText() == "harmony" and dialog.temperature.value() == 1.0
    dialog.temperature.setValue(0.3)
    dialog.top_k.setValue(40)
    dialog.accept()
    assert window.host.sampling is not None
    assert (window.host.sampling.temperature, window.host.sampling.top_k) == (0.3, 40)
    dialog.temperature.setValue(5.0)  # beyond what the engine accepts: the box stops at 2
    assert dialog.temperature.value() == 2.0


def test_the_debug_pane_shows_the_turn_that_was_clicked(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    first = "<|channel|>analysis<|message|>first-thought<|end|><|start|>assistant<|channel|>final<|message|>A<|return|>"
    second = "<|channel|>analysis<|message|>second-thought<|end|><|start|>assistant<|channel|>final<|message|>B<|return|>"
    window, _ = make_window(qtbot, tmp_path, [first, second])
    send(qtbot, window, "one")
    send(qtbot, window, "two")
    window.set_debug(True, remember=False)
    assert "second-thought" in window.debug.analysis.toPlainText()
    qtbot.mouseClick(window.transcript.turns[0], Qt.MouseButton.LeftButton)
    assert "first-thought" in window.debug.analysis.toPlainText()
    assert "second-thought" not in window.debug.analysis.toPlainText()


def test_conversations_are_saved_as_they_stream_and_come_back(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.store.history import HistoryStore

    store = HistoryStore(tmp_path / "history.db")
    client = ScriptedClient([TURN, "<|channel|>final<|message|>Second.<|return|>"])
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    window = MainWindow(ChatController(host, store), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.controller.settle()
    send(qtbot, window, "What is 6*7?")
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        window.transcript.turns[-1].regenerate.click()
    window.controller.saved()
    doc_id = window.controller.doc.id
    loaded = HistoryStore(tmp_path / "history.db").load(doc_id)
    assert loaded is not None and loaded.title == "What is 6*7?"
    version = loaded.turns[0].version
    assert [r.visible_text() for r in version.replies][1] == "Second." and version.chosen == 1
    assert version.replies[0].debug.analysis.startswith(SECRET_THOUGHT) and version.replies[0].state == "done"
    fresh = ChatController(ModelHost(EngineBridge()), HistoryStore(tmp_path / "history.db"))
    fresh.settle()
    assert fresh.doc.id == doc_id and fresh.doc.messages() == window.controller.doc.messages()


def test_a_bad_history_file_is_left_alone_and_a_fresh_one_used(tmp_path: Path) -> None:
    from app.controllers.history_host import open_history

    state = UiState(tmp_path / "ui-state.json")
    bad = tmp_path / "history.db"
    bad.write_bytes(b"not a database" * 50)
    state.set("history_db", str(bad))
    asked: list[str] = []
    store = open_history(lambda problem: (asked.append(problem.message), "fresh")[1], state)  # type: ignore[arg-type, return-value]
    assert store is not None and store.path != bad and bad.read_bytes() == b"not a database" * 50
    assert "not a database" in asked[0] and state.get("history_db") == str(store.path)
    assert open_history(lambda problem: "quit", UiState(tmp_path / "other.json")) is not None  # default path works


def test_the_trash_menu_restores_and_empties(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app.store.history import HistoryStore

    store = HistoryStore(tmp_path / "history.db")
    host = ModelHost(EngineBridge())
    host.use(ScriptedClient([]), "harmony")
    window = MainWindow(ChatController(host, store), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.controller.settle()
    first = window.controller.doc.id
    window.controller.new_chat()
    window.sidebar.delete(first)
    window.controller.settle()
    window.trash_menu.fill()
    labels = [a.text() for a in window.trash_menu.actions()]
    assert labels[0] == "Restore “New chat”" and labels[-1] == "Empty trash (1)…"
    window.trash_menu.actions()[0].trigger()
    window.controller.settle()
    assert first in [d.id for d in store.listed()] and first in [d.id for d in window.controller.listing]
    window.sidebar.delete(first)
    window.controller.empty_trash()
    window.controller.settle()
    assert store.load(first) is None and window.controller.trash() == []
    window.trash_menu.fill()
    assert [a.text() for a in window.trash_menu.actions()] == ["The trash is empty"]

def test_a_stored_conversation_is_read_off_the_gui_thread_and_its_debug_record_when_asked(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    import threading

    from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
    from app.domain.messages import Message, Role
    from app.store.history import HistoryStore

    readers: list[str] = []

    class Recorded(HistoryStore):
        """The real store, noting which thread reads it."""

        def load(self, doc_id: str) -> Any:
            readers.append(threading.current_thread().name)
            return super().load(doc_id)

        def listed(self, search: str = "") -> Any:
            readers.append(threading.current_thread().name)
            return super().listed(search)

        def debug(self, reply_id: str) -> Any:
            readers.append(threading.current_thread().name)
            return super().debug(reply_id)

    path = tmp_path / "history.db"
    doc = ChatDoc(title="Stored")
    for i in range(30):
        reply = Reply(segments=[Segment("answer", f"Answer {i}.", complete=True)], state="done")
        reply.messages = (Message.of(Role.ASSISTANT, f"Answer {i}.", channel="final"),)
        reply.debug.analysis = f"{SECRET_THOUGHT} {i}"
        reply.debug.token_ids = [1, 2, 3]
        doc.turns.append(Turn([Version(f"Question {i}?", replies=[reply])]))
    seed = HistoryStore(path)
    seed.save(doc)
    seed.close()
    client = ScriptedClient(["<|channel|>final<|message|>Answer 30.<|return|>"])
    host = ModelHost(EngineBridge())
    host.use(client, "harmony")
    window = MainWindow(ChatController(host, Recorded(path)), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    window.controller.settle()
    assert window.controller.doc.id == doc.id and len(window.controller.doc.turns) == 30
    assert window.transcript.turns[-1].user.text() == "Question 29?"
    assert [d.title for d in window.controller.listing] == ["Stored"]
    loaded = window.controller.doc.turns[29].version.reply
    unseen = window.controller.doc.turns[0].version.reply  # before the page shown: no footer asked for it
    assert loaded is not None and unseen is not None and not unseen.debug_loaded  # not read until asked
    window.set_debug(True)
    qtbot.waitUntil(lambda: f"{SECRET_THOUGHT} 29" in window.debug.analysis.toPlainText())
    window.controller.refresh_list(SECRET_THOUGHT)  # the sidebar's search never sees analysis
    window.controller.settle()
    assert window.controller.listing == []
    window.controller.refresh_list("")
    window.debug.search.setText(f"{SECRET_THOUGHT} 7")  # the debug pane's search does
    qtbot.keyClick(window.debug.search, Qt.Key.Key_Return)
    window.controller.settle()
    assert [window.debug.found.item(i).text() for i in range(window.debug.found.count())] == [
        f"Turn 8: {SECRET_THOUGHT} 7"
    ]
    window.debug.found.itemClicked.emit(window.debug.found.item(0))
    qtbot.waitUntil(lambda: window.debug.analysis.toPlainText() == f"{SECRET_THOUGHT} 7")
    window.set_debug(False)
    assert SECRET_THOUGHT not in all_text(window)
    window.set_debug(True)
    send(qtbot, window, "Question 30?")
    assert [m.text for m in window.controller.doc.messages()][-3:] == ["Answer 29.", "Question 30?", "Answer 30."]
    assert "Answer 12." in client.encoding.decode(client.prompts[0])  # the history reached the model
    assert readers and "MainThread" not in readers


def test_a_long_conversation_opens_on_its_last_page_and_shows_earlier_turns_on_request(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    from PySide6.QtWidgets import QAbstractSlider

    from app.domain.history import ChatDoc, Reply, Segment, Turn, Version
    from app.ui.transcript.view import PAGE

    window, _ = make_window(qtbot, tmp_path, [])
    doc = ChatDoc(title="Long")
    for i in range(2 * PAGE + 5):
        reply = Reply(segments=[Segment("answer", f"Answer {i}.", complete=True)], state="done")
        doc.turns.append(Turn([Version(f"Question {i}?", replies=[reply])]))
    window.controller.doc = doc
    window.controller.docChanged.emit()
    view = window.transcript
    assert [t.index for t in view.turns] == list(range(PAGE + 5, 2 * PAGE + 5))
    assert view.earlier.isVisible() and f"({PAGE + 5} turns)" in view.earlier.text()
    view.earlier.click()
    assert [t.index for t in view.turns] == list(range(5, 2 * PAGE + 5))
    qtbot.waitUntil(lambda: view.verticalScrollBar().maximum() > 0)
    view.verticalScrollBar().triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)  # the user scrolls up
    qtbot.waitUntil(lambda: view.first == 0)
    assert [t.index for t in view.turns] == list(range(2 * PAGE + 5)) and not view.earlier.isVisible()
    assert view.turns[0].user.text() == "Question 0?" and "Answer 0." in all_text(window)


def test_a_first_run_welcomes_once_and_about_names_the_version_and_licences(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from app import __version__
    from app.ui.window.about import about_text

    window, _ = make_window(qtbot, tmp_path, [])
    assert window.welcome is not None and window.welcome.isVisible()
    assert "on this computer" in window.welcome.text.text() and "Endpoints" in window.welcome.text.text()
    window.welcome.close_button.click()
    assert not window.welcome.isVisible()
    qtbot.waitUntil(lambda: UiState(tmp_path / "ui-state.json").get("welcomed") is True)
    again, _ = make_window(qtbot, tmp_path, [])
    assert again.welcome is None  # shown until dismissed once
    text = about_text()
    assert f"Harmony Desk {__version__}" in text and "LGPL-3.0" in text and "Gemma Terms of Use" in text
    assert "llama.cpp" in text and "MIT" in text


def test_a_first_run_on_empty_folders_welcomes_and_starts_on_the_default_model(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from app.ui.app import build_window

    for name in ("CONFIG", "DATA", "CACHE"):  # a fresh user account
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    window = build_window()
    qtbot.addWidget(window)
    window.show()
    try:
        assert window.welcome is not None and window.welcome.isVisible()
        with qtbot.waitSignal(window.host.loaded, timeout=180_000):
            window.load_model(None, n_ctx=512, threads=1)  # the default, from its package, offline
        assert "smollm2" in window.model_label.text().lower()
        assert (tmp_path / "cache" / "models" / "smollm2.verified").is_file()  # checked once
    finally:
        window.close()
        window.host.close()


def test_continue_on_a_json_answer_keeps_the_constraint_and_its_check(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    """Continue on a JSON-mode answer once ran with no constraint and no validity check."""
    window, client = make_window(qtbot, tmp_path, ['<|channel|>final<|message|>{"city": "Os', 'lo"}<|return|>'])
    c = window.controller
    window.composer.json_mode.setChecked(True)
    window.composer.schema.setPlainText('{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}')
    send(qtbot, window, "Which city?")
    reply = c.doc.turns[-1].version.reply
    assert reply is not None and reply.state == "incomplete" and client.constraints[0] is not None
    window.composer.json_mode.setChecked(False)  # the composer now does not change the message's mode
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        window.transcript.turns[-1].continue_.click()
    assert client.constraints[1] is not None  # the continuation is constrained too
    verdicts = [s for s in reply.segments if s.kind == "json"]
    assert verdicts and verdicts[-1].data["valid"] is True and json.loads(verdicts[-1].text) == {"city": "Oslo"}
    assert any(isinstance(w, JsonCard) for w in segments(window))


def test_a_tool_call_on_the_final_channel_is_kept_as_commentary_with_the_chain(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    """W08: a call on `final` once stayed `final`, so the next prompt took it for the answer and
    dropped the chain's analysis."""
    call = ("<|channel|>analysis<|message|>Need the sum.<|end|><|start|>assistant<|channel|>final"
            ' to=functions.calculate <|constrain|>json<|message|>{"expression":"1+1"}<|call|>')
    window, client = make_window(qtbot, tmp_path, [call, "<|channel|>final<|message|>Two.<|return|>"])
    window.controller.set_tools(("calculate",))
    window.composer.box.setPlainText("Add")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        card.run.click()
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None
    stored = next(m for m in reply.messages if m.recipient == "functions.calculate")
    assert stored.channel == "commentary"
    follow_up = client.encoding.decode(client.prompts[1])
    assert "Need the sum." in follow_up and "<|channel|>final to=" not in follow_up
    assert [s.text for s in reply.segments if s.kind == "answer"] == ["Two."]
