"""Discover (Find models online…): search the Hugging Face hub for GGUF models, see each
repository's quantisations with their size and whether they fit in this computer's memory,
and download one in place into the library.

Guarantees: widgets only — the hub is asked through `HubHost`, downloads go through the
library's queue; nothing is sent until the user searches (Enter or Search) or picks a
repository; a failure (no network, a refusal, a malformed answer) is one sentence right under
the search box, in the theme's error colour, and the page stays usable, offering the picks the
app knows (`discover_picks.py`, shown too before any search); a file that will not fit says
so in words and colour, one that cannot be downloaded says why and offers no button; a
download shows its progress in its row (bytes and rate in the tooltip), and once done the
model is in the library and the row says so.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.controllers.hub_host import HubHost, HubRepo, Offer
from app.controllers.library_host import LibraryHost
from app.domain.library import DownloadProgress, Fit, human_size
from app.ui import theme
from app.ui.icons import give
from app.ui.models.discover_picks import DiscoverPicks
from app.ui.models.rows import (
    BADGES,
    FACTS,
    TITLE,
    WARN,
    ModelRowDelegate,
    compact,
    name_clear_button,
)
from app.ui.theme import mark
from app.ui.window.screen_fit import fit_dialog

COLUMNS = ["Quantisation", "File", "Size", "On this computer", ""]
REPO = Qt.ItemDataRole.UserRole


class FileAction(QWidget):
    """The last cell of a file's row: Download, then its progress, then "In your library"."""

    def __init__(self, offer: Offer, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(4, 2, 4, 2)
        self.button = give(QPushButton("Download", self), "download")
        self.button.setAccessibleName(f"Download {offer.file.name}")
        self.bar = QProgressBar(self)
        self.bar.setRange(0, 1000)
        self.bar.setAccessibleName(f"Download of {offer.file.name}")
        self.bar.setTextVisible(False)
        self.bar.setMaximumHeight(10)
        self.done = QLabel("In your library", self)
        mark(self.done, "ok")
        for w in (self.button, self.bar, self.done):
            row.addWidget(w)
        self.bar.hide()
        self.done.setVisible(offer.in_library)
        self.button.setVisible(not offer.in_library and not offer.file.problem)
        if offer.file.problem:
            reason = QLabel("cannot be downloaded", self)
            mark(reason, "muted")
            reason.setToolTip(offer.words())
            row.addWidget(reason)

    def show_parts(self, parts: list[DownloadProgress]) -> None:
        """The download's parts as they stand (a split model has several)."""
        states = {p.state for p in parts}
        if states == {"done"}:
            self.bar.hide()
            self.button.hide()
            self.done.show()
            return
        if states & {"failed", "cancelled"} and not states & {"running", "queued"}:
            self.bar.hide()
            self.button.setText("Download again")
            self.button.setEnabled(True)
            self.button.show()
            return
        self.button.hide()
        self.bar.show()
        done = sum(p.done for p in parts)
        total = sum(p.total or 0 for p in parts)
        self.bar.setValue(int(1000 * done / total) if total else 0)
        running = [p.line() for p in parts if p.state == "running"]
        self.bar.setToolTip(running[0] if running else ", ".join(sorted(states)))


class DiscoverPage(QDialog):
    """See the module guarantees."""

    def __init__(
        self, library: LibraryHost, parent: QWidget | None = None, hub: str | None = None
    ) -> None:
        super().__init__(parent)
        self.library = library
        self.hub = HubHost(library, hub)
        self.setWindowTitle("Find models online")
        self.setObjectName("discover")
        self.resize(980, 620)
        fit_dialog(self)  # within the screen it opens on
        self.offers: list[Offer] = []
        self.cells: dict[str, FileAction] = {}  # a file's first target → its cell
        self.targets: dict[str, tuple[str, ...]] = {}  # a file's first target → all its parts
        self.parts: dict[str, DownloadProgress] = {}  # a part's target → its progress
        column = QVBoxLayout(self)
        column.addLayout(self._search_bar())
        self.message = QLabel(self)  # what the page says, right under the search box
        self.message.setWordWrap(True)
        self.message.setAccessibleName("Discover message")
        column.addWidget(self.message)
        self.where = QLabel(
            f"Searches {self.hub.address.split('://', 1)[-1]} for GGUF models. Nothing is sent"
            " until you search.",
            self,
        )
        mark(self.where, "muted")
        self.where.setWordWrap(True)
        column.addWidget(self.where)
        split = QSplitter(self)
        split.addWidget(self._repos())
        split.addWidget(self._files())
        split.setStretchFactor(1, 1)
        split.setSizes([360, 620])
        column.addWidget(split, 1)
        self.picks = DiscoverPicks(self)
        self.hub.found.connect(self.show_repos)
        self.hub.listed.connect(self.show_files)
        self.hub.failed.connect(self._failed)
        library.catalogued.connect(lambda _models: self.picks.offer())
        library.failed.connect(lambda text: self._say(text, warn=True))  # a refused download
        library.progressed.connect(self.show_progress)
        for p in library.queue.jobs():
            self.parts[p.target] = p
        self.theme_changed()
        self.picks.offer()

    def _search_bar(self) -> QHBoxLayout:
        bar = QHBoxLayout()
        self.query = QLineEdit(self)
        self.query.setPlaceholderText("Search Hugging Face for GGUF models (e.g. qwen3, llama 3.2)")
        self.query.setAccessibleName("Search the model hub")
        name_clear_button(self.query)
        self.query.returnPressed.connect(self.search)
        self.search_button = give(QPushButton("Search", self), "magnify")
        self.search_button.setAutoDefault(False)
        self.search_button.clicked.connect(self.search)
        bar.addWidget(self.query, 1)
        bar.addWidget(self.search_button)
        return bar

    def _repos(self) -> QWidget:
        box = QWidget(self)
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        self.repos = QListWidget(box)
        self.repos.setAccessibleName("Models found")
        self.repos.setItemDelegate(ModelRowDelegate(self.repos))
        self.repos.setMouseTracking(True)
        self.repos.currentItemChanged.connect(lambda item, _old: self._open(item))
        column.addWidget(self.repos)
        return box

    def _files(self) -> QWidget:
        box = QWidget(self)
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        self.repo_title = QLabel("Search, then choose a model to see its files.", box)
        self.repo_title.setWordWrap(True)
        self.repo_title.setTextFormat(Qt.TextFormat.PlainText)
        column.addWidget(self.repo_title)
        self.table = QTableWidget(0, len(COLUMNS), box)
        self.table.setHorizontalHeaderLabels(COLUMNS)
        self.table.setAccessibleName("Files of the model")
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(36)  # a row holds its Download button
        self.table.setShowGrid(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        for i in (0, 2, 3, 4):
            header.setSectionResizeMode(i, QHeaderView.ResizeMode.ResizeToContents)
        column.addWidget(self.table, 1)
        self.verdict = QLabel(box)
        self.verdict.setWordWrap(True)
        self.verdict.setAccessibleName("What the chosen file needs")
        self.table.itemSelectionChanged.connect(self._selected)
        column.addWidget(self.verdict)
        return box

    def theme_changed(self) -> None:
        """The chosen file is shaded as the lists shade theirs, in the theme shown now
        (`appearance.apply` calls this after a switch)."""
        t = theme.current()
        self.table.setStyleSheet(
            f"QTableWidget {{ selection-background-color: {t.bubble}; selection-color: {t.text}; }}"
        )

    # --- asking --------------------------------------------------------------------------

    def search(self) -> None:
        query = self.query.text().strip()
        self._say(
            f"Searching for “{query}”…" if query else "Finding the most downloaded GGUF models…"
        )
        self.hub.search(query)

    def _open(self, item: QListWidgetItem | None) -> None:
        if item is not None and self.picks.open(item):
            return  # a pick: shown from the catalogue, nothing asked of the hub
        repo = item.data(REPO) if item is not None else None
        if isinstance(repo, str):
            self.repo_title.setText(f"{repo} — reading its files…")
            self.table.setRowCount(0)
            self.hub.open_repo(repo)

    def download(self, offer: Offer) -> None:
        targets = self.hub.download(offer)
        if targets:
            self._say(f"Downloading {offer.file.name} into {Path(targets[0]).parent}.")

    # --- showing -------------------------------------------------------------------------

    def show_repos(self, query: str, repos: list[HubRepo]) -> None:
        self.repos.blockSignals(True)
        self.repos.clear()
        for r in repos:
            text = f"{r.owner} · {compact(r.downloads)} downloads · {compact(r.likes)} likes"
            said = f"{r.name} by {r.owner} — {r.downloads:,} downloads, {r.likes:,} likes"
            if r.modified:
                said += f", updated {r.modified}"
            item = QListWidgetItem(said + (" — gated" if r.gated else ""))
            item.setData(REPO, r.id)
            item.setData(TITLE, r.name)
            item.setData(FACTS, text)
            item.setData(WARN, "")
            item.setData(BADGES, ["gated"] if r.gated else [])
            gated = "\nThe hub asks you to accept its terms on its page first." if r.gated else ""
            item.setToolTip(f"{r.id}: {said}{gated}")
            self.repos.addItem(item)
        self.repos.blockSignals(False)
        where = self.hub.address.split("://", 1)[-1]
        if repos:
            self._say(
                f"{len(repos)} models with GGUF files on {where}; choose one to see its files."
            )
            self.repos.setCurrentRow(0)
        else:
            said = f"“{query}”" if query else "your search"
            self._say(f"No GGUF models match {said} on {where}.")

    def show_files(self, repo: str, offers: list[Offer]) -> None:
        current = self.repos.currentItem()
        if current is None or current.data(REPO) != repo:
            return  # the user moved on meanwhile
        self.offers = offers
        self.cells.clear()
        self.table.setRowCount(len(offers))
        for i, offer in enumerate(offers):
            f = offer.file
            size = human_size(f.size) + (f" in {len(f.parts)} parts" if len(f.parts) > 1 else "")
            fits = offer.short() if not f.problem else "—"
            cells = [f.quantization or "—", f.name, size, fits]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(offer.words())
                if j == 3 and offer.verdict is Fit.TOO_BIG:
                    item.setForeground(theme.current().colour("error"))
                elif j == 3 and offer.verdict is Fit.FITS:
                    item.setForeground(theme.current().colour("ok"))
                self.table.setItem(i, j, item)
            action = FileAction(offer, self.table)
            action.button.clicked.connect(lambda _=False, o=offer: self.download(o))
            self.table.setCellWidget(i, 4, action)
            if offer.targets:
                self.cells[offer.targets[0]] = action
                self.targets[offer.targets[0]] = offer.targets
                self._refresh_action(offer.targets[0])
        self.repo_title.setText(
            f"{repo} — {len(offers)} GGUF file{'s' * (len(offers) != 1)}"
            if offers
            else f"{repo} has no GGUF model file this app can download."
        )
        if offers:
            self.table.selectRow(0)

    def _selected(self) -> None:
        rows = self.table.selectionModel().selectedRows()
        if not rows or rows[0].row() >= len(self.offers):
            self.verdict.clear()
            return
        offer = self.offers[rows[0].row()]
        self.verdict.setText(offer.words())
        mark(self.verdict, "error" if offer.verdict is Fit.TOO_BIG or offer.file.problem else "")

    def show_progress(self, p: DownloadProgress) -> None:
        self.parts[p.target] = p
        for first, targets in self.targets.items():
            if p.target in targets:
                self._refresh_action(first)
        if p.state == "failed" and any(p.target in t for t in self.targets.values()):
            self._say(p.message, warn=True)
        elif p.state == "done" and p.target in self.cells:
            self._say(f"{Path(p.target).name} is in your library.")

    def _refresh_action(self, first: str) -> None:
        parts = [self.parts[t] for t in self.targets[first] if t in self.parts]
        action = self.cells.get(first)
        if parts and action is not None:
            action.show_parts(parts)

    def _failed(self, text: str) -> None:
        """The hub could not answer: said under the search box, the picks offered instead."""
        self._say(text, warn=True)
        self.picks.offer()

    def _say(self, text: str, *, warn: bool = False) -> None:
        self.message.setText(text)
        mark(self.message, "error" if warn else "")


def show_discover(library: LibraryHost, parent: QWidget | None = None) -> DiscoverPage:
    """The Discover page of `parent` (one, kept while it lives), shown and raised."""
    page = parent.findChild(DiscoverPage) if parent is not None else None
    if page is None:
        page = DiscoverPage(library, parent)
    page.show()
    page.raise_()
    page.activateWindow()
    page.query.setFocus()
    return page


__all__ = ["DiscoverPage", "show_discover"]
