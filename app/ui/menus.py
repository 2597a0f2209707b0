"""The main window's menu bar: File, View and Help, and the shortcuts that work anywhere in it.

Guarantees: Ctrl+N (new chat), Ctrl+O (open a model), Ctrl+M (models), Ctrl+, (settings),
Ctrl+B (sidebar), Ctrl+D (debug pane), Ctrl+K (search chats) and Ctrl+Q (quit) are added to
the window itself, so they work wherever the keyboard focus is; everything the command line
does with the window's data is in the File menu too (import and export of conversations,
adding files and folders to the documents library: `exchange_dialogs.py`); File ▸
Endpoints… is there only when the window has remote endpoints; each action is kept on the
window under the name the window's docs and tests use (`new_action`, `open_action`,
`models_action`, `settings_action`, `preferences_action`, `debug_action`, `search_action`,
`recent_menu`, `trash_menu`, `serve`), the newer ones on `exchange_dialogs.files_of(window)`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu

from app.controllers.serve_host import ServeHost
from app.ui import window_dialogs
from app.ui.about import show_about
from app.ui.exchange_dialogs import WindowFiles
from app.ui.file_menus import RecentMenu, TrashMenu
from app.ui.serve_switch import ServeSwitch

if TYPE_CHECKING:  # for the annotations only: the window imports this module
    from app.ui.main_window import MainWindow


def build(window: MainWindow) -> None:
    """The window's menus, in the order File, View, Help."""
    files = WindowFiles(window)
    _file_menu(window, files)
    _view_menu(window, files)
    help_menu = window.menuBar().addMenu("&Help")
    about = QAction("About Harmony Desk", window)
    about.triggered.connect(lambda: show_about(window))
    help_menu.addAction(about)
    for action in (
        window.new_action,
        window.open_action,
        window.models_action,
        window.debug_action,
        window.search_action,
        window.preferences_action,
        files.sidebar_action,
        files.quit_action,
    ):
        window.addAction(action)  # the shortcuts work wherever the focus is


def _view_menu(window: MainWindow, files: WindowFiles) -> None:
    view = window.menuBar().addMenu("&View")
    view.addAction(files.sidebar_action)
    view.aboutToShow.connect(lambda: files.sidebar_action.setChecked(window.sidebar_shown()))
    window.debug_action = QAction(
        "Debug pane", window, checkable=True, shortcut=QKeySequence("Ctrl+D")
    )
    window.debug_action.toggled.connect(window.set_debug)
    view.addAction(window.debug_action)
    window.search_action = QAction("Search chats", window, shortcut=QKeySequence("Ctrl+K"))
    window.search_action.triggered.connect(lambda: window.sidebar.search.setFocus())
    view.addAction(window.search_action)


def _file_menu(window: MainWindow, files: WindowFiles) -> None:
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
    file_menu.addSeparator()
    _conversations(window, file_menu, files)
    file_menu.addSeparator()
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
    file_menu.addSeparator()
    file_menu.addAction(files.quit_action)


def _conversations(window: MainWindow, file_menu: QMenu, files: WindowFiles) -> None:
    """Import, export, the documents library and the trash."""
    file_menu.addAction(files.import_action)
    file_menu.addAction(files.export_action)
    file_menu.addMenu(files.export_all_menu)
    file_menu.addMenu(files.library_menu)
    window.trash_menu = TrashMenu(window.controller, window)
    file_menu.addMenu(window.trash_menu)


__all__ = ["build"]
