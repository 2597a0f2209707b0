"""The conversation's instructions, folded into one button until the user opens them.

Guarantees: the editor (accessible name "Conversation instructions") is hidden until its
button is pressed, and pressing it again, Done or Esc in the editor folds it away; the button
says whether the conversation has instructions ("Instructions set") or not ("Instructions…"),
whether the text came from the user or from the conversation shown (`set_text`, which emits
no `edited`); every edit is emitted as `edited` with the whole text.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.icons import give
from app.ui.theme import mark

EDITOR_LINES = 4
HINT = "The model reads these before every message of this conversation."


class InstructionsFold(QFrame):
    """The unfolded editor; `button` (the header's) folds and unfolds it."""

    edited = Signal(str)

    def __init__(self, parent: QWidget, button: QToolButton) -> None:
        super().__init__(parent)
        self.setObjectName("instructionsFold")
        self.button = button
        self.button.setCheckable(True)
        self.button.setAutoRaise(True)
        self.button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.button.setAccessibleName("Show or hide the conversation's instructions")
        self.editor = QPlainTextEdit(self)
        self.editor.setPlaceholderText("Instructions for this conversation (optional)")
        self.editor.setAccessibleName("Conversation instructions")
        self.editor.setTabChangesFocus(True)
        lines = self.editor.fontMetrics().lineSpacing() * EDITOR_LINES
        self.editor.setFixedHeight(lines + 16)
        self.hint = QLabel(HINT, self)
        self.hint.setWordWrap(True)
        mark(self.hint, "muted")
        self.done = QPushButton("Done", self)
        self.done.setAccessibleName("Fold the instructions away")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 4)
        layout.addWidget(self.editor)
        row = QHBoxLayout()
        row.addWidget(self.hint, 1)
        row.addWidget(self.done)
        layout.addLayout(row)
        self.button.toggled.connect(self._unfold)
        self.done.clicked.connect(lambda: self.button.setChecked(False))
        self.editor.textChanged.connect(self._edited)
        self.editor.installEventFilter(self)
        self._say()
        self.hide()

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        escape = isinstance(event, QKeyEvent) and event.key() == Qt.Key.Key_Escape
        if escape and event.type() == QEvent.Type.KeyPress:
            self.button.setChecked(False)
            return True
        return False

    def _unfold(self, on: bool) -> None:
        self.setVisible(on)
        if on:
            self.editor.setFocus()
        elif self.editor.hasFocus():
            self.button.setFocus()

    def _edited(self) -> None:
        self._say()
        self.edited.emit(self.editor.toPlainText())

    def set_text(self, text: str) -> None:
        """The shown conversation's instructions (no `edited`)."""
        self.editor.blockSignals(True)
        self.editor.setPlainText(text)
        self.editor.blockSignals(False)
        self._say()

    def _say(self) -> None:
        has = bool(self.editor.toPlainText().strip())
        self.button.setText("Instructions set" if has else "Instructions…")
        give(self.button, "text-box-check-outline" if has else "text-box-edit-outline")
        self.button.setToolTip(
            "This conversation has instructions: show them"
            if has
            else "Give this conversation instructions (a role, a tone, rules)"
        )


__all__ = ["InstructionsFold"]
