"""The conversation's column: one child laid out centred, no wider than a readable measure.

Guarantees: `Centred(child)` gives the child the whole width it is offered up to `MEASURE_PX`
(less `GUTTER` on each side when the space is narrow) and centres it in any width beyond; its
minimum width is the child's own (plus the gutters), never the width it was last given, so the
window can always shrink; heights follow the child's height for that width (word-wrapped text
included), so a scroll area showing it scrolls exactly its content.
"""

from __future__ import annotations

from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget

MEASURE_PX = 800  # the column's widest: about 100 characters of text, as readers are used to
GUTTER = 12  # pixels on each side when the column fills a narrow window


class Centred(QLayout):
    """A layout of one widget, centred, at most `width` pixels wide."""

    def __init__(
        self, parent: QWidget, child: QWidget, width: int = MEASURE_PX, gutter: int = GUTTER
    ) -> None:
        super().__init__(parent)
        self.setContentsMargins(0, 0, 0, 0)
        self.measure, self.gutter = width, gutter
        self._item: QLayoutItem | None = None
        self.addWidget(child)

    def addItem(self, item: QLayoutItem) -> None:
        self._item = item

    def count(self) -> int:
        return 1 if self._item is not None else 0

    def itemAt(self, index: int) -> QLayoutItem | None:
        return self._item if index == 0 else None

    def takeAt(self, index: int) -> QLayoutItem | None:
        item, self._item = (self._item, None) if index == 0 else (None, self._item)
        return item

    def expandingDirections(self) -> Qt.Orientation:
        if self._item is None:
            return Qt.Orientation(0)
        return self._item.expandingDirections()

    def _inner(self, width: int) -> int:
        """The child's width when the layout is `width` wide."""
        return max(0, min(self.measure, width - 2 * self.gutter))

    def sizeHint(self) -> QSize:
        hint = self._item.sizeHint() if self._item is not None else QSize(0, 0)
        return QSize(min(hint.width(), self.measure) + 2 * self.gutter, hint.height())

    def minimumSize(self) -> QSize:
        least = self._item.minimumSize() if self._item is not None else QSize(0, 0)
        return QSize(least.width() + 2 * self.gutter, least.height())

    def hasHeightForWidth(self) -> bool:
        return self._item is not None and self._item.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:
        if self._item is None:
            return 0
        return self._item.heightForWidth(self._inner(width))

    def setGeometry(self, rect: QRect) -> None:
        super().setGeometry(rect)
        if self._item is None:
            return
        inner = self._inner(rect.width())
        left = rect.x() + (rect.width() - inner) // 2
        self._item.setGeometry(QRect(left, rect.y(), inner, rect.height()))


def centred(child: QWidget, parent: QWidget, width: int = MEASURE_PX) -> QWidget:
    """A widget holding `child` centred at most `width` wide (for the composer's column)."""
    holder = QWidget(parent)
    child.setParent(holder)
    Centred(holder, child, width)
    return holder


__all__ = ["GUTTER", "MEASURE_PX", "Centred", "centred"]
