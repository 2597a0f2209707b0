"""The turn's timeline: prompt evaluation, decoding and tool calls as spans on one time axis,
with the decoding speed over time drawn above them.

Guarantees: drawn with QPainter from the reply's debug record only (`spans`, `token_times`)
and its `Figures`; time runs left to right from the turn's start to its last span's end; each
span's tooltip says what it was and how long it took; the speed curve is tokens per second in
equal slices of the decoding time (present when the tokens' arrival was recorded: the debug
pane was open). The one speed written as the answer's is `Figures.rate()` — the number the
status bar and the answer's footer show — drawn as a dashed line over the last decoding span
and labelled "average"; the curve's highest slice is labelled "peak", apart from it, so an
instant's burst is never read as the answer's speed. Each span is labelled on the timeline
("prompt 1,255 ms", "decoding 2,789 ms", "tool NAME 30 ms"): inside its bar where it fits, else
just right of it where that lane is free, else left out (its tooltip still says it); labels
never overlap one another or another bar.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QPoint, QPointF, QRectF, QSize, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPaintEvent, QPen, QPolygonF
from PySide6.QtWidgets import QSizePolicy, QWidget

from app.domain.figures import Figures
from app.ui.debug.point_tips import PointTips
from app.ui.theme import current

LANE, GAP, LABEL, CURVE, SLICES = 18, 4, 16, 44, 24


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
        self.figures = Figures()
        self.setAccessibleName("Timeline of the turn")
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.setFixedHeight(LABEL + CURVE + 3 * (LANE + GAP) + GAP)

    def show_turn(
        self,
        spans: Sequence[tuple[str, float, float]],
        times: Sequence[float],
        figures: Figures | None = None,
    ) -> None:
        self.spans, self.times = list(spans), list(times)
        self.figures = figures or Figures()
        self.setAccessibleDescription(self.said())
        self.update()

    def average(self) -> str:
        """The label of the answer's speed: the status bar's number, "" when not measured."""
        rate = self.figures.rate()
        return f"average {rate}" if rate else ""

    def peak(self) -> str:
        """The label of the curve's highest slice, "" without a curve."""
        points = speeds(self.times)
        return f"peak {max(s for _, s in points):.0f} tok/s" if points else ""

    def said(self) -> str:
        """The timeline in words (its accessible description)."""
        parts = [self.average(), self.peak()]
        parts += [f"{kind}: {end - start:.0f} ms" for kind, start, end in self.spans]
        return "; ".join(p for p in parts if p)

    def sizeHint(self) -> QSize:
        return QSize(260, self.height())

    def _end(self) -> float:
        return max([end for _, _, end in self.spans] + self.times[-1:] + [1.0])

    def _x(self, ms: float) -> float:
        return GAP + ms * (self.width() - 2 * GAP) / self._end()

    def rect_of(self, kind: str, start: float, end: float) -> QRectF:
        lane = 0 if kind == "prompt" else 1 if kind == "decode" else 2
        top = LABEL + CURVE + GAP + lane * (LANE + GAP)
        return QRectF(self._x(start), top, max(2.0, self._x(end) - self._x(start)), LANE)

    def labels(self) -> list[tuple[str, QRectF]]:
        """Each span's label and where it is drawn (`span_label` words; see the module)."""
        metrics = QFontMetricsF(self.font())
        rects = [(kind, self.rect_of(kind, start, end)) for kind, start, end in self.spans]
        placed: list[tuple[str, QRectF]] = []
        for (kind, start, end), (_, bar) in zip(self.spans, rects, strict=True):
            text = span_label(kind, end - start)
            width = metrics.horizontalAdvance(text) + 6
            inside = QRectF(bar.left(), bar.top(), width, bar.height())
            beside = QRectF(bar.right() + 2, bar.top(), width, bar.height())
            for rect in (inside, beside):
                fits = rect.right() <= (bar.right() if rect is inside else self.width() - GAP)
                others = [r for k, r in rects if r is not bar] + [r for _, r in placed]
                if fits and not any(rect.intersects(r) for r in others):
                    placed.append((text, rect))
                    break
        return placed

    def _curve_y(self, speed: float, top: float) -> float:
        return LABEL + CURVE - (CURVE - GAP) * speed / top

    def paintEvent(self, _event: QPaintEvent) -> None:
        painter = QPainter(self)
        t = current()
        colours = {"prompt": t.colour("muted"), "decode": t.colour("accent")}
        for kind, start, end in self.spans:
            painter.fillRect(self.rect_of(kind, start, end), colours.get(kind, t.colour("ok")))
        points = speeds(self.times)
        rate = self.figures.tokens_per_s
        top = max([s for _, s in points] + [rate or 0.0, 1.0])
        if points:
            line = QPolygonF([QPointF(self._x(ms), self._curve_y(s, top)) for ms, s in points])
            painter.setPen(QPen(t.colour("accent"), 2))
            painter.drawPolyline(line)
        decodes = [(start, end) for kind, start, end in self.spans if kind == "decode"]
        if rate is not None and decodes:  # the answer's speed, over its last decoding
            y = self._curve_y(rate, top)
            painter.setPen(QPen(t.colour("text"), 1, Qt.PenStyle.DashLine))
            painter.drawLine(
                QPointF(self._x(decodes[-1][0]), y), QPointF(self._x(decodes[-1][1]), y)
            )
        painter.setPen(t.colour("text"))
        for text, rect in self.labels():
            painter.drawText(
                rect.adjusted(3, 0, 0, 0),
                Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                text,
            )
        label = QRectF(GAP, 0, self.width() - 2 * GAP, LABEL)
        painter.setPen(t.colour("text"))
        painter.drawText(
            label, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, self.average()
        )
        painter.setPen(t.colour("muted"))
        painter.drawText(
            label, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, self.peak()
        )
        painter.end()

    def tooltip_at(self, pos: QPoint) -> str:
        for kind, start, end in self.spans:
            if self.rect_of(kind, start, end).contains(QPointF(pos)):
                words = {"prompt": "prompt evaluation", "decode": "decoding"}.get(kind, kind)
                return f"{words}: {end - start:.0f} ms (from {start:.0f} ms)"
        if pos.y() < LABEL + CURVE and (self.times or self.figures.tokens_per_s is not None):
            said = [
                "Decoding speed over time (tokens per second in equal slices of the decoding)",
                f"{self.peak()} (the fastest slice)" if self.peak() else "",
                f"{self.average()}: the answer's speed, as the status bar says it"
                if self.average()
                else "",
            ]
            return "\n".join(s for s in said if s)
        return ""

    def theme_changed(self) -> None:
        self.update()


def span_label(kind: str, ms: float) -> str:
    """A span's label: what it was and how long it took."""
    words = {"prompt": "prompt", "decode": "decoding"}.get(kind, kind)
    return f"{words} {ms:,.0f} ms"


__all__ = ["TurnTimeline", "span_label", "speeds"]
