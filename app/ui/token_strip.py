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

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.ui.markdown_view import monospace
from app.ui.point_tips import PointTips
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


class TokenStrip(PointTips):
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
        """Tokens of a local model, by id (in place of what was shown)."""
        self.scores, self.boxes = [], []
        self.add_scores(scores)

    def show_text_scores(self, scores: Sequence[TextScore]) -> None:
        """Tokens as text (a remote endpoint's `logprobs`)."""
        self.scores, self.boxes = list(scores), []
        self._place()
        self.update()

    def add_scores(self, scores: Sequence[Score]) -> None:
        """More tokens of the reply shown: only they are measured and placed (a streaming
        answer costs the GUI thread its new tokens per refresh, not all of them)."""
        piece = self.piece
        self.scores += [
            (piece(t), lp, tuple((piece(a), b) for a, b in top)) for t, lp, top in scores
        ]
        self._place()
        self.update()

    def colour(self, logprob: float) -> QColor:
        t = current()
        return mix(t.colour("error"), t.colour("ok"), math.exp(logprob))

    def label(self, piece: str) -> str:
        text = piece.replace("\n", "↵").replace("\t", "⇥")
        return text if text.strip() else text.replace(" ", "·") or "∅"

    def _layout(self) -> None:
        self.boxes = []
        self._place()

    def _place(self) -> None:
        """Boxes for the tokens that have none yet, after the last one."""
        metrics = self.fontMetrics()
        width = max(self.width(), 200)
        height = metrics.height() + 2 * PAD
        last = self.boxes[-1] if self.boxes else None
        x, y = (last.right() + 1 + GAP, last.top()) if last else (GAP, GAP)
        for token, _logprob, _top in self.scores[len(self.boxes) :]:
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

    def theme_changed(self) -> None:
        self.update()


__all__ = ["TokenStrip", "mix"]
