"""The conversation list beside the transcript: new, search, rename, pin, delete with undo.

Guarantees: the list shows what the controller last read (it reads it off the GUI thread); a
conversation answered by a remote endpoint is marked ☁ (its messages leave the computer); the
conversation whose answer is streaming is marked ● (and says so to a screen reader), so the
user who went to another chat sees where the answer goes on; a deleted conversation can be
brought back with Undo for ten seconds.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, QTimer
from PySide6.QtWidgets import (
    QInputDialog,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.chat import ChatController
from app.ui.icons import give


class Sidebar(QWidget):
    """Conversations: new, search, rename, pin, delete with undo."""

    def __init__(self, controller: ChatController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        layout = QVBoxLayout(self)
        self.new = QPushButton("New chat", self)
        give(self.new, "plus")
        self.new.setAccessibleName("New chat")
        self.search = QLineEdit(self)
        self.search.setPlaceholderText("Search chats (Ctrl+K)")
        self.search.setAccessibleName("Search chats")
        self.list = QListWidget(self)
        self.list.setAccessibleName("Conversations")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.undo = QPushButton("Undo delete", self)
        self.undo.setAccessibleName("Undo the last delete")
        self.undo.hide()
        for w in (self.new, self.search, self.list, self.undo):
            layout.addWidget(w)
        self.new.clicked.connect(controller.new_chat)
        self.search.textChanged.connect(controller.refresh_list)
        self.list.currentItemChanged.connect(self._selected)
        self.list.customContextMenuRequested.connect(self._menu)
        self.undo.clicked.connect(self._undo)
        controller.listChanged.connect(self.refresh)
        controller.docChanged.connect(self.refresh)
        controller.busyChanged.connect(lambda _busy: self.refresh())
        self.refresh()

    def refresh(self) -> None:
        """Show the list the controller last read (it reads it off the GUI thread)."""
        self.list.blockSignals(True)
        self.list.clear()
        answering = self.controller.answering
        for doc in self.controller.listing:
            remote = "☁ " if doc.endpoint is not None else ""  # its messages leave the computer
            streams = answering is not None and doc.id == answering.id
            item = QListWidgetItem(
                ("● " if streams else "") + ("📌 " if doc.pinned else "") + remote + doc.title
            )
            item.setData(Qt.ItemDataRole.UserRole, doc.id)
            if streams:
                item.setToolTip("An answer is coming in this chat")
                item.setData(Qt.ItemDataRole.AccessibleTextRole, f"{doc.title}, answering")
            self.list.addItem(item)
            if doc.id == self.controller.doc.id:
                self.list.setCurrentItem(item)
        self.list.blockSignals(False)

    def _selected(self, item: QListWidgetItem | None) -> None:
        if item is not None:
            self.controller.select(item.data(Qt.ItemDataRole.UserRole))

    def _menu(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        if item is None:
            return
        doc_id = item.data(Qt.ItemDataRole.UserRole)
        doc = next((d for d in self.controller.listing if d.id == doc_id), None)
        if doc is None:
            return
        menu = QMenu(self)
        rename = menu.addAction("Rename…")
        pin = menu.addAction("Unpin" if doc.pinned else "Pin")
        delete = menu.addAction("Delete")
        chosen = menu.exec(self.list.mapToGlobal(pos))
        if chosen is rename:
            title, ok = QInputDialog.getText(self, "Rename chat", "Title:", text=doc.title)
            if ok:
                self.controller.rename(doc_id, title)
        elif chosen is pin:
            self.controller.pin(doc_id, not doc.pinned)
        elif chosen is delete:
            self.delete(doc_id)

    def delete(self, doc_id: str) -> None:
        self.controller.delete(doc_id)
        self.undo.show()
        QTimer.singleShot(10_000, self.undo.hide)

    def _undo(self) -> None:
        self.controller.undo_delete()
        self.undo.hide()


__all__ = ["Sidebar"]
