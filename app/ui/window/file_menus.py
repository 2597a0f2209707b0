"""The File menu's lists: recent models, and the trash of deleted conversations.

Guarantees: each list is read when the menu opens (never stale); restoring from the trash
brings the conversation back as it was; emptying the trash asks first.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QMenu, QMessageBox, QWidget

from app.controllers.chat import ChatController
from app.controllers.model_host import ModelHost


class TrashMenu(QMenu):
    """Restore a deleted conversation, or empty the trash."""

    def __init__(self, controller: ChatController, parent: QWidget) -> None:
        super().__init__("Trash", parent)
        self.controller = controller
        self.aboutToShow.connect(self.fill)

    def fill(self) -> None:
        self.clear()
        trashed = self.controller.trash()
        for doc_id, title, _when in trashed:
            action = self.addAction(f"Restore “{title}”")
            action.triggered.connect(lambda _=False, d=doc_id: self.controller.restore(d))
        if trashed:
            self.addSeparator()
            empty = self.addAction(f"Empty trash ({len(trashed)})…")
            empty.triggered.connect(self._empty)
        else:
            self.addAction("The trash is empty").setEnabled(False)

    def _empty(self) -> None:
        answer = QMessageBox.question(
            self.parentWidget(), "Empty trash", "Remove the conversations in the trash for good?"
        )
        if answer == QMessageBox.StandardButton.Yes:
            self.controller.empty_trash()


class RecentMenu(QMenu):
    """The models opened last; choosing one loads it."""

    def __init__(self, host: ModelHost, load: Callable[[str], object], parent: QWidget) -> None:
        super().__init__("Recent models", parent)
        self.host, self.load = host, load
        self.aboutToShow.connect(self.fill)

    def fill(self) -> None:
        self.clear()
        for path in self.host.recent.load():
            action = self.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.load(p))


__all__ = ["RecentMenu", "TrashMenu"]
