"""What `tests/ui/shots.py` draws with: the event loop, waits, a scripted source that holds its
answer mid-stream, and the window's picture with what stands over it.

Guarantees: a wait pumps the Qt event loop (and so the qasync loop) until its condition holds,
and raises `TimeoutError` naming what it waited for — never a silent picture of the wrong
state; a `HeldClient` streams its first `hold_after` tokens and then waits, until `release` is
set or its answer is stopped, so a picture of a streaming answer shows the same state every
run; `picture` is the window as drawn with its visible dialogs painted where they stand over
it, framed and titled as a window manager would; `save` writes a PNG of 256 colours, not dithered (the pictures go into the repository).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from PIL import Image
from PySide6.QtCore import QEvent, QPoint, QRect, Qt, SignalInstance
from PySide6.QtGui import QImage, QPainter, QPalette, QPixmap
from PySide6.QtWidgets import QApplication, QWidget

from app.domain.events import GenerationEvent, TokenStep
from app.engine.local.scripted import ScriptedClient
from app.ui import appearance

SIZES = ((1600, 1000), (640, 480))
THEMES = ("light", "dark")
COLOURS = 256  # a palette, no dithering: a UI picture at about a third of its full-colour size
TITLE_BAR = 26  # pixels: the title bar drawn above a dialog


class HeldClient(ScriptedClient):
    """A scripted source whose answers stop after `hold_after` tokens until `release` is set
    (or the answer is stopped); `held` is set while one waits."""

    def __init__(self, scripts: Sequence[str], hold_after: int) -> None:
        super().__init__(scripts)
        self.hold_after = hold_after
        self.release = threading.Event()
        self.held = threading.Event()

    def generate(self, prompt_ids: Sequence[int], **kwargs: Any) -> Iterator[GenerationEvent]:
        cancel: threading.Event | None = kwargs.get("cancel")
        steps = 0
        for event in super().generate(prompt_ids, **kwargs):
            steps += isinstance(event, TokenStep)
            if steps == self.hold_after and not self.release.is_set():
                self.held.set()
                while not self.release.wait(0.02) and not (cancel and cancel.is_set()):
                    pass
                self.held.clear()
            yield event


def qt_app() -> QApplication:
    app = QApplication.instance()
    assert isinstance(app, QApplication), "the application is made first (app.ui.app)"
    return app


def pump(rounds: int = 10) -> None:
    """Handle what is posted (deleted widgets too) for a few rounds."""
    app = qt_app()
    for _ in range(rounds):
        app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        app.processEvents()
        time.sleep(0.005)


def wait_until(what: str, condition: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Run the event loop until `condition()` holds; `TimeoutError` naming `what` if not."""
    app, end = qt_app(), time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout_s:.0f} s for {what}")
        app.processEvents()
        time.sleep(0.005)


def wait_signal(what: str, signal: SignalInstance, act: Callable[[], object] = lambda: None,
                timeout_s: float = 60.0) -> tuple[object, ...]:  # fmt: skip
    """Connect to `signal`, `act()`, then wait for its first emission; its arguments."""
    got: list[tuple[object, ...]] = []

    def seen(*args: object) -> None:
        got.append(args)

    signal.connect(seen)
    try:
        act()
        wait_until(what, lambda: bool(got), timeout_s)
    finally:
        signal.disconnect(seen)
    return got[0]


def run(work: Callable[[], None]) -> None:
    """Run `work` with a qasync loop over the application set as asyncio's loop."""
    import qasync

    loop = qasync.QEventLoop(qt_app(), already_running=True)
    asyncio.set_event_loop(loop)
    work()


def look(window: QWidget, theme_name: str, size: tuple[int, int]) -> None:
    """The window in `theme_name`, at `size`, laid out and painted."""
    appearance.apply(qt_app(), theme_name)
    window.resize(*size)
    pump()
    wait_until(f"the window at {size}", lambda: (window.width(), window.height()) == size, 10)
    pump()


def picture(window: QWidget) -> QPixmap:
    """The window as drawn, with its visible dialogs (top-level children) drawn over it."""
    shot = window.grab()
    origin = window.mapToGlobal(QPoint(0, 0))
    painter = QPainter(shot)
    for top in qt_app().topLevelWidgets():
        if top is not window and top.isVisible() and _owned_by(top, window):
            at = top.mapToGlobal(QPoint(0, 0)) - origin
            painter.drawPixmap(at, top.grab())
            _frame(painter, top, QRect(at, top.size()))
    painter.end()
    return shot


def _frame(painter: QPainter, dialog: QWidget, inside: QRect) -> None:
    """A title bar and a border, as a window manager would draw around `dialog`."""
    palette = dialog.palette()
    bar = QRect(inside.left(), inside.top() - TITLE_BAR, inside.width(), TITLE_BAR)
    painter.fillRect(bar, palette.color(QPalette.ColorRole.Button))
    painter.setPen(palette.color(QPalette.ColorRole.ButtonText))
    painter.drawText(
        bar.adjusted(10, 0, -10, 0), Qt.AlignmentFlag.AlignVCenter, dialog.windowTitle()
    )
    painter.setPen(palette.color(QPalette.ColorRole.Mid))
    painter.drawRect(inside.united(bar).adjusted(0, 0, -1, -1))


def _owned_by(widget: QWidget, window: QWidget) -> bool:
    parent = widget.parentWidget()
    while parent is not None:
        if parent is window:
            return True
        parent = parent.parentWidget()
    return False


def save(window: QWidget, folder: Path, name: str, theme_name: str) -> Path:
    """`picture(window)` as `folder/name-theme-WxH.png`, in `COLOURS` colours."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{theme_name}-{window.width()}x{window.height()}.png"
    image = picture(window).toImage().convertToFormat(QImage.Format.Format_RGB888)
    rgb = Image.frombytes("RGB", (image.width(), image.height()), _rows(image))
    rgb.quantize(COLOURS, Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE).save(
        path, optimize=True
    )
    print(f"wrote {path}", flush=True)
    return path


def _rows(image: QImage) -> bytes:
    """The pixels of an RGB888 image, row after row, without the padding Qt keeps per row."""
    width, data = image.width() * 3, bytes(image.constBits())
    return b"".join(data[y * image.bytesPerLine() :][:width] for y in range(image.height()))


def centre_over(dialog: QWidget, window: QWidget) -> None:
    """Place `dialog` in the middle of `window`, below the title bar `picture` draws (no window
    manager places it offscreen)."""
    middle = window.mapToGlobal(QPoint(window.width() // 2, (window.height() + TITLE_BAR) // 2))
    dialog.move(middle - QPoint(dialog.width() // 2, dialog.height() // 2))
    pump()
