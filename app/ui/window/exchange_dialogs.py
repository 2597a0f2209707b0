"""What the window does with files beyond the chat: File ▸ Import conversations…, Export
conversation…, Export all conversations, Add to library, Quit, and View ▸ Sidebar.

Guarantees: every file dialog answers at once and the work it starts runs off the GUI thread
(`ExchangeHost`, `LibraryFiles`): what it did is said in the status bar, a problem in the
window's banner (one sentence, the details behind it); an export is in the format its file
dialog's filter or the file's suffix names (the same formats as `harmony-desk history
export`), all conversations go into a folder one file each; an imported conversation is
listed in the sidebar and shown; files and folders added to the library are offered by the
composer's "@" as soon as they are indexed (while they are, the Add to library menu waits);
Quit (Ctrl+Q) closes the window as its close button does; Sidebar (Ctrl+B) shows or hides the
conversation list (`window.toggle_sidebar`). The actions live on one `WindowFiles` object,
a child of the window (`files_of(window)`), each also named by its object name. The window is
taken as `Window`, what the actions use of it (`MainWindow` is one, not imported here).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QStatusBar, QWidget

from app.controllers.attachments import library
from app.controllers.exchange_host import FORMATS, IMPORTABLE, ExchangeHost, format_of, with_suffix
from app.controllers.library_files import LibraryFiles, document_filter
from app.ui.start_folder import choose_folder, open_file, open_files, save_file

if TYPE_CHECKING:
    from app.controllers.background import Background
    from app.controllers.chat import ChatController
    from app.ui.composer.composer import Composer

SAID_MS = 15_000  # how long a sentence stays in the status bar


class Window(Protocol):
    """The main window as the File menu's actions use it."""

    controller: ChatController
    composer: Composer  # "@" offers the library's documents
    jobs: Background

    def window(self) -> QWidget: ...  # Qt's: the window itself (the actions' and dialogs' parent)

    def statusBar(self) -> QStatusBar: ...

    def show_problem(self, text: str, details: str = "") -> None: ...

    def toggle_sidebar(self) -> None: ...

    def sidebar_shown(self) -> bool: ...


def _action(text: str, parent: QWidget, name: str, shortcut: str = "") -> QAction:
    action = QAction(text, parent)
    action.setObjectName(name)
    if shortcut:
        action.setShortcut(QKeySequence(shortcut))
    return action


def file_name(title: str) -> str:
    """A conversation's title as a file name (no path separators, no odd characters)."""
    name = re.sub(r"[^\w\- ]+", "", title, flags=re.UNICODE).strip()[:60]
    return name or "conversation"


class WindowFiles(QObject):
    """See the module guarantees."""

    def __init__(self, window: Window) -> None:
        widget = window.window()  # the parent of the actions, the menus and the file dialogs
        super().__init__(widget)
        self.setObjectName("window_files")
        self.window, self.widget = window, widget
        self.exchange = ExchangeHost(window.controller)
        self.exchange.done.connect(self._say)
        self.exchange.failed.connect(window.show_problem)
        self.library = LibraryFiles()
        self.library.progressed.connect(lambda text: window.statusBar().showMessage(text))
        self.library.finished.connect(self._indexed)
        self.library.failed.connect(self._not_indexed)
        self.import_action = _action("Import conversations…", widget, "import_action")
        self.import_action.triggered.connect(self.import_conversations)
        self.export_action = _action(
            "Export conversation…", widget, "export_action", "Ctrl+Shift+E"
        )
        self.export_action.triggered.connect(self.export_conversation)
        self.export_all_menu = QMenu("Export all conversations", widget)
        self.export_all_menu.setObjectName("export_all_menu")
        for fmt, (listed, _) in FORMATS.items():
            action = self.export_all_menu.addAction(f"As {listed.split(' (')[0]}…")
            action.setObjectName(f"export_all_{fmt}")
            action.triggered.connect(lambda _=False, f=fmt: self.export_all(f))
        self.library_menu = QMenu("Add to library", widget)
        self.library_menu.setObjectName("library_menu")
        self.add_files_action = _action("Files…", widget, "add_files_action")
        self.add_files_action.triggered.connect(self.add_files)
        self.add_folder_action = _action("Folder…", widget, "add_folder_action")
        self.add_folder_action.triggered.connect(self.add_folder)
        self.library_menu.addAction(self.add_files_action)
        self.library_menu.addAction(self.add_folder_action)
        self.quit_action = _action("Quit", widget, "quit_action", "Ctrl+Q")
        self.quit_action.setMenuRole(QAction.MenuRole.QuitRole)
        self.quit_action.triggered.connect(widget.close)
        self.sidebar_action = _action("Sidebar", widget, "sidebar_action", "Ctrl+B")
        self.sidebar_action.setCheckable(True)
        self.sidebar_action.triggered.connect(self.toggle_sidebar)

    def _say(self, text: str) -> None:
        self.window.statusBar().showMessage(text, SAID_MS)

    # --- conversations -------------------------------------------------------------------

    def export_conversation(self) -> None:
        """The conversation shown, into a file the user names."""
        doc = self.window.controller.doc
        if not doc.turns:
            self.window.show_problem("This conversation has no messages yet: nothing to export.")
            return
        filters = [listed for listed, _ in FORMATS.values()]
        suggested = f"{file_name(doc.title)}.{FORMATS['ocm'][1]}"
        path, chosen = save_file(self.widget, "Export conversation", suggested, ";;".join(filters))
        if path:
            fmt = format_of(chosen, path)
            self.exchange.export_one(doc.id, with_suffix(path, fmt), fmt)

    def export_all(self, fmt: str) -> None:
        """Every conversation (not the trash), one file each, into a folder."""
        folder = choose_folder(self.widget, "Export all conversations into a folder")
        if folder:
            self.exchange.export_all(folder, fmt)

    def import_conversations(self) -> None:
        """OpenChatML, its JSON, LM Studio or Open WebUI conversations, from a file."""
        path = open_file(self.widget, "Import conversations", IMPORTABLE)
        if path:
            self._say(f"Importing {Path(path).name}…")
            self.exchange.import_from(path)

    # --- the documents library -----------------------------------------------------------

    def add_files(self) -> None:
        paths = open_files(self.widget, "Add documents to the library", document_filter())
        if paths:
            self._add(paths)

    def add_folder(self) -> None:
        folder = choose_folder(self.widget, "Add a folder to the library")
        if folder:
            self._add([folder])

    def _add(self, paths: list[str]) -> None:
        self.library_menu.setEnabled(False)  # one indexing at a time
        self._say("Adding to the library…")
        self.library.add(paths)

    def _indexed(self, said: str, unread: str) -> None:
        self.library_menu.setEnabled(True)
        self._say(said)
        if unread:
            self.window.show_problem(said, unread)
        composer = self.window.composer
        self.window.jobs.run(library, composer.set_documents)  # "@" offers them now

    def _not_indexed(self, text: str, details: str) -> None:
        self.library_menu.setEnabled(True)
        self.window.statusBar().clearMessage()
        self.window.show_problem(text, details)

    # --- the window ----------------------------------------------------------------------

    def toggle_sidebar(self) -> None:
        self.window.toggle_sidebar()
        self.sidebar_action.setChecked(self.window.sidebar_shown())


def files_of(window: QWidget) -> WindowFiles:
    """The window's `WindowFiles` (made by `menus.build`)."""
    found = window.findChild(WindowFiles, "window_files")
    assert isinstance(found, WindowFiles)
    return found


__all__ = ["WindowFiles", "file_name", "files_of"]
