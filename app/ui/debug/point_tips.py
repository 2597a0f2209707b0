"""Tooltips for widgets that draw their own items: the tip is what the item under the pointer
says (`tooltip_at`), and nothing where there is no item.

Guarantees: one tooltip handler for every self-drawn widget (the token strip, the timeline);
moving off an item hides the tip.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QPoint
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QToolTip, QWidget


class PointTips(QWidget):
    """A widget whose tooltip depends on the point under the pointer."""

    def tooltip_at(self, pos: QPoint) -> str:
        return ""

    def event(self, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self)
            else:
                QToolTip.hideText()
            return True
        return super().event(event)


__all__ = ["PointTips"]
