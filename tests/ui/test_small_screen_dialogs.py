"""Every remaining dialog is usable on a 640×480 screen (review M7: "at 640×480 its OK and Cancel
buttons are off-screen"): the model settings dialog (every row of a model that offloads to a
GPU), the Serve page, a tool's whole result, an MCP server's form of many fields and its
sampling request open inside the screen's available area, every button that is not in a scroll
area on the screen, and the rest reached by scrolling. Each screen is Qt's offscreen platform
given that size, in a fresh process (`dialog_probe.py`); 1366×728 is a laptop less its taskbar."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ui.screen_probe import inside, probe

BUTTONS = {
    "model_settings": {"OK", "Cancel"},
    "serve": {"Close"},
    "whole_result": {"Close"},
    "elicit_form": {"Send", "Decline", "Cancel"},
    "sampling": {"Allow", "Allow in this chat", "Always allow", "Deny"},
}


@pytest.mark.parametrize("size", [(640, 480), (1366, 728)])
def test_the_remaining_dialogs_open_inside_the_screen_with_their_buttons_on_it(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    facts = probe("tests.ui.dialog_probe", tmp_path, *size)
    screen = facts["available"]
    assert screen == [0, 0, *size]
    assert set(facts["dialogs"]) == set(BUTTONS)
    off: list[tuple[str, str, list[int]]] = []  # every dialog's every problem, said at once
    for name, dialog in facts["dialogs"].items():
        off += [(name, f"no {text} outside a scroll area", []) for text in BUTTONS[name] - set(dialog["buttons"])]
        places = [("the dialog", dialog["geometry"]), *dialog["buttons"].items()]
        places += [("a scroll area", area) for area in dialog["scroll_areas"]]
        off += [(name, what, where) for what, where in places if not inside(screen, where)]
    assert off == []
    if size == (640, 480):  # what does not fit scrolls, rather than being cut
        for name in ("model_settings", "elicit_form"):
            assert facts["dialogs"][name]["scroll_areas"], name
