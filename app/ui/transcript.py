"""The transcript: user messages, answers, preambles, tool cards and JSON results, as they stream.

Guarantees: only segments are shown (the controller never puts analysis in one, and this view
reads nothing else); streamed text goes to the growing segment only; the view follows the
bottom while the user is at the bottom and stays put when they scrolled up; each turn has
Copy (visible text only), Regenerate, alternatives (‹ n/m ›), Edit for the user message,
Continue for a reply that stopped, failed or was cut. A long conversation opens on its last
`PAGE` turns; earlier ones are shown a page at a time when the user scrolls to the top or asks
("Show earlier messages"), keeping the view where it was.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QEnterEvent, QGuiApplication, QMouseEvent
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.controllers.attachments import kept_of, viewable
from app.controllers.chat import ChatController
from app.domain import attachments
from app.domain.history import Segment, Turn
from app.ui.about import EMPTY_NO_MODEL, EMPTY_READY
from app.ui.cards import JsonCard, ToolCard
from app.ui.icons import give
from app.ui.markdown_view import MarkdownView
from app.ui.sources import SourcesRow
from app.ui.theme import mark

PAGE = 12  # turns shown when a conversation opens, and added per step back
_USER_STYLE = "background: palette(alternate-base); padding: 6px; border-radius: 6px"
_PREAMBLE_STYLE = "font-style: italic; color: palette(mid); border-left: 3px solid palette(mid);"


def _button(text: str, name: str, parent: QWidget) -> QPushButton:
    b = QPushButton(text, parent)
    b.setAccessibleName(name)
    b.setFlat(True)
    return b


class TurnWidget(QFrame):
    """One turn: the user message (with its versions) and the chosen reply. Copy, Regenerate
    and Edit appear while the pointer is over the turn or one of them has the keyboard focus;
    Continue and the version arrows, which say something about the turn, always show."""

    selected = Signal(int)

    def reveal(self, on: bool) -> None:
        for button in self._hover_only:
            effect = button.graphicsEffect()
            if isinstance(effect, QGraphicsOpacityEffect):
                effect.setOpacity(1.0 if on else 0.0)

    def enterEvent(self, event: QEnterEvent) -> None:
        self.reveal(True)
        super().enterEvent(event)

    def leaveEvent(self, event: QEvent) -> None:
        if not any(b.hasFocus() for b in self._hover_only):
            self.reveal(False)
        super().leaveEvent(event)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusIn:
            self.reveal(True)
        elif event.type() == QEvent.Type.FocusOut and not self.underMouse():
            self.reveal(False)
        return False

    def __init__(self, controller: ChatController, index: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.controller, self.index = controller, index
        self.segments: list[QWidget] = []
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        self.user = QLabel(self)
        self.user.setObjectName("userMessage")
        self.user.setWordWrap(True)
        self.user.setTextFormat(Qt.TextFormat.PlainText)
        self.user.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.user.setAccessibleName("Your message")
        mark(self.user, "bubble")
        bubble_row = QHBoxLayout()  # the user's messages sit on the right, at most 4/5 wide
        bubble_row.addStretch(1)
        bubble_row.addWidget(self.user, 4)
        layout.addLayout(bubble_row)
        user_row = QHBoxLayout()
        user_row.addStretch(1)
        self.edit_button = give(_button("Edit", "Edit this message and resend", self), "pencil")
        self.versions = QLabel(self)
        self.prev_version = _button("‹", "Previous version of this message", self)
        self.next_version = _button("›", "Next version of this message", self)
        self.files_button = _button("📎 Files", "Open a file this message carried", self)
        self.files_button.clicked.connect(self._offer_files)
        widgets = (self.files_button, self.edit_button, self.prev_version, self.versions)
        for w in (*widgets, self.next_version):
            user_row.addWidget(w)
        layout.addLayout(user_row)
        self.editor = QPlainTextEdit(self)
        self.editor.setAccessibleName("Edited message")
        self.editor.hide()
        self.resend = _button("Send edited message", "Send the edited message", self)
        self.resend.hide()
        layout.addWidget(self.editor)
        layout.addWidget(self.resend)
        self.body = QVBoxLayout()
        layout.addLayout(self.body)
        self.sources = SourcesRow(self)  # the passages the answer cited
        layout.addWidget(self.sources)
        actions = QHBoxLayout()
        self.copy = give(_button("Copy", "Copy the answer", self), "content-copy")
        self.regenerate = give(_button("Regenerate", "Regenerate the answer", self), "refresh")
        self.continue_ = give(_button("Continue", "Continue the answer", self), "play")
        self.prev_reply = _button("‹", "Previous answer", self)
        self.replies = QLabel(self)
        self.next_reply = _button("›", "Next answer", self)
        for w in (
            self.copy,
            self.regenerate,
            self.continue_,
            self.prev_reply,
            self.replies,
            self.next_reply,
        ):
            actions.addWidget(w)
        actions.addStretch(1)
        layout.addLayout(actions)
        self._hover_only = (self.copy, self.regenerate, self.edit_button)
        for button in self._hover_only:  # shown on hover or focus; kept in the tab order
            button.setGraphicsEffect(QGraphicsOpacityEffect(button))
            button.installEventFilter(self)
        self.reveal(False)
        self.edit_button.clicked.connect(self._start_edit)
        self.resend.clicked.connect(lambda: controller.edit(self.index, self.editor.toPlainText()))
        self.copy.clicked.connect(self._copy)
        self.regenerate.clicked.connect(lambda: controller.regenerate(self.index))
        self.continue_.clicked.connect(controller.continue_reply)
        self.prev_reply.clicked.connect(lambda: self._flip_reply(-1))
        self.next_reply.clicked.connect(lambda: self._flip_reply(1))
        self.prev_version.clicked.connect(lambda: self._flip_version(-1))
        self.next_version.clicked.connect(lambda: self._flip_version(1))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Clicking a turn shows its answer in the debug pane."""
        self.selected.emit(self.index)
        super().mousePressEvent(event)

    @property
    def turn(self) -> Turn:
        return self.controller.doc.turns[self.index]

    def show_all(self) -> None:
        version = self.turn.version
        context, text = attachments.split(version.user_text)
        names = attachments.files(context)
        self.user.setText(text + (f"\n📎 {', '.join(names)}" if names else ""))
        self.files_button.setVisible(bool(names))
        for w in self.segments:
            w.deleteLater()
        self.segments = []
        reply = version.reply
        if reply is not None:
            for segment in reply.segments:
                self.add_segment(segment)
            for w in self.segments:
                if isinstance(w, MarkdownView) and reply.state != "streaming":
                    w.finish()
        self.update_actions()

    def _offer_files(self) -> QMenu:
        """The files this message carried, kept with the conversation; the one chosen opens."""
        menu = QMenu(self)
        for name, stored in kept_of(self.turn.version.id):
            action = menu.addAction(name)
            action.triggered.connect(
                lambda _=False, n=name, s=stored: QDesktopServices.openUrl(
                    QUrl.fromLocalFile(str(viewable(n, s)))
                )
            )
        if menu.isEmpty():
            menu.addAction(
                "Not kept with this conversation (library passages, or imported without files)"
            ).setEnabled(False)
        menu.popup(self.files_button.mapToGlobal(self.files_button.rect().bottomLeft()))
        return menu

    def add_segment(self, segment: Segment) -> QWidget:
        widget: QWidget
        if segment.kind in ("answer", "preamble"):
            name = "Answer" if segment.kind == "answer" else "Preamble"
            view = MarkdownView(self, accessible_name=name)
            view.setObjectName(segment.kind)
            if segment.kind == "preamble":
                mark(view, "preamble")
            view.append_text(segment.text)
            widget = view
        elif segment.kind == "tool":
            widget = ToolCard(segment.data, self.controller.decide, self)
        elif segment.kind == "json":
            widget = JsonCard(segment.text, segment.data, self)
            if self.segments and isinstance(self.segments[-1], MarkdownView):
                self.segments[-1].hide()  # the card shows the same answer, pretty-printed
        else:
            label = QLabel(segment.text, self)
            label.setWordWrap(True)
            label.setObjectName(segment.kind)
            label.setAccessibleName("Error" if segment.kind == "error" else "Notice")
            mark(label, "error" if segment.kind == "error" else "notice")
            widget = label
        self.body.addWidget(widget)
        self.segments.append(widget)
        return widget

    def update_actions(self) -> None:
        version = self.turn.version
        busy = self.controller.busy
        reply = version.reply
        self.sources.show_for(version)
        n, m = version.chosen + 1, len(version.replies)
        self.replies.setText(f"{n}/{m}" if m > 1 else "")
        for b in (self.prev_reply, self.next_reply):
            b.setVisible(m > 1)
        self.prev_reply.setEnabled(not busy and n > 1)
        self.next_reply.setEnabled(not busy and n < m)
        v, w = self.turn.chosen + 1, len(self.turn.versions)
        self.versions.setText(f"{v}/{w}" if w > 1 else "")
        for b in (self.prev_version, self.next_version):
            b.setVisible(w > 1)
        self.prev_version.setEnabled(not busy and v > 1)
        self.next_version.setEnabled(not busy and v < w)
        for b in (self.copy, self.regenerate, self.edit_button):
            b.setEnabled(not busy)
        self.continue_.setVisible(
            reply is not None and reply.state in ("stopped", "failed", "incomplete")
        )
        self.continue_.setEnabled(not busy)

    def _copy(self) -> None:
        reply = self.turn.version.reply
        if reply is not None:
            QGuiApplication.clipboard().setText(reply.visible_text())

    def _start_edit(self) -> None:
        self.editor.setPlainText(self.turn.version.user_text)
        self.editor.show()
        self.resend.show()
        self.editor.setFocus()

    def _flip_reply(self, step: int) -> None:
        self.controller.choose_reply(self.index, self.turn.version.chosen + step)

    def _flip_version(self, step: int) -> None:
        self.controller.choose_version(self.index, self.turn.chosen + step)


class TranscriptView(QScrollArea):
    """All turns of the selected conversation."""

    turnSelected = Signal(int)  # the turn whose answer the debug pane should show

    def __init__(self, controller: ChatController, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.controller = controller
        self.setWidgetResizable(True)
        self.setAccessibleName("Transcript")
        self.inner = QWidget(self)
        self.column = QVBoxLayout(self.inner)
        self.column.addStretch(1)
        self.setWidget(self.inner)
        self.earlier = QPushButton("Show earlier messages", self.inner)
        self.earlier.setAccessibleName("Show earlier messages")
        self.earlier.clicked.connect(self.show_earlier)
        self.column.insertWidget(0, self.earlier)
        self.empty = QLabel(self.inner)  # what to do when there is nothing to show yet
        self.empty.setWordWrap(True)
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setAccessibleName("What to do next")
        mark(self.empty, "muted")
        self.column.insertWidget(1, self.empty)
        controller.host.stateChanged.connect(lambda _state: self.update_empty())
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
        self.empty.setVisible(empty)
        if empty:
            self.empty.setText(EMPTY_READY if self.controller.can_answer else EMPTY_NO_MODEL)

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
        widget = TurnWidget(self.controller, index, self.inner)
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
        if isinstance(shown, ToolCard):
            shown.refresh()
        elif isinstance(shown, MarkdownView):  # a message's text decided when it closed
            reply = widget.turn.version.reply
            text = reply.segments[index].text if reply is not None else shown.source_text
            if text != shown.source_text:
                shown.set_text(text)

    def _reply_finished(self, turn: int) -> None:
        widget = self._turn(turn)
        for w in widget.segments:
            if isinstance(w, MarkdownView):
                w.finish()
        widget.update_actions()


__all__ = ["TranscriptView", "TurnWidget"]
