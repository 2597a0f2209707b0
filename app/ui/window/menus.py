"""The main window's menu bar: File, View and Help, and the shortcuts that work anywhere in it.

Guarantees: Ctrl+N (new chat), Ctrl+O (open a model), Ctrl+M (models), Ctrl+, (settings),
Ctrl+B (sidebar), Ctrl+D (debug pane), Ctrl+K (search chats) and Ctrl+Q (quit) are added to
the window itself, so they work wherever the keyboard focus is; everything the command line
does with the window's data is in the File menu too (import and export of conversations,
adding files and folders to the documents library: `exchange_dialogs.py`); File ▸ Serve…
opens the Serve page beside the quick switch (`serve.page_action`); File ▸
Endpoints… is there only when the window has remote endpoints; View ▸ Tool calls in this
chat… (Ctrl+Shift+T) opens the open chat's calls from the tool audit; each action is kept on the
window under the name the window's docs and tests use (`new_action`, `open_action`,
`models_action`, `settings_action`, `preferences_action`, `debug_action`, `search_action`,
`recent_menu`, `trash_menu`, `serve`), the newer ones on `exchange_dialogs.files_of(window)`.
The window is taken as `Window`, what the menus use of it (`MainWindow` is one, not imported).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QMenuBar

from app.controllers.serve_host import ServeHost
from app.ui.window import dialogs, exchange_dialogs
from app.ui.window.about import show_about
from app.ui.window.exchange_dialogs import WindowFiles
from app.ui.window.file_menus import RecentMenu, TrashMenu
from app.ui.window.serve_switch import ServeSwitch

if TYPE_CHECKING:
    from app.ui.sidebar.sidebar import Sidebar


class Window(dialogs.Window, exchange_dialogs.Window, Protocol):
    """The main window as its menus use it: what the dialogs and the File menu's actions use,
    and the actions and menus `build` keeps on it."""

    sidebar: Sidebar
    new_action: QAction
    open_action: QAction
    models_action: QAction
    settings_action: QAction
    preferences_action: QAction
    debug_action: QAction
    search_action: QAction
    recent_menu: RecentMenu
    trash_menu: TrashMenu
    serve: ServeSwitch

    def menuBar(self) -> QMenuBar: ...

    def show_models(self) -> object: ...

    def show_mcp(self) -> object: ...

    def show_settings(self) -> object: ...

    def set_debug(self, on: bool, remember: bool = True) -> None: ...


def build(window: Window) -> None:
    """The window's menus, in the order File, View, Help."""
    files = WindowFiles(window)
    _file_menu(window, files)
    _view_menu(window, files)
    widget = window.window()
    help_menu = window.menuBar().addMenu("&Help")
    about = QAction("About Harmony Desk", widget)
    about.triggered.connect(lambda: show_about(widget))
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
        widget.addAction(action)  # the shortcuts work wherever the focus is


def _view_menu(window: Window, files: WindowFiles) -> None:
    widget = window.window()
    view = window.menuBar().addMenu("&View")
    view.addAction(files.sidebar_action)
    view.aboutToShow.connect(lambda: files.sidebar_action.setChecked(window.sidebar_shown()))
    window.debug_action = QAction(
        "Debug pane", widget, checkable=True, shortcut=QKeySequence("Ctrl+D")
    )
    window.debug_action.toggled.connect(window.set_debug)
    view.addAction(window.debug_action)
    window.search_action = QAction("Search chats", widget, shortcut=QKeySequence("Ctrl+K"))
    window.search_action.triggered.connect(lambda: window.sidebar.search.setFocus())
    view.addAction(window.search_action)
    calls = QAction("Tool calls in this chat…", widget, shortcut=QKeySequence("Ctrl+Shift+T"))
    calls.triggered.connect(lambda: _tool_calls(window))
    view.addAction(calls)
    widget.addAction(calls)  # the shortcut works wherever the focus is


def _tool_calls(window: Window) -> None:
    """View ▸ Tool calls in this chat…: the audit of the open chat's calls (loaded when first
    asked for: the window's start does not pay for it)."""
    from app.ui.tool_calls.dialog import show_tool_calls

    show_tool_calls(window.window(), window.controller)


def _file_menu(window: Window, files: WindowFiles) -> None:
    controller, host, widget = window.controller, window.host, window.window()
    file_menu = window.menuBar().addMenu("&File")
    window.new_action = QAction("New chat", widget, shortcut=QKeySequence("Ctrl+N"))
    window.new_action.triggered.connect(controller.new_chat)
    window.open_action = QAction("Open model…", widget, shortcut=QKeySequence("Ctrl+O"))
    window.open_action.triggered.connect(lambda: dialogs.open_model_file(window))
    window.recent_menu = RecentMenu(host, window.load_model, widget)
    window.models_action = QAction("Models…", widget, shortcut=QKeySequence("Ctrl+M"))
    window.models_action.triggered.connect(window.show_models)
    file_menu.addAction(window.new_action)
    file_menu.addAction(window.open_action)
    file_menu.addAction(window.models_action)
    file_menu.addMenu(window.recent_menu)
    file_menu.addSeparator()
    _conversations(window, file_menu, files)
    file_menu.addSeparator()
    if controller.remote is not None:
        endpoints = QAction("Endpoints…", widget)
        endpoints.triggered.connect(lambda: dialogs.show_endpoints(window))
        file_menu.addAction(endpoints)
    window.settings_action = QAction("Model settings…", widget)
    window.settings_action.triggered.connect(lambda: dialogs.edit_model_settings(window))
    file_menu.addAction(window.settings_action)
    window.serve = ServeSwitch(widget, window.statusBar(), ServeHost(host, host.bridge))
    file_menu.addAction(window.serve.action)
    file_menu.addAction(window.serve.page_action)  # File ▸ Serve…: the Serve page
    mcp = QAction("MCP servers…", widget)
    mcp.triggered.connect(window.show_mcp)
    file_menu.addAction(mcp)
    window.preferences_action = QAction("Settings…", widget, shortcut=QKeySequence("Ctrl+,"))
    window.preferences_action.triggered.connect(window.show_settings)
    file_menu.addAction(window.preferences_action)
    file_menu.addSeparator()
    file_menu.addAction(files.quit_action)


def _conversations(window: Window, file_menu: QMenu, files: WindowFiles) -> None:
    """Import, export, the documents library and the trash."""
    file_menu.addAction(files.import_action)
    file_menu.addAction(files.export_action)
    file_menu.addMenu(files.export_all_menu)
    file_menu.addMenu(files.library_menu)
    window.trash_menu = TrashMenu(window.controller, window.window())
    file_menu.addMenu(window.trash_menu)


__all__ = ["build"]
