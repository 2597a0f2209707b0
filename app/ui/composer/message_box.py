"""The message box: where the user writes the next message.

Guarantees: Enter sends, Shift+Enter adds a line, Esc stops (or closes the "@" / "/" picker
when it shows); Tab moves on to Send (keyboard users are never trapped in the box); the box is
as tall as its text from `MIN_LINES` to `MAX_LINES` lines and scrolls beyond; it says what is
typed after a word-starting "@" (`mentionChanged`) and after a "/" that starts the message
(`commandChanged`) as the cursor moves; while the picker shows, Up, Down, Tab and Esc go to it
(Enter too once the user moved in its list, or at once for a "/" command) and every other key
to the box, so no keystroke is ever lost to it; files dropped or pasted are
attached, not typed as paths; an image pasted or dropped (a screenshot on the clipboard, a
picture dragged from a browser) is handed on as its bytes (`imagePasted`: the file's own bytes
when the clipboard holds an image format the app reads, else the picture as PNG), never typed;
a paste that also holds text is text (a spreadsheet's cells come with a picture of them); a
large paste is said (`pasted`) after it is in the box, so the composer can check it fits.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from PySide6.QtCore import QBuffer, QByteArray, QEvent, QIODevice, QMimeData, Qt, Signal
from PySide6.QtGui import (
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QFocusEvent,
    QFontMetricsF,
    QImage,
    QImageWriter,
    QKeyEvent,
)
from PySide6.QtWidgets import QPlainTextEdit, QSizePolicy, QWidget

from app.ui.composer.mention_picker import MentionPicker, command_at, mention_at

LARGE_PASTE = 2_000  # characters: a paste this long is checked against the context at once
MIN_LINES, MAX_LINES = 2, 8  # the box's height follows its text between these


# the clipboard's image formats the app reads as they are (their bytes checked, not re-encoded)
IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpg",
    "image/webp": "webp",
    "image/gif": "gif",
    "image/bmp": "bmp",
}


def _files(mime: QMimeData) -> list[Path]:
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile()]


def pasted_image(mime: QMimeData) -> tuple[bytes, str] | None:
    """The image `mime` holds, as (bytes, a name for it), or None: the bytes of the first
    format the app reads, else Qt's picture encoded as PNG."""
    stamp = time.strftime("%H%M%S")
    for kind, suffix in IMAGE_FORMATS.items():
        if mime.hasFormat(kind):
            return bytes(mime.data(kind).data()), f"pasted-{stamp}.{suffix}"
    if not mime.hasImage():
        return None
    image = mime.imageData()
    if not isinstance(image, QImage) or image.isNull():
        return None
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    QImageWriter(buffer, QByteArray(b"PNG")).write(image)
    buffer.close()
    return bytes(data.data()), f"pasted-{stamp}.png"


def _has_image(mime: QMimeData) -> bool:
    return mime.hasImage() or any(mime.hasFormat(kind) for kind in IMAGE_FORMATS)


class MessageBox(QPlainTextEdit):
    """The message box (see the module guarantees)."""

    submitted = Signal()
    stopRequested = Signal()
    filesDropped = Signal(list)  # local files dropped on the box: attached, not pasted as paths
    imagePasted = Signal(bytes, str)  # an image pasted or dropped: its bytes, a name for it
    pasted = Signal(str)  # a large paste, now in the box
    mentionChanged = Signal(object)  # str: what follows a word-starting "@"; None: no mention
    commandChanged = Signal(object)  # str: what follows a "/" starting the message; None: none
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

    def command(self) -> str | None:
        """What follows a "/" that starts the message, the cursor still in that word (None:
        not in a command)."""
        cursor = self.textCursor()
        if cursor.blockNumber() != 0:
            return None
        return command_at(cursor.block().text()[: cursor.positionInBlock()])

    def _cursor_moved(self) -> None:
        self.mentionChanged.emit(self.mention())
        self.commandChanged.emit(self.command())

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if _files(event.mimeData()) or _has_image(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if _files(event.mimeData()) or _has_image(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragMoveEvent(event)

    def dropEvent(self, event: QDropEvent) -> None:
        files = _files(event.mimeData())
        image = None if files else pasted_image(event.mimeData())
        if files:
            self.filesDropped.emit(files)
        elif image is not None:
            self.imagePasted.emit(*image)
        else:
            super().dropEvent(event)
            return
        event.acceptProposedAction()

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return _has_image(source) or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        """A pasted file (copied in a file manager, or its path alone) is attached, not typed;
        so is a pasted image (without text); a large paste is said after it is in the box."""
        from app.controllers.attachments import pasted_files

        text = source.text() if source.hasText() else ""
        files = pasted_files([str(p) for p in _files(source)], text)
        if files:
            self.filesDropped.emit(files)
            return
        image = None if source.hasText() else pasted_image(source)
        if image is not None:
            self.imagePasted.emit(*image)
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


__all__ = ["IMAGE_FORMATS", "LARGE_PASTE", "MAX_LINES", "MIN_LINES", "MessageBox", "pasted_image"]
