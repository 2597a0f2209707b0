"""The turn's timeline: prompt evaluation, decoding and tool calls as spans on one time axis,
with the decoding speed over time drawn above them.

Guarantees: drawn with QPainter from the reply's debug record only (`spans`, `token_times`);
time runs left to right from the turn's start to its last span's end; each span's tooltip says
what it was and how long it took; the speed curve is tokens per second in equal slices of the
decoding time (present when the tokens' arrival was recorded: the debug pane was open).
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QPointF, QRectF, QSize
from PySide6.QtGui import QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.ui.point_tips import PointTips
from app.ui.theme import current

LANE, GAP, CURVE, SLICES = 18, 4, 48, 24


def speeds(times: Sequence[float], slices: int = SLICES) -> list[tuple[float, float]]:
    """(slice middle ms, tokens per second) over the span of `times`."""
    if len(times) < 2 or times[-1] <= times[0]:
        return []
    start, end = times[0], times[-1]
    width = (end - start) / slices
    counts = [0] * slices
    for t in times[1:]:
        counts[min(slices - 1, int((t - start) / width))] += 1
    return [(start + width * (i + 0.5), c * 1000 / width) for i, c in enumerate(counts)]


class TurnTimeline(PointTips):
    """See the module guarantees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.spans: list[tuple[str, float, float]] = []
        self.times: list[float] = []
        self.setAccessibleName("Timeline of the turn")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(CURVE + 3 * (LANE + GAP) + GAP)

    def show_turn(self, spans: Sequence[tuple[str, float, float]], times: Sequence[float]) -> None:
        self.spans, self.times = list(spans), list(times)
        self.update()

    def sizeHint(self) -> QSize:
        return QSize(300, self.height())

    def _end(self) -> float:
        return max([end for _, _, end in self.spans] + self.times[-1:] + [1.0])

    def rect_of(self, kind: str, start: float, end: float) -> QRectF:
        scale = (self.width() - 2 * GAP) / self._end()
        lane = 0 if kind == "prompt" else 1 if kind == "decode" else 2
        top = CURVE + GAP + lane * (LANE + GAP)
        return QRectF(GAP + start * scale, top, max(2.0, (end - start) * scale), LANE)

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        t = current()
        colours = {"prompt": t.colour("muted"), "decode": t.colour("accent")}
        for kind, start, end in self.spans:
            painter.fillRect(self.rect_of(kind, start, end), colours.get(kind, t.colour("ok")))
        points = speeds(self.times)
        if points:
            top = max(s for _, s in points) or 1.0
            scale = (self.width() - 2 * GAP) / self._end()
            line = QPolygonF([QPointF(GAP + ms * scale, CURVE - (CURVE - GAP) * s / top)
                              for ms, s in points])  # fmt: skip
            painter.setPen(QPen(t.colour("accent"), 2))
            painter.drawPolyline(line)
            painter.setPen(t.colour("muted"))
            painter.drawText(GAP, GAP + 10, f"{top:.0f} tok/s")
        painter.end()

    def tooltip_at(self, pos: QPoint) -> str:
        for kind, start, end in self.spans:
            if self.rect_of(kind, start, end).contains(QPointF(pos)):
                words = {"prompt": "prompt evaluation", "decode": "decoding"}.get(kind, kind)
                return f"{words}: {end - start:.0f} ms (from {start:.0f} ms)"
        return ""

    def theme_changed(self) -> None:
        self.update()


__all__ = ["TurnTimeline", "speeds"]
