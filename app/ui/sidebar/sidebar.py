"""The conversation list beside the transcript: new, search, rename, pin, delete with undo.

Guarantees: the list shows what the controller last read (it reads it off the GUI thread),
built in one go, under headers by date (`groups.py`: Pinned, Today, Yesterday, …): a
header is an item with no conversation id that cannot be selected — a click does nothing,
the arrow keys pass over it, and a current row set on it moves to the conversation below; a
title is cut to the list's width with "…" and said whole in its tooltip and accessible text;
while searching, each conversation found shows the excerpt around the match, the match in
bold; a conversation answered by a remote endpoint is marked ☁ (its messages leave the
computer); the conversation whose answer is streaming is marked ● (and says so to a screen
reader), so the user who went to another chat sees where the answer goes on; a chat with
queued messages (or a queued Regenerate, Edit, Continue) is marked ⏳ and their number
("⏳ 2", said as "2 queued"), following the queue as it changes; a deleted
conversation can be brought back with Undo for ten seconds; an empty "New chat" the user
switches away from is dropped, unless something of it is held (`empty_chats.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from PySide6.QtCore import QModelIndex, QPoint, Qt, QTimer
from PySide6.QtWidgets import (
    QAbstractItemView,
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
from app.controllers.send_queue import counted
from app.domain.history import ChatDoc
from app.domain.listing import plain
from app.ui.icons import give
from app.ui.sidebar.delegate import FOUND_ROLE, HEADER_ROLE, TITLE_ROLE, RowDelegate
from app.ui.sidebar.empty_chats import keep_started
from app.ui.sidebar.groups import grouped


class ConversationsView(QListWidget):
    """The list: the keys that move the current row (arrows, Home, End, Page Up/Down) land on
    conversations only, never on a date header."""

    def moveCursor(
        self, cursorAction: QAbstractItemView.CursorAction, modifiers: Qt.KeyboardModifier
    ) -> QModelIndex:
        index = super().moveCursor(cursorAction, modifiers)
        rows = [r for r in range(self.count()) if self.item(r).data(Qt.ItemDataRole.UserRole)]
        if (index.isValid() and index.row() in rows) or not rows:
            return index
        move = QAbstractItemView.CursorAction
        if cursorAction == move.MoveHome:
            return self.model().index(rows[0], 0)
        if cursorAction == move.MoveEnd:
            return self.model().index(rows[-1], 0)
        at = index.row() if index.isValid() else self.currentRow()
        if cursorAction in (move.MoveDown, move.MoveNext, move.MovePageDown, move.MoveRight):
            ahead = [r for r in rows if r >= at]
        else:
            ahead = [r for r in reversed(rows) if r <= at]
        nearest = ahead[0] if ahead else min(rows, key=lambda r: abs(r - at))
        return self.model().index(nearest, 0)


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
        self.clock: Callable[[], datetime] = datetime.now  # "today" for the groups (tests: fixed)
        self.list = ConversationsView(self)
        self.list.setAccessibleName("Conversations")
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.setItemDelegate(RowDelegate(self.list))
        self.list.setWordWrap(False)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setMouseTracking(True)  # a row under the pointer is shaded
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
        controller.queue.changed.connect(self.refresh)  # a chat's ⏳ mark
        keep_started(controller, self)  # an empty chat left behind is dropped (`empty_chats.py`)
        self.refresh()

    def refresh(self) -> None:
        """Show the list the controller last read (it reads it off the GUI thread)."""
        self.list.blockSignals(True)
        scrolled = self.list.verticalScrollBar().value()
        self.list.clear()
        searching = bool(self.controller.search_text.strip())
        current: QListWidgetItem | None = None
        for name, docs in grouped(self.controller.listing, self.clock()):
            self.list.addItem(self._header(name))
            for doc in docs:
                item = self._row(doc)
                self.list.addItem(item)
                if doc.id == self.controller.doc.id:
                    current = item
        if searching and not self.controller.listing:
            self.list.addItem(self._header(f"No chats match “{self.controller.search_text}”"))
        if current is not None:
            self.list.setCurrentItem(current)
        self.list.verticalScrollBar().setValue(scrolled)
        self.list.blockSignals(False)

    def theme_changed(self) -> None:
        """The rows draw with the theme's colours: draw them again (`appearance.apply`)."""
        self.list.viewport().update()

    @staticmethod
    def _header(name: str) -> QListWidgetItem:
        """A group's name: no conversation id, cannot be selected (the arrow keys skip it)."""
        item = QListWidgetItem(name)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setData(HEADER_ROLE, True)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, name)
        return item

    def _row(self, doc: ChatDoc) -> QListWidgetItem:
        answering = self.controller.answering
        remote = "☁ " if doc.endpoint is not None else ""  # its messages leave the computer
        streams = answering is not None and doc.id == answering.id
        waiting = self.controller.queue.of(doc.id)
        queued = len(waiting)
        waits = f"⏳ {queued} " if queued else ""
        marks = ("● " if streams else "") + waits + ("📌 " if doc.pinned else "") + remote
        item = QListWidgetItem(marks + doc.title)
        item.setData(Qt.ItemDataRole.UserRole, doc.id)
        said = [doc.title]
        tip = doc.title
        if doc.pinned:
            said.append("pinned")
        if remote:
            said.append(f"answered by {doc.endpoint}")
        if streams:
            said.append("answering")
            tip += "\nAn answer is coming in this chat"
        if queued:
            said.append(f"{queued} queued")
            tip += f"\n{counted(waiting)}: sent when the window is free"
        if doc.found and plain(doc.found) == doc.title:  # found in the title alone
            item.setData(TITLE_ROLE, [[marks, False], *(list(part) for part in doc.found)])
        elif doc.found:
            item.setData(FOUND_ROLE, [list(part) for part in doc.found])
            said.append(f"found: {plain(doc.found)}")
            tip += f"\n{plain(doc.found)}"
        item.setToolTip(tip)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, ", ".join(said))
        return item

    def _selected(self, item: QListWidgetItem | None) -> None:
        if item is None:
            return
        doc_id = item.data(Qt.ItemDataRole.UserRole)
        if doc_id is not None:
            self.controller.select(doc_id)
            return
        row = self.list.row(item)  # a header made current (by code): the conversation below
        below = next(
            (
                r
                for r in range(row + 1, self.list.count())
                if self.list.item(r).data(Qt.ItemDataRole.UserRole)
            ),
            None,
        )
        if below is not None:
            self.list.setCurrentRow(below)

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


__all__ = ["ConversationsView", "Sidebar"]
