"""The problem banner: one sentence for the user, the technical details behind a disclosure.

Guarantees: `show_problem(text, details)` shows the banner with `text` (word-wrapped, selectable,
coloured as an error by the theme, the accessible name "Problem") and, only when `details` is
not blank, a "Details" button that shows and hides them (read-only, selectable, monospace —
the bytes, a server's stderr, llama.cpp's words) — they start hidden each time a problem is
shown; the × button ("Dismiss") or `dismiss()` hides the banner and emits `dismissed`; a new
problem replaces the one shown. Nothing here reads an error's type: the caller hands over the
sentence and the details (`HarmonyDeskError.message` and `.details`).
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.theme import mark

DETAILS_HEIGHT = 160  # pixels: a few lines of stderr, scrolled beyond


class ProblemBanner(QFrame):
    """See the module guarantees."""

    dismissed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("problemBanner")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        self._details = ""
        self.label = QLabel(self)
        self.label.setObjectName("errorBanner")
        self.label.setWordWrap(True)
        self.label.setAccessibleName("Problem")
        self.label.setTextFormat(Qt.TextFormat.PlainText)  # a file name is never markup
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mark(self.label, "error")
        self.details_button = QToolButton(self)
        self.details_button.setText("Details")
        self.details_button.setCheckable(True)
        self.details_button.setArrowType(Qt.ArrowType.RightArrow)
        self.details_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.details_button.setAccessibleName("Details")
        self.details_button.setToolTip("Show the technical details")
        self.details_button.toggled.connect(self._show_details)
        self.close_button = QToolButton(self)
        self.close_button.setText("×")
        self.close_button.setAccessibleName("Dismiss")
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.dismiss)
        self.details_view = QPlainTextEdit(self)
        self.details_view.setReadOnly(True)
        self.details_view.setAccessibleName("Problem details")
        self.details_view.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details_view.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.details_view.setMaximumHeight(DETAILS_HEIGHT)
        self.details_view.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse
            | Qt.TextInteractionFlag.TextSelectableByKeyboard
        )
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.details_button, 0, Qt.AlignmentFlag.AlignTop)
        row.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 6, 8, 6)
        column.addLayout(row)
        column.addWidget(self.details_view)
        self.details_button.hide()
        self.details_view.hide()
        self.hide()

    def show_problem(self, text: str, details: str = "") -> None:
        """Show `text`, with `details` behind the disclosure when there are any."""
        self._details = details.strip()
        self.label.setText(text)
        self.details_view.setPlainText(self._details)
        self.details_button.setChecked(False)
        self._show_details(False)
        self.details_button.setVisible(bool(self._details))
        self.show()

    def dismiss(self) -> None:
        """Hide the banner (the × button)."""
        self.hide()
        self.dismissed.emit()

    def text(self) -> str:
        return self.label.text()

    def details(self) -> str:
        return self._details

    def _show_details(self, shown: bool) -> None:
        self.details_view.setVisible(shown)
        arrow = Qt.ArrowType.DownArrow if shown else Qt.ArrowType.RightArrow
        self.details_button.setArrowType(arrow)
        self.details_button.setToolTip(
            "Hide the technical details" if shown else "Show the technical details"
        )


__all__ = ["ProblemBanner"]
