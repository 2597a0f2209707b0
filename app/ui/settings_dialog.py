"""The Settings dialog (File ▸ Settings…, Ctrl+,): built from the settings model's fields.

Guarantees: one row per shown setting, labelled with its description (a choice is a combo
box, a number a spin box within the model's bounds, so an out-of-range value cannot be typed);
the data folder is shown read-only with an Open button; OK validates and saves through the
preferences controller, applies the theme and the text size at once, and reports a refused
value in the dialog without closing it or writing anything.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QUrl
from PySide6.QtGui import QDesktopServices, QFont, QFontDatabase
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QWidget,
)

from app.controllers import preferences
from app.ui import appearance
from app.ui.theme import mark


class SettingsDialog(QDialog):
    """See the module guarantees; `saved` holds the settings written, after OK."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        form = QFormLayout(self)
        self.inputs: dict[str, QComboBox | QSpinBox] = {}
        for field in preferences.fields():
            box = self._input(field)
            box.setAccessibleName(field.label)
            box.setToolTip(field.description)
            self.inputs[field.name] = box
            form.addRow(field.label, box)
        folder = QHBoxLayout()
        self.data_folder = QLineEdit(str(preferences.data_folder()), self)
        self.data_folder.setReadOnly(True)
        self.data_folder.setAccessibleName("Data folder")
        self.open_folder = QPushButton("Open", self)
        self.open_folder.setAccessibleName("Open the data folder")
        self.open_folder.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(self.data_folder.text()))
        )
        folder.addWidget(self.data_folder)
        folder.addWidget(self.open_folder)
        form.addRow("Data folder", folder)
        self.problem = QLabel(self)
        self.problem.setAccessibleName("Problem")
        mark(self.problem, "error")
        form.addRow(self.problem)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)
        self.saved: Any = None

    def _input(self, field: preferences.Field) -> QComboBox | QSpinBox:
        if field.kind == "choice":
            combo = QComboBox(self)
            combo.addItems(list(field.choices))
            combo.setCurrentText(str(field.value))
            return combo
        spin = QSpinBox(self)
        spin.setRange(field.low, field.high)
        spin.setValue(int(field.value))
        return spin

    def values(self) -> dict[str, Any]:
        return {
            name: box.currentText() if isinstance(box, QComboBox) else box.value()
            for name, box in self.inputs.items()
        }

    def accept(self) -> None:
        try:
            self.saved = preferences.save(self.values())
        except ValueError as exc:
            self.problem.setText(str(exc))
            return
        apply_look(self.saved.theme, self.saved.font_size)
        super().accept()


def apply_look(choice: str, font_size: int) -> None:
    """The theme and the text size, for the whole application, now."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        return
    font = QFont(app.font())
    system = QFontDatabase.systemFont(QFontDatabase.SystemFont.GeneralFont).pointSize()
    font.setPointSize(font_size or system)
    app.setFont(font)
    appearance.apply(app, choice)


__all__ = ["SettingsDialog", "apply_look"]
