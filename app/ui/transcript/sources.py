"""The sources under an answer: one chip per passage it cited, which opens the passage.

Guarantees: chips appear only for `[n]` marks the domain's citation rule finds in the answer
(never in code) that point at a passage the message carried; each says the file and the page
or lines, shows the passage's start on hover, and opens the whole passage on a click; an
answer that cites nothing (or a message with no passages) shows no row.
"""

from __future__ import annotations

from PySide6.QtWidgets import QHBoxLayout, QLabel, QMessageBox, QPushButton, QWidget

from app.domain import attachments
from app.domain.citations import cited
from app.domain.history import Version
from app.ui.theme import mark


class SourcesRow(QWidget):
    """See the module guarantees."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.row = QHBoxLayout(self)
        self.row.setContentsMargins(0, 0, 0, 0)
        self.chips: list[QPushButton] = []
        self._shown: tuple[str, str] | None = None
        self.hide()

    def show_for(self, version: Version) -> None:
        """The chips for the version's chosen answer."""
        reply = version.reply
        answer = "".join(g.text for g in reply.segments if g.kind == "answer") if reply else ""
        message = version.user_text
        if self._shown == (message, answer):
            return
        self._shown = (message, answer)
        while self.row.count():
            item = self.row.takeAt(0)
            if item is not None and item.widget() is not None:
                item.widget().deleteLater()  # type: ignore[union-attr]
        self.chips = []
        found = attachments.passages(attachments.split(message)[0])
        numbers = [n for n in cited(answer, max(found, default=0)) if n in found]
        if not numbers:
            self.hide()
            return
        self.row.addWidget(mark(QLabel("Sources:", self), "muted"))
        for n in numbers:
            file, where, text = found[n]
            chip = QPushButton(f"[{n}] {file}, {where}", self)
            chip.setAccessibleName(f"Source {n}: {file}, {where}")
            chip.setToolTip(text[:400])
            mark(chip, "chip")
            heading = f"[{n}] {file}, {where}"
            chip.clicked.connect(lambda _=False, h=heading, t=text: self._open(h, t))
            self.row.addWidget(chip)
            self.chips.append(chip)
        self.row.addStretch(1)
        self.show()

    def _open(self, heading: str, text: str) -> None:
        box = QMessageBox(
            QMessageBox.Icon.NoIcon, heading, text, QMessageBox.StandardButton.Close, self
        )
        box.open()


__all__ = ["SourcesRow"]
