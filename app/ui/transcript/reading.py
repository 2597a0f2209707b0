"""Work that takes time before an answer's first words, said inline in the transcript where the
answer will appear: "Loading the model… 60 %", "Encoding image 1 of 2…", "Reading 3,626
tokens… 40 %".

Guarantees: the note stands at the end of the answering turn (after what the reply has shown so
far) from the first progress of that turn — its model loading while the message waits on it,
an image its projector encodes, its prompt being read (`app/domain/progress.py`) — until the
turn's first segment comes, the reply ends or another chat is shown; a load's progress is said
only while a turn waits on the load (with none waiting, the header's bar alone says it), and
goes when the load ends; the note is shown only while the answering chat is the one on screen
(another chat's work is never said here); its words are the progress value's `said()`, the
terminal's too; there is one note per transcript, moved from turn to turn, never deleted with a
turn.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QLabel

from app.domain.progress import ModelLoading, Progress
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.ui.transcript.turn_widget import TurnWidget
    from app.ui.transcript.view import TranscriptView


class ReadingNote(QLabel):
    """See the module guarantees."""

    def __init__(self, view: TranscriptView) -> None:
        super().__init__(view)
        self.view = view
        self.setAccessibleName("Work before the answer")
        self.setObjectName("reading")
        mark(self, "muted")
        self.hide()
        self.answering: int | None = None  # the turn whose reply is under way
        self.loading = False  # the model is being loaded
        self.saying: Progress | None = None  # what the note says now (None: hidden)
        chat, host = view.controller, view.controller.host
        chat.progressed.connect(self.say)
        chat.replyStarted.connect(self._started)
        chat.segmentAdded.connect(lambda _turn, _segment: self.done())
        chat.replyFinished.connect(self._finished)
        chat.docChanged.connect(self.done)  # (before the turns shown are deleted)
        host.progress.connect(self._loading)
        host.stateChanged.connect(self._state)

    def say(self, turn: int, progress: Progress) -> None:
        """`turn`'s answer waits on `progress`: said at its end when its chat is shown."""
        widget = self._turn(turn)
        if widget is None or not self.view.controller.shows_answer:
            return
        if widget.body.indexOf(self) < 0:
            self.setParent(widget)
            widget.body.addWidget(self)
        self.saying = progress
        self.setText(progress.said())
        self.show()

    def done(self) -> None:
        """The work is done (or no longer shown here): the note goes."""
        self.hide()
        if self.parent() is not self.view:
            self.setParent(self.view)  # kept when its turn is deleted
        self.saying = None

    def _started(self, turn: int) -> None:
        self.answering = turn

    def _finished(self, _turn: int) -> None:
        self.answering = None
        self.done()

    def _loading(self, fraction: float) -> None:
        """The model loads: said in the answering turn, which waits for it."""
        if self.loading and self.answering is not None:
            self.say(self.answering, ModelLoading(fraction))

    def _state(self, state: str) -> None:
        self.loading = state == "loading"  # (`ModelHost.stateChanged`'s word for it)
        if not self.loading and isinstance(self.saying, ModelLoading):
            self.done()  # the model is in (or it failed): the load is said no more

    def _turn(self, turn: int) -> TurnWidget | None:
        at = turn - self.view.first
        return self.view.turns[at] if 0 <= at < len(self.view.turns) else None


__all__ = ["ReadingNote"]
