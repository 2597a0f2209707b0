"""The small parts a turn is made of: its icon buttons and the user's message bubble.

Guarantees: an `ActionButton` draws its icon only but keeps its text (said as its tooltip, and
its accessible name is the longer sentence it is given), sits in the tab order and is pressed
by Enter as well as Space; a `Bubble` asks for the width its longest line needs and no more,
never more than its maximum width (the turn sets that to its share of the column), and may
shrink to a few characters, so the window can always get narrower.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QLabel, QToolButton, QWidget

from app.ui.icons import give
from app.ui.theme import mark

ICON_PX = 16


class ActionButton(QToolButton):
    """A small, flat, icon-only button; its text is its tooltip (see the module guarantees)."""

    def __init__(
        self, text: str, name: str, icon: str, parent: QWidget, *, show_text: bool = False
    ) -> None:
        super().__init__(parent)
        self.setText(text)
        self.setAccessibleName(name)
        self.setToolTip(name if name.lower().startswith(text.lower()) else f"{text}: {name}")
        give(self, icon)
        self.setIconSize(QSize(ICON_PX, ICON_PX))
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolButtonStyle(
            Qt.ToolButtonStyle.ToolButtonTextBesideIcon
            if show_text
            else Qt.ToolButtonStyle.ToolButtonIconOnly
        )
        mark(self, "action")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.isEnabled():
            self.click()
            return
        super().keyPressEvent(event)


class Bubble(QLabel):
    """The user's message: plain text, selectable, as wide as its longest line allows."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mark(self, "bubble")

    def _natural(self) -> int:
        """The width that holds the longest line unbroken, with the bubble's padding."""
        metrics = self.fontMetrics()
        lines = self.text().split("\n")
        widest = max((metrics.horizontalAdvance(line) for line in lines), default=0)
        margins = self.contentsMargins()
        return widest + margins.left() + margins.right() + 2 * self.margin() + 4

    def sizeHint(self) -> QSize:
        width = min(self._natural(), self.maximumWidth())
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        width = min(self._natural(), self.fontMetrics().averageCharWidth() * 8)
        return QSize(width, super().minimumSizeHint().height())


__all__ = ["ActionButton", "Bubble"]
