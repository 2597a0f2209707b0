"""Pictures of the send queue, for the issue's note: two chats, one streaming (its own next
message queued, its Stop) and one sending (its messages queued behind the other's answer,
Queue), drawn at 1600×1000 and 640×480 in the light and the dark theme, on real widgets on
Qt's offscreen platform with a paced scripted model; every picture is written and whole."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from app.ui import appearance
from app.ui.window.main_window import MainWindow
from tests.ui.test_chat_queue import ALSO, SHORT, STORY, _enter, _new_chat, _open, _stream, _window


def shoot(window: MainWindow, folder: Path, name: str) -> list[Path]:
    """The window drawn at 1600×1000 and 640×480, in the light and the dark theme, as PNGs in
    `folder` ("queue-light-1600x1000.png", ...); the theme is light again afterwards."""
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    folder.mkdir(parents=True, exist_ok=True)
    shots = []
    try:
        for theme_name in ("light", "dark"):
            appearance.apply(app, theme_name)
            for width, height in ((1600, 1000), (640, 480)):
                window.resize(width, height)
                app.sendPostedEvents(None, QEvent.Type.DeferredDelete)  # the last chat's widgets
                app.processEvents()
                path = folder / f"{name}-{theme_name}-{width}x{height}.png"
                assert window.grab().save(str(path))
                shots.append(path)
    finally:
        appearance.apply(app, "light")
    return shots


def test_the_queue_is_drawn_at_both_sizes_in_both_themes(
    qtbot: Any, qloop: Any, tmp_path: Path
) -> None:
    """Screenshots of two chats, one streaming (its own next message queued, its Stop) and one
    sending (its messages queued behind the other's answer, Queue): written to
    $HARMONY_DESK_SHOTS when set (for the issue's note), else to the test's own folder."""
    window = _window(qtbot, tmp_path, [STORY, SHORT, ALSO, SHORT])
    c, composer = window.controller, window.composer
    story = _stream(qtbot, window, "Write a very long story about a lighthouse")
    _enter(qtbot, window, "Now make it a poem")
    _new_chat(qtbot, window)
    _enter(qtbot, window, "What is 2+2?")
    _enter(
        qtbot, window, "And what is the capital of France? Answer in one word, please, and say why."
    )
    folder = Path(os.environ.get("HARMONY_DESK_SHOTS") or tmp_path / "shots")
    shots = shoot(window, folder, "queue-sending")
    assert composer.queued.isVisible() and composer.send.text() == "Queue"
    _open(qtbot, window, story.id)
    shots += shoot(window, folder, "queue-streaming")
    assert composer.queued.isVisible() and composer.send.text() == "Stop"
    for path in shots:
        image = QImage(str(path))
        assert not image.isNull() and image.width() >= 640 and image.height() >= 480
    with qtbot.waitSignal(c.replyFinished, timeout=10_000):
        qtbot.mouseClick(composer.send, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not c.queue.items and not c.queue.sending, timeout=20_000)
    qtbot.waitUntil(lambda: not c.busy, timeout=20_000)
