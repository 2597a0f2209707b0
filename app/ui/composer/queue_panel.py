"""The open chat's queued messages, right above the composer's field.

Guarantees: the panel shows exactly the queued messages of the chat that is shown, in the order
they will be sent, and hides itself when that chat has none; its heading says when they go
("sent when this answer ends", "…when the answer in “Story” ends", "…once a model is loaded");
each row shows its message (its first lines; the whole text in the tooltip) and what it
carries, and has Edit, Send now and Remove (a queued Regenerate, Edit or Continue is a row too,
said as what it will do, "↻ Regenerate the answer to “…”"; Edit only where there is a text:
a message, an edit's new text); Edit opens the text in place and holds the message
(it is not sent while edited), Save keeps the new text (an empty one is refused and the editor
stays) and Cancel or Esc leaves it as it was, both letting it go again;
Send now says what it will do: "Send now" stops this chat's own answer (its text kept) so the
message goes at once, "Send next" puts it first in line behind another chat's answer, which is
never stopped from here; a row being edited keeps its editor and draft while the queue or the
window changes around it; every control has an accessible name.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QSize, Qt
from PySide6.QtGui import QKeyEvent, QResizeEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.controllers.send_queue import Queued, counted
from app.ui.icons import give
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.controllers.chat import ChatController

SHOWN_CHARS = 160  # a longer message is cut here in its row (the tooltip has all of it)
ROWS_PX = 132  # beyond about three rows the list scrolls: the transcript keeps its room


def carried(item: Queued) -> str:
    """What a queued message carries besides its text ("2 images · 1 file"; "" for nothing)."""
    parts = []
    if item.images:
        parts.append("1 image" if len(item.images) == 1 else f"{len(item.images)} images")
    if item.files:
        parts.append("1 file" if len(item.files) == 1 else f"{len(item.files)} files")
    return " · ".join(parts)


def shown_text(item: Queued) -> str:
    """The row's words: the message (or the action: "↻ Regenerate the answer to …") on one
    line, cut at `SHOWN_CHARS`, and what it carries."""
    line = " ".join(item.words.split())
    if len(line) > SHOWN_CHARS:
        line = line[: SHOWN_CHARS - 1] + "…"
    extra = carried(item)
    return f"{line}  ({extra})" if line and extra else line or f"({extra})"


class _Elided(QLabel):
    """One line that ends in "…" where the row is too narrow for it."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.full = ""
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def set_full(self, text: str) -> None:
        self.full = text
        self._fit()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def _fit(self) -> None:
        metrics = self.fontMetrics()
        self.setText(metrics.elidedText(self.full, Qt.TextElideMode.ElideRight, self.width()))


class _Editor(QPlainTextEdit):
    """The in-place editor: Esc cancels, Ctrl+Enter saves (Enter is a new line)."""

    def __init__(self, row: QueueRow) -> None:
        super().__init__(row)
        self.row = row

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.row.cancel_edit()
            return
        ctrl = event.modifiers() & Qt.KeyboardModifier.ControlModifier
        if ctrl and event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.row.save_edit()
            return
        super().keyPressEvent(event)


class QueueRow(QFrame):
    """One queued message: its words, Edit, Send now, Remove; or, while edited, its editor
    with Save and Cancel."""

    def __init__(self, item: Queued, panel: QueuePanel) -> None:
        super().__init__(panel.inner)
        self.item, self.panel = item, panel
        mark(self, "chip")
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        self.text = _Elided(self)
        self.text.setAccessibleName("Queued message")
        self.editor = _Editor(self)
        self.editor.setAccessibleName("Edit the queued message")
        self.editor.setMaximumHeight(72)
        self.editor.hide()
        row.addWidget(self.text, 1)
        row.addWidget(self.editor, 1)
        self.edit = self._tool("pencil-outline", "Edit", "Edit the queued message")
        self.send_now = self._tool("send-clock-outline", "Send now", "Send the queued message now")
        self.remove = self._tool("close", "Remove", "Remove the queued message")
        self.save = QPushButton("Save", self)
        self.save.setAccessibleName("Save the edited message")
        self.cancel = QPushButton("Cancel", self)
        self.cancel.setAccessibleName("Cancel the edit")
        for widget in (self.edit, self.send_now, self.remove, self.save, self.cancel):
            row.addWidget(widget)
        self.edit.clicked.connect(self.start_edit)
        self.save.clicked.connect(self.save_edit)
        self.cancel.clicked.connect(self.cancel_edit)
        self.send_now.clicked.connect(lambda: panel.chat.queue.send_now(self.item.id))
        self.remove.clicked.connect(lambda: panel.chat.queue.remove(self.item.id))
        self.show_item(item)
        self._editing(False)

    def _tool(self, icon: str, text: str, name: str) -> QToolButton:
        button = give(QToolButton(self), icon)
        button.setText(text)
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setAccessibleName(name)
        mark(button, "action")
        return button

    @property
    def editing(self) -> bool:
        return not self.editor.isHidden()

    def show_item(self, item: Queued) -> None:
        """The row shows `item` (its text may have been edited)."""
        self.item = item
        self.text.set_full(shown_text(item))
        self.text.setToolTip(item.words)

    def say_send_now(self, own_answer: bool, elsewhere: str) -> None:
        """Send now stops this chat's answer; behind another chat's it is Send next."""
        if elsewhere:
            self.send_now.setText("Send next")
            self.send_now.setToolTip(
                f"Send this first when the answer in “{elsewhere}” ends (that answer goes on)"
            )
        else:
            self.send_now.setText("Send now")
            self.send_now.setToolTip(
                "Stop this chat's answer (its text is kept) and send this message"
                if own_answer
                else "Send this message now"
            )

    def start_edit(self) -> None:
        self.panel.chat.queue.hold(self.item.id, True)  # not sent while it is being edited
        self.editor.setPlainText(self.item.text)
        self._editing(True)
        self.editor.setFocus()
        self.editor.moveCursor(self.editor.textCursor().MoveOperation.End)

    def save_edit(self) -> None:
        if self.panel.chat.queue.edit(self.item.id, self.editor.toPlainText()):
            self._editing(False)
            self.show_item(self.item)  # the edited one (the queue's change kept the editor)
            self.panel.chat.queue.hold(self.item.id, False)

    def cancel_edit(self) -> None:
        self._editing(False)
        self.panel.chat.queue.hold(self.item.id, False)

    def _editing(self, on: bool) -> None:
        self.text.setVisible(not on)
        self.editor.setVisible(on)
        for widget in (self.edit, self.send_now, self.remove):
            widget.setVisible(not on)
        self.edit.setVisible(not on and self.item.kind in ("message", "edit"))  # has a text
        self.save.setVisible(on)
        self.cancel.setVisible(on)


class _Rows(QScrollArea):
    """The rows, as tall as they are up to `ROWS_PX`, then scrolling; the height follows
    the rows whenever they or their style change."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWidgetResizable(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.inner = QWidget(self)
        self.setWidget(self.inner)
        self.inner.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.inner and event.type() == QEvent.Type.LayoutRequest:
            self.updateGeometry()  # the rows changed: the height is asked again
        return super().eventFilter(watched, event)

    def sizeHint(self) -> QSize:
        inner = self.inner.sizeHint()
        return QSize(inner.width(), min(ROWS_PX, inner.height()))

    def minimumSizeHint(self) -> QSize:
        return self.sizeHint()


class QueuePanel(QFrame):
    """The shown chat's queued messages (see the module guarantees); `bind` gives it the chat."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Queued messages")
        self.chat: ChatController
        self.rows: dict[int, QueueRow] = {}
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(2)
        self.heading = QLabel(self)
        self.heading.setAccessibleName("Queue")
        self.heading.setWordWrap(True)
        mark(self.heading, "muted")
        layout.addWidget(self.heading)
        self.area = _Rows(self)
        self.inner = self.area.inner
        self.list = QVBoxLayout(self.inner)
        self.list.setContentsMargins(0, 0, 0, 0)
        self.list.setSpacing(2)
        self.list.addStretch(1)  # rows keep their own height, at the top
        layout.addWidget(self.area)
        self.hide()

    def bind(self, chat: ChatController) -> None:
        """Follow `chat`: its queue, the chat shown, whether an answer streams."""
        self.chat = chat
        chat.queue.changed.connect(self.refresh)
        chat.docChanged.connect(self.refresh)
        chat.busyChanged.connect(lambda _busy: self.refresh())
        self.refresh()

    def items(self) -> list[Queued]:
        """The shown chat's queued messages, in the order they will be sent."""
        return self.chat.queue.of(self.chat.doc.id)

    def refresh(self) -> None:
        """Show the shown chat's queue as it is now (an open editor keeps its draft)."""
        items = self.items()
        self.setVisible(bool(items))
        self._rows(items)
        self.heading.setText(self._heading())
        answering = self.chat.answering
        own = self.chat.shows_answer
        elsewhere = answering.title if answering is not None and not own else ""
        for row in self.rows.values():
            row.say_send_now(own, elsewhere)

    def _rows(self, items: list[Queued]) -> None:
        """One row per item of the shown chat, in order; rows of other chats' messages kept
        hidden (an open editor with its draft), rows of messages no longer queued removed."""
        queued = {item.id for item in self.chat.queue.items}
        for gone in [i for i in self.rows if i not in queued]:
            self.rows.pop(gone).deleteLater()
        for kept in self.rows.values():
            self.list.removeWidget(kept)
            kept.hide()
        for item in items:
            row = self.rows.get(item.id)
            if row is None:
                row = self.rows[item.id] = QueueRow(item, self)
            elif not row.editing:
                row.show_item(item)
            else:
                row.item = item
            self.list.insertWidget(self.list.count() - 1, row)
            row.show()  # at once, not when the event loop next turns

    def _heading(self) -> str:
        """How many wait here, and when they go."""
        chat = self.chat
        many = counted(self.items())
        answering = chat.answering
        if chat.shows_answer:
            return f"{many}: sent when this answer ends"
        if answering is not None:
            return f"{many}: sent when the answer in “{answering.title}” ends"
        if chat.queue.sending is not None:
            return f"{many}: sending the one before"
        if not chat.answers(chat.doc.endpoint):
            return f"{many}: sent once a model is loaded"
        return f"{many}: sending…"


__all__ = ["QueuePanel", "QueueRow", "carried", "shown_text"]
