"""Starting the window: the Qt application on a qasync event loop.

Guarantees: the window appears before any model loads (the default model loads in the
background with a progress bar, started after the window is shown); building and showing the
window loads nothing of JSON mode, MCP servers, the server, documents, numpy or llama.cpp
(`tests/architecture/test_start_imports.py` lists what it does load); with
`HARMONY_DESK_QUIT_AFTER_SHOWN` set, `run_window` returns once the window is shown and painted,
before any model loads (the cold-start bench, `bench/ui_stream.py`). The screenshot command
is `app/ui/screenshot.py`.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from app.controllers import preferences
from app.controllers.bridge import EngineBridge
from app.controllers.chat import ChatController
from app.controllers.history_host import (
    Choice,
    HistoryStore,
    StoreError,
    open_history,
    sweep_snapshots,
)
from app.controllers.library_host import startup_choice
from app.controllers.model_host import ModelHost
from app.controllers.remote_host import RemoteHost
from app.ui import appearance
from app.ui.markdown import code_highlight
from app.ui.settings.dialog import apply_look
from app.ui.window.main_window import MainWindow
from app.ui.window.screen_fit import fit_window

QUIT_AFTER_SHOWN = "HARMONY_DESK_QUIT_AFTER_SHOWN"  # for the cold-start bench only


WARM_UP_MS = 1500  # after the window shows: what the first answer would otherwise load


def application(theme_choice: str | None = None) -> QApplication:
    """The Qt application, with the theme (`theme_choice`, else the settings') and text size."""
    existing = QApplication.instance()
    app = existing if isinstance(existing, QApplication) else QApplication(sys.argv[:1])
    app.setApplicationName("Harmony Desk")
    app.setOrganizationName("Harmony Desk")
    if existing is None:
        settings = preferences.current()
        apply_look(theme_choice or settings.theme, settings.font_size)
        appearance.follow_system(app)
    elif theme_choice is not None:
        appearance.apply(app, theme_choice)
    return app


def build_window(host: ModelHost | None = None, history: HistoryStore | None = None) -> MainWindow:
    """A window; with `history`, conversations are saved there (otherwise kept in memory)."""
    from app.controllers.mcp_context import McpContext
    from app.ui.mcp.elicit_dialog import attach

    bridge = EngineBridge()
    host = host or ModelHost(bridge)
    window = MainWindow(ChatController(host, history, RemoteHost()))
    attach(window)  # what MCP servers ask (sampling, input) is asked in this window
    c = window.controller  # `@` offers the servers' resources, `/` their prompts
    window.composer.use_mcp(McpContext(c.tools.mcp), lambda: c.doc, window.jobs)
    fit_window(window)  # the screen it opens on: its size and place (`screen_fit.py`)
    return window


def _ask_about_history(problem: StoreError) -> Choice:
    """The window's question when the history file cannot be opened."""
    from PySide6.QtWidgets import QMessageBox

    box = QMessageBox(QMessageBox.Icon.Warning, "Harmony Desk", problem.message)
    backup = box.addButton("Open the backup", QMessageBox.ButtonRole.AcceptRole)
    fresh = box.addButton("Start a fresh history", QMessageBox.ButtonRole.ResetRole)
    box.addButton("Quit", QMessageBox.ButtonRole.RejectRole)
    backup.setEnabled(bool(problem.backups))
    box.exec()
    clicked = box.clickedButton()
    return "backup" if clicked is backup else "fresh" if clicked is fresh else "quit"


_showing_crash = [False]


def crash_dialog(text: str) -> None:
    """The crash policy's dialog: one at a time; the window stays."""
    from PySide6.QtWidgets import QMessageBox

    if _showing_crash[0]:
        return
    _showing_crash[0] = True
    try:
        QMessageBox.critical(None, "Harmony Desk", text)
    finally:
        _showing_crash[0] = False


def run_window(model: str | None = None) -> int:
    """The window on a qasync loop; the default model (or `model`) loads in the background."""
    import qasync

    started = time.perf_counter()
    app = application()
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    history = open_history(_ask_about_history)
    if history is None:
        return 1
    window = build_window(history=history)
    window.show()
    quit_after_shown = bool(os.environ.get(QUIT_AFTER_SHOWN))
    if quit_after_shown:
        app.processEvents()  # laid out and painted, as the bench's bare window is
    print(f"window shown after {(time.perf_counter() - started) * 1000:.0f} ms", file=sys.stderr)
    if quit_after_shown:
        window.close()
        window.host.close()
        return 0
    QTimer.singleShot(WARM_UP_MS, code_highlight.warm_up)  # the window is idle by then
    sweeping = threading.Thread(
        target=sweep_snapshots, args=(history,), name="kv-sweep", daemon=True
    )
    QTimer.singleShot(WARM_UP_MS, sweeping.start)  # off the start path: it reads the keyring
    from app.ui.window.python_note import start_python_note

    start_python_note(window)  # the python tool's runtime compiled ahead, a quiet note while so
    chosen, n_ctx = startup_choice()
    window.load_model(model or chosen, n_ctx=n_ctx)
    closed = asyncio.Event()
    app.aboutToQuit.connect(closed.set)
    with loop:
        loop.run_until_complete(closed.wait())
    window.host.close()
    return 0


__all__ = ["application", "build_window", "run_window"]
