"""Labels that tell the truth: the answer's footer names the endpoint and model that answered;
the debug pane never decodes a turn with another model's vocabulary; the status bar follows the
open chat and clears itself. Real widgets on Qt's offscreen platform, the real controllers and
store, a scripted model (named as a loaded file would be) and a real loopback HTTP endpoint
streaming canned chunks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.controllers.remote_host import RemoteHost
from app.domain.endpoint import Endpoint
from app.engine.local.scripted import ScriptedClient
from app.secrets import Secrets
from app.settings import load_settings, save_settings
from app.store.history import HistoryStore
from app.ui.window.main_window import MainWindow
from tests.fault_proxy import FaultProxy
from tests.ui.test_window import make_window, send

GEMMA = "Gemma 3 270M · Q4_K_M"
SMOL = "SmolLM2 135M Instruct · Q4_1"
ANSWER = "<|channel|>final<|message|>Paris is the capital.<|return|>"
LONG = "<|channel|>final<|message|>" + "word " * 400 + "<|return|>"


@pytest.fixture
def canned() -> Iterator[FaultProxy]:
    """A loopback OpenAI-compatible endpoint that streams canned chunks (no model behind it)."""
    proxy = FaultProxy(0)
    yield proxy
    proxy.close()


def _window(
    qtbot: Any, tmp_path: Path, scripts: list[str], name: str = SMOL, delay_s: float = 0.0
) -> MainWindow:
    window, client = make_window(
        qtbot, tmp_path, scripts, delay_s=delay_s, store=HistoryStore(tmp_path / "h.db")
    )
    window.host.use(client, "harmony", name)  # the name a loaded file gets (`library/titles.py`)
    return window


def _footer(window: MainWindow, turn: int = -1) -> str:
    footer = window.transcript.turns[turn].footer
    return footer.text() if footer.isVisible() else ""


def test_a_remote_answer_is_credited_to_its_endpoint_and_model_not_the_local_one(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, canned: FaultProxy
) -> None:
    from keyring.backends.fail import Keyring as NoKeyring

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    remote = Endpoint(name="canned", base_url=canned.url, model="tiny-remote-7b", context=8192)
    save_settings(load_settings().with_endpoint(remote))
    window = _window(qtbot, tmp_path, [ANSWER])
    host = RemoteHost(Secrets(NoKeyring()))
    qtbot.waitUntil(lambda: bool(host.endpoints))
    window.controller.remote = host
    send(qtbot, window, "Capital of France?")  # the local model answers the first turn
    assert _footer(window).startswith(f"{SMOL} · ")
    window.controller.doc.endpoint = "canned"
    canned.faults, canned.canned = ["canned"], ["Paris", " is the capital."]
    send(qtbot, window, "And again?")
    qtbot.waitUntil(lambda: bool(_footer(window)))
    said = _footer(window)
    assert said.startswith("☁ canned · tiny-remote-7b"), said
    assert SMOL not in said
    assert _footer(window, 0).startswith(f"{SMOL} · ")  # the first answer keeps its own


def test_the_debug_pane_never_decodes_a_turn_with_another_models_vocabulary(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [ANSWER], name=GEMMA)
    send(qtbot, window, "Capital of France?")
    gemma_chat = window.controller.doc
    window.host.use(ScriptedClient([ANSWER]), "harmony", SMOL)  # another model is loaded
    window.new_action.trigger()
    qtbot.waitUntil(lambda: window.controller.doc.id != gemma_chat.id)
    send(qtbot, window, "Hello?")  # its vocabulary is the one the pane reads with now
    window.set_debug(True)
    qtbot.waitUntil(lambda: bool(window.debug.prompt.toPlainText()))
    assert "<|start|>" in window.debug.prompt.toPlainText()  # its own turn: decoded
    window.controller.select(gemma_chat.id)
    qtbot.waitUntil(lambda: window.controller.doc.id == gemma_chat.id)
    qtbot.waitUntil(lambda: GEMMA in window.debug.prompt_count.text())
    said = window.debug.prompt_count.text()
    assert f"Answered by {GEMMA}" in said and "load it to see its tokens" in said, said
    assert "<|start|>" not in window.debug.prompt.toPlainText()  # nothing decoded with SmolLM2's
    assert "load it to see its tokens" in window.debug.tokens.toPlainText()
    window.host.use(ScriptedClient([ANSWER]), "harmony", GEMMA)  # Gemma again, not read yet
    window.set_debug(False)
    window.set_debug(True)
    assert "once it has answered in this session" in window.debug.prompt_count.text()
    send(qtbot, window, "And again?")  # Gemma answers: its vocabulary is read
    window.set_debug(False)
    window.set_debug(True)
    window._select_turn(0)
    qtbot.waitUntil(lambda: "<|start|>" in window.debug.prompt.toPlainText())
    assert "prompt tokens" in window.debug.prompt_count.text()


def test_the_status_bar_follows_the_open_chat_and_clears_itself(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    window = _window(qtbot, tmp_path, [ANSWER, LONG, ANSWER], delay_s=0.01)
    window.resize(1100, 700)
    status = window.status
    send(qtbot, window, "Capital of France?")
    assert status.speed.text() and status.context.text()  # the open chat's last answer
    first = window.controller.doc.id
    window.new_action.trigger()
    qtbot.waitUntil(lambda: window.controller.doc.id != first)
    assert status.speed.text() == "" and status.context.text() == ""  # a new empty chat: none
    with qtbot.waitSignal(window.controller.segmentText, timeout=10_000):
        window.composer.box.setPlainText("A long story?")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    streaming = window.controller.doc.id
    window.new_action.trigger()  # away from the answer: the bar says it goes on
    qtbot.waitUntil(lambda: window.controller.doc.id != streaming)
    bar = window.statusBar()
    assert "goes on" in bar.currentMessage()
    message_width = bar.fontMetrics().horizontalAdvance(bar.currentMessage())
    taken = sum(w.width() for w in status.permanent() if w.isVisible())
    assert message_width + taken <= bar.width(), "the sentence is clipped behind the figures"
    window.controller.select(streaming)  # back in the streaming chat: the sentence goes
    qtbot.waitUntil(lambda: window.controller.doc.id == streaming)
    assert window.controller.busy and "goes on" not in bar.currentMessage()
    window.new_action.trigger()
    qtbot.waitUntil(lambda: window.controller.doc.id != streaming)
    assert "goes on" in bar.currentMessage()
    qtbot.waitUntil(lambda: not window.controller.busy, timeout=20_000)
    assert "goes on" not in bar.currentMessage()  # it ended: the sentence goes
    assert status.speed.text() == ""  # the figures of a chat not shown are not this chat's
    window.controller.select(first)
    qtbot.waitUntil(lambda: window.controller.doc.id == first)
    qtbot.waitUntil(lambda: bool(status.speed.text()))  # back on the first chat: its figures


def test_a_base_model_carries_a_badge_in_the_chooser_and_a_warning_before_chatting(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dataclasses

    from app.gguf.info import read_gguf
    from app.library.bundled import gemma_model_path
    from tests.ui.test_model_picker import rows_of

    for name in ("CONFIG", "DATA", "CACHE"):
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    monkeypatch.setenv("HARMONY_DESK_HUB", "http://127.0.0.1:9")
    window = _window(qtbot, tmp_path, [ANSWER])
    assert "base model" not in window.transcript.empty.text()  # a chat model: no warning
    qtbot.keyClick(window.composer.box, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    chooser = window.model_label.chooser
    assert chooser is not None
    qtbot.waitUntil(lambda: len(rows_of(chooser)) >= 2, timeout=30_000)  # the two bundled
    by_title = {r["title"]: r for r in rows_of(chooser).values()}
    assert "base model" in by_title["Gemma 3 270M"]["badges"]
    assert "base model" not in by_title["SmolLM2 135M Instruct"]["badges"]
    chooser.hide()
    gemma = gemma_model_path()  # its real header: no chat template, no "-it" in its name
    client = ScriptedClient([ANSWER])
    assert client.info is not None
    client.info = dataclasses.replace(
        client.info, path=str(gemma), metadata=read_gguf(gemma).metadata
    )
    window.host.use(client, "gemma", GEMMA)
    said = window.transcript.empty.text()
    assert f"{GEMMA} is a base model" in said and "instruction-tuned" in said, said
    assert "Base model" in window.model_label.toolTip()
