"""The model settings dialog: chat template, sampling values and how the model is loaded (GPU
layers, flash attention, cache type), remembered per model.

Guarantees: it opens with the values in use (the template registry's defaults with the user's
remembered choices on top); beside each sampling value it says whether it is the template's or
the user's own (and the template's value then), and "Use the template's values" puts the
template's back; choosing another template moves every value the user had not changed to that
template's; OK applies the template and sampling to the next message and remembers, for this
model file, only the values that differ from the template's (the rest travel with it); a changed
load setting says that the model is loaded again (`load_changed`); the bounds are those the
engine accepts, so an out-of-range value cannot be typed.
"""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
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


def _set(box: QDoubleSpinBox | QSpinBox, value: float) -> None:
    if isinstance(box, QSpinBox):
        box.setValue(int(value))
    else:
        box.setValue(value)


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
        self.boxes: dict[str, QDoubleSpinBox | QSpinBox] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repetition_penalty": self.repeat,
        }
        self.origin: dict[str, QLabel] = {}
        labels = ("Temperature", "Top p", "Top k (0: off)", "Repetition penalty")
        for (field, box), label in zip(self.boxes.items(), labels, strict=True):
            self.origin[field] = QLabel(self)
            self.origin[field].setAccessibleName(f"Where the {label.lower()} comes from")
            row = QHBoxLayout()
            row.addWidget(box, 1)
            row.addWidget(self.origin[field])
            form.addRow(label, row)
            box.valueChanged.connect(self._said)
        self.reset = QPushButton("Use the template's values", self)
        self.reset.setAccessibleName("Put the template's sampling values back")
        self.reset.clicked.connect(self._reset)
        form.addRow("", self.reset)
        self._shown = str(current["template"])
        self.template.currentTextChanged.connect(self._template_changed)
        self._said()
        self._loading(form, host.choice())
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def _defaults(self, name: str | None = None) -> dict[str, float]:
        d = self.host.template_defaults(name or self.template.currentText())
        return {
            "temperature": d.temperature,
            "top_p": d.top_p,
            "top_k": d.top_k,
            "repetition_penalty": d.repetition_penalty,
        }

    def _yours(self, field: str, defaults: dict[str, float]) -> bool:
        return abs(self.boxes[field].value() - defaults[field]) > 1e-9

    def _said(self) -> None:
        """Say beside each value whether it is the template's or the user's own."""
        defaults = self._defaults()
        for field, label in self.origin.items():
            yours = self._yours(field, defaults)
            label.setText(f"yours (template: {defaults[field]:g})" if yours else "template's")
        self.reset.setEnabled(any(self._yours(f, defaults) for f in self.boxes))

    def _reset(self) -> None:
        for field, value in self._defaults().items():
            _set(self.boxes[field], value)

    def _template_changed(self, name: str) -> None:
        """Values the user had not changed follow the new template."""
        before, after = self._defaults(self._shown), self._defaults(name)
        for field, box in self.boxes.items():
            if not self._yours(field, before):
                _set(box, after[field])
        self._shown = name
        self._said()

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
        defaults = self._defaults()
        own = {f: b.value() if self._yours(f, defaults) else None for f, b in self.boxes.items()}
        top_k = own["top_k"]
        return ModelChoice(
            template=self.template.currentText(),
            temperature=own["temperature"],
            top_p=own["top_p"],
            top_k=int(top_k) if top_k is not None else None,
            repetition_penalty=own["repetition_penalty"],
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
