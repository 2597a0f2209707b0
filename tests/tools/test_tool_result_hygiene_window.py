"""The window on the real SmolLM2 with a real MCP server whose tool returns 5 MB of text
(tests/fixtures/mcp_hygiene_server.py, the SDK's own server over stdio), offscreen: the turn
goes on, the tool card shows what the model read — cut, with the marker — and Show whole
result opens the whole result, read-only, from the tool audit; the reply says where it is."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost
from app.tools.mcp.config import McpServer, save_servers
from app.ui.transcript.cards import ToolCard
from app.ui.window.main_window import MainWindow, UiState
from tests.fixtures.mcp_hygiene_server import DUMP_MB, dump_text
from tests.ui.test_window import segments

SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_hygiene_server.py")


@pytest.fixture()
def window(qtbot: Any, qloop: Any, tmp_path: Path, smollm_model: Any,
           monkeypatch: pytest.MonkeyPatch) -> Iterator[MainWindow]:  # fmt: skip
    """A window on SmolLM2 (2,048 tokens of context, greedy) whose conversation offers the
    hygiene server's tools and requires a call."""
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    save_servers({"hyg": McpServer(command=sys.executable, args=(SERVER,), timeout=60)})
    host = ModelHost(EngineBridge())
    window = MainWindow(ChatController(host), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(host.loaded, timeout=120_000):
            window.load_model(str(smollm_model), n_ctx=2048, threads=1)
        assert host.sampling is not None
        host.sampling = host.sampling.model_copy(update={"temperature": 0.0, "seed": 5})
        window.controller.max_tokens = 64
        window.controller.set_tools(("mcp:hyg",))
        window.controller.tool_choice = "required"
        yield window
    finally:
        window.controller.tools.close()
        window.close()
        host.close()


def cards(window: MainWindow) -> list[ToolCard]:
    turns = window.transcript.turns
    return [w for w in segments(window) if isinstance(w, ToolCard)] if turns else []


def answer_calls(qtbot: Any, window: MainWindow) -> None:
    """Run the first batch of calls, deny any later one, until the reply is finished."""
    finished: list[object] = []
    answered: set[int] = set()  # the cards clicked (their state changes on the next events)
    window.controller.replyFinished.connect(lambda *_: finished.append(True))

    def waiting() -> ToolCard | None:
        return next((c for c in cards(window) if c.data.get("state") == "pending"
                     and id(c) not in answered), None)  # fmt: skip

    while not finished:
        qtbot.waitUntil(lambda: bool(finished) or waiting() is not None, timeout=180_000)
        card = waiting()
        if card is not None:
            ran = any(c.data.get("state") in ("ok", "error") for c in cards(window))
            answered.add(id(card))
            (card.deny if ran else card.run).click()


def test_the_card_shows_the_cut_result_and_the_whole_one_click_away(
    qtbot: Any, window: MainWindow
) -> None:
    window.composer.box.setPlainText("Dump the server's log.")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    answer_calls(qtbot, window)
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None and reply.state != "failed", reply
    cut = [c for c in cards(window) if c.data.get("state") == "ok" and not c.whole.isHidden()]
    assert cut, [c.data.get("state") for c in cards(window)]
    card = cut[0]
    shown = card.result.toPlainText()
    assert "line 0000000: the quick brown fox" in shown and "[cut here: the first " in shown
    assert "THE END OF THE DUMP" not in shown and len(shown) < 20_000
    notices = [s.text for s in reply.segments if s.kind == "notice"]
    assert any("kept in the tool audit" in n and "tool-audit.jsonl" in n for n in notices), notices
    card.whole.click()
    dialog = card.whole_dialog
    assert dialog is not None
    with qtbot.waitSignal(dialog.loaded, timeout=60_000):
        pass  # the audit is read off the GUI thread
    assert dialog.isVisible() and dialog.text.isReadOnly()
    assert dialog.text.toPlainText() == dump_text(DUMP_MB), dialog.status.text()
    assert f"{len(dump_text(DUMP_MB)):,} characters" in dialog.status.text()
    dialog.close()
