"""The token strip: a reply's generated tokens as boxes coloured by how likely each was, the
likeliest alternatives on hover, the model's special tokens marked.

Guarantees: drawn with QPainter (no browser); a token's colour goes from the theme's error
colour (unlikely) to its ok colour (certain), by probability; the tooltip of a box gives the
token's probability and the alternatives the model had, as llama.cpp computed them; special
tokens are outlined — a local model's by id (`special`, the model's own list), a remote
answer's, which come as text only, by their `<|…|>` spelling; the strip wraps to its width and
sizes itself to its content; it shows nothing but the debug record it is given (and, when
that has no scored tokens, a sentence saying when tokens are scored).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.ui.debug.point_tips import PointTips
from app.ui.markdown.view import monospace
from app.ui.theme import current

Score = tuple[int, float, tuple[tuple[int, float], ...]]
TextScore = tuple[str, float, tuple[tuple[str, float], ...]]  # a remote endpoint's tokens
PAD, GAP = 3, 2
EMPTY = "No token probabilities for this answer: they are recorded while the debug pane is open."


def mix(low: QColor, high: QColor, p: float) -> QColor:
    """The colour `p` of the way from `low` to `high`."""
    p = min(1.0, max(0.0, p))
    return QColor(
        round(low.red() + (high.red() - low.red()) * p),
        round(low.green() + (high.green() - low.green()) * p),
        round(low.blue() + (high.blue() - low.blue()) * p),
    )


class TokenStrip(PointTips):
    """See the module guarantees; `piece` turns a token id into its text, `special` says
    whether an id is one of the model's special tokens."""

    def __init__(
        self,
        piece: Callable[[int], str],
        parent: QWidget | None = None,
        special: Callable[[int], bool] = lambda _token: False,
    ) -> None:
        super().__init__(parent)
        self.piece = piece
        self.special = special
        self.scores: list[TextScore] = []  # every token as text: (piece, logprob, alternatives)
        self.marked: list[bool] = []  # whether each token is a special one
        self.boxes: list[QRect] = []
        self.setFont(monospace())
        self.setAccessibleName("Token strip: generated tokens coloured by probability")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setMouseTracking(True)

    def show_scores(self, scores: Sequence[Score]) -> None:
        """Tokens of a local model, by id (in place of what was shown)."""
        self.scores, self.boxes, self.marked = [], [], []
        self.add_scores(scores)

    def show_text_scores(self, scores: Sequence[TextScore]) -> None:
        """Tokens as text (a remote endpoint's `logprobs`)."""
        self.scores, self.boxes = list(scores), []
        self.marked = [p.startswith("<|") and p.endswith("|>") and len(p) > 4 for p, _, _ in scores]
        self._place()
        self.update()

    def add_scores(self, scores: Sequence[Score]) -> None:
        """More tokens of the reply shown: only they are measured and placed (a streaming
        answer costs the GUI thread its new tokens per refresh, not all of them)."""
        piece = self.piece
        self.scores += [
            (piece(t), lp, tuple((piece(a), b) for a, b in top)) for t, lp, top in scores
        ]
        self.marked += [self.special(t) for t, _, _ in scores]
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
        if not self.boxes:  # room for the sentence that says why there is nothing
            self.setFixedHeight(3 * metrics.height() + 2 * GAP)
            return
        self.setFixedHeight(self.boxes[-1].bottom() + GAP + 1)

    def resizeEvent(self, event: object) -> None:
        self._layout()

    def sizeHint(self) -> QSize:
        return QSize(300, self.height())

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        t = current()
        if not self.scores:
            painter.setPen(t.colour("muted"))
            flags = Qt.AlignmentFlag.AlignLeft | Qt.TextFlag.TextWordWrap
            painter.drawText(self.rect().adjusted(GAP, GAP, -GAP, -GAP), flags, EMPTY)
        for (token, logprob, _top), box, special in zip(
            self.scores, self.boxes, self.marked, strict=True
        ):
            painter.fillRect(box, self.colour(logprob))
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
