"""The status bar's context budget: a small bar split by part — instructions, tools, documents,
history, the answer's reserve, the room left — beside the "context 385/4,096" figure.

Guarantees: each part takes its share of the bar's width in proportion to the context (a part
of a token or more is at least a pixel wide), in the theme's colours (`PARTS`); the bar's
tooltip and accessible description are the budget's own sentence, the line the terminal prints
after a turn; from `NEARLY_FULL` of the context the parts are drawn in the theme's error colour
and the figure says "nearly full" (or "full"); with no budget (a remote answer, or before the
first answer) the bar is hidden and says nothing.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QWidget

from app.domain.budget import Budget
from app.ui import theme

# the theme colour each part is drawn in (the room left: the border colour, an empty track)
PARTS = {
    "instructions": "muted",
    "tools": "preamble",
    "documents": "ok",
    "history": "accent",
    "answer": "special_text",
    "left": "border",
}
WIDTH, HEIGHT = 120, 10  # the bar, in pixels


class BudgetBar(QWidget):
    """See the module guarantees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.budget: Budget | None = None
        self.setFixedSize(QSize(WIDTH, HEIGHT))
        self.setAccessibleName("Context budget")
        self.hide()

    def show_budget(self, budget: Budget | None) -> None:
        """Draw `budget` (None: hide the bar)."""
        self.budget = budget
        said = budget.sentence() if budget is not None else ""
        self.setToolTip(said)
        self.setAccessibleDescription(said)
        self.setVisible(budget is not None)
        self.update()

    def widths(self) -> list[tuple[str, float]]:
        """(part, pixels) of each part, in order, adding up to the bar's width."""
        budget = self.budget
        if budget is None or budget.n_ctx <= 0:
            return []
        parts = budget.parts()
        total = max(budget.n_ctx, budget.used + budget.reserve)  # an overfull bar fills whole
        return [(name, max(1.0, self.width() * n / total) if n else 0.0) for name, n in parts]

    def paintEvent(self, event: QPaintEvent) -> None:
        budget = self.budget
        if budget is None:
            return
        t = theme.current()
        painter = QPainter(self)
        x = 0.0
        for name, width in self.widths():
            role = "error" if budget.nearly_full and name not in ("left", "answer") else PARTS[name]
            colour = QColor(t.colour(role))
            painter.fillRect(QRectF(x, 0, width, self.height()), colour)
            x += width
        painter.end()


def figure(budget: Budget) -> str:
    """The status bar's words beside the bar: "context 385/4,096", with its warning."""
    return budget.headline() + budget.warning()


__all__ = ["PARTS", "BudgetBar", "figure"]
