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
engine accepts, so an out-of-range value cannot be typed. The rows are `ModelChoice`'s
declarations (`Shown`, `app/templates/choices.py`): each row's label, help and section are its
field's, and the sampling rows are made from them whole (bounds, step, what 0 says), so a
sampling value declared there gets its row with no code here.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QSize, Qt
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

from app.controllers import preferences
from app.controllers.background import Background
from app.controllers.library_host import with_projector_sized
from app.controllers.model_context import ContextFacts, Sizing, facts, sizing
from app.controllers.model_host import ModelChoice, ModelHost
from app.domain.declared import Setting, setting, settings_of
from app.ui.settings.pages import SectionRows, beside, help_line, line_up
from app.ui.settings.speculative_rows import SpeculativeRows
from app.ui.theme import mark
from app.ui.window.screen_fit import fit_dialog, scrolled

GPU_WORDS = preferences.checked_setting("gpu_layers").shown.words  # auto, all, none: as Settings
GPU_CHOICES = (*(said for _, said in GPU_WORDS), "some layers")
WIDTH = 620
NO_GPU = "This copy of llama.cpp has no GPU backend: the model runs on the CPU."
DECIMALS = 2  # a sampling value's
SAMPLING_HEADING = "Sampling"  # the section of the rows derived from their declarations
SAMPLING = tuple(s for s in settings_of(ModelChoice) if s.shown.section == SAMPLING_HEADING)


def _box(declared: Setting, value: float, parent: QWidget) -> QDoubleSpinBox | QSpinBox:
    """A sampling value's box, as its field declares it: its bounds (above an exclusive lower
    one by the smallest step shown), its step, what 0 says, its label as its name."""
    shown = declared.shown
    low = declared.low or 0.0
    high = declared.high if declared.high is not None else shown.high or 0.0
    box: QDoubleSpinBox | QSpinBox
    if declared.whole:
        box = QSpinBox(parent)
        box.setRange(int(low), int(high))
        box.setSpecialValueText(shown.zero)
        box.setValue(int(value))
    else:
        box = QDoubleSpinBox(parent)
        box.setRange(low + (10**-DECIMALS if declared.above else 0.0), high)
        box.setSingleStep(shown.step)
        box.setDecimals(DECIMALS)
        box.setValue(value)
    box.setAccessibleName(shown.label)
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
        in_use = host.settings()
        body = QWidget(self)  # the rows: they scroll on a small screen, OK and Cancel stay
        column = self._column = QVBoxLayout(body)
        column.setContentsMargins(0, 0, 0, 0)
        outer = self._outer = QVBoxLayout(self)
        outer.addWidget(scrolled(body, self), 1)
        buttons = self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        self.ok = buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.template = QComboBox(self)
        self.template.addItems(host.template_names())
        self.template.setCurrentText(str(in_use.template))
        self.template.setAccessibleName("Chat template")
        template = setting(ModelChoice, "template")
        chat = SectionRows(column, template.shown.section, self)
        chat.add_setting(template, self.template, help_line(template.description, self))
        self._sampling(column, in_use)
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
        outer.addWidget(buttons)
        self._fit()

    # --- sampling ------------------------------------------------------------------------

    def _sampling(self, column: QVBoxLayout, in_use: ModelChoice) -> None:
        """A row for each sampling value `ModelChoice` declares, its box as declared."""
        self.boxes: dict[str, QDoubleSpinBox | QSpinBox] = {}
        self.origin: dict[str, QLabel] = {}
        rows = self.sampling_rows = SectionRows(column, SAMPLING_HEADING, self)
        for declared in SAMPLING:
            field, label = declared.name, declared.shown.label
            box = self.boxes[field] = _box(declared, getattr(in_use, field), self)
            self.origin[field] = QLabel(self)
            self.origin[field].setAccessibleName(f"Where the {label.lower()} comes from")
            mark(self.origin[field], "muted")
            rows.add_setting(declared, beside(box, self.origin[field], self))
            box.valueChanged.connect(self._said)
        boxes = self.boxes  # each box as an attribute too (`dialog.temperature`)
        self.temperature, self.top_p = boxes["temperature"], boxes["top_p"]
        self.top_k, self.repeat = boxes["top_k"], boxes["repetition_penalty"]
        self.reset = QPushButton("Use the template's values", self)
        self.reset.setAccessibleName("Put the template's sampling values back")
        self.reset.clicked.connect(self._reset)
        rows.grid.addWidget(self.reset, rows.grid.rowCount(), 1, Qt.AlignmentFlag.AlignLeft)
        self._shown = str(in_use.template)
        self.template.currentTextChanged.connect(self._template_changed)
        self._said()

    def _defaults(self, name: str | None = None) -> dict[str, float]:
        d = self.host.template_defaults(name or self.template.currentText())
        return {s.name: float(getattr(d, s.name)) for s in SAMPLING}

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
        declared = setting(ModelChoice, "context_length")
        shown = declared.shown
        self.context = QSpinBox(self)
        self.context.setRange(int(declared.low or 0), self.facts.highest)
        self.context.setSingleStep(int(shown.step))
        self.context.setGroupSeparatorShown(True)
        self.context.setSuffix(shown.unit)
        self.context.setValue(self.facts.start)
        self.context.setAccessibleName(shown.label)
        self.context_origin = QLabel(self)
        self.context_origin.setAccessibleName("Where the context length comes from")
        mark(self.context_origin, "muted")
        pair = beside(self.context, self.context_origin, self)
        said = (declared.description, self.facts.words())
        self.context_help = help_line(" ".join(s for s in said if s), self)
        self.memory = help_line("Working out the memory it takes…", self)
        self.memory.setAccessibleName("Memory at this context length")
        self.memory.setVisible(bool(self.host.path))  # a model file to read the size of
        rows = SectionRows(column, shown.section, self)
        rows.add_setting(declared, pair, self.context_help, self.memory)
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
        """Size the dialog to show every row where the screen has room (then the rows
        scroll, OK and Cancel stay on the screen); later, grow it when what it says grew
        (its width kept), never shrink it."""
        resized = self.testAttribute(Qt.WidgetAttribute.WA_Resized)
        width = self.width() if resized else WIDTH
        outer = self._outer
        margins = outer.contentsMargins()
        self._column.activate()
        rows = self._column.totalHeightForWidth(width - margins.left() - margins.right())
        if rows < 0:
            rows = self._column.totalSizeHint().height()
        chrome = margins.top() + margins.bottom() + outer.spacing()
        need = rows + chrome + self.buttons.sizeHint().height()
        if not resized or need > self.height():
            fit_dialog(self, QSize(width, max(need, self.height() if resized else 0)))

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
        gpu, kv = setting(ModelChoice, "gpu_layers"), setting(ModelChoice, "kv_type")
        self._gpu_choice(chosen)
        self.flash = QCheckBox(setting(ModelChoice, "flash_attn").shown.label, self)
        self.flash.setChecked(bool(chosen.flash_attn))
        self.kv = QComboBox(self)
        self.kv.addItems(list(kv.choices))
        self.kv.setCurrentText(chosen.kv_type or kv.choices[0])
        self.kv.setAccessibleName(f"{kv.shown.label} type")
        self.kv.setToolTip(kv.description.rstrip("."))
        rows = self.load_rows = SectionRows(column, gpu.shown.section, self)
        rows.add_setting(gpu, self.gpu, help_line(gpu.description, self))
        rows.add("gpu_count", "Layers on the GPU", self.gpu_layers)
        self.gpu_offload = self.host.gpu_offload
        rows.show_row(gpu.name, self.gpu_offload)
        rows.show_row("gpu_count", self.gpu_offload)
        rows.add_setting(kv, self.kv, self.flash, help_line(kv.description, self))
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
        self.gpu.setAccessibleName(setting(ModelChoice, "gpu_layers").shown.label)
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
        loading = ModelChoice(
            template=self.template.currentText(),
            gpu_layers=layers,
            flash_attn=self.flash.isChecked(),
            kv_type=kv,
            context_length=self.facts.chosen(self.context.value()),
            speculative=speculative,
            draft_model=draft_model,
            projector=self.projector.value(),
        )
        return ModelChoice.model_validate({**loading.model_dump(), **own})

    def accept(self) -> None:
        if self.speculative.missing:  # OK is off then; Enter must not get past it either
            return
        choice = self.choice()
        self.load_changed = self._load_differs() and self.reload.isChecked()
        self.host.apply_settings(choice)
        super().accept()


__all__ = ["ModelSettings"]
