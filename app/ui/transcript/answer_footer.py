"""The line under a finished answer: who answered (the model by its readable name, or the remote
endpoint and its model: `model_names`), speed, tokens, first token and why it stopped.

Guarantees: the figures are `Figures.footer()` of the reply's debug record, the same sentence
the status bar's figures come from, so the two never disagree; nothing shows while the answer
streams; a reply read from the store whose debug record is not in memory yet is never read
here (that would read the disk on the GUI thread): the footer asks the controller to read it
off the GUI thread (`debug_ready`, once per reply) and fills in when `update` is called again
after `debugChanged`; the text is small and muted, always shown, on one line: where the
column is too narrow for it (never while it has the width: its size hint is the text's whole
width, margins included), it ends in "…" and its tooltip says it whole; an answer the app's
stopping cut short says "interrupted" as its reason (`cut_short`).
"""

from __future__ import annotations

import math

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QFontMetricsF, QPainter, QPaintEvent, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from app.controllers.chat import ChatController
from app.domain.figures import Figures
from app.domain.history import Reply
from app.domain.interrupted import cut_short
from app.domain.model_names import readable
from app.ui.theme import mark

INTERRUPTED = "interrupted"  # said as the reason an answer ended when the app stopped mid-answer


class AnswerFooter(QLabel):
    """See the module guarantees."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("answerFooter")
        self.setAccessibleName("Answer figures")
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.setContentsMargins(4, 0, 0, 0)  # under the answer's text, which has this margin
        font = self.font()
        font.setPointSizeF(font.pointSizeF() * 0.85)
        self.setFont(font)
        mark(self, "muted")
        self._asked: str | None = None  # the reply whose record was asked for
        self.hide()

    def _needed(self) -> int:
        """The width the whole text takes, margins and a rounding pixel included."""
        margins = self.contentsMargins()
        advance = math.ceil(
            QFontMetricsF(self.font()).horizontalAdvance(self.text())
        )  # never short
        return int(advance + margins.left() + margins.right() + 2)

    def sizeHint(self) -> QSize:
        return QSize(self._needed(), super().sizeHint().height())

    def minimumSizeHint(self) -> QSize:
        least = min(self.sizeHint().width(), self.fontMetrics().averageCharWidth() * 10)
        return QSize(least, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        """The text on one line, elided to the width there is."""
        painter = QPainter(self)
        rect = self.contentsRect()
        shown = self.text()
        if self.width() < self._needed():  # only where the text truly does not fit
            shown = self.fontMetrics().elidedText(shown, Qt.TextElideMode.ElideRight, rect.width())
        align = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter
        self.style().drawItemText(
            painter,
            rect,
            align,
            self.palette(),
            self.isEnabled(),
            shown,
            QPalette.ColorRole.WindowText,
        )

    def update_for(self, controller: ChatController, turn: int, reply: Reply | None) -> None:
        """Show `reply`'s figures (the reply shown at `turn`), or ask for its debug record."""
        text = ""
        if reply is not None and reply.state != "streaming":
            if reply.debug_loaded:
                debug = reply.debug
                stop = debug.stop_reason or (INTERRUPTED if cut_short(reply) else "")
                text = Figures.of(debug.timings, stop, readable(reply.model)).footer()
            elif self._asked != reply.id:  # read on the store's thread; `debugChanged` says when
                self._asked = reply.id
                controller.debug_ready(turn)
        self.setText(text)
        self.setToolTip(text)
        self.setVisible(bool(text))


__all__ = ["AnswerFooter"]
