"""The model settings dialog: chat template, sampling values and how the model is loaded (GPU
layers, flash attention, cache type), remembered per model.

Guarantees: it opens with the values in use (the template registry's defaults with the user's
remembered choices on top); OK applies the template and sampling to the next message and
remembers everything for this model file; a changed load setting says that the model is loaded
again (`load_changed`); the bounds are those the engine accepts, so an out-of-range value
cannot be typed.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
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
        self._loading(form, host.choice())
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _loading(self, form: QFormLayout, chosen: ModelChoice) -> None:
        self.gpu = QComboBox(self)
        self.gpu.addItems(["auto", "all", "none (CPU only)", "some layers"])
        self.gpu.setAccessibleName("GPU layers")
        self.gpu_layers = QSpinBox(self)
        self.gpu_layers.setRange(1, 999)
        self.gpu_layers.setAccessibleName("How many layers on the GPU")
        layers = chosen.gpu_layers
        if isinstance(layers, int):
            self.gpu.setCurrentIndex(2 if layers == 0 else 3)
            self.gpu_layers.setValue(max(1, layers))
        else:
            self.gpu.setCurrentIndex(1 if layers == "all" else 0)
        self.gpu_layers.setEnabled(self.gpu.currentIndex() == 3)
        self.gpu.currentIndexChanged.connect(lambda i: self.gpu_layers.setEnabled(i == 3))
        self.flash = QCheckBox("Flash attention", self)
        self.flash.setChecked(bool(chosen.flash_attn))
        self.kv = QComboBox(self)
        self.kv.addItems(["f16", "q8_0"])
        self.kv.setCurrentText(chosen.kv_type or "f16")
        self.kv.setAccessibleName("KV cache type")
        self.kv.setToolTip("q8_0 halves the cache's memory and turns flash attention on")
        form.addRow("GPU layers", self.gpu)
        form.addRow("Layers on the GPU", self.gpu_layers)
        form.addRow("", self.flash)
        form.addRow("KV cache", self.kv)
        self._loaded_with = chosen.load_settings()
        self.load_changed = False

    def choice(self) -> ModelChoice:
        index = self.gpu.currentIndex()
        layers = ("auto", "all", 0, self.gpu_layers.value())[index]
        kv = "q8_0" if self.kv.currentText() == "q8_0" else "f16"
        return ModelChoice(
            template=self.template.currentText(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            repetition_penalty=self.repeat.value(),
            gpu_layers=layers,
            flash_attn=self.flash.isChecked(),
            kv_type=kv,
        )

    def accept(self) -> None:
        choice = self.choice()
        self.load_changed = choice.load_settings() != self._loaded_with
        self.host.apply_settings(choice)
        super().accept()


__all__ = ["ModelSettings"]
