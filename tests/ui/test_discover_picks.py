"""L5: Find models online says a failure right under the search box, in words that fit a
search, and offers the picks the app knows (its catalogue) before a search and when offline."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint

from app.controllers.library_host import LibraryHost
from app.domain.library import human_size
from app.ui.models.discover_page import DiscoverPage
from app.ui.models.discover_picks import HEADING, PICK
from tests.library import test_discover
from tests.library.test_discover import FakeHub

OFFLINE = "http://127.0.0.1:9"  # the discard port: nothing listens
# the config and data folders in tmp_path, and a hub on loopback that the page asks
home = test_discover.home
fake_hub = test_discover.fake_hub


def opened(qtbot: Any) -> tuple[DiscoverPage, LibraryHost]:
    library = LibraryHost()
    page = DiscoverPage(library)
    qtbot.addWidget(page)
    page.show()
    with qtbot.waitSignal(library.catalogued, timeout=20_000):
        library.refresh()  # as the Models page and the picker do before opening it
    return page, library


def top_of(page: DiscoverPage, widget: Any) -> int:
    return int(widget.mapTo(page, QPoint(0, 0)).y())


def test_offline_the_failure_is_under_the_search_box_and_the_picks_stay_offered(
    qtbot: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HARMONY_DESK_HUB", OFFLINE)
    page, library = opened(qtbot)
    assert library.catalog is not None
    names = [m.name for m in library.catalog.models]
    qtbot.waitUntil(lambda: page.repos.count() == len(names), timeout=5000)
    assert [page.repos.item(i).data(PICK) for i in range(page.repos.count())] == [
        m.id for m in library.catalog.models
    ]
    assert page.repo_title.text() == HEADING
    with qtbot.waitSignal(page.hub.failed, timeout=20_000):
        page.query.setText("qwen")
        page.search_button.click()
    said = page.message.text()
    assert said.startswith("Could not reach the model hub at 127.0.0.1:9 to search")
    assert "fetched so far" not in said and page.message.property("role") == "error"
    query_bottom = top_of(page, page.query) + page.query.height()
    assert query_bottom <= top_of(page, page.message) < top_of(page, page.repos)  # under the box
    assert page.repos.count() == len(names)  # the picks are still offered


def test_a_pick_shows_its_catalogue_files_without_asking_the_hub(
    qtbot: Any, home: Path, fake_hub: FakeHub
) -> None:
    page, library = opened(qtbot)
    assert library.catalog is not None
    qtbot.waitUntil(lambda: page.repos.count() > 0, timeout=5000)
    page.repos.setCurrentRow(page.repos.count() - 1)
    model = library.catalog.models[-1]
    assert page.table.rowCount() == 1
    assert page.table.item(0, 0).text() == model.quantization
    assert page.table.item(0, 2).text() == human_size(model.size)
    assert page.table.cellWidget(0, 4).accessibleName() == f"Download {model.name}"
    assert model.name in page.repo_title.text() and fake_hub.requests == []


def test_a_searchs_results_replace_the_picks_and_stay_when_a_later_search_fails(
    qtbot: Any, home: Path, fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_hub.entries("tiny-org/Tiny-GGUF", {"type": "file", "path": "Tiny-Q4_0.gguf", "size": 10,
                     "lfs": {"oid": "1" * 64, "size": 10}})  # fmt: skip
    page, _ = opened(qtbot)
    qtbot.waitUntil(lambda: page.repos.count() > 0, timeout=5000)
    with qtbot.waitSignal(page.hub.found, timeout=20_000):
        page.query.setText("tiny")
        page.search_button.click()
    found = [page.repos.item(i).data(PICK) for i in range(page.repos.count())]
    assert found and all(p is None for p in found)
    page.hub.hub = OFFLINE
    with qtbot.waitSignal(page.hub.failed, timeout=20_000):
        page.search_button.click()
    assert [page.repos.item(i).data(PICK) for i in range(page.repos.count())] == found
