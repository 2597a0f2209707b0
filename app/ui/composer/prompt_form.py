"""The small form an MCP prompt's arguments are asked in, before the prompt runs.

Guarantees: one line per argument the prompt declares, in its order, labelled with its name
(a required one marked "*", its description as the tooltip and the placeholder); "Use prompt"
is enabled only while every required argument has a value; it says the values (`chosen`:
the arguments given, blank ones left out) and closes; Cancel (or Esc) closes and says
nothing. The form is window-modal and opened with `open()`: the event loop goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from app.ui.theme import mark

if TYPE_CHECKING:
    from app.controllers.mcp_context import Offer


class PromptForm(QDialog):
    """See the module guarantees."""

    chosen = Signal(dict)  # str → str: the arguments given

    def __init__(self, offer: Offer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.offer = offer
        self.setWindowTitle(f"The prompt “{offer.name}” of {offer.server}")
        self.setAccessibleName("Prompt arguments")
        form = QFormLayout(self)
        if offer.description:
            about = QLabel(offer.description, self)
            about.setWordWrap(True)
            form.addRow(about)
        self.fields: dict[str, QLineEdit] = {}
        for argument in offer.arguments:
            field = QLineEdit(self)
            field.setPlaceholderText(argument.description)
            field.setToolTip(argument.description)
            field.setAccessibleName(argument.name + (" (required)" if argument.required else ""))
            field.textChanged.connect(self._check)
            form.addRow(argument.name + (" *" if argument.required else ""), field)
            self.fields[argument.name] = field
        if any(a.required for a in offer.arguments):
            note = QLabel("* required", self)
            mark(note, "muted")
            form.addRow(note)
        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.use = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.use.setText("Use prompt")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form.addRow(self.buttons)
        self._check()

    def values(self) -> dict[str, str]:
        """The arguments given (a blank one left out)."""
        return {name: f.text() for name, f in self.fields.items() if f.text().strip()}

    def _check(self) -> None:
        given = self.values()
        self.use.setEnabled(all(a.name in given for a in self.offer.arguments if a.required))

    def accept(self) -> None:
        if not self.use.isEnabled():
            return  # Enter in a field while a required one is blank
        super().accept()
        self.chosen.emit(self.values())


__all__ = ["PromptForm"]
