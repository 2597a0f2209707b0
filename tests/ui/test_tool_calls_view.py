"""Tools a user can see (M9, L7, L15 and readable names), in the window on the offscreen
platform, with a real MCP server over stdio built with the SDK (`fixtures/mcp_clock_server.py`,
configured as "time") and the scripted model calling it as a small model did in the review:
`functions.time__get_current_time` with the wrong zone, then echoing the tool's result in its
template's markup as its answer.

- the tool card names the tool "get_current_time · time", never `functions.time__…`;
- its Show result toggle says Hide result while the result shows, and the result's box is as
  tall as the result (nothing to scroll, no empty half of a box);
- the echoed `<tool_response>` never reaches the transcript; a notice says what was repeated;
- View ▸ Tool calls in this chat… lists the chat's calls from the audit: what ran, with the
  arguments the model sent and those the user ran, the result, who approved and when; it
  follows the open chat, and fits a 640×480 window in both themes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QApplication, QMenu

from app.tools.mcp.config import McpServer, save_servers
from app.ui import appearance
from app.ui.tool_calls.dialog import ToolCallsDialog
from app.ui.transcript.cards import ToolCard
from app.ui.window.main_window import MainWindow
from tests.gui_helpers import all_text
from tests.ui.test_window import make_window, pending_card

SERVER = str(Path(__file__).resolve().parents[1] / "fixtures" / "mcp_clock_server.py")
CALL = (
    "<|channel|>commentary to=functions.time__get_current_time <|constrain|>json"
    '<|message|>{"timezone":"America/Oslo"}<|call|>'
)
ECHO = (
    '<|channel|>final<|message|><tool_response> {"ok": true, "content": {"timezone":'
    ' "Europe/Oslo"}}</tool_response><|return|>'
)


@pytest.fixture()
def window(
    qtbot: Any, qloop: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[MainWindow]:
    """A window whose chat uses the MCP server "time"; its own config and audit."""
    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    monkeypatch.setenv("HARMONY_DESK_DATA", str(tmp_path / "data"))
    save_servers({"time": McpServer(command=sys.executable, args=(SERVER,), timeout=30)})
    window, _ = make_window(qtbot, tmp_path, [CALL, ECHO])
    window.controller.set_tools(("mcp:time",))
    try:
        yield window
    finally:
        window.controller.tools.close()
        appearance.apply(QApplication.instance(), "light")  # type: ignore[arg-type]


def run_the_call(qtbot: Any, window: MainWindow) -> ToolCard:
    """Ask for the time; the card waits; the zone is corrected and the call run."""
    window.composer.box.setPlainText("What time is it in Oslo?")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    card.args.setPlainText('{"timezone": "Europe/Oslo"}')
    with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
        card.run.click()
    return card


def open_calls(qtbot: Any, window: MainWindow) -> ToolCallsDialog:
    """View ▸ Tool calls in this chat…, as a user chooses it; waits for the audit's read."""
    view = next(a for a in window.menuBar().actions() if a.text() == "&View").menu()
    assert isinstance(view, QMenu)
    action = next(a for a in view.actions() if a.text() == "Tool calls in this chat…")
    assert isinstance(action, QAction) and action.shortcut().toString() == "Ctrl+Shift+T"
    dialog = window.findChild(ToolCallsDialog)
    if dialog is not None:
        with qtbot.waitSignal(dialog.shown, timeout=10_000):
            action.trigger()
        return dialog
    action.trigger()
    dialog = window.findChild(ToolCallsDialog)
    assert dialog is not None
    qtbot.waitUntil(lambda: not dialog.status.text().startswith("Reading"), timeout=10_000)
    return dialog


def test_the_card_names_the_tool_readably_and_its_result_toggles_and_fits(
    qtbot: Any, window: MainWindow
) -> None:
    window.composer.box.setPlainText("What time is it in Oslo?")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    title = card.title.text()
    assert "get_current_time</b> · time" in title and "functions." not in title, title
    assert "read-only" in title and "time__" not in title
    assert "functions.time__get_current_time" in card.title.toolTip()  # what the model called
    card.args.setPlainText('{"timezone": "Europe/Oslo"}')
    with qtbot.waitSignal(window.controller.replyFinished, timeout=30_000):
        card.run.click()
    assert card.data["state"] == "ok", card.data
    assert card.toggle.text() == "Show result" and card.result.isHidden()
    card.toggle.click()
    assert card.toggle.text() == "Hide result" and card.result.isVisible()
    qtbot.waitUntil(lambda: card.result.verticalScrollBar().maximum() == 0)
    lines = card.result.toPlainText().count("\n") + 1
    spare = card.result.height() - lines * card.result.fontMetrics().lineSpacing()
    assert 0 < spare < 2 * card.result.fontMetrics().lineSpacing() + 16, (spare, lines)
    card.toggle.click()
    assert card.toggle.text() == "Show result" and card.result.isHidden()


def test_an_echoed_tool_response_is_not_shown_raw_in_the_transcript(
    qtbot: Any, window: MainWindow
) -> None:
    run_the_call(qtbot, window)
    shown = all_text(window.transcript)
    assert "<tool_response>" not in shown and "</tool_response>" not in shown
    reply = window.controller.doc.turns[-1].version.reply
    assert reply is not None
    notices = [s.text for s in reply.segments if s.kind == "notice"]
    assert any("template's markup" in n for n in notices), notices
    answer = "".join(s.text for s in reply.segments if s.kind == "answer")
    assert "tool_response" not in answer  # the words stay, the template's wrapper goes


def test_the_tool_calls_view_shows_what_ran_with_what_its_result_and_who_approved(
    qtbot: Any, window: MainWindow
) -> None:
    card = run_the_call(qtbot, window)
    dialog = open_calls(qtbot, window)
    table = dialog.table
    assert table.topLevelItemCount() == 1, dialog.status.text()
    row = table.topLevelItem(0)
    assert row is not None
    when, tool, outcome, approver = (row.text(i) for i in range(4))
    assert tool == "get_current_time · time" and outcome.startswith("Done in ")
    assert approver == "You, when asked (Run)" and when[:2] == "20"
    detail = dialog.detail.toPlainText()
    assert '"timezone": "America/Oslo"' in detail  # as the model sent it
    assert "Arguments that ran (edited):" in detail and '"timezone": "Europe/Oslo"' in detail
    assert '"datetime"' in detail and "arguments edited" in detail
    assert card.result.toPlainText().strip("{} \n") in detail  # the same result as the card
    assert "1 tool call in this chat" in dialog.status.text()

    window.controller.new_chat()  # the view follows the open chat
    qtbot.waitUntil(lambda: "No tool calls in this chat yet" in dialog.status.text())
    assert table.topLevelItemCount() == 0 and dialog.detail.toPlainText() == ""
    dialog.close()


def test_the_tool_calls_view_fits_640_by_480_in_both_themes(qtbot: Any, window: MainWindow) -> None:
    run_the_call(qtbot, window)
    window.resize(640, 480)
    qtbot.waitUntil(lambda: window.width() <= 660 and window.height() <= 500)
    app = QApplication.instance()
    lightness = {}
    for name in ("dark", "light"):
        appearance.apply(app, name)  # type: ignore[arg-type]
        dialog = open_calls(qtbot, window)
        qtbot.waitUntil(dialog.isVisible)
        assert dialog.width() <= window.width() and dialog.height() <= window.height()
        assert dialog.table.height() >= 60 and dialog.detail.height() >= 60
        close = [b for b in dialog.findChildren(type(dialog.refresh_button)) if b.isVisible()]
        assert all(b.geometry().bottom() <= dialog.height() for b in close)
        lightness[name] = dialog.detail.palette().base().color().lightness()
        dialog.close()
    assert lightness["dark"] < 110 < lightness["light"], lightness
