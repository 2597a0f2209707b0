"""The model settings dialog: chat template and sampling values, remembered per model.

Guarantees: it opens with the values in use (the template registry's defaults with the user's
remembered choices on top); OK applies them to the next message and remembers them for this
model file; the bounds are those the engine accepts, so an out-of-range value cannot be typed.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QSpinBox,
    QWidget,
)

from app.controllers.model_host import ModelChoice, ModelHost


def _spin(
    low: float, high: float, step: float, value: float, name: str, parent: QWidget
) -> QDoubleSpinBox:
    box = QDoubleSpinBox(parent)
    box.setRange(low, high)
    box.setSingleStep(step)
    box.setDecimals(2)
    box.setValue(value)
    box.setAccessibleName(name)
    return box


class ModelSettings(QDialog):
    """Template and sampling for the loaded model."""

    def __init__(self, host: ModelHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.setWindowTitle("Model settings")
        current = host.settings()
        form = QFormLayout(self)
        self.template = QComboBox(self)
        self.template.addItems(host.template_names())
        self.template.setCurrentText(str(current["template"]))
        self.template.setAccessibleName("Chat template")
        self.temperature = _spin(0.0, 2.0, 0.05, float(current["temperature"]), "Temperature", self)
        self.top_p = _spin(0.01, 1.0, 0.05, float(current["top_p"]), "Top p", self)
        self.top_k = QSpinBox(self)
        self.top_k.setRange(0, 1000)
        self.top_k.setValue(int(current["top_k"]))
        self.top_k.setAccessibleName("Top k")
        self.repeat = _spin(
            0.5, 2.0, 0.05, float(current["repeat_penalty"]), "Repetition penalty", self
        )
        form.addRow("Template", self.template)
        form.addRow("Temperature", self.temperature)
        form.addRow("Top p", self.top_p)
        form.addRow("Top k (0: off)", self.top_k)
        form.addRow("Repetition penalty", self.repeat)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def choice(self) -> ModelChoice:
        return ModelChoice(
            template=self.template.currentText(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            repetition_penalty=self.repeat.value(),
        )

    def accept(self) -> None:
        self.host.apply_settings(self.choice())
        super().accept()


__all__ = ["ModelSettings"]
