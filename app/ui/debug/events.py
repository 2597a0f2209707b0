"""The Run page's events: the parser's issues, a remote endpoint's requests, and llama.cpp's
own log folded into one line.

Guarantees: every event line is shown, in order, once; the lines llama.cpp wrote (prefixed
`llama.cpp: `, its loader's report of every key and tensor among them) never crowd the rest:
they sit behind one toggle line that says how many there are ("llama.cpp log · 412 lines ▸"),
hidden until it is pressed and hidden again on a second press; the toggle shows only while
there are such lines; `events` holds the other lines, `native` llama.cpp's.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtWidgets import QPlainTextEdit, QToolButton, QVBoxLayout, QWidget

from app.domain.redact import redact
from app.ui.markdown.view import monospace

NATIVE = "llama.cpp: "  # how the chat marks a line of llama.cpp's own log


def text_box(name: str, parent: QWidget) -> QPlainTextEdit:
    """A read-only monospace box, named for screen readers."""
    box = QPlainTextEdit(parent)
    box.setReadOnly(True)
    box.setFont(monospace())
    box.setAccessibleName(name)
    return box


def append(box: QPlainTextEdit, text: str) -> None:
    """`text` added at the end of `box`, the rest left as it is."""
    cursor = box.textCursor()
    cursor.movePosition(QTextCursor.MoveOperation.End)
    cursor.insertText(text)


class EventsView(QWidget):
    """See the module guarantees."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.events = text_box("Parser events", self)
        self.events.setPlaceholderText("The parser's issues and a remote endpoint's requests")
        self.toggle = QToolButton(self)
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.toggle.setAccessibleName("Show llama.cpp's log")
        self.toggle.setToolTip("llama.cpp's own lines: loading the model, its context, its memory")
        self.toggle.toggled.connect(self._fold)
        self.native = text_box("llama.cpp log", self)
        self._lines = 0
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addWidget(self.toggle)
        column.addWidget(self.native, 2)
        column.addWidget(self.events, 1)
        self.clear()

    def add(self, lines: Sequence[str]) -> None:
        """More event lines, each to its box (redacted)."""
        native = [redact(line.removeprefix(NATIVE)) for line in lines if line.startswith(NATIVE)]
        other = [redact(line) for line in lines if not line.startswith(NATIVE)]
        if other:
            append(self.events, "".join(f"{line}\n" for line in other))
        if native:
            append(self.native, "".join(f"{line}\n" for line in native))
            self._lines += len(native)
            self.toggle.show()
            self._fold(self.toggle.isChecked())

    def clear(self) -> None:
        self.events.clear()
        self.native.clear()
        self._lines = 0
        self.toggle.setChecked(False)
        self.toggle.hide()
        self.native.hide()

    def _fold(self, open_: bool) -> None:
        arrow = "▾" if open_ else "▸"
        lines = f"{self._lines:,} line{'s' if self._lines != 1 else ''}"
        self.toggle.setText(f"{arrow} llama.cpp log · {lines}")
        self.native.setVisible(open_)


__all__ = ["NATIVE", "EventsView", "append", "text_box"]
