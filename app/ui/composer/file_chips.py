"""The files the next message carries, as chips inside the composer's field.

Guarantees: one chip per file, in the order attached, each naming its file (the full path in its
tooltip; after the name, a note when one is given, e.g. an MCP resource's size) and carrying a
× that removes exactly that file (`removed`); chips wrap onto further lines rather than widen
the window; "Remove all" (`detach`) shows once two or more files are
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
    """Items left to right, wrapping onto a new line when the width runs out; `right`: each
    line against the right edge, and the layout asks for the width of one line."""

    def __init__(
        self, parent: QWidget | None = None, spacing: int = 4, *, right: bool = False
    ) -> None:
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._gap = spacing
        self.right = right
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
        if not self.right:
            return self.minimumSize()
        hints = [hint for _, hint in self._shown()]
        width = sum(h.width() for h in hints) + self._gap * max(0, len(hints) - 1)
        return QSize(width, max((h.height() for h in hints), default=0))

    def minimumSize(self) -> QSize:
        size = QSize()
        for item in self._items:
            size = size.expandedTo(item.minimumSize())
        return size

    def _shown(self) -> list[tuple[QLayoutItem, QSize]]:
        widgets = [(item, item.widget()) for item in self._items]
        return [(i, i.sizeHint()) for i, w in widgets if w is None or not w.isHidden()]

    def _arrange(self, rect: QRect, move: bool) -> int:
        """Place the items (when `move`) and return the height they take in `rect`'s width."""
        lines: list[list[tuple[QLayoutItem, QSize]]] = [[]]
        x = rect.x()
        for item, hint in self._shown():
            if lines[-1] and x + hint.width() > rect.right() + 1:
                lines.append([])
                x = rect.x()
            lines[-1].append((item, hint))
            x += hint.width() + self._gap
        y = rect.y()
        for line in [line for line in lines if line]:
            width = sum(h.width() for _, h in line) + self._gap * (len(line) - 1)
            x = rect.right() + 1 - width if self.right else rect.x()
            for item, hint in line:
                if move:
                    item.setGeometry(QRect(QPoint(x, y), hint))
                x += hint.width() + self._gap
            y += max(h.height() for _, h in line) + self._gap
        return max(0, y - self._gap - rect.y())


class FileChip(QFrame):
    """One attached file: its name and the × that removes it."""

    def __init__(self, path: Path, parent: QWidget, note: str = "") -> None:
        super().__init__(parent)
        mark(self, "chip")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 1, 2, 1)
        row.setSpacing(2)
        name = QLabel(self)
        name.setText(
            name.fontMetrics().elidedText(path.name, Qt.TextElideMode.ElideMiddle, NAME_PX)
            + (f" · {note}" if note else "")
        )
        name.setToolTip(str(path))
        name.setAccessibleName(f"Attached file {path.name}" + (f", {note}" if note else ""))
        self.label = name
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

    def show_files(self, files: list[Path], notes: dict[Path, str] | None = None) -> None:
        """One chip per file, with its note if any (the strip hidden when there is none)."""
        for chip in self.chips:
            self.flow.removeWidget(chip)
            chip.hide()
            chip.deleteLater()
        self.flow.removeWidget(self.detach)
        self.files = list(files)
        self.chips = [self._chip(path, (notes or {}).get(path, "")) for path in files]
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

    def _chip(self, path: Path, note: str = "") -> FileChip:
        chip = FileChip(path, self, note)
        chip.remove.clicked.connect(lambda: self.removed.emit(path))
        return chip


__all__ = ["FileChip", "FileChips", "FlowLayout"]
