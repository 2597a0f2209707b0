"""Model settings' speculative decoding rows: how the model guesses ahead (off, prompt lookup, a
draft model) and, for a draft model, its GGUF file.

Guarantees: the rows open with the model's remembered choice (none remembered: prompt lookup,
the engine's default); the line under the choice says what the chosen way does, in words; the
draft model's file row is shown only while "Draft model" is chosen, filled by typing or by a
file dialog that lists GGUF files and opens in the model's folder; `value` is what
`ModelChoice` remembers (`speculative` None for prompt lookup; the file, its whole path, only
for a draft model; the choices and their words are `ModelChoice.speculative`'s declaration),
and `missing` says when a draft model is chosen without a file there (the
line under it says which), so the dialog can refuse OK until there is one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLineEdit,
    QPushButton,
    QWidget,
)

from app.controllers.model_host import ModelChoice
from app.domain.declared import setting
from app.ui.settings.pages import SectionRows, help_line
from app.ui.start_folder import open_file

SPECULATIVE, DRAFT_MODEL = setting(ModelChoice, "speculative"), setting(ModelChoice, "draft_model")
Mode = Literal["off", "lookup", "draft"]
assert get_args(Mode) == SPECULATIVE.choices, "Mode is `ModelChoice.speculative`'s choices"
MODES: tuple[tuple[Mode, str], ...] = tuple((m, SPECULATIVE.shown.said(m)) for m in get_args(Mode))
SAID: dict[Mode, str] = {
    "off": "Every token is worked out one at a time.",
    "lookup": "Guesses the next words from text already in the conversation and checks the"
    " guesses in one step: faster where an answer repeats it (code edits, quotes, summaries"
    " that copy). It guesses less, or not at all, while guesses miss, so other answers are"
    " not slowed down.",
    "draft": "A smaller model with this model's vocabulary guesses the next words and this"
    " model checks them in one step: faster where the small model guesses well. It takes its"
    " own memory too.",
}
NO_FILE = "Choose the draft model: a smaller GGUF with the same vocabulary (the same family)."
NOT_THERE = "There is no file at that path."
SHARED = "It must share this model's vocabulary; loading says why when it does not."


class SpeculativeRows:
    """The speculative decoding choice and the draft model's file, as rows of a section."""

    def __init__(self, rows: SectionRows, chosen: ModelChoice, model: str, parent: QWidget):
        self._parent, self.model = parent, model
        self.mode = QComboBox(parent)
        for key, words in MODES:
            self.mode.addItem(words, key)
        self.mode.setCurrentIndex(self.mode.findData(chosen.speculative or "lookup"))
        self.mode.setAccessibleName(SPECULATIVE.shown.label)
        self.said = help_line("", parent)
        self.said.setAccessibleName("What speculative decoding does")
        rows.add_setting(SPECULATIVE, self.mode, self.said)
        self.path = QLineEdit(chosen.draft_model or "", parent)
        self.path.setPlaceholderText("a GGUF file")
        self.path.setAccessibleName("The draft model's file")
        self.browse = QPushButton("Choose…", parent)
        self.browse.setAccessibleName("Choose the draft model's file")
        self.browse.clicked.connect(self._browse)
        pair = QWidget(parent)
        line = QHBoxLayout(pair)
        line.setContentsMargins(0, 0, 0, 0)
        line.addWidget(self.path, 1)
        line.addWidget(self.browse)
        self.file_note = help_line("", parent)
        self.file_note.setAccessibleName("About the draft model")
        rows.add_setting(DRAFT_MODEL, pair, self.file_note)
        self._rows = rows
        self.mode.currentIndexChanged.connect(self._shown)
        self.path.textChanged.connect(self._shown)
        self._shown()

    def chosen(self) -> Mode:
        data = self.mode.currentData()
        return next((key for key, _ in MODES if key == data), "lookup")

    def _file(self) -> Path | None:
        typed = self.path.text().strip()
        return Path(typed).expanduser().resolve() if typed else None

    def value(self) -> tuple[Mode | None, str | None]:
        """`ModelChoice.speculative` and `draft_model`: None where the default applies (prompt
        lookup; no draft model's file)."""
        mode, file = self.chosen(), self._file()
        draft = str(file) if mode == "draft" and file is not None else None
        return (None if mode == "lookup" else mode), draft

    @property
    def missing(self) -> bool:
        """A draft model is chosen and there is no file where it says."""
        file = self._file()
        return self.chosen() == "draft" and (file is None or not file.is_file())

    def _shown(self) -> None:
        mode = self.chosen()
        self.said.setText(SAID[mode])
        self._rows.show_row(DRAFT_MODEL.name, mode == "draft")
        file = self._file()
        self.file_note.setText(
            NO_FILE if file is None else NOT_THERE if not file.is_file() else SHARED
        )

    def _browse(self) -> None:
        start = self.path.text().strip() or (str(Path(self.model).parent) if self.model else "")
        path = open_file(self._parent, "Choose a draft model", "GGUF models (*.gguf)", start)
        if path:
            self.path.setText(path)


__all__ = ["MODES", "SAID", "SpeculativeRows"]
