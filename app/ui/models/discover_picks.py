"""Discover's picks: the models this app knows (its catalogue), offered in the results list
before any search and again when the hub cannot be reached.

Guarantees: the picks come from the bundled catalogue only (no network is asked to show them
or one's files); they are offered only while the list shows no search's results, each marked
with the "pick" badge; choosing one shows its files from the catalogue (size, quantisation,
what the library says of it) with a Download that goes through the library's queue, checked
against the catalogue's sha256 as the Models page's catalogue downloads are.
"""

from __future__ import annotations

from typing import Protocol

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
)

from app.controllers.library_host import CatalogModel, LibraryHost
from app.domain.library import human_size
from app.ui.icons import give
from app.ui.models.rows import BADGES, FACTS, TITLE, WARN

PICK = Qt.ItemDataRole.UserRole + 20  # a pick's catalogue id
HEADING = "Popular picks this app knows: choose one to see it, or search for more."


class DiscoverLike(Protocol):
    library: LibraryHost
    repos: QListWidget
    table: QTableWidget
    repo_title: QLabel
    targets: dict[str, tuple[str, ...]]


class DiscoverPicks:
    """The picks of one Discover page (`page`)."""

    def __init__(self, page: DiscoverLike) -> None:
        self.page = page

    def models(self) -> list[CatalogModel]:
        catalog = self.page.library.catalog
        return list(catalog.models) if catalog is not None else []

    def offer(self) -> bool:
        """The picks in the results list, when it shows no results; whether they are."""
        repos = self.page.repos
        if any(repos.item(i).data(PICK) is None for i in range(repos.count())):
            return False  # a search's results stay
        repos.blockSignals(True)
        repos.clear()
        for model in self.models():
            repos.addItem(self._item(model))
        repos.blockSignals(False)
        if repos.count():
            self.page.repo_title.setText(HEADING)
        return repos.count() > 0

    def _item(self, model: CatalogModel) -> QListWidgetItem:
        facts = [model.publisher.split(";")[0], human_size(model.size), model.parameters]
        item = QListWidgetItem(f"{model.name} — a pick: {model.description}")
        item.setData(PICK, model.id)
        item.setData(TITLE, model.name)
        item.setData(FACTS, " · ".join(f for f in facts if f))
        item.setData(WARN, self.page.library.catalog_note(model))
        item.setData(BADGES, ["pick"])
        item.setToolTip(f"{model.name}: {model.description}")
        return item

    def open(self, item: QListWidgetItem) -> bool:
        """Show the pick `item` holds from the catalogue; False when it holds none."""
        model = next((m for m in self.models() if m.id == item.data(PICK)), None)
        if model is None:
            return False
        page, files = self.page, len(model.files)
        page.repo_title.setText(f"{model.name} — from the app's catalogue ({model.licence})")
        note = page.library.catalog_note(model) or "checked against its sha256 when downloaded"
        cells = [
            model.quantization or "—",
            model.files[0].url.rsplit("/", 1)[-1] + (f" and {files - 1} more" if files > 1 else ""),
            human_size(model.size),
            note,
        ]
        page.table.setRowCount(1)
        for j, text in enumerate(cells):
            page.table.setItem(0, j, QTableWidgetItem(text))
        button = give(QPushButton("Download", page.table), "download")
        button.setAccessibleName(f"Download {model.name}")
        button.clicked.connect(lambda: self._download(model, button))
        page.table.setCellWidget(0, 4, button)
        return True

    def _download(self, model: CatalogModel, button: QPushButton) -> None:
        targets = LibraryHost.catalog_targets(model)
        self.page.targets[targets[0]] = targets
        self.page.library.download_catalog(model)
        button.setEnabled(False)
        button.setText("Queued")


__all__ = ["HEADING", "PICK", "DiscoverPicks"]
