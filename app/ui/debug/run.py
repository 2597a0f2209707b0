"""The debug pane's Run page: how the shown reply's turn ran — its figures, its timeline, its
sampling and its events (the parser's issues, a remote endpoint's request and response).

Guarantees: every figure is `Figures.of` the reply's debug record, in `Figures.rows()` words,
so the speed here, the timeline's "average", the status bar's and the answer's footer are one
number; a figure that was not measured is left out, never shown as 0; the model's name and the
sampling are redacted (numbers are not: a figure named "first token" is not a secret); a
prompt with images says how many and the tokens they became ("Images: 1 → 16 tokens"); the
timeline and the events each have their title over them, llama.cpp's log folded (`events.py`).
"""

from __future__ import annotations

import html
from collections.abc import Mapping

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QSizePolicy, QVBoxLayout, QWidget

from app.domain.figures import Figures
from app.domain.history import Reply
from app.domain.redact import redact
from app.ui.debug.events import EventsView, text_box
from app.ui.debug.timeline import TurnTimeline
from app.ui.theme import current, mark


def title(text: str, parent: QWidget) -> QLabel:
    """A part's title over it, muted."""
    label = QLabel(text, parent)
    mark(label, "muted")
    return label


class RunPage(QWidget):
    """See the module guarantees; `figures` is what the page says now."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Run")
        self.figures = Figures()
        self._rows: list[tuple[str, str]] = []
        self.timeline = TurnTimeline(self)
        self.details = QLabel(self)
        self.details.setAccessibleName("Figures and sampling")
        self.details.setTextFormat(Qt.TextFormat.RichText)
        self.details.setWordWrap(True)
        self.details.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.details.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.log = EventsView(self)
        self.events = self.log.events
        column = QVBoxLayout(self)
        column.addWidget(title("Timeline: prompt, decoding and tools over time", self))
        column.addWidget(self.timeline)
        column.addWidget(self.details)
        column.addWidget(title("Events", self))
        column.addWidget(self.log, 1)

    def show_reply(self, reply: Reply) -> None:
        """The figures, the timeline and the sampling of `reply` (its events are appended by
        the pane as they come)."""
        d = reply.debug
        figures = Figures.of(d.timings, d.stop_reason, redact(reply.model))
        if (d.spans, d.token_times, figures) != (
            self.timeline.spans,
            self.timeline.times,
            self.figures,
        ):
            self.timeline.show_turn(d.spans, d.token_times, figures)
        self.figures = figures
        self._rows = figures.rows() + image_rows(d.timings)
        self._rows += [("Sampling", redact(d.sampling))] if d.sampling else []
        self.details.setText(_table(self._rows))

    def clear(self) -> None:
        self.figures, self._rows = Figures(), []
        self.timeline.show_turn([], [])
        self.details.clear()
        self.log.clear()

    def theme_changed(self) -> None:
        self.details.setText(_table(self._rows))


def image_rows(timings: Mapping[str, float]) -> list[tuple[str, str]]:
    """The prompt's images and the tokens they became, when it had any."""
    images, tokens = int(timings.get("images", 0)), int(timings.get("image_tokens", 0))
    return [("Images", f"{images} → {tokens:,} tokens")] if images else []


def _table(rows: list[tuple[str, str]]) -> str:
    """`rows` as a two-column table: the names muted, the values as they are."""
    if not rows:
        return ""
    muted = current().muted
    cells = "".join(
        f"<tr><td style='padding-right:10px; color:{muted}'>{html.escape(name)}</td>"
        f"<td>{html.escape(value)}</td></tr>"
        for name, value in rows
    )
    return f"<table cellspacing='0'>{cells}</table>"


__all__ = ["RunPage", "image_rows", "text_box"]
