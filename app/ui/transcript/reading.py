"""How far the model has read a long prompt, said inline in the transcript where the answer will
appear: "Reading 3,626 tokens… 40 %".

Guarantees: the note stands at the end of the answering turn (after what the reply has shown so
far) from the first `promptRead` of a generation until that generation's first segment comes,
the reply ends or another chat is shown; it is shown only while the answering chat is the one
on screen (another chat's prompt is never said here); its words are `PromptRead.said`, the
terminal's too; there is one note per transcript, moved from turn to turn, never deleted with
a turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel

from app.domain.events import PromptRead
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.ui.transcript.turn_widget import TurnWidget
    from app.ui.transcript.view import TranscriptView


class ReadingNote(QLabel):
    """See the module guarantees."""

    def __init__(self, view: TranscriptView) -> None:
        super().__init__(view)
        self.view = view
        self.setAccessibleName("Reading the prompt")
        self.setObjectName("reading")
        mark(self, "muted")
        self.hide()
        chat = view.controller
        chat.promptRead.connect(self.read)
        chat.segmentAdded.connect(lambda _turn, _segment: self.done())
        chat.replyFinished.connect(lambda _turn: self.done())
        chat.docChanged.connect(self.done)  # (before the turns shown are deleted)

    def read(self, turn: int, done: int, total: int) -> None:
        """`done` of the `total` prompt tokens of `turn`'s generation are read."""
        widget = self._turn(turn)
        if widget is None or not self.view.controller.shows_answer:
            return
        if widget.body.indexOf(self) < 0:
            self.setParent(widget)
            widget.body.addWidget(self)
        self.setText(PromptRead(done, total).said())
        self.show()

    def done(self) -> None:
        """The prompt is read (or no longer shown here): the note goes."""
        if self.parent() is not self.view:
            self.hide()
            self.setParent(self.view)  # kept when its turn is deleted
        self.hide()

    def _turn(self, turn: int) -> TurnWidget | None:
        at = turn - self.view.first
        return self.view.turns[at] if 0 <= at < len(self.view.turns) else None


__all__ = ["ReadingNote"]
