"""The models page: every model the app can load (the bundled ones, the models folders', the
recent files) with its friendly name, header facts, capabilities and memory estimate, the
catalogue, Find models online… (Discover) and a URL box to download from, the download queue,
and the actions on a model.

Guarantees: widgets only — every read and write goes through `LibraryHost`; a model that will
not fit in memory says so in words (the row is marked and the sentence shown under the table); a
model that sees images (an image projector loads with it) is marked with an eye beside its name,
its tooltip and the line under the table naming the projector, whose size is in the Size column
and counted in the Memory one; a model that cannot be used shows why; delete asks first and
moves files to the trash; rows of the download queue show bytes, rate and time left, with pause
/ resume / cancel.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.controllers.library_host import CatalogModel, LibraryHost, Listed
from app.domain.library import DownloadProgress, Fit, human_count, human_size
from app.ui import theme
from app.ui.icons import give, icon
from app.ui.models.downloads import DownloadRow
from app.ui.models.rows import FACTS, TITLE, WARN, ModelRowDelegate, size_words, titles
from app.ui.start_folder import choose_folder
from app.ui.theme import mark
from app.ui.window.screen_fit import fit_dialog

COLUMNS = [
    "Name",
    "Architecture",
    "Parameters",
    "Quantisation",
    "Context",
    "Size",
    "Memory",
    "Abilities",
    "Template",
]
MEMORY = COLUMNS.index("Memory")
SEES = "eye-outline"  # the mark of a model that sees images


class ModelsPage(QDialog):
    """File ▸ Models…"""

    loadRequested = Signal(str)  # a model file to load now

    def __init__(self, host: LibraryHost, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.setWindowTitle("Models")
        self.resize(1000, 720)
        fit_dialog(self)  # within the screen it opens on
        self.rows: list[Listed] = []
        self.downloads: dict[str, DownloadRow] = {}
        self.catalog: list[CatalogModel] = []
        layout = QVBoxLayout(self)
        layout.addLayout(self._folder_bar())
        self.table = QTableWidget(0, len(COLUMNS), self)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(MEMORY, QHeaderView.ResizeMode.Interactive)
        header.resizeSection(MEMORY, 180)  # a long reason is elided: the line below says it all
        self.table.setWordWrap(False)
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        self.table.setAccessibleName("Models")
        self.table.itemSelectionChanged.connect(self._selected)
        self.table.itemDoubleClicked.connect(lambda _i: self._load())
        layout.addWidget(self.table, 1)
        self.detail = QLabel(self)
        self.detail.setWordWrap(True)
        self.detail.setAccessibleName("Selected model")
        layout.addWidget(self.detail)
        layout.addLayout(self._actions())
        layout.addWidget(self._catalog_box())
        layout.addWidget(self._queue_box())
        self.message = QLabel(self)
        self.message.setWordWrap(True)
        layout.addWidget(self.message)
        host.listed.connect(self.show_models)
        host.catalogued.connect(self.show_catalog)
        host.foldersChanged.connect(self.show_folders)
        host.progressed.connect(self.show_download)
        host.notice.connect(lambda text: self._say(text, warn=False))
        host.failed.connect(lambda text: self._say(text, warn=True))
        for p in host.queue.jobs():
            self.show_download(p)
        if host.rows:
            self.show_models(host.rows)
        if host.catalog is not None:
            self.show_catalog(list(host.catalog.models))
        host.refresh()

    # --- building ------------------------------------------------------------------------

    def _folder_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Folders:", self))
        self.folders = QLabel(self)
        self.folders.setWordWrap(True)
        self.folders.setAccessibleName("Models folders")
        bar.addWidget(self.folders, 1)
        self.add_folder = QPushButton("Add folder…", self)
        self.add_folder.clicked.connect(self._add_folder)
        self.remove_folder = QPushButton("Remove folder…", self)
        self.remove_folder.clicked.connect(lambda: self._remove_folder())
        self.rescan = QPushButton("Rescan", self)
        self.rescan.clicked.connect(self.host.refresh)
        bar.addWidget(self.add_folder)
        bar.addWidget(self.remove_folder)
        bar.addWidget(self.rescan)
        return bar

    def _actions(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.load_button = QPushButton("Load", self)
        self.default_button = QPushButton("Set as default", self)
        self.open_button = QPushButton("Open containing folder", self)
        self.delete_button = QPushButton("Delete…", self)
        self.load_button.clicked.connect(self._load)
        self.default_button.clicked.connect(self._set_default)
        self.open_button.clicked.connect(self._open_folder)
        self.delete_button.clicked.connect(self._delete)
        for b in (self.load_button, self.default_button, self.open_button, self.delete_button):
            b.setEnabled(False)
            bar.addWidget(b)
        bar.addStretch(1)
        return bar

    def _catalog_box(self) -> QGroupBox:
        box = QGroupBox("Get a model", self)
        column = QVBoxLayout(box)
        self.catalog_list = QListWidget(box)
        self.catalog_list.setAccessibleName("Catalogue")
        self.catalog_list.setItemDelegate(ModelRowDelegate(self.catalog_list))
        self.catalog_list.setMaximumHeight(170)
        column.addWidget(self.catalog_list)
        row = QHBoxLayout()
        self.get_button = QPushButton("Download selected", box)
        self.get_button.clicked.connect(self._download_catalog)
        row.addWidget(self.get_button)
        self.discover_button = give(QPushButton("Find models online…", box), "cloud-search")
        self.discover_button.setToolTip("Search Hugging Face for GGUF models and download one")
        self.discover_button.clicked.connect(self.discover)
        row.addWidget(self.discover_button)
        self.url = QLineEdit(box)
        self.url.setPlaceholderText("or paste a direct link to a .gguf file")
        self.url.setAccessibleName("Model URL")
        self.sha = QLineEdit(box)
        self.sha.setPlaceholderText("sha256 (optional)")
        self.sha.setAccessibleName("Expected sha256")
        self.url_button = QPushButton("Download link", box)
        self.url_button.clicked.connect(self._download_url)
        row.addWidget(self.url, 3)
        row.addWidget(self.sha, 2)
        row.addWidget(self.url_button)
        column.addLayout(row)
        return box

    def _queue_box(self) -> QGroupBox:
        box = QGroupBox("Downloads", self)
        self.queue_layout = QVBoxLayout(box)
        self.queue_empty = QLabel("No downloads.", box)
        self.queue_layout.addWidget(self.queue_empty)
        return box

    # --- showing -------------------------------------------------------------------------

    def show_models(self, rows: list[Listed]) -> None:
        selected = self.current()
        self.rows = rows
        self.table.setRowCount(len(rows))
        names = titles(rows)
        for i, row in enumerate(rows):
            for j, text in enumerate(self._cells(row, names[row.entry.path])):
                item = QTableWidgetItem(text)
                item.setToolTip(row.entry.problem or row.memory.words())
                if row.entry.problem or (j == MEMORY and row.memory.verdict is Fit.TOO_BIG):
                    item.setForeground(theme.current().colour("error"))
                if j == 0:
                    self._mark_sight(item, row)
                self.table.setItem(i, j, item)
            if selected is not None and row.entry.path == selected.entry.path:
                self.table.selectRow(i)
        self._selected()

    @staticmethod
    def _mark_sight(item: QTableWidgetItem, row: Listed) -> None:
        """An eye beside the name of a model that sees images; its projector in the tooltip."""
        sees = row.sees()
        if row.projector:
            item.setIcon(icon(SEES))
        if sees:
            item.setToolTip(f"{sees}.\n{item.toolTip()}")
            item.setData(Qt.ItemDataRole.AccessibleDescriptionRole, sees)

    @staticmethod
    def _cells(row: Listed, title: str) -> list[str]:
        e, m = row.entry, row.memory
        name = title + (" (bundled)" if e.bundled else "") + (" ★" if row.is_default else "")
        if e.problem:
            return [name, "cannot be used", "", "", "", human_size(e.file_size), e.problem, "", ""]
        parts = f" in {len(e.files)} parts" if len(e.files) > 1 else ""
        memory = m.short() + {Fit.TOO_BIG: " — will not fit", Fit.TIGHT: " — tight"}.get(
            m.verdict, ""
        )
        return [
            name,
            e.architecture,
            human_count(e.parameters),
            e.quantization,
            f"{e.context_length:,}",
            size_words(row) + parts,
            memory,
            ", ".join(row.card.badges()) if row.card is not None else "",
            e.template,
        ]

    def show_folders(self, folders: list[str]) -> None:
        self.folders.setText(" · ".join(folders))

    def show_catalog(self, models: list[CatalogModel]) -> None:
        self.catalog = models
        self.catalog_list.clear()
        current = self.catalog_list.currentRow()
        for m in models:
            files = f", {len(m.files)} files" if len(m.files) > 1 else ""
            note = self.host.catalog_note(m)
            text = f"{m.name} — {human_size(m.size)}{files} — {m.description}"
            item = QListWidgetItem(text + (f" [{note}]" if note else ""))
            item.setToolTip(f"{m.description}\n{m.publisher}; licence: {m.licence}")
            item.setData(TITLE, m.name)
            warn = note if note.startswith("larger") else ""
            here = "In your library · " if note and not warn else ""
            item.setData(FACTS, f"{here}{human_size(m.size)}{files} · {m.description}")
            item.setData(WARN, warn)
            self.catalog_list.addItem(item)
        self.catalog_list.setCurrentRow(current)

    def show_download(self, p: DownloadProgress) -> None:
        row = self.downloads.get(p.job_id)
        if row is None:
            row = DownloadRow(self.host, p, self)
            self.downloads[p.job_id] = row
            self.queue_layout.addWidget(row)
            self.queue_empty.hide()
        row.show_progress(p)
        if p.state == "failed":
            self._say(p.message, warn=True)

    def _say(self, text: str, *, warn: bool) -> None:
        self.message.setText(text)
        mark(self.message, "error" if warn else "")

    # --- acting --------------------------------------------------------------------------

    def current(self) -> Listed | None:
        rows = self.table.selectionModel().selectedRows()
        return self.rows[rows[0].row()] if rows and rows[0].row() < len(self.rows) else None

    def _selected(self) -> None:
        row = self.current()
        usable = row is not None and row.entry.usable
        self.load_button.setEnabled(usable)
        self.default_button.setEnabled(usable)
        self.delete_button.setEnabled(row is not None and not row.entry.bundled)
        self.open_button.setEnabled(row is not None and row.loadable_now)
        if row is None:
            self.detail.clear()
            return
        text = f"Cannot be used: {row.entry.problem}." if row.entry.problem else row.memory.words()
        where = {
            "bundled": "Comes with the app"
            + ("" if row.loadable_now else ", prepared on first use"),
            "recent": "Opened before, outside the models folders",
        }.get(row.source, "")
        sees = f"\n{row.sees()}." if row.sees() else ""
        self.detail.setText(f"{row.entry.path}{f' — {where}' if where else ''}\n{text}{sees}")
        warn = bool(row.entry.problem) or row.memory.verdict is Fit.TOO_BIG
        mark(self.detail, "error" if warn else "")

    def _load(self) -> None:
        row = self.current()
        if row is not None and row.entry.usable:
            self.host.prepare(row.entry.path, self.loadRequested.emit)

    def _set_default(self) -> None:
        row = self.current()
        if row is not None:
            self.host.set_default(row.entry)

    def _open_folder(self) -> None:
        row = self.current()
        if row is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(row.entry.folder))

    def _delete(self, *, confirm: bool = True) -> None:
        row = self.current()
        if row is None:
            return
        if confirm:
            size = human_size(row.entry.file_size)
            answer = QMessageBox.question(
                self, "Delete model", f"Move {row.entry.name} ({size}) to the trash?"
            )
            if answer != QMessageBox.StandardButton.Yes:
                return
        self.host.delete(row.entry)

    def _add_folder(self) -> None:
        folder = choose_folder(self, "A folder with GGUF models")
        if folder:
            self.host.add_folder(folder)

    def _remove_folder(self, folder: str | None = None) -> None:
        """Stop listing one of the added folders (its files stay where they are)."""
        added = list(self.host.settings.model_folders)
        if folder is None:
            if not added:
                self._say(
                    "Only the default models folder is listed; it cannot be removed.", warn=False
                )
                return
            folder, ok = QInputDialog.getItem(
                self, "Remove folder", "Stop listing the models in:", added, 0, False
            )
            if not ok:
                return
        self.host.remove_folder(folder)

    def discover(self) -> QWidget:
        """Find models online… (Discover), over the window that owns this page."""
        from app.ui.models.discover_page import show_discover

        return show_discover(self.host, self.parentWidget() or self)

    def _download_catalog(self) -> None:
        i = self.catalog_list.currentRow()
        if 0 <= i < len(self.catalog):
            self.host.download_catalog(self.catalog[i])

    def _download_url(self) -> None:
        self.host.download_url(self.url.text(), self.sha.text())
        self.url.clear()
        self.sha.clear()
