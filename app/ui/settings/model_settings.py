"""The model settings dialog: chat template, sampling values, context length and how the model
is loaded (GPU layers, flash attention, cache type, speculative decoding, the image projector),
remembered per model.

Guarantees: it opens with the values in use (the template registry's defaults with the user's
remembered choices on top), in sections under headings, each with its help written under it;
beside each sampling value it says whether it is the template's or the user's own (and the
template's value then), and "Use the template's values" puts the template's back; choosing
another template moves every value the user had not changed to that template's; the context
length goes from 256 to what the model was trained for, says whether it is the settings' or this
model's own, and says the memory it would take (read off the GUI thread, the models page's
estimate); the GPU rows are there only where the loaded model's llama.cpp can offload to a GPU;
speculative decoding is chosen with what each way does said under it, and OK waits for a draft
model's file when a draft model is chosen (`speculative_rows`); the projector that loads with
the model (so that it sees images) is Automatic, None or a file checked to be one
(`projector_row`), and its file counts in the memory line; OK applies the template and sampling
to the next message and remembers, for this model file, only the values that differ from the
template's and the settings' (the rest travel with them); a changed load setting (context length
included) is said in the dialog: with "Reload now" (on by default) the model is loaded again
(`load_changed`), without it the change applies at the next load; the bounds are those the
engine accepts, so an out-of-range value cannot be typed.
"""

from __future__ import annotations

from typing import Any

import shiboken6
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QLabel,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.controllers.background import Background
from app.controllers.library_host import with_projector_sized
from app.controllers.model_context import ContextFacts, Sizing, facts, sizing
from app.controllers.model_host import ModelChoice, ModelHost
from app.ui.settings.pages import SectionRows, beside, help_line, line_up
from app.ui.settings.speculative_rows import SpeculativeRows
from app.ui.theme import mark

GPU_CHOICES = ("automatic", "all layers", "none (CPU only)", "some layers")
WIDTH = 620
NO_GPU = "This copy of llama.cpp has no GPU backend: the model runs on the CPU."


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
    """Template, sampling, context and loading for the loaded model."""

    def __init__(self, host: ModelHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.setWindowTitle("Model settings")
        self.setAccessibleName("Model settings")
        current = host.settings()
        column = self._column = QVBoxLayout(self)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.template = QComboBox(self)
        self.template.addItems(host.template_names())
        self.template.setCurrentText(str(current["template"]))
        self.template.setAccessibleName("Chat template")
        chat = SectionRows(column, "Chat template", self)
        chat.add(
            "template",
            "Template",
            self.template,
            help_line(
                "How messages are written for this model; its sampling values come with it.", self
            ),
        )
        self._sampling(column, current)
        self.context_rows = self._context(column)
        self._loading(column, host.choice())
        line_up(
            chat.labels
            + self.sampling_rows.labels
            + self.context_rows.labels
            + self.load_rows.labels
        )
        column.addStretch(1)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        column.addWidget(buttons)
        self.resize(WIDTH, self.heightForWidth(WIDTH))

    # --- sampling ------------------------------------------------------------------------

    def _sampling(self, column: QVBoxLayout, current: dict[str, Any]) -> None:
        self.temperature = _spin(0.0, 2.0, 0.05, float(current["temperature"]), "Temperature", self)
        self.top_p = _spin(0.01, 1.0, 0.05, float(current["top_p"]), "Top p", self)
        self.top_k = QSpinBox(self)
        self.top_k.setRange(0, 1000)
        self.top_k.setSpecialValueText("off")
        self.top_k.setValue(int(current["top_k"]))
        self.top_k.setAccessibleName("Top k")
        self.repeat = _spin(
            0.5, 2.0, 0.05, float(current["repeat_penalty"]), "Repetition penalty", self
        )
        self.boxes: dict[str, QDoubleSpinBox | QSpinBox] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "repetition_penalty": self.repeat,
        }
        self.origin: dict[str, QLabel] = {}
        rows = self.sampling_rows = SectionRows(column, "Sampling", self)
        labels = ("Temperature", "Top p", "Top k", "Repetition penalty")
        for (field, box), label in zip(self.boxes.items(), labels, strict=True):
            self.origin[field] = QLabel(self)
            self.origin[field].setAccessibleName(f"Where the {label.lower()} comes from")
            mark(self.origin[field], "muted")
            rows.add(field, label, beside(box, self.origin[field], self))
            box.valueChanged.connect(self._said)
        self.reset = QPushButton("Use the template's values", self)
        self.reset.setAccessibleName("Put the template's sampling values back")
        self.reset.clicked.connect(self._reset)
        rows.grid.addWidget(self.reset, rows.grid.rowCount(), 1, Qt.AlignmentFlag.AlignLeft)
        self._shown = str(current["template"])
        self.template.currentTextChanged.connect(self._template_changed)
        self._said()

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

    # --- context -------------------------------------------------------------------------

    def _context(self, column: QVBoxLayout) -> SectionRows:
        self.facts: ContextFacts = facts(self.host)
        self.context = QSpinBox(self)
        self.context.setRange(256, self.facts.highest)
        self.context.setSingleStep(1024)
        self.context.setGroupSeparatorShown(True)
        self.context.setSuffix(" tokens")
        self.context.setValue(self.facts.start)
        self.context.setAccessibleName("Context length")
        self.context_origin = QLabel(self)
        self.context_origin.setAccessibleName("Where the context length comes from")
        mark(self.context_origin, "muted")
        pair = beside(self.context, self.context_origin, self)
        self.context_help = help_line(
            " ".join(
                s
                for s in (
                    "How much of the conversation the model reads at once; more takes more memory.",
                    self.facts.words(),
                )
                if s
            ),
            self,
        )
        self.memory = help_line("Working out the memory it takes…", self)
        self.memory.setAccessibleName("Memory at this context length")
        self.memory.setVisible(bool(self.host.path))  # a model file to read the size of
        rows = SectionRows(column, "Context", self)
        rows.add("context", "Context length", pair, self.context_help, self.memory)
        self.context.valueChanged.connect(self._context_changed)
        self._sizing: Sizing | None = None
        self._opened_context = self.context.value()
        self._jobs = Background("model-size", lambda _text, _details: None)  # no hint then
        if self.host.path:
            self._jobs.run(lambda: sizing(self.host), self._sized)
        self._context_changed()
        return rows

    def _sized(self, found: Sizing | None) -> None:
        if not shiboken6.isValid(self):  # the dialog closed meanwhile
            return
        self._sizing = found
        self.memory.setVisible(found is not None)
        self._context_changed()
        self._fit()

    def _fit(self) -> None:
        """Grow the dialog when what it says grew (its width kept)."""
        self._column.activate()
        need = self.heightForWidth(self.width())
        if need > self.height():
            self.resize(self.width(), need)

    def _context_changed(self) -> None:
        value = self.context.value()
        own = self.facts.chosen(value)
        self.context_origin.setText(
            f"yours (Settings: {self.facts.default:,})" if own is not None else "from Settings"
        )
        if self._sizing is not None:
            sized = with_projector_sized(self._sizing, self.projector.resolved())
            self.memory.setText(sized.words(value))

    # --- loading -------------------------------------------------------------------------

    def _loading(self, column: QVBoxLayout, chosen: ModelChoice) -> None:
        self._gpu_choice(chosen)
        self.flash = QCheckBox("Flash attention", self)
        self.flash.setChecked(bool(chosen.flash_attn))
        self.kv = QComboBox(self)
        self.kv.addItems(["f16", "q8_0"])
        self.kv.setCurrentText(chosen.kv_type or "f16")
        self.kv.setAccessibleName("KV cache type")
        self.kv.setToolTip("q8_0 halves the cache's memory and turns flash attention on")
        rows = self.load_rows = SectionRows(column, "Loading", self)
        rows.add(
            "gpu",
            "GPU layers",
            self.gpu,
            help_line("Automatic puts every layer on the GPU where it fits.", self),
        )
        rows.add("gpu_layers", "Layers on the GPU", self.gpu_layers)
        self.gpu_offload = self.host.gpu_offload
        rows.show_row("gpu", self.gpu_offload)
        rows.show_row("gpu_layers", self.gpu_offload)
        rows.add(
            "kv",
            "KV cache",
            self.kv,
            self.flash,
            help_line("q8_0 halves the cache's memory and turns flash attention on.", self),
        )
        if not self.gpu_offload:
            rows.grid.addWidget(help_line(NO_GPU, self), rows.grid.rowCount(), 1)
        self.speculative = SpeculativeRows(rows, chosen, self.host.path, self)
        from app.ui.settings.projector_row import ProjectorRow  # off the window's start path

        self.projector = ProjectorRow(rows, chosen, self.host.path, self)
        self.projector.box.currentIndexChanged.connect(self._context_changed)  # its memory
        self._reload_row(rows, chosen)

    def _gpu_choice(self, chosen: ModelChoice) -> None:
        """The GPU layers choice (automatic, all, none, a count) and its count, as remembered."""
        self.gpu = QComboBox(self)
        self.gpu.addItems(list(GPU_CHOICES))
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

    def _reload_row(self, rows: SectionRows, chosen: ModelChoice) -> None:
        """ "Reload now", and the line that says when the loading settings apply, kept up to date
        as any of them changes."""
        self.reload = QCheckBox("Reload now", self)
        self.reload.setChecked(True)
        self.reload.setAccessibleName("Load the model again now with the changed settings")
        self.reload_note = help_line("", self)
        self.reload_note.setAccessibleName("When the loading settings apply")
        rows.add("reload", "", self.reload, self.reload_note)
        self._loaded_with = chosen.load_settings()
        self._projector = chosen.projector
        self.load_changed = False
        for signal in (
            self.gpu.currentIndexChanged,
            self.gpu_layers.valueChanged,
            self.kv.currentIndexChanged,
            self.flash.toggled,
            self.speculative.mode.currentIndexChanged,
            self.speculative.path.textChanged,
            self.projector.box.currentIndexChanged,
            self.reload.toggled,
            self.context.valueChanged,
        ):
            signal.connect(self._changed)
        self._changed()

    def _load_differs(self) -> bool:
        """Whether a setting that applies at load differs from how the model is loaded."""
        changed_context = self.context.value() != self._opened_context
        changed_projector = self.projector.value() != self._projector
        return (
            self.choice().load_settings() != self._loaded_with
            or changed_context
            or changed_projector
        )

    def _changed(self) -> None:
        """Say when the loading settings apply, and offer Reload now only when one changed."""
        differs = self._load_differs()
        self.reload.setEnabled(differs)
        if not differs:
            said = "The context length and these apply when the model loads."
        elif self.reload.isChecked():
            said = "Changed: the model loads again with them when you press OK."
        else:
            said = "Changed: they apply the next time the model loads."
        self.reload_note.setText(said)
        self.ok.setEnabled(not self.speculative.missing)
        self._fit()

    def choice(self) -> ModelChoice:
        index = self.gpu.currentIndex()
        layers = ("auto", "all", 0, self.gpu_layers.value())[index]
        kv = "q8_0" if self.kv.currentText() == "q8_0" else "f16"
        defaults = self._defaults()
        own = {f: b.value() if self._yours(f, defaults) else None for f, b in self.boxes.items()}
        speculative, draft_model = self.speculative.value()
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
            context_length=self.facts.chosen(self.context.value()),
            speculative=speculative,
            draft_model=draft_model,
            projector=self.projector.value(),
        )

    def accept(self) -> None:
        if self.speculative.missing:  # OK is off then; Enter must not get past it either
            return
        choice = self.choice()
        self.load_changed = self._load_differs() and self.reload.isChecked()
        self.host.apply_settings(choice)
        super().accept()


__all__ = ["ModelSettings"]
