"""The files the next message carries, as chips inside the composer's field.

Guarantees: one chip per file, in the order attached, each naming its file (the full path in its
tooltip) and carrying a × that removes exactly that file (`removed`); chips wrap onto further
lines rather than widen the window; "Remove all" (`detach`) shows once two or more files are
attached; with no file the strip is hidden; `text()` says the files as one line
("📎 a.md  📎 b.pdf"), for assistive technology and tests alike.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPoint, QRect, QSize, Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLayoutItem,
    QSizePolicy,
    QToolButton,
    QWidget,
)

from app.ui.icons import give
from app.ui.theme import mark

NAME_PX = 220  # a longer file name is elided in its middle


class FlowLayout(QLayout):
    """Items left to right, wrapping onto a new line when the width runs out."""

    def __init__(self, parent: QWidget | None = None, spacing: int = 4) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self.setContentsMargins(0, 0, 0, 0)

    def addItem(self, item: QLayoutItem) -> None:
        self._items.append(item)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        return self._items.pop(index) if 0 <= index < len(self._items) else None

    def expandingDirections(self) -> Qt.Orientation:
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:
        return True

    def heightForWidth(self, width: int) -> int:
        return self._arrange(QRect(0, 0, width, 0), move=False)

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        self._arrange(rect, move=True)

    def sizeHint(self) -> QSize:
        return self.minimumSize()

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items (when `move`) and return the height they take in `rect`'s width."""
        x, y, line = rect.x(), rect.y(), 0
        for item in self._items:
            widget = item.widget()
            if widget is not None and widget.isHidden():
                continue
            hint = item.sizeHint()
            if x > rect.x() and x + hint.width() > rect.right() + 1:
                x, y, line = rect.x(), y + line + self._gap, 0
            if move:
                item.setGeometry(QRect(QPoint(x, y), hint))
            x += hint.width() + self._gap
            line = max(line, hint.height())
        return y + line - rect.y()


class FileChip(QFrame):
    """One attached file: its name and the × that removes it."""

    def __init__(self, path: Path, parent: QWidget) -> None:
        super().__init__(parent)
        mark(self, "chip")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 1, 2, 1)
        row.setSpacing(2)
        name = QLabel(self)
        name.setText(
            name.fontMetrics().elidedText(path.name, Qt.TextElideMode.ElideMiddle, NAME_PX)
        )
        name.setToolTip(str(path))
        name.setAccessibleName(f"Attached file {path.name}")
        self.remove = QToolButton(self)
        give(self.remove, "close")
        self.remove.setAccessibleName(f"Remove {path.name}")
        self.remove.setToolTip(f"The message does not carry {path.name}")
        self.remove.setIconSize(QSize(12, 12))
        row.addWidget(name)
        row.addWidget(self.remove)


class FileChips(QWidget):
    """The attached files' chips, each with its ×, and Remove all."""

    removed = Signal(Path)  # this file's × was pressed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Attached files")
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.flow = FlowLayout(self)
        self.flow.setContentsMargins(4, 2, 0, 0)  # in line with the message's text
        self.files: list[Path] = []
        self.chips: list[FileChip] = []
        self.detach = QToolButton(self)
        self.detach.setText("Remove all")
        self.detach.setAccessibleName("Remove the attached files")
        self.detach.setToolTip("The message carries none of these files")
        self.flow.addWidget(self.detach)
        self.hide()

    def show_files(self, files: list[Path]) -> None:
        """One chip per file (the strip hidden when there is none)."""
        for chip in self.chips:
            self.flow.removeWidget(chip)
            chip.hide()
            chip.deleteLater()
        self.flow.removeWidget(self.detach)
        self.files = list(files)
        self.chips = [self._chip(path) for path in files]
        for chip in self.chips:
            self.flow.addWidget(chip)
        self.flow.addWidget(self.detach)
        self.detach.setVisible(len(files) > 1)
        self.setVisible(bool(files))
        self.setToolTip("\n".join(str(path) for path in files))
        self.updateGeometry()

    def text(self) -> str:
        return "  ".join(f"📎 {path.name}" for path in self.files)

    def chip_of(self, path: Path) -> FileChip:
        """The chip showing `path`."""
        return self.chips[self.files.index(path)]

    def _chip(self, path: Path) -> FileChip:
        chip = FileChip(path, self)
        chip.remove.clicked.connect(lambda: self.removed.emit(path))
        return chip


__all__ = ["FileChip", "FileChips", "FlowLayout"]
