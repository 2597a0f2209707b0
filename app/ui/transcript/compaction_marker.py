"""The transcript's compaction marker: where a conversation was compacted, what it saved, the
summary the model reads in place of the older exchanges, and Undo.

Guarantees: a notice segment that carries a compaction's record (`data["compaction"]`) or an
undone one's (`data["undone"]`) is drawn as a divider across the turn — "Compacted: 12
exchanges summarised, 9,400 → 610 tokens" (or "Compaction undone: …") between two lines, the
segment's own sentence as its tooltip and accessible description; Show summary reveals the
summary as Markdown (and Hide summary hides it again), undone or not; Undo is offered only
while the record applies and no answer streams, and asks the given `undo` (the controller's:
this widget changes nothing itself); `refresh` draws the segment again after it changed. A
malformed record is not a marker (`is_marker`): the turn shows the notice's text as any
other. Its object name is "notice", as every notice's.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QVBoxLayout, QWidget

from app.domain.compaction import record_of
from app.domain.history import Segment
from app.ui.markdown.view import MarkdownView
from app.ui.theme import mark
from app.ui.transcript.turn_parts import ActionButton


def is_marker(segment: Segment) -> bool:
    """Whether `segment` is drawn as a compaction marker."""
    return record_of(segment) is not None


def _rule(parent: QWidget) -> QFrame:
    line = QFrame(parent)
    line.setFrameShape(QFrame.Shape.HLine)
    line.setFrameShadow(QFrame.Shadow.Plain)
    mark(line, "muted")
    return line


class CompactionMarker(QFrame):
    """See the module guarantees."""

    def __init__(self, segment: Segment, undo: Callable[[], object], parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("notice")
        self.setAccessibleName("Compaction")
        self._undo = undo
        self.applies = False
        self.busy = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.setSpacing(2)
        self.said = QLabel(self)
        self.said.setWordWrap(True)
        self.said.setAlignment(Qt.AlignmentFlag.AlignCenter)
        mark(self.said, "muted")
        top = QHBoxLayout()
        top.addWidget(_rule(self), 1)
        top.addWidget(self.said, 0)
        top.addWidget(_rule(self), 1)
        layout.addLayout(top)
        self.toggle = ActionButton(
            "Show summary",
            "Show the summary the model reads instead",
            "text-box-outline",
            self,
            show_text=True,
        )
        self.undo = ActionButton(
            "Undo",
            "Undo this compaction: the model reads those exchanges again",
            "undo",
            self,
            show_text=True,
        )
        for button in (self.toggle, self.undo):  # never painted squeezed while a turn grows
            button.setMinimumHeight(button.sizeHint().height())
        self.toggle.clicked.connect(self._toggled)
        self.undo.clicked.connect(lambda: self._undo())
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.toggle)
        row.addWidget(self.undo)
        row.addStretch(1)
        layout.addLayout(row)
        self.summary = MarkdownView(self, accessible_name="Summary")
        self.summary.setObjectName("compactionSummary")
        self.summary.hide()
        layout.addWidget(self.summary)
        self.refresh(segment)

    def refresh(self, segment: Segment) -> None:
        """Draw `segment` (its record, applying or undone) again."""
        found = record_of(segment)
        if found is None:
            return
        compaction, self.applies = found
        head = "Compacted" if self.applies else "Compaction undone"
        self.said.setText(f"{head}: {compaction.said()}")
        self.setToolTip(segment.text)
        self.setAccessibleDescription(segment.text)
        if self.summary.source_text != compaction.summary:
            self.summary.set_text(compaction.summary)
            self.summary.finish()
        self.set_busy(self.busy)

    def set_busy(self, busy: bool) -> None:
        """Undo waits while an answer streams (its turn was asked with the compaction)."""
        self.busy = busy
        self.undo.setVisible(self.applies)
        self.undo.setEnabled(not busy)

    def _toggled(self) -> None:
        shown = self.summary.isHidden()
        self.summary.setVisible(shown)
        self.toggle.setText("Hide summary" if shown else "Show summary")


__all__ = ["CompactionMarker", "is_marker"]
