"""MCP Apps through the real window (offscreen, real controllers, a scripted model): the model
calls the npm example server's `get-time`, the person runs it on its card, and the tool's own
view appears in that card, initialized over the bridge and showing the result the card shows;
without Qt WebEngine the same card says in one line that the view needs the extra."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel

from app.ui import mcp_apps
from tests.npm_servers import command
from tests.ui.test_mcp_apps import WAIT_MS, chromium_flags
from tests.ui.test_window import make_window, pending_card

__all__ = ["chromium_flags"]
pytestmark = [
    pytest.mark.qt_log_ignore(
        "QRhiGles2", "Failed to create RHI", "GPUInfo not initialized", "Unable to detect GPU"
    ),
]
CALL = "<|channel|>commentary to=functions.basic__get_time <|constrain|>json<|message|>{}<|call|>"


@pytest.fixture()
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from app.tools.mcp.config import McpServer, save_servers

    monkeypatch.setenv("HARMONY_DESK_CONFIG", str(tmp_path / "config"))
    server = McpServer(command=command("mcp-server-basic-vanillajs")[0], args=("--stdio",))
    save_servers({"basic": server})
    return tmp_path / "config"


def _run_the_call(qtbot: Any, tmp_path: Path) -> tuple[Any, Any]:
    window, _client = make_window(
        qtbot, tmp_path, [CALL, "<|channel|>final<|message|>Noon.<|return|>"]
    )
    window.controller.set_tools(("mcp:basic",))
    window.composer.box.setPlainText("What time is it on the server?")
    qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    card = pending_card(qtbot, window)
    with qtbot.waitSignal(window.controller.replyFinished, timeout=WAIT_MS):
        card.run.click()
    assert card.data["state"] == "ok", card.data
    return window, card


def test_a_tools_view_appears_in_its_card_with_the_result(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path, chromium_flags: None
) -> None:
    from app.ui.mcp_apps.view import McpAppView

    window, card = _run_the_call(qtbot, tmp_path)
    try:
        qtbot.waitUntil(lambda: card.findChild(McpAppView) is not None, timeout=WAIT_MS)
        view = card.findChild(McpAppView)
        qtbot.waitUntil(lambda: view.session.ready, timeout=WAIT_MS)
        time = json.loads(card.data["result"])["time"]
        box: list[str] = []

        def shown() -> str:
            view.sandbox.runJavaScript(
                "document.getElementById('server-time').textContent",
                0,
                lambda v: box.append(str(v)),
            )
            qtbot.waitUntil(lambda: bool(box), timeout=WAIT_MS)
            return box.pop()

        qtbot.waitUntil(lambda: shown() == time, timeout=WAIT_MS)
        _shoot_window(qtbot, window, view)
    finally:
        for view in card.findChildren(McpAppView):
            view.close_view()
        window.controller.tools.close()


def _shoot_window(qtbot: Any, window: Any, view: Any) -> None:
    """The window with the app's view in its card, light then dark, into $HARMONY_DESK_SHOTS
    when it is set (the note's pictures); each once the view paints its text in the theme."""
    import os

    from PySide6.QtWidgets import QApplication

    from app.ui import appearance
    from tests.ui.test_mcp_apps import SHOTS_ENV, _text_shown

    folder = os.environ.get(SHOTS_ENV)
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    window.resize(1600, 1000)
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    try:
        for name in ("light", "dark"):
            appearance.apply(app, name)
            assert _text_shown(qtbot, view, "server-time", dark=name == "dark")
            frame = _settled(qtbot, window)
            assert frame.save(str(Path(folder) / f"mcp-app-window-{name}.png"))
    finally:
        appearance.apply(app, "light")


def _settled(qtbot: Any, window: Any) -> Any:
    """A grab of `window` once two grabs in a row are alike: the page has painted all of it."""
    frames: list[Any] = []

    def settled() -> bool:
        frames.append(window.grab().toImage())
        return len(frames) > 1 and frames[-1] == frames[-2]

    qtbot.waitUntil(settled, timeout=WAIT_MS)
    return frames[-1]


def test_without_qt_webengine_the_card_says_the_view_needs_the_extra(
    qtbot: Any, qloop: Any, tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(mcp_apps, "available", lambda: False)
    window, card = _run_the_call(qtbot, tmp_path)
    try:

        def said() -> bool:
            return any(label.text() == mcp_apps.UNAVAILABLE for label in card.findChildren(QLabel))

        qtbot.waitUntil(said, timeout=WAIT_MS)
        assert card.result.toPlainText() == card.data["result"] and "time" in card.data["result"]
    finally:
        window.controller.tools.close()
