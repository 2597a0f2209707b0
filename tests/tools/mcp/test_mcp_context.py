"""MCP resources and prompts in the window, and MCP's own notices, against a real server over
stdio built with the SDK's own server API (`fixtures/mcp_context_server.py`): "@" lists its
resources and attaches one with its size (an image to the images, a blob and a text too large
refused in a sentence), "/" lists its prompts and fills the message box from one with its
arguments asked in a form; its log messages reach its log view, its progress the tool card and
the turn's events, its "the tool list changed" the conversation's registry, and a call the
user stops is cancelled at the server."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt

from app.controllers.mcp_context import McpContext, follow_tool_changes
from app.domain.events import ToolProgress, ToolsRan
from app.engine.local.scripted import ScriptedClient
from app.engine.local.session import ChatSession
from app.templates.registry import get_template
from app.tools.discovery import discover
from app.tools.mcp.config import McpServer, save_servers
from app.tools.mcp.results import size_text
from app.tools.mcp.tools import McpPool
from app.tools.session import ConversationTools, ToolOptions
from app.ui.transcript.cards import ToolCard
from app.ui.window.main_window import MainWindow
from tests.turns import tool_turn
from tests.ui.test_window import make_window, pending_card, segments

SERVER = str(Path(__file__).resolve().parents[2] / "fixtures" / "mcp_context_server.py")
PLAN = "# The plan\n\n1. Measure the tap.\n2. Buy a washer.\n"


@pytest.fixture()
def cancelled(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The server "ctx" configured (and the app's folders private); the file its `wait` tool
    writes when the client cancels it."""
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    monkeypatch.setenv("HARMONY_DESK_CACHE", str(tmp_path / "cache"))
    marker = tmp_path / "cancelled.txt"
    save_servers({"ctx": McpServer(command=sys.executable, args=(SERVER, str(marker)), timeout=30)})
    return marker


def _window(qtbot: Any, tmp_path: Path, scripts: list[str]) -> MainWindow:
    """A window whose conversation uses "ctx", its composer offering the conversation's MCP
    servers (the window's own wiring: `Composer.use_mcp`)."""
    window, _ = make_window(qtbot, tmp_path, scripts)
    window.controller.set_tools(("mcp:ctx",))
    c = window.controller
    window.composer.use_mcp(McpContext(c.tools.mcp), lambda: c.doc, window.jobs)
    return window


def _rows(window: MainWindow) -> list[str]:
    picker = window.composer.picker
    return [picker.item(i).text() for i in range(picker.count())]


def _pick(qtbot: Any, window: MainWindow, typed: str, row: str) -> None:
    """Type `typed` (an "@…" or "/…"), wait for `row` in the picker, and pick it with Tab."""
    qtbot.keyClicks(window.composer.box, typed)
    qtbot.waitUntil(lambda: any(r.startswith(row) for r in _rows(window)), timeout=30_000)
    picker = window.composer.picker
    while not picker.currentItem().text().startswith(row):
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Down)
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Tab)


def test_at_offers_the_servers_resources_and_attaches_them_with_their_size(
    qtbot: Any, qloop: Any, tmp_path: Path, cancelled: Path
) -> None:
    window = _window(qtbot, tmp_path, ["<|channel|>final<|message|>Noted.<|return|>"])
    composer = window.composer
    try:
        qtbot.keyClicks(composer.box, "Summarise @")
        qtbot.waitUntil(lambda: "MCP ctx" in _rows(window), timeout=30_000)
        rows = _rows(window)
        assert "plan — The plan for the week. · text/markdown" in rows and "dot — A red dot. · image/png" in rows
        assert rows.index("MCP ctx") < rows.index("plan — The plan for the week. · text/markdown")
        qtbot.keyClicks(composer.box, "pla")
        assert [r for r in _rows(window) if r != "MCP ctx"] == ["plan — The plan for the week. · text/markdown"]
        qtbot.keyClick(composer.box, Qt.Key.Key_Tab)
        qtbot.waitUntil(lambda: bool(composer.files), timeout=30_000)
        attached = composer.files[0]
        assert composer.box.toPlainText() == "Summarise " and attached.read_text() == PLAN
        assert attached.name == "ctx — plan.md"
        label = composer.attachments.chip_of(attached).label.text()
        assert label.endswith(f"· {size_text(len(PLAN.encode()))}") and "bytes" in label
        with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
            qtbot.keyClick(composer.box, Qt.Key.Key_Return)
        sent = window.controller.doc.turns[-1].version.user_text
        assert "Measure the tap." in sent and "ctx — plan.md" in sent  # attached like a document

        _pick(qtbot, window, "@", "dot")
        qtbot.waitUntil(lambda: len(composer.images) == 1, timeout=30_000)
        assert composer.images[0].width == 24 and composer.images[0].height == 16
        composer.take_images()
        _pick(qtbot, window, "@", "blob")
        qtbot.waitUntil(lambda: "Not attached" in composer.image_note.text(), timeout=30_000)
        assert "only text and images are attached" in composer.image_note.text() and not composer.files
        _pick(qtbot, window, "@", "huge")
        qtbot.waitUntil(lambda: "1.0 MiB" in composer.image_note.text(), timeout=30_000)
        assert "resources of up to 1.0 MiB of text are attached" in composer.image_note.text()
        assert not composer.files and composer.box.toPlainText() == ""
    finally:
        window.controller.tools.close()


def test_slash_offers_the_servers_prompts_and_fills_the_box(
    qtbot: Any, qloop: Any, tmp_path: Path, cancelled: Path
) -> None:
    window = _window(qtbot, tmp_path, [])
    composer = window.composer
    try:
        qtbot.keyClicks(composer.box, "/")
        qtbot.waitUntil(lambda: "MCP ctx" in _rows(window), timeout=30_000)
        assert "review — Ask for a code review. · language*, focus" in _rows(window)
        qtbot.keyClicks(composer.box, "rev")
        qtbot.keyClick(composer.box, Qt.Key.Key_Return)  # a "/" command: Enter picks at once
        qtbot.waitUntil(lambda: composer.mcp is not None and composer.mcp.form is not None)
        form = composer.mcp.form
        assert form is not None and not form.use.isEnabled()  # the required argument is blank
        form.fields["language"].setText("Rust")
        assert form.use.isEnabled()
        form.use.click()
        qtbot.waitUntil(lambda: composer.box.toPlainText() != "", timeout=30_000)
        assert composer.box.toPlainText() == "Review this Rust code, looking for bugs."
        assert not window.controller.doc.turns  # filled, not sent: the user edits first

        composer.box.clear()
        qtbot.keyClicks(composer.box, "/dia")
        qtbot.waitUntil(lambda: any(r.startswith("dialogue") for r in _rows(window)), timeout=30_000)
        qtbot.keyClick(composer.box, Qt.Key.Key_Return)
        qtbot.waitUntil(lambda: composer.mcp is not None and composer.mcp.form is not form)
        composer.mcp.form.fields["topic"].setText("tides")
        composer.mcp.form.use.click()
        qtbot.waitUntil(lambda: composer.box.toPlainText() != "", timeout=30_000)
        assert composer.box.toPlainText() == ("Tell me about tides.\n\nAssistant:\n> tides is wide.\n"
                                              "> Where to start?\n\nStart with its history.")
    finally:
        window.controller.tools.close()


def test_progress_reaches_the_card_and_log_messages_the_servers_log_view(
    qtbot: Any, qloop: Any, tmp_path: Path, cancelled: Path
) -> None:
    call = ("<|channel|>commentary to=functions.ctx__work <|constrain|>json<|message|>"
            '{"steps": 4}<|call|>')
    window = _window(qtbot, tmp_path, [call, "<|channel|>final<|message|>Done.<|return|>"])
    try:
        window.composer.box.setPlainText("Work")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        card = pending_card(qtbot, window)
        seen: list[str] = []

        def progressed() -> None:
            seen.append(card.state.text())
            assert " of 4 · step " in card.state.text() and card.bar.isVisible() and card.bar.value() > 0

        with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
            card.run.click()
            qtbot.waitUntil(progressed, timeout=30_000)
        assert card.data["state"] == "ok" and "progress" not in card.data and not card.bar.isVisible()
        assert any("Running…" in s for s in seen)
        page = window.show_mcp()
        qtbot.addWidget(page)
        qtbot.waitUntil(lambda: page.name.text() == "ctx", timeout=10_000)
        assert "log info (worker): starting 4 steps" in page.log.toPlainText()
    finally:
        window.controller.tools.close()


def test_a_call_the_user_stops_is_cancelled_at_the_server(
    qtbot: Any, qloop: Any, tmp_path: Path, cancelled: Path
) -> None:
    call = ("<|channel|>commentary to=functions.ctx__wait <|constrain|>json<|message|>"
            '{"seconds": 60}<|call|>')
    window = _window(qtbot, tmp_path, [call, "<|channel|>final<|message|>Stopped.<|return|>"])
    try:
        window.composer.box.setPlainText("Wait")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
        card = pending_card(qtbot, window)
        card.run.click()
        qtbot.waitUntil(lambda: card.data.get("state") == "running", timeout=10_000)
        time.sleep(0.5)  # the call is at the server
        with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
            window.composer.send.click()  # Stop
        qtbot.waitUntil(cancelled.exists, timeout=10_000)
        assert cancelled.read_text() == "cancelled"  # notifications/cancelled reached the server
        cards = [w for w in segments(window) if isinstance(w, ToolCard)]
        assert cards[0].data["state"] == "error" and "E-TOOL-CANCELLED" in cards[0].data["result"]
    finally:
        window.controller.tools.close()


def test_the_turn_yields_progress_and_a_changed_tool_list_reaches_the_registry(
    cancelled: Path,
) -> None:
    pool = McpPool()
    heard: list[tuple[str, str]] = []
    pool.listen(lambda name, what: heard.append((name, what)))
    try:
        tools = ConversationTools(ToolOptions(enabled=("mcp:ctx",)), discover(entry_points=False), pool)
        follow_tool_changes(pool, lambda: [tools])
        assert "functions.ctx__fresh" not in {t.qualified_name for t in tools.registry}
        client = ScriptedClient([
            '<|channel|>commentary to=functions.ctx__work <|constrain|>json<|message|>{"steps": 3}<|call|>',
            '<|channel|>commentary to=functions.ctx__grow <|constrain|>json<|message|>{}<|call|>',
            "<|channel|>final<|message|>Done.<|return|>",
        ])
        session = ChatSession(client, get_template("harmony"))  # type: ignore[arg-type]
        events = list(tool_turn(session, "Work, then grow.", tools.registry))
        progress = [e for e in events if isinstance(e, ToolProgress)]
        assert [(p.call_id, p.done, p.total) for p in progress][-1] == ("call_1", 3, 3)
        assert {p.message for p in progress} <= {"step 1", "step 2", "step 3"} and progress[0].done >= 1
        ran = [i for i, e in enumerate(events) if isinstance(e, ToolsRan)]
        assert events.index(progress[-1]) < ran[0]  # said while the call ran, before its outcome
        deadline = time.monotonic() + 15
        while "functions.ctx__fresh" not in {t.qualified_name for t in tools.registry}:
            assert time.monotonic() < deadline, pool.logs["ctx"]
            time.sleep(0.05)
        assert heard == [("ctx", "tools")]
        fresh = tools.registry.get("functions.ctx__fresh")
        assert fresh is not None and fresh.plugin == "MCP ctx" and fresh.function(text="new") in ("NEW", {"result": "NEW"})
        assert any("its tools changed" in line for line in pool.logs["ctx"])
        assert any("log info (worker): starting 3 steps" in line for line in pool.logs["ctx"])
    finally:
        pool.close()
