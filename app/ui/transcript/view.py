"""The transcript: user messages, answers, preambles, tool cards and JSON results, as they stream.

Guarantees: only segments are shown (the controller never puts analysis in one, and this view
reads nothing else); streamed text goes to the growing segment only; the view follows the
bottom while the user is at the bottom and stays put when they scrolled up; each turn is a
`TurnWidget` (`turn_widget.py`: its Copy, Regenerate, Edit, Continue and alternatives). A long
conversation opens on its last `PAGE` turns; earlier ones are shown a page at a time when the
user scrolls to the top or asks ("Show earlier messages"), keeping the view where it was. The
turns stand in one column centred in the view, no wider than a readable measure (`column.py`),
`TURN_GAP` pixels apart; an empty conversation shows the empty state (`empty_state.py`: what
to do, starter prompts, where answers come from; with a base model loaded here, a warning that
it continues text rather than chatting: `base_warning`) in their place, and `promptChosen` passes on
a starter's prompt. Each finished answer's figures fill in under it, read off the GUI thread
when its debug record is not in memory (`debugChanged` says when it is).
"""

from __future__ import annotations

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import QFrame, QPushButton, QScrollArea, QVBoxLayout, QWidget

from app.controllers.chat import ChatController
from app.ui.column import Centred
from app.ui.markdown.view import MarkdownView
from app.ui.transcript.cards import ToolCard
from app.ui.transcript.compaction_marker import CompactionMarker
from app.ui.transcript.empty_state import EmptyState
from app.ui.transcript.turn_widget import TurnWidget
from app.ui.window.about import EMPTY_NO_MODEL, EMPTY_READY

PAGE = 12  # turns shown when a conversation opens, and added per step back
TURN_GAP = 14  # pixels between one turn and the next


def base_warning(controller: ChatController) -> str:
    """Before chatting with a base model here: what it is and what to choose instead."""
    host = controller.host
    if not host.base or controller.doc.endpoint is not None or not host.ready:
        return ""
    return (
        f"\n\n⚠ {host.name} is a base model — {host.base}. For a conversation, choose an"
        " instruction-tuned model (Ctrl+L)."
    )


class TranscriptView(QScrollArea):
    """All turns of the selected conversation."""

    turnSelected = Signal(int)  # the turn whose answer the debug pane should show
    promptChosen = Signal(str)  # a starter prompt, for the message box

    def __init__(self, controller: ChatController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setObjectName("transcript")
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setWidgetResizable(True)
        self.setAccessibleName("Transcript")
        self.inner = QWidget(self)
        self.inner.setObjectName("transcriptInner")
        self.page = QWidget(self.inner)  # the centred column the turns stand in
        Centred(self.inner, self.page)
        self.column = QVBoxLayout(self.page)
        self.column.setContentsMargins(0, 12, 0, 12)
        self.column.setSpacing(TURN_GAP)
        self.column.addStretch(1)
        self.setWidget(self.inner)
        self.earlier = QPushButton("Show earlier messages", self.page)
        self.earlier.setAccessibleName("Show earlier messages")
        self.earlier.clicked.connect(self.show_earlier)
        self.column.insertWidget(0, self.earlier)
        self.empty_state = EmptyState(self.page)  # what to do when there is nothing yet
        self.empty_state.promptChosen.connect(self.promptChosen)
        self.empty = self.empty_state.message
        self.column.insertWidget(1, self.empty_state, 100)  # it takes the spare height
        controller.host.stateChanged.connect(lambda _state: self.update_empty())
        controller.host.loaded.connect(lambda _name: self.update_empty())
        self.turns: list[TurnWidget] = []  # the turns shown, from turn `first` on
        self.first = 0
        self._follow = True
        self._keep_from_bottom: int | None = None  # where the view stays while a page is added
        bar = self.verticalScrollBar()
        bar.valueChanged.connect(lambda v: setattr(self, "_follow", v >= bar.maximum() - 4))
        bar.rangeChanged.connect(self._range_changed)
        bar.actionTriggered.connect(lambda _action: self._scrolled())
        c = controller
        c.docChanged.connect(self.show_all)
        c.replyStarted.connect(self._reply_started)
        c.segmentAdded.connect(self._segment_added)
        c.segmentText.connect(self._segment_text)
        c.segmentUpdated.connect(self._segment_updated)
        c.replyFinished.connect(self._reply_finished)
        c.debugChanged.connect(self._debug_changed)
        c.busyChanged.connect(self._busy)
        self.show_all()

    def _busy(self, _busy: bool) -> None:
        for t in self.turns:
            t.update_actions()
        self.update_empty()

    def update_empty(self) -> None:
        """An empty conversation says what to do: type (a model is ready), or wait for the
        default model / open one (none is)."""
        empty = not self.controller.doc.turns
        self.empty_state.setVisible(empty)
        if empty:
            said = EMPTY_READY if self.controller.can_answer else EMPTY_NO_MODEL
            self.empty.setText(said + base_warning(self.controller))

    def _range_changed(self, _low: int, high: int) -> None:
        bar = self.verticalScrollBar()
        if self._keep_from_bottom is not None:
            bar.setValue(high - self._keep_from_bottom)
        elif self._follow:
            bar.setValue(high)

    def _scrolled(self) -> None:
        """The user scrolled: at the top, the previous page is shown."""
        if self.verticalScrollBar().sliderPosition() == 0 and self.first > 0:
            QTimer.singleShot(0, self.show_earlier)

    def show_all(self) -> None:
        for t in self.turns:
            t.deleteLater()
        self.turns = []
        self._follow, self._keep_from_bottom = True, None
        self.first = max(0, len(self.controller.doc.turns) - PAGE)
        for i in range(self.first, len(self.controller.doc.turns)):
            self._add_turn(i)
        self._update_earlier()
        self.update_empty()
        QTimer.singleShot(
            0, lambda: self.verticalScrollBar().setValue(self.verticalScrollBar().maximum())
        )

    def show_earlier(self) -> None:
        """Show the page of turns before the first one shown; the view stays where it was."""
        if self.first == 0:
            return
        bar = self.verticalScrollBar()
        self._follow, self._keep_from_bottom = False, bar.maximum() - bar.value()
        start = max(0, self.first - PAGE)
        added = [self._make_turn(i) for i in range(start, self.first)]
        for position, widget in enumerate(added, start=1):
            self.column.insertWidget(position, widget)  # after the button
        self.turns[:0] = added
        self.first = start
        self._update_earlier()
        QTimer.singleShot(0, lambda: setattr(self, "_keep_from_bottom", None))

    def _update_earlier(self) -> None:
        self.earlier.setVisible(self.first > 0)
        self.earlier.setText(f"Show earlier messages ({self.first} turns)")

    def _make_turn(self, index: int) -> TurnWidget:
        widget = TurnWidget(self.controller, index, self.page)
        widget.selected.connect(self.turnSelected)
        widget.show_all()
        return widget

    def _add_turn(self, index: int) -> TurnWidget:
        widget = self._make_turn(index)
        self.column.insertWidget(self.column.count() - 1, widget)
        self.turns.append(widget)
        return widget

    def _turn(self, index: int) -> TurnWidget:
        while index < self.first:
            self.show_earlier()
        while self.first + len(self.turns) <= index:
            self._add_turn(self.first + len(self.turns))
        return self.turns[index - self.first]

    def _reply_started(self, index: int) -> None:
        self._follow = True
        self._turn(index).show_all()

    def _segment_added(self, turn: int, index: int) -> None:
        widget = self._turn(turn)
        reply = widget.turn.version.reply
        if reply is not None and len(widget.segments) == index:
            widget.add_segment(reply.segments[index])

    def _segment_text(self, turn: int, index: int, text: str) -> None:
        widget = self._turn(turn)
        if index < len(widget.segments) and isinstance(widget.segments[index], MarkdownView):
            widget.segments[index].append_text(text)  # type: ignore[attr-defined]

    def _segment_updated(self, turn: int, index: int) -> None:
        widget = self._turn(turn)
        if index >= len(widget.segments):
            return
        shown = widget.segments[index]
        reply = widget.turn.version.reply
        if isinstance(shown, ToolCard):
            shown.refresh()
            from app.ui.mcp_apps.hook import follow  # MCP Apps: the tool's view, in its card

            follow(shown, self.controller)
        elif isinstance(shown, CompactionMarker) and reply is not None:
            shown.refresh(reply.segments[index])  # undone
        elif isinstance(shown, MarkdownView):  # a message's text decided when it closed
            text = reply.segments[index].text if reply is not None else shown.source_text
            if text != shown.source_text:
                shown.set_text(text)

    def _debug_changed(self, turn: int) -> None:
        """A turn's debug record grew or was read: its footer, if the turn is shown."""
        if self.first <= turn < self.first + len(self.turns):
            self.turns[turn - self.first].update_footer()

    def _reply_finished(self, turn: int) -> None:
        widget = self._turn(turn)
        for w in widget.segments:
            if isinstance(w, MarkdownView):
                w.finish()
        widget.update_actions()


__all__ = ["TranscriptView"]
