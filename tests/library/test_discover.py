"""Discover: the hub client and the page against a real HTTP server on loopback that speaks the
Hugging Face hub's API (search, a repository's tree, `resolve` downloads redirected to the
file server, as the hub redirects to its CDN): search, quantisations with memory verdicts,
a checked download into the library, a wrong checksum refused, hostile answers and no network
said in a sentence."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

import app.library.hub as hub_module
from app.controllers.library_host import LibraryHost
from app.errors import HarmonyDeskError
from app.library.folders import LibraryError
from app.library.hub import files, search
from tests.file_server import FileServer

BIG = 1 << 45  # 32 TiB: will not fit anywhere the tests run


class FakeHub(FileServer):
    """The hub's API on loopback: `repos` (id → tree entries) answer `/api/models?search=`
    and `/api/models/{id}/tree/main`; `/{id}/resolve/main/{path}` redirects to the file
    registered under `{id}/{path}`; `raw` (path prefix → body) answers with hostile bodies."""

    def __init__(self, tmp: Path) -> None:
        super().__init__(tmp)
        self.repos: dict[str, list[dict[str, Any]]] = {}
        self.stats: dict[str, dict[str, Any]] = {}
        self.raw: dict[str, bytes] = {}
        self.queries: list[dict[str, list[str]]] = []

    def publish(self, repo: str, path: str, body: bytes, *, sha256: str | None = None) -> None:
        """A GGUF file in `repo`, served, listed with its LFS sha256 (or the one given)."""
        self.add(f"{repo}/{path}", body)
        oid = sha256 or hashlib.sha256(body).hexdigest()
        self.entries(repo, {"type": "file", "path": path, "size": len(body),
                         "lfs": {"oid": oid, "size": len(body), "pointerSize": 134}})  # fmt: skip

    def entries(self, repo: str, *entries: dict[str, Any]) -> None:
        self.repos.setdefault(repo, []).extend(entries)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        path = unquote(parts.path)
        for prefix, body in self.raw.items():
            if path.startswith(prefix):
                return self._send(h, 200, body, {"Content-Type": "application/json"})
        if path == "/api/models":
            query = parse_qs(parts.query)
            self.queries.append(query)
            words = query.get("search", [""])[0].lower()
            found = [{"id": r, "modelId": r, "downloads": 1000 - i, "likes": i, "tags": ["gguf"],
                      "lastModified": "2025-06-01T10:00:00.000Z", **self.stats.get(r, {})}
                     for i, r in enumerate(self.repos) if words in r.lower()]  # fmt: skip
            return self._json(h, found)
        m = re.fullmatch(r"/api/models/([^/]+/[^/]+)/tree/main", path)
        if m:
            if m[1] not in self.repos:
                return self._send(h, 404, b'{"error":"Repository not found"}', {})
            return self._json(h, self.repos[m[1]])
        m = re.fullmatch(r"/([^/]+/[^/]+)/resolve/main/(.+)", path)
        if m:
            return self._redirect(h, f"/files/{m[1]}/{m[2]}")
        return super()._handle(h)

    def _redirect(self, h: BaseHTTPRequestHandler, where: str) -> None:
        """As the hub sends a download to its CDN (`drop_after` is left for the file itself)."""
        h.send_response(302)
        h.send_header("Location", where)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _json(self, h: BaseHTTPRequestHandler, value: Any) -> None:
        self._send(h, 200, json.dumps(value).encode(), {"Content-Type": "application/json"})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("CONFIG", "DATA"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    return tmp_path


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    hub = FakeHub(tmp_path)
    monkeypatch.setenv("HARMONY_DESK_HUB", hub.base)
    yield hub
    hub.close()


@pytest.fixture(scope="module")
def qwen_body() -> bytes:
    from tests import tiny_models

    return tiny_models.build("qwen3").read_bytes()


def small_gguf(seed: int = 1) -> bytes:
    """A few hundred bytes that start like a GGUF (the split parts' bodies)."""
    return b"GGUF" + bytes([seed]) * 300


def test_the_client_searches_and_lists_each_model_once_with_its_quantisation(fake_hub: FakeHub) -> None:
    repo = "tiny-org/Tiny-Qwen3-GGUF"
    fake_hub.publish(repo, "Tiny-Qwen3-Q4_K_M.gguf", small_gguf(1))
    for n in (1, 2):
        fake_hub.publish(repo, f"Q8_0/Tiny-Qwen3-Q8_0-0000{n}-of-00002.gguf", small_gguf(n))
    fake_hub.publish(repo, "Tiny-Qwen3-F16-00001-of-00003.gguf", small_gguf(3))  # parts missing
    fake_hub.publish(repo, "mmproj-Tiny-Qwen3-F16.gguf", small_gguf(4))  # a projector
    fake_hub.entries(repo, {"type": "file", "path": "Tiny-Qwen3-Q2_K.gguf", "size": 300},  # no sha256
                  {"type": "file", "path": "README.md", "size": 10},
                  {"type": "directory", "path": "Q8_0", "size": 0})  # fmt: skip
    fake_hub.entries("someone/Other-GGUF")
    found = search("qwen3")
    assert [r.id for r in found] == [repo] and found[0].modified == "2025-06-01"
    assert fake_hub.queries[-1] == {"search": ["qwen3"], "filter": ["gguf"], "sort": ["downloads"], "limit": ["30"]}
    listed = {f.name: f for f in files(repo)}
    assert sorted(listed) == ["Q8_0/Tiny-Qwen3-Q8_0.gguf", "Tiny-Qwen3-F16.gguf", "Tiny-Qwen3-Q2_K.gguf",
                              "Tiny-Qwen3-Q4_K_M.gguf"]
    split = listed["Q8_0/Tiny-Qwen3-Q8_0.gguf"]
    assert split.quantization == "Q8_0" and len(split.parts) == 2 and split.size == 2 * 304 and not split.problem
    assert listed["Tiny-Qwen3-Q4_K_M.gguf"].quantization == "Q4_K_M"
    assert "2 of its 3 parts" in listed["Tiny-Qwen3-F16.gguf"].problem
    assert "no sha256" in listed["Tiny-Qwen3-Q2_K.gguf"].problem
    assert [f.name for f in files(repo)][:2] == ["Tiny-Qwen3-Q4_K_M.gguf", "Q8_0/Tiny-Qwen3-Q8_0.gguf"]  # smallest first


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (b"<html>Sign in</html>", "did not answer in JSON"),
        (b'{"error": "nope"}', "answered the search with no list"),
        (json.dumps([{"id": "../../etc"}, {"id": 7}, "text", None]).encode(), "with no model this app can read"),
        (b"[" * 100_000 + b"]" * 100_000, "did not answer in JSON"),  # nested past the parser's depth
        (b"[" + b" " * (9 << 20) + b"]", "more than 8 MiB"),
    ],
)
def test_a_hostile_search_answer_is_a_sentence(fake_hub: FakeHub, body: bytes, said: str) -> None:
    fake_hub.raw["/api/models"] = body
    with pytest.raises(LibraryError, match=re.escape(said)) as refused:
        search("anything")
    assert "Traceback" not in refused.value.message and "\\x" not in refused.value.message


def test_hostile_tree_entries_are_left_out(fake_hub: FakeHub) -> None:
    good = small_gguf()
    fake_hub.publish("a/b", "ok-Q4_0.gguf", good)
    fake_hub.entries("a/b",
                  {"type": "file", "path": "../../escape.gguf", "size": 10, "lfs": {"oid": "0" * 64, "size": 10}},
                  {"type": "file", "path": "/abs.gguf", "size": 10, "lfs": {"oid": "0" * 64, "size": 10}},
                  {"type": "file", "path": "neg.gguf", "size": -5},
                  {"type": "file", "path": "huge.gguf", "size": 1 << 60},
                  {"type": "file", "path": "x" * 1000 + ".gguf", "size": 10},
                  {"type": "file", "path": ["list"], "size": 10}, "just text", 42)  # fmt: skip
    assert [f.name for f in files("a/b")] == ["ok-Q4_0.gguf"]
    with pytest.raises(LibraryError, match="not a model repository"):
        files("../../etc/passwd")
    with pytest.raises(LibraryError, match="no such model"):
        files("nobody/nothing")


def test_no_network_is_a_sentence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HARMONY_DESK_HUB", "http://127.0.0.1:9")  # the discard port: nothing listens
    with pytest.raises(LibraryError, match=re.escape("Could not reach the model hub at 127.0.0.1:9")) as failed:
        search("qwen")
    assert isinstance(failed.value, HarmonyDeskError) and "internet connection" in failed.value.message


# --- the page -------------------------------------------------------------------------------


def open_discover(qtbot: Any, library: LibraryHost) -> Any:
    from app.ui.models.discover_page import DiscoverPage

    page = DiscoverPage(library)
    qtbot.addWidget(page)
    page.show()
    return page


def search_for(qtbot: Any, page: Any, query: str) -> None:
    with qtbot.waitSignal(page.hub.found, timeout=20_000):
        page.query.setText(query)
        page.search_button.click()


def files_of(qtbot: Any, page: Any) -> dict[str, dict[str, str]]:
    qtbot.waitUntil(lambda: page.table.rowCount() > 0, timeout=20_000)
    return {page.table.item(i, 1).text(): {page.table.horizontalHeaderItem(j).text(): page.table.item(i, j).text()
                                           for j in range(4)} for i in range(page.table.rowCount())}  # fmt: skip


def test_discover_searches_shows_verdicts_and_downloads_into_the_library(
    qtbot: Any, home: Path, fake_hub: FakeHub, qwen_body: bytes
) -> None:
    repo = "tiny-org/Tiny-Qwen3-GGUF"
    fake_hub.publish(repo, "Tiny-Qwen3-Q4_K_M.gguf", qwen_body)
    fake_hub.entries(repo, {"type": "file", "path": "Tiny-Qwen3-BF16.gguf", "size": BIG,
                         "lfs": {"oid": "1" * 64, "size": BIG}})  # fmt: skip
    fake_hub.stats[repo] = {"downloads": 12345, "likes": 7, "gated": "auto"}
    library = LibraryHost(backoff_s=0.01)
    page = open_discover(qtbot, library)
    assert fake_hub.requests == []  # nothing is asked before the user searches
    search_for(qtbot, page, "qwen3")
    assert page.repos.count() == 1 and "12,345 downloads" in page.repos.item(0).text()
    assert "gated" in page.repos.item(0).text()
    rows = files_of(qtbot, page)
    assert rows["Tiny-Qwen3-Q4_K_M.gguf"]["Quantisation"] == "Q4_K_M"
    assert rows["Tiny-Qwen3-Q4_K_M.gguf"]["On this computer"] == "fits"
    assert rows["Tiny-Qwen3-BF16.gguf"]["On this computer"] == "will not fit"
    assert rows["Tiny-Qwen3-BF16.gguf"]["Size"] == "32768.0 GiB"
    page.table.selectRow(1)
    assert page.verdict.text().startswith("Will not fit") and page.verdict.property("role") == "error"
    cell = page.table.cellWidget(0, 4)
    with qtbot.waitSignal(library.downloaded, timeout=60_000) as done:
        cell.button.click()
    target = home / "data" / "models" / "tiny-org" / "Tiny-Qwen3-GGUF" / "Tiny-Qwen3-Q4_K_M.gguf"
    assert Path(done.args[0]) == target and hashlib.sha256(target.read_bytes()).digest() == hashlib.sha256(qwen_body).digest()
    qtbot.waitUntil(lambda: any(r.entry.path == str(target) for r in library.rows), timeout=20_000)
    row = next(r for r in library.rows if r.entry.path == str(target))
    assert row.card is not None and row.card.badges() == ("tools", "reasoning")  # the qwen3 template
    assert cell.done.isVisible() and not cell.button.isVisible()
    assert "in your library" in page.message.text()


def test_a_wrong_checksum_is_refused_and_nothing_lands_in_the_library(
    qtbot: Any, home: Path, fake_hub: FakeHub, qwen_body: bytes
) -> None:
    fake_hub.publish("bad/Liar-GGUF", "Liar-Q4_0.gguf", qwen_body, sha256="0" * 64)
    library = LibraryHost(backoff_s=0.01)
    page = open_discover(qtbot, library)
    search_for(qtbot, page, "liar")
    files_of(qtbot, page)
    page.table.cellWidget(0, 4).button.click()
    qtbot.waitUntil(lambda: "sha256" in page.message.text(), timeout=60_000)
    assert page.message.property("role") == "error" and "0" * 64 in page.message.text()
    folder = home / "data" / "models" / "bad" / "Liar-GGUF"
    assert not (folder / "Liar-Q4_0.gguf").exists() and not (folder / "Liar-Q4_0.gguf.partial").exists()
    assert page.table.cellWidget(0, 4).button.text() == "Download again"


def test_the_page_says_when_the_hub_cannot_be_reached_or_answers_nonsense(
    qtbot: Any, home: Path, fake_hub: FakeHub
) -> None:
    library = LibraryHost()
    page = open_discover(qtbot, library)
    fake_hub.raw["/api/models"] = b"\xff\xfe not json"
    with qtbot.waitSignal(page.hub.failed, timeout=20_000):
        page.query.setText("qwen")
        page.query.returnPressed.emit()
    assert "did not answer in JSON" in page.message.text() and page.message.property("role") == "error"
    page.hub.hub = "http://127.0.0.1:9"
    with qtbot.waitSignal(page.hub.failed, timeout=20_000):
        page.search_button.click()
    assert page.message.text().startswith("Could not reach the model hub") and page.isVisible()
    assert page.repos.count() == 0


def test_the_models_page_and_the_picker_open_discover(qtbot: Any, home: Path, fake_hub: FakeHub) -> None:
    from app.ui.models.discover_page import DiscoverPage
    from app.ui.models.page import ModelsPage

    library = LibraryHost()
    with qtbot.waitSignal(library.listed, timeout=30_000):
        models = ModelsPage(library)
        qtbot.addWidget(models)
        models.show()
    models.discover_button.click()
    page = models.findChild(DiscoverPage)
    assert page is not None and page.isVisible() and fake_hub.requests == []
    models.discover_button.click()  # the same page again, not a second one
    assert len(models.findChildren(DiscoverPage)) == 1
    assert hub_module.hub_url() == fake_hub.base


def test_a_discover_download_left_unfinished_is_found_again_in_its_repository_folder(
    home: Path, fake_hub: FakeHub, qwen_body: bytes
) -> None:
    from app.errors import DownloadError
    from app.library.download import Download
    from app.library.folders import models_dir
    from app.library.queue import paused_downloads

    fake_hub.publish("tiny-org/Tiny-GGUF", "Tiny-Q4_0.gguf", qwen_body)
    (model,) = files("tiny-org/Tiny-GGUF")
    (request,) = model.requests(models_dir() / "tiny-org" / "Tiny-GGUF")
    fake_hub.drop_after = 1 << 20
    with pytest.raises(DownloadError):  # an earlier run: the connection dropped, no retries
        Download(request, retries=0).run()
    (found,) = paused_downloads([models_dir()])
    assert found.target == request.target and found.sha256 == hashlib.sha256(qwen_body).hexdigest()
