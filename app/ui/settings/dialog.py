"""The Settings dialog (File ▸ Settings…, Ctrl+,): the settings model's fields on pages.

Guarantees: a list of pages on the left (Appearance, Chat, Model & performance, Privacy &
data: each setting on the page its declaration names; `pages.py` lays them out), each
page in sections under headings, every setting with its help written under its control; a
choice is a combo box, a number a spin box within the model's bounds (so an out-of-range value
cannot be typed), and 0 where it means "decide for me" reads "Automatic" or "System default";
the data folder is shown whole, selectable, with Open folder and Copy; OK validates and saves
through the preferences controller, applies the theme and the text size at once, and a
refused value is named in the dialog (its page shown, its control focused) without closing
it or writing anything.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, QUrl
from PySide6.QtGui import QDesktopServices, QFont, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from app.controllers import preferences
from app.ui import appearance
from app.ui.icons import give, icon
from app.ui.settings import pages
from app.ui.theme import mark
from app.ui.window.screen_fit import fit_dialog

NO_GPU = (
    " This copy of llama.cpp has no GPU backend: models run on the CPU, whatever is chosen here."
)
DATA_HELP = (
    "Your conversations, their attached files, the documents library and the log are kept"
    " here, readable by you only."
)


class SettingsDialog(QDialog):
    """See the module guarantees; `saved` holds the settings written, after OK. `gpu` says
    whether the loaded model's llama.cpp can offload to a GPU (None: not known yet)."""

    def __init__(self, parent: QWidget | None = None, *, gpu: bool | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        fields = preferences.fields()
        self.rows = {f.name: pages.row(f, self) for f in fields}
        self.inputs: dict[str, QComboBox | QSpinBox] = {n: r.control for n, r in self.rows.items()}
        if gpu is False and "gpu_layers" in self.rows:
            self.rows["gpu_layers"].help.setText(self.rows["gpu_layers"].help.text() + NO_GPU)
        self.page_list = QListWidget(self)
        self.page_list.setAccessibleName("Settings pages")
        self.page_list.setIconSize(QSize(18, 18))
        self.page_list.setFixedWidth(196)
        self.page_list.setSpacing(2)
        self.page_list.setFrameShape(QFrame.Shape.NoFrame)
        self.stack = QStackedWidget(self)
        self.page_of: dict[str, int] = {}  # a setting → the index of its page
        self.labels = [r.label for r in self.rows.values()]
        for index, page in enumerate(pages.pages(fields)):
            widget, column = pages.page_widget(page, self.rows, self.stack)
            inner = widget.widget()
            if page.title == pages.DATA_PAGE and inner is not None:
                self._data_folder(column, inner)
            column.addStretch(1)
            self.stack.addWidget(widget)
            item = QListWidgetItem(icon(page.icon), page.title, self.page_list)
            item.setSizeHint(QSize(0, 30))
            for section in page.sections:
                self.page_of.update(dict.fromkeys(section.names, index))
        pages.line_up(self.labels)
        self.page_list.currentRowChanged.connect(self.stack.setCurrentIndex)
        self.page_list.setCurrentRow(0)
        self.problem = QLabel(self)
        self.problem.setAccessibleName("Problem")
        self.problem.setWordWrap(True)
        mark(self.problem, "error")
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel, self
        )
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        body = QHBoxLayout()
        body.addWidget(self.page_list)
        body.addWidget(self.stack, 1)
        outer = QVBoxLayout(self)
        outer.addLayout(body, 1)
        outer.addWidget(self.problem)
        outer.addWidget(buttons)
        self.resize(780, 500)
        fit_dialog(self)  # within the screen: a small one scrolls the pages, never cuts
        self.saved: preferences.Settings | None = None

    def _data_folder(self, column: QVBoxLayout, parent: QWidget) -> None:
        """The data folder: its whole path, selectable, with Open folder and Copy path."""
        folder = str(preferences.data_folder())
        column.addSpacing(8)
        column.addWidget(pages.heading("Your data", parent))
        self.data_folder = QLineEdit(folder, parent)
        self.data_folder.setReadOnly(True)
        self.data_folder.setAccessibleName("Data folder")
        self.data_folder.setToolTip(folder)
        width = self.data_folder.fontMetrics().horizontalAdvance(folder) + 24
        self.data_folder.setMinimumWidth(min(max(width, pages.FIELD_WIDTH), 520))
        self.data_folder.setCursorPosition(0)
        self.open_folder = give(QPushButton("Open folder", parent), "folder-open-outline")
        self.open_folder.setAccessibleName("Open the data folder")
        self.open_folder.clicked.connect(
            lambda: QDesktopServices.openUrl(QUrl.fromLocalFile(folder))
        )
        self.copy_folder = give(QPushButton("Copy path", parent), "content-copy")
        self.copy_folder.setAccessibleName("Copy the data folder's path")
        self.copy_folder.clicked.connect(lambda: QGuiApplication.clipboard().setText(folder))
        about = QLabel(DATA_HELP, parent)
        about.setWordWrap(True)
        about.setAccessibleName("About the data folder")
        mark(about, "muted")
        caption = QLabel("Data folder", parent)
        caption.setBuddy(self.data_folder)
        self.labels.append(caption)
        buttons = QHBoxLayout()
        buttons.setSpacing(8)
        buttons.addWidget(self.open_folder)
        buttons.addWidget(self.copy_folder)
        buttons.addStretch(1)
        grid = pages.grid()
        grid.addWidget(caption, 0, 0)
        grid.addWidget(self.data_folder, 0, 1)
        grid.addLayout(buttons, 1, 1)
        grid.addWidget(about, 2, 1)
        column.addLayout(grid)

    def values(self) -> dict[str, object]:
        return {name: r.value() for name, r in self.rows.items()}

    def accept(self) -> None:
        try:
            saved = self.saved = preferences.save(self.values())
        except ValueError as exc:
            self._refused(str(exc))
            return
        apply_look(saved.theme, saved.font_size)
        super().accept()

    def _refused(self, said: str) -> None:
        """Name the refused setting by its label, show its page and put the focus on it."""
        named = [n for n in self.rows if n in said]
        for name in named:
            said = said.replace(name, f"“{self.rows[name].label.text()}”")
        self.problem.setText(said[:1].upper() + said[1:] + "; nothing was saved.")
        if named:
            self.page_list.setCurrentRow(self.page_of.get(named[0], 0))
            self.rows[named[0]].control.setFocus()


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
