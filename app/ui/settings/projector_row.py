"""Model settings' "Projector (images)" row: which image projector (an `mmproj` GGUF) loads with
the model, so that it sees images.

Guarantees: three ways, as `ModelChoice.projector` remembers them — Automatic (None: the
projector in the model's folder, named in the list, or "none found"), None (""; text only), or
a file chosen with "Choose file…" (a file dialog that lists GGUF files and opens in the model's
folder); a chosen file is checked (`projectors.is_projector`): one that is not a projector is
refused, said in the error colour under the row, and the choice stays as it was; a remembered
file that is gone is listed as gone and said so; the line under the row says what loads; `value`
is what `ModelChoice.projector` remembers, `resolved` the file that would load (for the memory
line).
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QWidget

from app.controllers.library_host import is_projector, projector_for
from app.controllers.model_host import ModelChoice
from app.domain.declared import setting
from app.ui.settings.pages import SectionRows, help_line
from app.ui.start_folder import open_file
from app.ui.theme import mark

CHOOSE = "choose"  # the item that opens the file dialog
SAID_AUTO = "The projector in the model's folder, {name}, loads with it, so that it sees images."
SAID_NONE_FOUND = (
    "There is no projector (an mmproj GGUF) in the model's folder: it reads text only. Choose"
    " the projector made for this model to let it see images."
)
SAID_NONE = "No projector loads: the model reads text only, and uses a little less memory."
SAID_FILE = "This projector loads with the model; loading says why when it does not fit it."
GONE = "The projector chosen for this model is not there any more: choose another."


class ProjectorRow:
    """The projector choice, as a row of a section (see the module guarantees)."""

    def __init__(self, rows: SectionRows, chosen: ModelChoice, model: str, parent: QWidget):
        self._parent, self.model = parent, model
        self.found = projector_for(model) if model else None  # Automatic's
        self.box = QComboBox(parent)
        declared = setting(ModelChoice, "projector")
        self.box.setAccessibleName(declared.shown.label)
        auto = self.found.name if self.found is not None else "none found"
        self.box.addItem(f"Automatic ({auto})", None)
        self.box.addItem("None (text only)", "")
        self.box.addItem("Choose file…", CHOOSE)
        self.said = help_line("", parent)
        self.said.setAccessibleName("About the projector")
        rows.add_setting(declared, self.box, self.said)
        if chosen.projector:
            self._add_file(Path(chosen.projector))
        else:
            self.box.setCurrentIndex(self.box.findData(chosen.projector))
        self._index = self.box.currentIndex()
        self.box.activated.connect(self._activated)
        self._shown()

    def value(self) -> str | None:
        """`ModelChoice.projector`: None (Automatic), "" (none) or the chosen file's path."""
        data = self.box.currentData()
        return data if isinstance(data, str) and data != CHOOSE else None

    def resolved(self) -> Path | None:
        """The projector that would load with the chosen value (None: none)."""
        value = self.value()
        if value is None:
            return self.found
        return Path(value) if value and Path(value).is_file() else None

    def choose_file(self, path: str | Path) -> bool:
        """Use the file at `path` when it is a projector (True); otherwise say why, keep the
        choice as it was, and return False."""
        file = Path(path).expanduser().resolve()
        if not file.is_file() or not is_projector(file):
            what = "there is no file there" if not file.is_file() else "it is not a projector"
            self.box.setCurrentIndex(self._index)
            self._shown()
            self.said.setText(
                f"{file.name} was not chosen: {what}. A projector is an mmproj GGUF made for"
                " this model (its architecture is clip)."
            )
            mark(self.said, "error")
            return False
        self._add_file(file)
        self._shown()
        return True

    def _add_file(self, file: Path) -> None:
        """The chosen file as an item of its own, before "Choose file…", and chosen."""
        at = self.box.findData(CHOOSE)
        if self.box.itemData(at - 1) not in (None, ""):  # the file chosen before
            self.box.removeItem(at - 1)
            at -= 1
        gone = "" if file.is_file() else " (gone)"
        self.box.insertItem(at, f"{file.name}{gone}", str(file))
        self.box.setItemData(at, str(file), Qt.ItemDataRole.ToolTipRole)  # the whole path
        self.box.setCurrentIndex(at)
        self._index = at

    def _activated(self, index: int) -> None:
        if self.box.itemData(index) != CHOOSE:
            self._index = index
            self._shown()
            return
        self.box.setCurrentIndex(self._index)  # until a file is chosen
        start = str(Path(self.model).parent) if self.model else ""
        path = open_file(self._parent, "Choose the model's projector", "Projectors (*.gguf)", start)
        if path:
            self.choose_file(path)

    def _shown(self) -> None:
        value = self.value()
        if value is None:
            found = self.found
            said = SAID_AUTO.format(name=found.name) if found is not None else SAID_NONE_FOUND
        else:
            said = SAID_NONE if not value else SAID_FILE if Path(value).is_file() else GONE
        self.said.setText(said)
        mark(self.said, "error" if said == GONE else "muted")
        self.box.setToolTip(self.box.currentText())  # a long file name is cut in the box


__all__ = ["CHOOSE", "ProjectorRow"]
