"""The models page in the real window (offscreen): the list with header facts and the memory
verdict in words, load / set default / open folder / delete, and downloads from the
catalogue (over HTTPS on loopback) and from a pasted link, with pause and resume."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QObject, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QMessageBox

from app.controllers.library_host import LibraryHost
from app.domain.library import DownloadProgress
from app.errors import DownloadError
from app.ui.models.page import COLUMNS, ModelsPage
from tests.file_server import FileServer
from tests.private_trash import use_private_trash
from tests.tiny_gpt_oss import build_split


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CONFIG", "DATA"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    use_private_trash(monkeypatch, tmp_path / "xdg")
    return tmp_path


def settings(home: Path, **values: Any) -> None:
    (home / "config" / "settings.json").write_text(json.dumps(values))


def tiny_folder(home: Path, tiny_model: Path) -> Path:
    """`home/models` holding the tiny gpt-oss model (a link)."""
    folder = home / "models"
    folder.mkdir()
    (folder / "tiny.gguf").symlink_to(tiny_model)
    return folder


def huge_header(path: Path) -> Path:
    """A small GGUF whose header describes a model no computer can hold (a 40 GB-per-token KV
    cache): the estimate says it will not fit wherever the test runs."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(str(path), arch="llama")
    for key, value in (("block_count", 10_000), ("attention.head_count", 1_000),
                       ("attention.head_count_kv", 1_000), ("embedding_length", 1_024_000),
                       ("context_length", 4096)):  # fmt: skip
        w.add_uint32(f"llama.{key}", value)
    w.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def open_page(qtbot: Any, host: LibraryHost) -> ModelsPage:
    with qtbot.waitSignal(host.listed, timeout=30_000):
        page = ModelsPage(host)
        qtbot.addWidget(page)
        page.show()
    return page


def row_of(page: ModelsPage, name: str) -> int:
    """The table row of the model whose file is called `name` (the stem; a prefix for the
    bundled one) — the Name column shows the model's friendly name."""
    names = [r.entry.name for r in page.rows]
    return names.index(name) if name in names else next(i for i, n in enumerate(names) if n.startswith(name))


def listed(page: ModelsPage) -> list[str]:
    """The file stems of the models listed."""
    return [r.entry.name for r in page.rows]


def cells(page: ModelsPage, row: int) -> dict[str, str]:
    return {c: page.table.item(row, j).text() for j, c in enumerate(COLUMNS)}


def test_the_list_shows_header_facts_and_says_when_a_model_will_not_fit(
    qtbot: Any, home: Path, gemma_model: Path, tiny_model: Path
) -> None:
    folder = tiny_folder(home, tiny_model)
    (folder / "broken.gguf").write_bytes(b"\0" * 64)
    build_split(folder)
    huge_header(folder / "huge.gguf")
    settings(home, model_folders=[str(folder)], context_length=8192)
    page = open_page(qtbot, LibraryHost())
    names = [page.table.item(i, 0).text() for i in range(page.table.rowCount())]
    assert names[:2] == ["SmolLM2 135M Instruct (bundled) ★", "Gemma 3 270M (bundled)"]  # every model the app can use
    assert sorted(names[2:]) == ["broken", "huge", "tiny-gpt-oss-test (tiny-split-00001-of-00004.gguf)",
                                 "tiny-gpt-oss-test (tiny.gguf)"]  # the header's name; the file's where two share it
    assert sorted(listed(page)[2:]) == ["broken", "huge", "tiny", "tiny-split"]
    tiny = cells(page, row_of(page, "tiny-split"))
    assert tiny["Architecture"] == "gpt-oss" and tiny["Quantisation"] == "F16"
    assert (
        tiny["Parameters"] == "25.9M"
        and tiny["Context"] == "131,072"
        and tiny["Template"] == "harmony"
        and tiny["Abilities"] == "tools, reasoning"
    )
    assert cells(page, row_of(page, "huge"))["Abilities"] == "base model"  # no chat template: no tools
    assert cells(page, row_of(page, "SmolLM2-135M-Instruct"))["Abilities"] == "tools"
    assert "in 4 parts" in tiny["Size"] and "will not fit" not in tiny["Memory"]
    huge = row_of(page, "huge")
    assert cells(page, huge)["Memory"].endswith("will not fit")
    page.table.selectRow(huge)
    assert "Will not fit" in page.detail.text() and "8,192 tokens" in page.detail.text()
    assert page.detail.property("role") == "error" and page.delete_button.isEnabled()  # the theme's
    page.table.selectRow(row_of(page, "SmolLM2-135M-Instruct"))
    assert (
        "GiB is available" in page.detail.text() and not page.delete_button.isEnabled()
    )  # bundled
    page.table.selectRow(row_of(page, "broken"))
    assert "Cannot be used" in page.detail.text() and not page.load_button.isEnabled()
    assert cells(page, row_of(page, "broken"))["Architecture"] == "cannot be used"


class _Opened(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[QUrl] = []

    @Slot(QUrl)
    def open(self, url: QUrl) -> None:
        self.urls.append(url)


def test_load_set_default_open_folder_and_delete(
    qtbot: Any, home: Path, tiny_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = home / "models"
    folder.mkdir()
    model = folder / "mine.gguf"
    model.write_bytes(tiny_model.read_bytes())
    settings(home, model_folders=[str(folder)])
    host = LibraryHost()
    page = open_page(qtbot, host)
    page.table.selectRow(row_of(page, "mine"))
    with qtbot.waitSignal(page.loadRequested) as loaded:
        page.load_button.click()
    assert loaded.args == [str(model)]
    with qtbot.waitSignal(host.listed, timeout=10_000):
        page.default_button.click()
    assert json.loads((home / "config" / "settings.json").read_text())["default_model"] == str(
        model
    )
    assert "★" in page.table.item(row_of(page, "mine"), 0).text()
    with qtbot.waitSignal(host.listed, timeout=10_000):
        page._remove_folder(str(folder))  # stop listing it: the files stay
    assert str(folder) not in page.folders.text() and model.exists()
    assert "mine" not in listed(page)
    with qtbot.waitSignal(host.listed, timeout=10_000):
        host.add_folder(str(folder))
    page.table.selectRow(row_of(page, "mine"))
    opened = _Opened()
    QDesktopServices.setUrlHandler("file", opened, "open")
    try:
        page.open_button.click()
    finally:
        QDesktopServices.unsetUrlHandler("file")
    assert [u.toLocalFile() for u in opened.urls] == [str(folder)]
    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    with qtbot.waitSignal(host.listed, timeout=10_000):
        page.delete_button.click()
    assert not model.exists() and (home / "xdg" / "Trash" / "files" / "mine.gguf").exists()
    assert "mine" not in listed(page)
    assert "trash" in page.message.text()
    assert json.loads((home / "config" / "settings.json").read_text())["default_model"] is None


@pytest.fixture
def https(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FileServer]:
    server = FileServer(tmp_path, tls=True)
    monkeypatch.setenv("SSL_CERT_FILE", str(server.cert))  # this test trusts its own certificate
    yield server
    server.close()


def test_a_catalogue_download_with_pause_and_resume(
    qtbot: Any, home: Path, tiny_model: Path, https: FileServer
) -> None:
    body = tiny_model.read_bytes()
    url = https.add("tiny-from-catalogue.gguf", body)
    catalog = home / "catalog.json"
    entry = {"id": "tiny", "name": "Tiny gpt-oss", "description": "for tests",
             "files": [{"url": url, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}]}  # fmt: skip
    too_big = {"id": "huge", "name": "Huge", "files": [{"url": "https://example.invalid/h.gguf",
               "size": 1 << 50, "sha256": "0" * 64}]}  # fmt: skip
    catalog.write_text(json.dumps({"models": [entry, too_big]}))
    settings(home)
    https.rate = 40 << 20  # ~1.5 s: time to pause it
    host = LibraryHost(catalog, backoff_s=0.01)
    seen: list[DownloadProgress] = []
    host.progressed.connect(seen.append)
    page = open_page(qtbot, host)
    assert page.catalog_list.count() == 2 and "Tiny gpt-oss" in page.catalog_list.item(0).text()
    assert "larger than the memory available here" in page.catalog_list.item(1).text()
    assert "[" not in page.catalog_list.item(0).text()
    page.catalog_list.setCurrentRow(0)
    page.get_button.click()
    qtbot.waitUntil(lambda: any(p.state == "running" and p.done > 0 for p in seen), timeout=20_000)
    row = next(iter(page.downloads.values()))
    assert row.toggle.text() == "Pause"
    row.toggle.click()
    qtbot.waitUntil(lambda: row.state == "paused", timeout=20_000)
    assert (
        row.toggle.text() == "Resume"
        and (home / "data" / "models" / "tiny-from-catalogue.gguf.partial").exists()
    )
    https.rate = None
    with qtbot.waitSignal(host.downloaded, timeout=60_000) as done:
        row.toggle.click()
    assert Path(done.args[0]).read_bytes() == body
    assert any(r[1] is not None for r in https.requests)  # the resume asked for a byte range
    qtbot.waitUntil(lambda: "tiny-from-catalogue" in listed(page), timeout=20_000)
    assert row.status.text() == "done" and not row.cancel.isVisible()
    qtbot.waitUntil(lambda: "[in your library]" in page.catalog_list.item(0).text(), timeout=10_000)
    assert any("/s" in p.line() and "left" in p.line() for p in seen if p.state == "running")


def test_a_pasted_link_that_fails_says_why(qtbot: Any, home: Path, tmp_path: Path) -> None:
    settings(home)
    server = FileServer(tmp_path)
    try:
        host = LibraryHost(backoff_s=0.01)
        page = open_page(qtbot, host)
        page.url.setText(server.base + "/files/missing.gguf")
        page.url_button.click()
        qtbot.waitUntil(lambda: "HTTP 404" in page.message.text(), timeout=20_000)
        assert page.message.property("role") == "error"
        page.url.setText("ftp://example/model.gguf")
        page.url_button.click()
        assert "direct http" in page.message.text()
    finally:
        server.close()


def test_the_verdict_counts_and_says_a_cache_for_each_answer_at_once(qtbot: Any, home: Path, tiny_model: Path) -> None:
    folder = tiny_folder(home, tiny_model)
    settings(home, model_folders=[str(folder)], context_length=8192, parallel=3)
    page = open_page(qtbot, LibraryHost())
    tiny = row_of(page, "tiny")
    page.table.selectRow(tiny)
    said = page.detail.text()
    assert "8,192 tokens of context" in said and "for 3 answers at once" in said
    assert "for 3 answers at once" in page.table.item(tiny, COLUMNS.index("Memory")).toolTip()
    settings(home, model_folders=[str(folder)], context_length=8192, parallel=1)
    with qtbot.waitSignal(page.host.listed, timeout=30_000):
        page.host.refresh()
    page.table.selectRow(row_of(page, "tiny"))
    assert "answers at once" not in page.detail.text() and "8,192 tokens of context" in page.detail.text()


def test_file_models_opens_the_page_and_load_loads_into_the_window(
    qtbot: Any, qloop: Any, home: Path, tiny_model: Path
) -> None:
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.ui.window.main_window import MainWindow

    folder = tiny_folder(home, tiny_model)
    settings(home, model_folders=[str(folder)], context_length=512)
    host = ModelHost(EngineBridge())
    window = MainWindow(ChatController(host))
    qtbot.addWidget(window)
    window.show()
    try:
        with qtbot.waitSignal(window.library.listed, timeout=30_000):
            window.models_action.trigger()
        page = window.models_page
        assert page is not None and page.isVisible()
        page.table.selectRow(row_of(page, "tiny"))
        with qtbot.waitSignal(host.loaded, timeout=60_000) as loaded:
            page.load_button.click()
        assert loaded.args[0] == "tiny-gpt-oss-test" and host.n_ctx == 512  # its readable name
    finally:
        host.close()


def test_a_download_left_by_an_earlier_run_is_listed_paused_and_resumes(
    qtbot: Any, home: Path, tiny_model: Path, tmp_path: Path
) -> None:
    from app.library.download import Download, DownloadRequest

    body = tiny_model.read_bytes()
    server = FileServer(tmp_path)
    try:
        url = server.add("left.gguf", body)
        server.drop_after = 8 << 20
        models = home / "data" / "models"
        with pytest.raises(DownloadError):  # an earlier run: the connection dropped, no retries
            Download(
                DownloadRequest(url, models, sha256=hashlib.sha256(body).hexdigest()), retries=0
            ).run()
        settings(home)
        host = LibraryHost(backoff_s=0.01)
        page = open_page(qtbot, host)
        qtbot.waitUntil(lambda: len(page.downloads) == 1, timeout=10_000)
        row = next(iter(page.downloads.values()))
        assert (
            row.state == "paused"
            and row.toggle.text() == "Resume"
            and row.name.text() == "left.gguf"
        )
        with qtbot.waitSignal(host.downloaded, timeout=60_000):
            row.toggle.click()
        assert (models / "left.gguf").read_bytes() == body
        assert server.requests[-1][1] is not None  # it continued from the partial file
    finally:
        server.close()
