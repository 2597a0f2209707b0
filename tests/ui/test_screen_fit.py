"""The window and its dialogs fit the screen (review M7): on a 640×480 screen and on a
1366×768 laptop's 1366×728 left by its taskbar, the window the app builds opens inside the
available area with the composer and Send on the screen, and Settings, MCP servers, the models
page and the endpoint dialog open inside it with every button outside a scroll area on the
screen. Each screen is Qt's offscreen platform given that size, in a fresh process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QRect, QSize

from app.ui.window.screen_fit import FRAME, PREFERRED, first_geometry
from tests.ui.screen_probe import inside, probe


@pytest.mark.parametrize("size", [(640, 480), (1366, 728)])
def test_the_window_and_its_dialogs_open_inside_the_screen(tmp_path: Path, size: tuple[int, int]) -> None:
    facts = probe("tests.ui.screen_probe", tmp_path, *size)
    screen = facts["available"]
    assert screen == [0, 0, *size]
    assert inside(screen, facts["window"]), facts["window"]
    assert inside(screen, facts["composer"]) and inside(screen, facts["send"])
    assert facts["minimum"][0] <= size[0] and facts["minimum"][1] <= size[1]
    assert {"settings", "mcp", "models", "endpoint"} <= set(facts["dialogs"])
    for name, dialog in facts["dialogs"].items():
        assert inside(screen, dialog["geometry"]), (name, dialog["geometry"])
        for text, where in dialog["buttons"].items():
            assert inside(screen, where), (name, text, where)
        for area in dialog["scroll_areas"]:
            assert inside(screen, area), (name, area)
    if size == (640, 480):  # OK and Cancel of Settings were off-screen; MCP servers' Save too
        assert {"OK", "Cancel"} <= set(facts["dialogs"]["settings"]["buttons"])
        assert {"Save", "Test connection", "Close"} <= set(facts["dialogs"]["mcp"]["buttons"])


def test_the_first_size_is_the_preferred_one_where_there_is_room_and_centred() -> None:
    big = first_geometry(QRect(0, 0, 1920, 1040))
    assert big.size() == PREFERRED
    assert abs((big.left() - FRAME.width() // 2) - (1920 - big.right() - 1 - FRAME.width() // 2)) <= 1
    laptop = first_geometry(QRect(0, 0, 1366, 728))
    assert laptop.width() == PREFERRED.width() and laptop.height() + FRAME.height() <= 728
    offset = first_geometry(QRect(1920, 24, 800, 600))  # a second screen, a panel on top
    assert offset.left() >= 1920 and offset.top() >= 24
    assert offset.size() == QSize(800 - FRAME.width(), 600 - FRAME.height())


def test_a_narrow_header_elides_the_model_name_in_its_middle(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    window.resize(640, 480)
    picker = window.model_label
    picker.set_loaded("SmolLM2 135M Instruct Extended Context · Q4_1")
    qtbot.waitUntil(lambda: picker.width() < picker.fontMetrics().horizontalAdvance(picker.currentText()), timeout=3000)
    shown = picker.shown()
    assert "…" in shown and shown.startswith("SmolLM2") and shown.endswith("Q4_1"), shown
    assert not picker.grab().isNull()  # painted through the same text


def test_a_long_status_sentence_is_cut_with_an_ellipsis_and_whole_on_hover(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    """At 640×480 the queue's sentence ran under the size grip, cut mid-word (review, 640×480)."""
    from tests.ui.test_window import make_window

    window, _ = make_window(qtbot, tmp_path, [])
    window.resize(640, 480)
    window.show()
    bar = window.statusBar()
    said = ("The answer in “Write a long story about a lighthouse keeper” goes on (marked ● in the list);"
            " this message is sent when it ends.")
    bar.showMessage(said)
    qtbot.waitUntil(lambda: bar.width() <= 640, timeout=3000)
    shown = bar.shown_text()
    assert shown.endswith("…") and said.startswith(shown[:-1]), shown
    assert bar.fontMetrics().horizontalAdvance(shown) <= bar.room() < bar.width()
    assert bar.currentMessage() == said and bar.toolTip() == said
    assert not bar.grab().isNull()  # painted through the same text
    window.resize(1600, 1000)
    qtbot.waitUntil(lambda: bar.shown_text() == said, timeout=3000)  # room again: whole
    bar.clearMessage()
    assert bar.toolTip() == "" and bar.currentMessage() == ""
