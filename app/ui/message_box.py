"""The message box: where the user writes the next message.

Guarantees: Enter sends, Shift+Enter adds a line, Esc stops (or closes the "@" picker when it
shows); Tab moves on to Send (keyboard users are never trapped in the box); the box is as
tall as its text from `MIN_LINES` to `MAX_LINES` lines and scrolls beyond; while the "@"
picker shows, Up, Down, Tab and Esc go to it (Enter too once the user moved in its list) and
every other key to the box, so no keystroke is ever lost to it; files dropped or pasted are
attached, not typed as paths; a large paste is said (`pasted`) after it is in the box, so the
composer can check it fits.
"""

from __future__ import annotations

import math
from pathlib import Path

from PySide6.QtCore import QEvent, QMimeData, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QFocusEvent,
    QFontMetricsF,
    QKeyEvent,
)
from PySide6.QtWidgets import QPlainTextEdit, QSizePolicy, QWidget

from app.ui.mention_picker import MentionPicker, mention_at

LARGE_PASTE = 2_000  # characters: a paste this long is checked against the context at once
MIN_LINES, MAX_LINES = 2, 8  # the box's height follows its text between these


def _files(mime: QMimeData) -> list[Path]:
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]


class MessageBox(QPlainTextEdit):
    """The message box (see the module guarantees)."""

    submitted = Signal()
    stopRequested = Signal()
    filesDropped = Signal(list)  # local files dropped on the box: attached, not pasted as paths
    pasted = Signal(str)  # a large paste, now in the box
    mentionChanged = Signal(object)  # str: what follows a word-starting "@"; None: no mention
    focusChanged = Signal(bool)  # the box took (True) or lost the keyboard focus

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.picker: MentionPicker | None = None  # the composer's, when it has one
        self.cursorPositionChanged.connect(self._cursor_moved)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().documentLayout().documentSizeChanged.connect(self.fit_height)
        self.fit_height()

    def height_for(self, lines: int) -> int:
        """The box's height showing `lines` lines of text."""
        line = math.ceil(QFontMetricsF(self.font()).lineSpacing())
        margins = self.contentsMargins()
        frame = margins.top() + margins.bottom()
        return lines * line + math.ceil(2 * self.document().documentMargin()) + frame + 2

    def fit_height(self) -> None:
        """As tall as the text, from `MIN_LINES` to `MAX_LINES` lines (then it scrolls)."""
        lines = int(self.document().documentLayout().documentSize().height())
        height = self.height_for(max(MIN_LINES, min(MAX_LINES, lines)))
        if height != self.height() or self.minimumHeight() != height:
            self.setFixedHeight(height)

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):
            self.fit_height()  # another text size or stylesheet: another line height

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.focusChanged.emit(True)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.focusChanged.emit(False)

    def mention(self) -> str | None:
        """What follows a word-starting "@" right before the cursor (None: not in a mention)."""
        cursor = self.textCursor()
        return mention_at(cursor.block().text()[: cursor.positionInBlock()])

    def _cursor_moved(self) -> None:
        self.mentionChanged.emit(self.mention())

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if _files(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        files = _files(event.mimeData())
        if files:
            self.filesDropped.emit(files)
            event.acceptProposedAction()
        else:
            super().dropEvent(event)

    def insertFromMimeData(self, source: QMimeData) -> None:
        """A pasted file (copied in a file manager, or its path alone) is attached, not typed;
        a large paste is said after it is in the box."""
        from app.controllers.attachments import pasted_files

        text = source.text() if source.hasText() else ""
        files = pasted_files([str(p) for p in _files(source)], text)
        if files:
            self.filesDropped.emit(files)
            return
        super().insertFromMimeData(source)
        if len(text) >= LARGE_PASTE:
            self.pasted.emit(text)

    def event(self, event: QEvent) -> bool:
        """Tab picks from the "@" picker while it shows (Qt moves the focus before
        `keyPressEvent` would see it); once polished, the height is fitted again."""
        if (
            event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Tab
            and self.picker is not None
            and self.picker.key(event.key(), event.modifiers())
        ):
            return True
        handled = super().event(event)
        if event.type() == QEvent.Type.Polish:
            self.fit_height()  # the stylesheet's border (none in the composer's field) is known now
        return handled

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.picker is not None and self.picker.key(event.key(), event.modifiers()):
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.stopRequested.emit()
            return
        super().keyPressEvent(event)


__all__ = ["LARGE_PASTE", "MAX_LINES", "MIN_LINES", "MessageBox"]
