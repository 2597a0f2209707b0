"""The token strip: a reply's generated tokens as boxes coloured by how likely each was, the
likeliest alternatives on hover, Harmony special tokens marked.

Guarantees: drawn with QPainter (no browser); a token's colour goes from the theme's error
colour (unlikely) to its ok colour (certain), by probability; the tooltip of a box gives the
token's probability and the alternatives the model had, as llama.cpp computed them; special
tokens are outlined; the strip wraps to its width and sizes itself to its content; it shows
nothing but the debug record it is given (tokens without scores are drawn neutral).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QEvent, QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QHelpEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QToolTip, QWidget

from app.ui.markdown_view import monospace
from app.ui.theme import current

Score = tuple[int, float, tuple[tuple[int, float], ...]]
TextScore = tuple[str, float, tuple[tuple[str, float], ...]]  # a remote endpoint's tokens
PAD, GAP = 3, 2


def mix(low: QColor, high: QColor, p: float) -> QColor:
    """The colour `p` of the way from `low` to `high`."""
    p = min(1.0, max(0.0, p))
    return QColor(
        round(low.red() + (high.red() - low.red()) * p),
        round(low.green() + (high.green() - low.green()) * p),
        round(low.blue() + (high.blue() - low.blue()) * p),
    )


class TokenStrip(QWidget):
    """See the module guarantees; `piece` turns a token id into its text."""

    def __init__(self, piece: Callable[[int], str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.piece = piece
        self.scores: list[TextScore] = []  # every token as text: (piece, logprob, alternatives)
        self.boxes: list[QRect] = []
        self.setFont(monospace())
        self.setAccessibleName("Token strip: generated tokens coloured by probability")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)

    def show_scores(self, scores: Sequence[Score]) -> None:
        """Tokens of a local model, by id."""
        self.show_text_scores(
            [
                (self.piece(t), lp, tuple((self.piece(a), b) for a, b in top))
                for t, lp, top in scores
            ]
        )

    def show_text_scores(self, scores: Sequence[TextScore]) -> None:
        """Tokens as text (a remote endpoint's `logprobs`)."""
        self.scores = list(scores)
        self._layout()
        self.update()

    def colour(self, logprob: float) -> QColor:
        t = current()
        return mix(t.colour("error"), t.colour("ok"), math.exp(logprob))

    def label(self, piece: str) -> str:
        text = piece.replace("\n", "↵").replace("\t", "⇥")
        return text if text.strip() else text.replace(" ", "·") or "∅"

    def _layout(self) -> None:
        metrics = self.fontMetrics()
        width = max(self.width(), 200)
        x = y = GAP
        height = metrics.height() + 2 * PAD
        self.boxes = []
        for token, _logprob, _top in self.scores:
            w = metrics.horizontalAdvance(self.label(token)) + 2 * PAD
            if x + w > width and x > GAP:
                x, y = GAP, y + height + GAP
            self.boxes.append(QRect(x, y, w, height))
            x += w + GAP
        self.setFixedHeight((self.boxes[-1].bottom() if self.boxes else 0) + GAP + 1)

    def resizeEvent(self, event: object) -> None:
        self._layout()

    def sizeHint(self) -> QSize:
        return QSize(300, self.height())

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        t = current()
        for (token, logprob, _top), box in zip(self.scores, self.boxes, strict=True):
            painter.fillRect(box, self.colour(logprob))
            special = token.startswith("<|") and token.endswith("|>")
            painter.setPen(QPen(QColor(t.special_text if special else t.window), 1))
            if special:
                painter.drawRect(box.adjusted(0, 0, -1, -1))
            painter.drawText(box, Qt.AlignmentFlag.AlignCenter, self.label(token))
        painter.end()

    def tooltip_at(self, pos: QPoint) -> str:
        """What hovering at `pos` says: the token, its probability, the alternatives."""
        for (token, logprob, top), box in zip(self.scores, self.boxes, strict=True):
            if box.contains(pos):
                others = ", ".join(f"{self.label(a)!r} {math.exp(lp):.1%}" for a, lp in top)
                return f"{self.label(token)!r}: {math.exp(logprob):.1%}\nalternatives: {others}"
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

    def theme_changed(self) -> None:
        self.update()


__all__ = ["TokenStrip", "mix"]
