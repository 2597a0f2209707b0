"""One turn of the transcript: the user's message (with its versions) and the chosen reply.

Guarantees: only segments are shown (the controller never puts analysis in one, and this widget
reads nothing else); the user's message is a bubble on the right that fits its text (at most
`BUBBLE_SHARE` of the column), folded when long (`user_message.py`: Show all / Show less), and
the answer flows as text on the window's background; each turn has Copy (visible text only),
Regenerate, alternatives (‹ n/m ›), Edit for the user message (its editor sends the edited
message, or Cancel / Esc closes it with nothing changed), Continue for a reply that stopped,
failed or was cut (never for one that failed because the conversation outgrew the context: it
would fail again); Regenerate, Edit and Continue are off only while this chat's own answer
streams — while another chat's does, they queue (`SendQueue.ask`); the actions are small icon
buttons that keep their text as their name and tooltip; Copy, Regenerate and Edit show while
the pointer is over the turn or one of them has the keyboard focus, and stay in the tab order
while hidden (Enter or Space presses a focused one); under a finished answer, its figures
(`answer_footer.py`); the files a message carried open from its Files button; the images it
carried show as thumbnails above its bubble (`Pictures`: each opens large; one no longer kept
here shows its name), and stay with it when it is edited; a compaction's notice is its marker
(`compaction_marker.py`: the summary on click, Undo through the controller); an answer the
app's stopping cut short has its notice under it (`interrupted_notice.py`).
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QUrl, Signal
from PySide6.QtGui import (
    QDesktopServices,
    QEnterEvent,
    QGuiApplication,
    QKeyEvent,
    QMouseEvent,
    QResizeEvent,
)
from PySide6.QtWidgets import (
    QFrame,
    QGraphicsOpacityEffect,
    QHBoxLayout,
    QLabel,
    QMenu,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.attachments import kept_of, viewable
from app.controllers.chat import ChatController
from app.domain import attachments
from app.domain.history import Segment, Turn
from app.ui.markdown.view import MarkdownView
from app.ui.theme import mark
from app.ui.transcript.answer_footer import AnswerFooter
from app.ui.transcript.cards import JsonCard, ToolCard
from app.ui.transcript.compaction_marker import CompactionMarker, is_marker
from app.ui.transcript.interrupted_notice import InterruptedNotice
from app.ui.transcript.sources import SourcesRow
from app.ui.transcript.turn_parts import ActionButton, Pictures
from app.ui.transcript.user_message import ALIGN as FOLD_ALIGN
from app.ui.transcript.user_message import UserMessage

BUBBLE_SHARE = 0.75  # of the column, at most, for the user's message
EDITOR_LINES = 6  # the edit box's height, in lines, before it scrolls


def _button(text: str, name: str, parent: QWidget) -> QPushButton:
    b = QPushButton(text, parent)
    b.setAccessibleName(name)
    return b


class TurnWidget(QFrame):
    """One turn: the user message (with its versions) and the chosen reply. Copy, Regenerate
    and Edit appear while the pointer is over the turn or one of them has the keyboard focus;
    Continue, the version arrows and the answer's figures, which say something about the
    turn, always show."""

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
        if watched is self.editor:  # Esc in the editor closes it, changing nothing
            escape = isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape
            if escape and event.type() == QEvent.Type.KeyPress:
                self.cancel_edit()
                return True
            return False
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
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        # built in this order: the widgets' creation order is the keyboard's tab order
        self._build_message(layout)
        self._build_editor(layout)
        self._build_answer(layout)
        self._build_actions(layout)
        self._hover_only = (self.copy, self.regenerate, self.edit_button)
        for button in self._hover_only:  # shown on hover or focus; kept in the tab order
            button.setGraphicsEffect(QGraphicsOpacityEffect(button))
            button.installEventFilter(self)
        self.editor.installEventFilter(self)
        self.reveal(False)
        self._connect()

    # --- set-up --------------------------------------------------------------------------

    def _build_message(self, layout: QVBoxLayout) -> None:
        """The user's message as a bubble on the right, its buttons to its left."""
        self.user = UserMessage(self)  # folded when long (`user_message.py`)
        self.user.setObjectName("userMessage")
        self.user.setAccessibleName("Your message")
        self.edit_button = ActionButton("Edit", "Edit this message and resend", "pencil", self)
        self.versions = QLabel(self)
        mark(self.versions, "muted")
        self.prev_version = ActionButton(
            "‹", "Previous version of this message", "chevron-left", self
        )
        self.next_version = ActionButton("›", "Next version of this message", "chevron-right", self)
        self.files_button = ActionButton(
            "📎 Files", "Open a file this message carried", "paperclip", self
        )
        self.files_button.clicked.connect(self._offer_files)
        row = QHBoxLayout()
        row.setSpacing(2)
        row.addStretch(1)
        for w in (
            self.files_button,
            self.edit_button,
            self.prev_version,
            self.versions,
            self.next_version,
        ):
            row.addWidget(w, 0, Qt.AlignmentFlag.AlignBottom)
        row.addSpacing(4)
        message = QVBoxLayout()  # the images above the words
        message.setSpacing(4)
        self.pictures = Pictures(self)
        message.addWidget(self.pictures)
        message.addWidget(self.user)
        message.addWidget(self.user.toggle, 0, FOLD_ALIGN)
        row.addLayout(message)
        layout.addLayout(row)

    def _build_editor(self, layout: QVBoxLayout) -> None:
        """The editor Edit opens, with Cancel and Send (all hidden until then)."""
        self.editor = QPlainTextEdit(self)
        self.editor.setAccessibleName("Edited message")
        self.editor.setTabChangesFocus(True)
        lines = self.editor.fontMetrics().lineSpacing() * EDITOR_LINES
        self.editor.setMaximumHeight(lines + 16)
        self.cancel = _button("Cancel", "Cancel editing the message", self)
        self.cancel.setToolTip("Close the editor, changing nothing (Esc)")
        self.resend = _button("Send edited message", "Send the edited message", self)
        mark(self.resend, "primary")
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.cancel)
        row.addWidget(self.resend)
        layout.addWidget(self.editor)
        layout.addLayout(row)
        for w in (self.editor, self.cancel, self.resend):
            w.hide()

    def _build_answer(self, layout: QVBoxLayout) -> None:
        """The reply's segments, one widget each, and the passages it cited."""
        self.body = QVBoxLayout()
        self.body.setSpacing(6)
        layout.addLayout(self.body)
        self.interrupted = InterruptedNotice(self)  # a crash-cut answer says so, as a Stop does
        layout.addWidget(self.interrupted)
        self.sources = SourcesRow(self)  # the passages the answer cited
        layout.addWidget(self.sources)

    def _build_actions(self, layout: QVBoxLayout) -> None:
        """Copy, Regenerate, Continue and the answers' arrows; the answer's figures."""
        actions = QHBoxLayout()
        actions.setSpacing(2)
        self.copy = ActionButton("Copy", "Copy the answer", "content-copy", self)
        self.regenerate = ActionButton("Regenerate", "Regenerate the answer", "refresh", self)
        self.continue_ = ActionButton(
            "Continue", "Continue the answer", "play", self, show_text=True
        )
        self.prev_reply = ActionButton("‹", "Previous answer", "chevron-left", self)
        self.replies = QLabel(self)
        mark(self.replies, "muted")
        self.next_reply = ActionButton("›", "Next answer", "chevron-right", self)
        self.footer = AnswerFooter(self)  # first: the buttons appear after it on hover
        actions.addWidget(self.footer)
        actions.addSpacing(6)
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

    def _connect(self) -> None:
        controller = self.controller
        self.edit_button.clicked.connect(self._start_edit)
        self.cancel.clicked.connect(self.cancel_edit)
        self.resend.clicked.connect(self._resend)
        self.copy.clicked.connect(self._copy)
        self.regenerate.clicked.connect(lambda: controller.queue.ask("regenerate", self.index))
        self.continue_.clicked.connect(lambda: controller.queue.ask("continue", self.index))
        self.prev_reply.clicked.connect(lambda: self._flip_reply(-1))
        self.next_reply.clicked.connect(lambda: self._flip_reply(1))
        self.prev_version.clicked.connect(lambda: self._flip_version(-1))
        self.next_version.clicked.connect(lambda: self._flip_version(1))

    # --- showing the turn ----------------------------------------------------------------

    def mousePressEvent(self, event: QMouseEvent) -> None:
        """Clicking a turn shows its answer in the debug pane."""
        self.selected.emit(self.index)
        super().mousePressEvent(event)

    def resizeEvent(self, event: QResizeEvent) -> None:
        """The bubble may take its share of the column, no more."""
        share = max(1, int(event.size().width() * BUBBLE_SHARE))
        self.user.setMaximumWidth(share)
        self.pictures.setMaximumWidth(share)
        super().resizeEvent(event)

    @property
    def turn(self) -> Turn:
        return self.controller.doc.turns[self.index]

    def show_all(self) -> None:
        version = self.turn.version
        context, text = attachments.split(version.user_text)
        names = attachments.files(context)
        self.user.setText(text + (f"\n📎 {', '.join(names)}" if names else ""))
        self.user.setVisible(bool(self.user.text()) and self.editor.isHidden())
        self.user.updateGeometry()
        if self.pictures.thumbs or version.images:
            self.pictures.show_images(version.images)
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
        elif is_marker(segment):
            index, undo = len(self.segments), self.controller.compactions.undo
            widget = CompactionMarker(segment, lambda: undo(self.index, index), self)
            widget.set_busy(self.controller.busy)
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
        for b in (self.copy, self.regenerate, self.edit_button):  # another chat's answer:
            b.setEnabled(not self.controller.shows_answer)  # they queue (`send_queue.ask`)
        for marker in self.segments:
            if isinstance(marker, CompactionMarker):
                marker.set_busy(busy)
        self.interrupted.show_for(reply)
        self.continue_.setVisible(reply is not None and reply.continuable)
        self.continue_.setEnabled(not self.controller.shows_answer)
        self.update_footer()

    def update_footer(self) -> None:
        """The chosen answer's figures (its debug record read off the GUI thread if need be:
        the transcript calls this again on `debugChanged`)."""
        self.footer.update_for(self.controller, self.index, self.turn.version.reply)

    def _copy(self) -> None:
        reply = self.turn.version.reply
        if reply is not None:
            QGuiApplication.clipboard().setText(reply.visible_text())

    def _start_edit(self) -> None:
        self.editor.setPlainText(self.turn.version.user_text)
        for w in (self.editor, self.cancel, self.resend):
            w.show()
        self.user.hide()
        self.editor.setFocus()

    def cancel_edit(self) -> None:
        """Close the editor; the message stays as it was."""
        for w in (self.editor, self.cancel, self.resend):
            w.hide()
        self.user.setVisible(bool(self.user.text()))  # a message of images only: no bubble
        self.edit_button.setFocus()

    def _resend(self) -> None:
        """Send the edited text (the transcript then shows the new version, editor closed);
        refused (no model, nothing written), the editor stays open; queued (another chat's
        answer streams: it is sent when that ends), the editor closes."""
        if self.controller.queue.ask("edit", self.index, self.editor.toPlainText()):
            self.cancel_edit()

    def _flip_reply(self, step: int) -> None:
        self.controller.choose_reply(self.index, self.turn.version.chosen + step)

    def _flip_version(self, step: int) -> None:
        self.controller.choose_version(self.index, self.turn.chosen + step)


__all__ = ["TurnWidget"]
