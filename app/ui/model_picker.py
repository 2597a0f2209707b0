"""The model picker in the window's header: the loaded model, the recent ones, and Open.

Guarantees: it always shows the model that answers (or that none is loaded yet); opening it
lists the recent models (read when it opens, never stale) and "Open a model file…"; choosing a
recent model loads it, choosing Open asks for a file; after a choice it shows the loaded model
again (a model that fails to load leaves the old one shown, as it stays loaded).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QWidget

from app.controllers.model_host import ModelHost

OPEN = "open"
NONE = "No model loaded yet"


class ModelPicker(QComboBox):
    """See the module guarantees."""

    def __init__(
        self,
        host: ModelHost,
        load: Callable[[str], object],
        open_file: Callable[[], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.host, self.load, self.open_file = host, load, open_file
        self.setAccessibleName("Model")
        self.setToolTip("The model that answers; open the list for recent models")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.loaded_name = NONE
        self.refresh()
        self.activated.connect(self._chosen)

    def text(self) -> str:
        return self.loaded_name

    def set_loaded(self, name: str) -> None:
        self.loaded_name = name
        self.refresh()

    def refresh(self) -> None:
        """The list as it is now: the loaded model, the recent ones, Open."""
        self.blockSignals(True)
        self.clear()
        self.addItem(self.loaded_name, None)
        current = self.host.path
        for path in self.host.recent.load():
            if path != current:
                self.addItem(f"{Path(path).name} — {Path(path).parent}", path)
        self.addItem("Open a model file…", OPEN)
        self.setCurrentIndex(0)
        self.blockSignals(False)

    def showPopup(self) -> None:
        self.refresh()  # the recent list as it is now
        super().showPopup()

    def _chosen(self, index: int) -> None:
        data = self.itemData(index, Qt.ItemDataRole.UserRole)
        self.setCurrentIndex(0)
        if data == OPEN:
            self.open_file()
        elif isinstance(data, str):
            self.load(data)


__all__ = ["ModelPicker"]
