"""The whole result of a tool call whose result the model read cut, in a window of its own.

Guarantees: the dialog opens at once saying that it reads the tool audit, then shows the whole
result read-only (`loaded` is emitted when it is there), or the sentence that says why it is
not; the transcript is never blocked while the audit is read (`app.controllers.tool_results`).
It opens within its screen (760×560 where there is room): the text scrolls, Close stays on it.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.controllers.tool_results import WholeResults
from app.ui.markdown.view import monospace
from app.ui.window.screen_fit import fit_dialog


class WholeResultDialog(QDialog):
    """One call's whole result, read-only (see the module guarantees)."""

    loaded = Signal()

    def __init__(self, tool: str, key: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("wholeResult")
        self.setWindowTitle(f"Whole result of {tool}")
        self.setAccessibleName("Whole tool result")
        self.status = QLabel(f"Reading result {key} from the tool audit…", self)
        self.status.setWordWrap(True)  # a long reason wraps: the dialog stays on its screen
        self.text = QPlainTextEdit(self)
        self.text.setReadOnly(True)
        self.text.setFont(monospace())
        self.text.setAccessibleName("Whole tool result text")
        layout = QVBoxLayout(self)
        layout.addWidget(self.status)
        layout.addWidget(self.text, 1)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        close.rejected.connect(self.reject)
        layout.addWidget(close)
        fit_dialog(self, QSize(760, 560))  # within the screen; the text scrolls, Close stays
        self._results = WholeResults()
        self._results.fetch(key, self._show)

    def _show(self, text: str | None, why: str) -> None:
        if text is None:
            self.status.setText(why)
        else:
            self.status.setText(f"The whole result: {len(text):,} characters.")
            self.text.setPlainText(text)
        self.loaded.emit()


__all__ = ["WholeResultDialog"]
