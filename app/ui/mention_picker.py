"""The "@" picker: the documents library's files, filtered by what follows the "@".

Guarantees: a mention starts only at the start of a word ("@rep" after a space or at the start
of a line, never inside "bob@example.com"); the picker shows only when at least one document
matches what is typed after the "@" (nothing to pick, nothing shown, and an empty library is
never offered); it never takes the keyboard focus — the message box keeps every keystroke and
hands the picker only Up, Down, Tab and Esc while it is showing, and Enter only once the user
has moved in the list with Up or Down (so "@dataclass" then Enter still sends, and Shift+Enter
is always a new line).
"""

from __future__ import annotations

import re
from pathlib import Path

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QWidget

SHOWN = 8  # documents listed at most
LONGEST = 256  # characters a mention may have
_MENTION = re.compile(r"(?:^|\s)@([^\s@]*)$")


def mention_at(before_cursor: str) -> str | None:
    """What is typed after a word-starting "@" right before the cursor ("" just after the
    "@"); None when the cursor is not in a mention."""
    tail = before_cursor[-LONGEST:]  # per keystroke: never a scan of a long paste
    if len(tail) < len(before_cursor):
        tail = "x" + tail  # not the start of a line
    found = _MENTION.search(tail)
    return found.group(1) if found else None


def matching(documents: list[Path], typed: str) -> list[Path]:
    """The documents whose file name contains `typed` (any case), those starting with it first."""
    needle = typed.casefold()
    hits = [d for d in documents if needle in d.name.casefold()]
    return sorted(hits, key=lambda d: not d.name.casefold().startswith(needle))[:SHOWN]


class MentionPicker(QListWidget):
    """The matching documents, under the message box; picked with the mouse or the keys the
    box hands over (`key`)."""

    picked = Signal(Path)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setAccessibleName("Documents to attach")
        self.setMaximumHeight(160)
        self.setToolTip("Tab attaches the highlighted document; Up and Down choose another")
        self.moved = False  # Up or Down pressed since the picker showed: Enter picks too
        self.itemClicked.connect(self._clicked)
        self.hide()

    def show_for(self, documents: list[Path], typed: str | None) -> None:
        """List the documents matching `typed` (None: not in a mention), or hide."""
        found = matching(documents, typed) if typed is not None else []
        self.clear()
        for path in found:
            item = QListWidgetItem(path.name, self)
            item.setData(Qt.ItemDataRole.UserRole, str(path))
            item.setToolTip(str(path))
        if found and not self.isVisible():
            self.moved = False
        self.setVisible(bool(found))
        if found:
            self.setCurrentRow(0)

    def key(
        self, key: int, modifiers: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
    ) -> bool:
        """A key the message box hands over while the picker shows; True when it was used."""
        if not self.isVisible() or modifiers & ~Qt.KeyboardModifier.KeypadModifier:
            return False
        if key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = -1 if key == Qt.Key.Key_Up else 1
            self.setCurrentRow((self.currentRow() + step) % self.count())
            self.moved = True
            return True
        enter = key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if key == Qt.Key.Key_Tab or (enter and self.moved):
            item = self.currentItem()
            if item is not None:
                self._clicked(item)
            return True
        if key == Qt.Key.Key_Escape:
            self.hide()
            return True
        return False

    def _clicked(self, item: QListWidgetItem) -> None:
        self.hide()
        self.picked.emit(Path(str(item.data(Qt.ItemDataRole.UserRole))))


__all__ = ["SHOWN", "MentionPicker", "matching", "mention_at"]
