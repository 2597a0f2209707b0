"""The window's status bar, whose passing sentence fits the room it has.

Guarantees: a message (`showMessage`) wider than the room left of the bar's permanent widgets
is drawn cut with "…" at its end, never clipped mid-letter or drawn under those widgets; the
whole sentence is the bar's tooltip while it shows (none once it clears), so nothing said is
lost on a small screen; `currentMessage()` is always the whole sentence, as Qt's own bar gives
it; the panel is drawn by the style as Qt's own bar draws it.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QStatusBar, QStyle, QStyleOption, QWidget

MARGIN_PX = 6  # between the sentence and the bar's edge, or its first permanent widget


class FittedStatusBar(QStatusBar):
    """See the module guarantees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.messageChanged.connect(self.setToolTip)  # the whole sentence ("" clears it)

    def room(self) -> int:
        """The width the sentence may take: up to the leftmost permanent widget shown."""
        edges = [
            w.geometry().left()
            for w in self.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly)
            if w.isVisible() and w.geometry().left() > 0
        ]
        right = min(edges, default=self.width())
        return max(0, right - 2 * MARGIN_PX)

    def shown_text(self) -> str:
        """The sentence as drawn: whole, or cut with "…" to fit `room`."""
        return self.fontMetrics().elidedText(
            self.currentMessage(), Qt.TextElideMode.ElideRight, self.room()
        )

    def paintEvent(self, event: QPaintEvent) -> None:
        if not self.currentMessage():
            super().paintEvent(event)  # the widgets' frames, as Qt draws them
            return
        painter = QPainter(self)
        option = QStyleOption()
        option.initFrom(self)
        self.style().drawPrimitive(QStyle.PrimitiveElement.PE_PanelStatusBar, option, painter, self)
        painter.setPen(self.palette().windowText().color())
        box = self.rect().adjusted(MARGIN_PX, 0, 0, 0)
        box.setWidth(self.room())
        align = Qt.AlignmentFlag.AlignLeading | Qt.AlignmentFlag.AlignVCenter
        painter.drawText(box, int(align | Qt.TextFlag.TextSingleLine), self.shown_text())
        painter.end()


__all__ = ["FittedStatusBar"]
