"""The model picker and its searchable chooser in the real window (offscreen): Ctrl+L opens it
with every model the app can load (the bundled SmolLM2 and Gemma, the models folder's, a
recent file elsewhere), each with its friendly name, facts and capability badges read from its
GGUF header; typing filters, Enter loads through the window's load callback, Esc closes; a
bundled model is readied before it loads; Find models online… and Manage models… open their
pages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAccessible
from PySide6.QtWidgets import QWidget

from app.ui.models.chooser import PATH, ModelChooser
from app.ui.models.rows import BADGES, FACTS, TITLE
from tests import tiny_models
from tests.ui.test_window import make_window


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fresh config, data and cache folders: Gemma is not assembled there (it is listed all the
    same, prepared on first use), and the scan reads every header afresh."""
    for name in ("CONFIG", "DATA", "CACHE"):
        (tmp_path / name.lower()).mkdir()
        monkeypatch.setenv(f"HARMONY_DESK_{name}", str(tmp_path / name.lower()))
    monkeypatch.setenv("HARMONY_DESK_HUB", "http://127.0.0.1:9")  # nothing may be asked of it
    return tmp_path


@pytest.fixture
def models(home: Path) -> dict[str, Path]:
    """A qwen3 with its tool-call template and one without any template in the models folder,
    and a recent file outside it."""
    folder = home / "data" / "models"
    folder.mkdir()
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    made = {
        "tools": folder / "qwen-tools.gguf",
        "plain": folder / "plain-completion.gguf",
        "recent": elsewhere / "recent-one.gguf",
    }
    made["tools"].symlink_to(tiny_models.build("qwen3"))
    made["plain"].symlink_to(tiny_models.build("qwen3", chat_template=""))
    made["recent"].symlink_to(tiny_models.build("qwen3"))
    (home / "config" / "recent-models.json").write_text(json.dumps([str(made["recent"])]))
    return made


def rows_of(chooser: ModelChooser, *, shown_only: bool = False) -> dict[str, dict[str, Any]]:
    """path → what its row shows."""
    out = {}
    for i in range(chooser.list.count()):
        item = chooser.list.item(i)
        if item.data(PATH) and not (shown_only and item.isHidden()):
            out[item.data(PATH)] = {"title": item.data(TITLE), "facts": item.data(FACTS),
                                    "badges": item.data(BADGES), "text": item.text()}  # fmt: skip
    return out


def open_chooser(qtbot: Any, window: Any) -> ModelChooser:
    qtbot.keyClick(window.composer.box, Qt.Key.Key_L, Qt.KeyboardModifier.ControlModifier)
    chooser = window.model_label.chooser
    assert isinstance(chooser, ModelChooser) and chooser.isVisible()
    qtbot.waitUntil(lambda: len(rows_of(chooser)) >= 5, timeout=30_000)
    return chooser


def test_ctrl_l_lists_every_model_with_badges_filters_and_enter_loads(
    qtbot: Any, qloop: Any, home: Path, models: dict[str, Path]
) -> None:
    window, _ = make_window(qtbot, home, [])
    loads: list[str] = []
    window.model_label.load = loads.append
    chooser = open_chooser(qtbot, window)
    rows = rows_of(chooser)
    by_title = {r["title"]: r for r in rows.values()}
    smol, gemma = by_title["SmolLM2 135M Instruct"], by_title["Gemma 3 270M"]
    assert smol["badges"] == ["tools"] and smol["facts"].startswith("Bundled · llama · 135M · Q4_1 · 8K context")
    assert gemma["badges"] == ["tools", "base model"] and "prepared on first use" in gemma["facts"]  # tools; a base model
    assert not (home / "cache" / "models" / "gemma-3-270m-q4_k_m.gguf").exists()
    tools, plain = rows[str(models["tools"])], rows[str(models["plain"])]
    assert tools["badges"] == ["tools", "reasoning"]  # qwen3's template: hermes calls, <think>
    assert plain["badges"] == ["base model"]  # no chat template: a completion model calls no tools
    assert tools["title"] == "tiny-qwen3-test (qwen-tools.gguf)"  # the header's name, told apart
    assert "qwen3 · " in tools["facts"] and "context" in tools["facts"]
    assert rows[str(models["recent"])]["facts"].startswith("Opened before")
    assert "tools, reasoning" in tools["text"]  # what a screen reader is told
    qtbot.keyClicks(chooser.search, "gemma")
    assert [r["title"] for r in rows_of(chooser, shown_only=True).values()] == ["Gemma 3 270M"]
    chooser.search.setText("reasoning qwen3")
    assert set(rows_of(chooser, shown_only=True)) == {str(models["tools"]), str(models["recent"])}
    chooser.search.setText("no such model anywhere")
    assert rows_of(chooser, shown_only=True) == {} and "No model matches" in chooser.note.text()
    chooser.search.setText("")
    qtbot.keyClicks(chooser.search, "plain")
    qtbot.keyClick(chooser.search, Qt.Key.Key_Return)
    assert loads == [str(models["plain"])] and not chooser.isVisible()
    chooser = open_chooser(qtbot, window)
    assert chooser.search.text() == ""  # a fresh search each time
    qtbot.keyClick(chooser.search, Qt.Key.Key_Escape)
    assert not chooser.isVisible() and loads == [str(models["plain"])]


def test_arrows_move_through_what_is_shown_and_the_model_in_use_comes_first(
    qtbot: Any, qloop: Any, home: Path, models: dict[str, Path]
) -> None:
    window, _ = make_window(qtbot, home, [])
    loads: list[str] = []
    window.model_label.load = loads.append
    window.host.path = str(models["tools"])  # as after loading it
    window.model_label.set_loaded("qwen-tools.gguf (qwen3, template qwen)")
    chooser = open_chooser(qtbot, window)
    first = chooser.list.item(0)
    assert first.data(PATH) == str(models["tools"]) and first.data(FACTS).startswith("In use · ")
    assert chooser.list.currentItem() is first
    assert window.model_label.text() == "tiny-qwen3-test · F16"  # the friendly name in the header
    assert "template qwen" in window.model_label.toolTip()  # the technical one in its tooltip
    chooser.search.setText("qwen3")
    qtbot.keyClick(chooser.search, Qt.Key.Key_Down)
    chosen = chooser.list.currentItem().data(PATH)
    assert chosen != str(models["tools"]) and not chooser.list.currentItem().isHidden()
    qtbot.keyClick(chooser.search, Qt.Key.Key_Enter)
    assert loads == [chosen]


def test_a_bundled_model_is_checked_before_it_loads(
    qtbot: Any, qloop: Any, home: Path, models: dict[str, Path]
) -> None:
    window, _ = make_window(qtbot, home, [])
    loads: list[str] = []
    window.model_label.load = loads.append
    chooser = open_chooser(qtbot, window)
    smol = next(p for p, r in rows_of(chooser).items() if r["title"] == "SmolLM2 135M Instruct")
    chooser.search.setText("smollm2")
    qtbot.keyClick(chooser.search, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: loads == [smol], timeout=30_000)  # after its sha256 was checked
    assert (home / "cache" / "models" / "smollm2.verified").is_file()


def test_clicking_the_picker_opens_the_chooser_and_its_buttons_open_their_pages(
    qtbot: Any, qloop: Any, home: Path, models: dict[str, Path]
) -> None:
    from app.ui.models.discover_page import DiscoverPage

    window, _ = make_window(qtbot, home, [])
    picker = window.model_label
    qtbot.mouseClick(picker, Qt.MouseButton.LeftButton)
    assert picker.chooser is not None and picker.chooser.isVisible()
    qtbot.waitUntil(lambda: len(rows_of(picker.chooser)) >= 5, timeout=30_000)
    picker.chooser.discover_button.click()
    page = window.findChild(DiscoverPage)
    assert page is not None and page.isVisible() and not picker.chooser.isVisible()
    assert page.message.text() == ""  # nothing asked of the hub before a search
    picker.showPopup()
    with qtbot.waitSignal(window.library.listed, timeout=30_000):
        picker.chooser.manage_button.click()
    assert window.models_page is not None and window.models_page.isVisible()
    qtbot.keyClick(picker, Qt.Key.Key_Down)  # the keyboard opens the chooser, never switches
    assert picker.chooser.isVisible() and picker.currentIndex() == 0
    assert unnamed(picker.chooser) == [] and unnamed(page) == []


def unnamed(root: QWidget) -> list[str]:
    """The controls under `root` a screen reader would announce without a name."""
    from tests.ui.test_look import CONTROLS

    out = []
    for widget in root.findChildren(QWidget):
        if not isinstance(widget, CONTROLS) or widget.objectName().startswith("qt_"):
            continue
        said = QAccessible.queryAccessibleInterface(widget)
        if said is None or not said.text(QAccessible.Text.Name).strip():
            out.append(type(widget).__name__)
    return out
