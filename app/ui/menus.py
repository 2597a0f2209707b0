"""The main window's menu bar: File, View and Help, and the shortcuts that work anywhere in it.

Guarantees: Ctrl+N (new chat), Ctrl+O (open a model), Ctrl+M (models), Ctrl+, (settings),
Ctrl+D (debug pane) and Ctrl+K (search chats) are added to the window itself, so they work
wherever the keyboard focus is; File ▸ Endpoints… is there only when the window has remote
endpoints; each action is kept on the window under the name the window's docs and tests use
(`new_action`, `open_action`, `models_action`, `settings_action`, `preferences_action`,
`debug_action`, `search_action`, `recent_menu`, `trash_menu`, `serve`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence

from app.controllers.serve_host import ServeHost
from app.ui import window_dialogs
from app.ui.about import show_about
from app.ui.file_menus import RecentMenu, TrashMenu
from app.ui.serve_switch import ServeSwitch

if TYPE_CHECKING:  # for the annotations only: the window imports this module
    from app.ui.main_window import MainWindow


def build(window: MainWindow) -> None:
    """The window's menus, in the order File, View, Help."""
    _file_menu(window)
    view = window.menuBar().addMenu("&View")
    window.debug_action = QAction(
        "Debug pane", window, checkable=True, shortcut=QKeySequence("Ctrl+D")
    )
    window.debug_action.toggled.connect(window.set_debug)
    view.addAction(window.debug_action)
    help_menu = window.menuBar().addMenu("&Help")
    about = QAction("About Harmony Desk", window)
    about.triggered.connect(lambda: show_about(window))
    help_menu.addAction(about)
    window.search_action = QAction("Search chats", window, shortcut=QKeySequence("Ctrl+K"))
    window.search_action.triggered.connect(lambda: window.sidebar.search.setFocus())
    view.addAction(window.search_action)
    for action in (
        window.new_action,
        window.open_action,
        window.models_action,
        window.debug_action,
        window.search_action,
        window.preferences_action,
    ):
        window.addAction(action)  # the shortcuts work wherever the focus is


def _file_menu(window: MainWindow) -> None:
    controller, host = window.controller, window.host
    file_menu = window.menuBar().addMenu("&File")
    window.new_action = QAction("New chat", window, shortcut=QKeySequence("Ctrl+N"))
    window.new_action.triggered.connect(controller.new_chat)
    window.open_action = QAction("Open model…", window, shortcut=QKeySequence("Ctrl+O"))
    window.open_action.triggered.connect(lambda: window_dialogs.open_model_file(window))
    window.recent_menu = RecentMenu(host, window.load_model, window)
    window.models_action = QAction("Models…", window, shortcut=QKeySequence("Ctrl+M"))
    window.models_action.triggered.connect(window.show_models)
    file_menu.addAction(window.new_action)
    file_menu.addAction(window.open_action)
    file_menu.addAction(window.models_action)
    file_menu.addMenu(window.recent_menu)
    window.trash_menu = TrashMenu(controller, window)
    file_menu.addMenu(window.trash_menu)
    if controller.remote is not None:
        endpoints = QAction("Endpoints…", window)
        endpoints.triggered.connect(lambda: window_dialogs.show_endpoints(window))
        file_menu.addAction(endpoints)
    window.settings_action = QAction("Model settings…", window)
    window.settings_action.triggered.connect(lambda: window_dialogs.edit_model_settings(window))
    file_menu.addAction(window.settings_action)
    window.serve = ServeSwitch(window, ServeHost(host, host.bridge))
    file_menu.addAction(window.serve.action)
    mcp = QAction("MCP servers…", window)
    mcp.triggered.connect(window.show_mcp)
    file_menu.addAction(mcp)
    window.preferences_action = QAction("Settings…", window, shortcut=QKeySequence("Ctrl+,"))
    window.preferences_action.triggered.connect(window.show_settings)
    file_menu.addAction(window.preferences_action)


__all__ = ["build"]
