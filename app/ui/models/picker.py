"""The model picker in the window's header: the model that answers, by its friendly name, and
the searchable chooser of every model the app can load (clicking it, or Ctrl+L anywhere).

Guarantees: it always shows the model that answers (or that none is loaded yet) by the name a
person knows it by (the library's card, else the loaded model's readable name — both made by
`library/titles.py`'s rule, the one the answer footers and the status bar say — else the file
name without its quantisation; the
technical description — file, architecture, template — in its tooltip), elided in its middle
where the header is narrow, with an eye when it sees images (its projector named in the
tooltip; a projector that could not be used, said there too);
opening it (a click, the keyboard, Ctrl+L once `install_picker` ran) shows `ModelChooser`, never
a bare list, and the mouse wheel never switches models; choosing loads through `load` (a bundled
model readied first, off the GUI thread, by the library), "Open a file…" asks for a file, "Find
models online…" opens Discover, "Manage models…" the Models window. Its item list (the loaded
model, the recent ones, Open) stays for keyboard and assistive use: `activated` on an item loads
it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent, QKeySequence, QPaintEvent, QShortcut, QWheelEvent
from PySide6.QtWidgets import QComboBox, QStyle, QStyleOptionComboBox, QStylePainter, QWidget

from app.controllers.library_host import LibraryHost
from app.controllers.model_host import ModelHost
from app.ui.icons import icon

if TYPE_CHECKING:
    from app.ui.models.chooser import ModelChooser

OPEN = "open"
NONE = "No model loaded yet"
SEES = "eye-outline"  # the mark of a model that sees images (as on the models page)
SHORTCUT = "Ctrl+L"
_OPENING_KEYS = (
    Qt.Key.Key_Up,
    Qt.Key.Key_Down,
    Qt.Key.Key_Space,
    Qt.Key.Key_Return,
    Qt.Key.Key_Enter,
    Qt.Key.Key_F4,
)


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
        self.library: LibraryHost | None = None  # `attach` gives it the window's
        self.discover: Callable[[], object] | None = None
        self.manage: Callable[[], object] | None = None
        self.chooser: ModelChooser | None = None
        self.setAccessibleName("Model")
        self.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.setMinimumContentsLength(26)
        self.loaded_name = NONE
        self.refresh()
        self.activated.connect(self._chosen)

    def attach(
        self,
        library: LibraryHost,
        discover: Callable[[], object] | None = None,
        manage: Callable[[], object] | None = None,
    ) -> None:
        """Use `library` for the chooser and the names; the chooser's Discover and Manage."""
        self.library, self.discover, self.manage = library, discover, manage
        library.listed.connect(lambda _rows: self.refresh())

    def install(
        self, window: QWidget, library: LibraryHost, manage: Callable[[], object]
    ) -> QShortcut:
        """`install_picker`: the window's library, Discover, Manage, and Ctrl+L."""
        return install_picker(self, window, library, manage)

    def text(self) -> str:
        """The name shown for the model that answers."""
        path = self.host.path
        if not path or self.loaded_name == NONE:
            return self.loaded_name
        listed = self.library is not None and any(r.entry.path == path for r in self.library.rows)
        if self.host.name and not listed:  # the name the footers and the status bar say
            return self.host.name
        if self.library is not None:  # its card's (`library/titles.py`: the same name)
            return self.library.title_of(path)
        return Path(path).stem

    def set_loaded(self, name: str) -> None:
        self.loaded_name = name
        self.refresh()

    def refresh(self) -> None:
        """The list as it is now: the loaded model, the recent ones, Open."""
        self.blockSignals(True)
        self.clear()
        self.addItem(self.text(), None)
        current = self.host.path
        for path in self.host.recent.load():
            if path != current:
                self.addItem(f"{Path(path).name} — {Path(path).parent}", path)
        self.addItem("Open a model file…", OPEN)
        loaded = self.loaded_name != NONE
        if loaded and self.host.projector:
            self.setItemIcon(0, icon(SEES))
        self.setCurrentIndex(0)
        self.blockSignals(False)
        said = self.loaded_name if loaded else "No model is loaded yet"
        if loaded and self.host.description not in ("", said):
            said += f"\n{self.host.description}"  # file, architecture, template
        if loaded and self.host.base:
            said += f"\nBase model: {self.host.base}"
        self.setToolTip(
            f"{said}{self.sight() if loaded else ''}"
            f"\nClick or press {SHORTCUT} to choose another model"
        )

    def sight(self) -> str:
        """The tooltip's line on images: "\nSees images (projector mmproj-x.gguf)", why they
        are off, or "" for a model without a projector."""
        if self.host.projector:
            return f"\nSees images (projector {Path(self.host.projector).name})"
        return f"\n{self.host.images_off}" if self.host.images_off else ""

    # --- the chooser ---------------------------------------------------------------------

    def showPopup(self) -> None:
        self.choose()

    def choose(self) -> ModelChooser:
        """Open the chooser below the picker (made the first time)."""
        if self.chooser is None:
            from app.ui.models.chooser import ModelChooser

            library = self.library or LibraryHost()
            if self.library is None:
                self.library = library
            chooser = ModelChooser(library, lambda: self.host.path, self.window())
            chooser.chosen.connect(self.load_path)
            chooser.openFile.connect(self.open_file)
            chooser.discover.connect(lambda: self.discover and self.discover())
            chooser.manage.connect(lambda: self.manage and self.manage())
            chooser.discover_button.setVisible(self.discover is not None)
            chooser.manage_button.setVisible(self.manage is not None)
            self.chooser = chooser
        self.chooser.popup(self)
        return self.chooser

    def load_path(self, path: str) -> None:
        """Load `path` (a bundled model readied first by the library)."""
        if self.library is not None:
            self.library.prepare(path, self.load)
        else:
            self.load(path)

    def shown(self, option: QStyleOptionComboBox | None = None) -> str:
        """The name as it fits the field now: elided in its middle, so that its start and its
        quantisation at the end both stay in sight."""
        if option is None:
            option = QStyleOptionComboBox()
            self.initStyleOption(option)
        control, part = QStyle.ComplexControl.CC_ComboBox, QStyle.SubControl.SC_ComboBoxEditField
        room = self.style().subControlRect(control, option, part, self).width()
        if not option.currentIcon.isNull():
            room -= option.iconSize.width() + 4
        middle = Qt.TextElideMode.ElideMiddle
        return self.fontMetrics().elidedText(option.currentText, middle, max(room, 0))

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        option = QStyleOptionComboBox()
        self.initStyleOption(option)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, option)
        option.currentText = self.shown(option)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, option)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in _OPENING_KEYS:
            self.choose()
            return
        super().keyPressEvent(event)

    def wheelEvent(self, event: QWheelEvent) -> None:
        event.ignore()  # scrolling past the header never switches the model

    def _chosen(self, index: int) -> None:
        data = self.itemData(index, Qt.ItemDataRole.UserRole)
        self.setCurrentIndex(0)
        if data == OPEN:
            self.open_file()
        elif isinstance(data, str):
            self.load_path(data)


def install_picker(
    picker: ModelPicker, window: QWidget, library: LibraryHost, manage: Callable[[], object]
) -> QShortcut:
    """Give the picker of `window` the window's library, Discover, the Models window (`manage`
    opens it), and Ctrl+L anywhere in the window."""

    def discover() -> object:
        from app.ui.models.discover_page import show_discover

        return show_discover(library, window)

    picker.attach(library, discover, manage)
    shortcut = QShortcut(QKeySequence(SHORTCUT), window)
    shortcut.setObjectName("choose-model")
    shortcut.activated.connect(picker.choose)
    return shortcut


__all__ = ["ModelPicker", "install_picker"]
