"""Images in the window, through real widgets on the offscreen platform: pasted (a screenshot on
the clipboard) or dropped, checked before the composer takes them, shown as thumbnail chips, sent
with the message and shown in its bubble; a bad one is said and nothing else is lost; a model that
reads text only is said and the message is not sent with it; a real tiny vision model (the random
pair of tests/tiny_vision.py) reads the image, and the debug pane says the tokens it took."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from PySide6.QtCore import QByteArray, QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication, QImage
from PySide6.QtWidgets import QWidget

from app.controllers.attachments import kept_of
from app.domain.history import Turn, Version
from app.domain.messages import ImageContent
from app.ui.composer.image_chips import CHIP_PX, Thumb
from app.ui.markdown.view import MarkdownView
from app.ui.transcript.turn_parts import ImageViewer
from app.ui.window.main_window import MainWindow
from tests import tiny_vision
from tests.gui_helpers import all_text
from tests.ui.test_window import make_window


def png(seed: int, size: tuple[int, int] = (32, 32)) -> bytes:
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    out = io.BytesIO()
    Image.fromarray(pixels, "RGB").save(out, "PNG")
    return out.getvalue()


def paste_screenshot(qtbot: Any, window: MainWindow, seed: int) -> None:
    """A screenshot on the clipboard (a picture, no file, no text), pasted with Ctrl+V."""
    QGuiApplication.clipboard().setImage(QImage.fromData(png(seed)))
    window.composer.box.setFocus()
    qtbot.keyClick(window.composer.box, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)


def paste_bytes(window: MainWindow, kind: str, data: bytes) -> None:
    mime = QMimeData()
    mime.setData(kind, QByteArray(data))
    window.composer.box.insertFromMimeData(mime)


def drop(window: MainWindow, *files: Path) -> None:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(f)) for f in files])
    window.composer.box.dropEvent(QDropEvent(QPointF(5, 5), Qt.DropAction.CopyAction, mime,
                                             Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier))


def chips_loaded(window: MainWindow, count: int) -> bool:
    chips = window.composer.image_chips.chips
    return len(chips) == count and all(c.thumb.loaded for c in chips)


def test_a_pasted_screenshot_is_a_chip_and_a_text_only_model_keeps_it_unsent(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, client = make_window(qtbot, tmp_path, ["<|channel|>final<|message|>Text only.<|return|>"])
    composer = window.composer
    composer.box.setPlainText("What is in this picture?")
    paste_screenshot(qtbot, window, 1)
    qtbot.waitUntil(lambda: chips_loaded(window, 1), timeout=10_000)
    chip = composer.image_chips.chips[0]
    assert composer.image_chips.isVisible() and chip.thumb.iconSize().width() <= CHIP_PX
    assert chip.thumb.accessibleName().startswith("Attached image pasted-") and chip.remove.isVisible()
    assert composer.box.toPlainText() == "What is in this picture?"  # the image was not typed
    note = composer.image_note
    assert note.isVisible() and "reads text only" in note.text()  # said as soon as it is added
    qtbot.keyClick(composer.box, Qt.Key.Key_Return)  # refused: nothing sent, nothing lost
    assert window.controller.doc.turns == [] and client.prompts == []
    assert note.isVisible() and "reads text only" in note.text() and note.property("role") == "error"
    assert composer.box.toPlainText() == "What is in this picture?" and len(composer.images) == 1
    paste_screenshot(qtbot, window, 1)  # the same picture again: still one chip
    paste_screenshot(qtbot, window, 2)
    qtbot.waitUntil(lambda: chips_loaded(window, 2), timeout=10_000)
    assert "🖼 pasted-" in composer.image_chips.text()
    for _ in range(2):
        composer.image_chips.chips[0].remove.click()
    assert composer.images == [] and not composer.image_chips.isVisible() and not note.isVisible()
    with qtbot.waitSignal(window.controller.replyFinished, timeout=10_000):
        qtbot.keyClick(composer.box, Qt.Key.Key_Return)
    assert window.controller.doc.turns[0].version.images == ()
    assert window.transcript.turns[0].pictures.thumbs == []


def test_a_bad_paste_or_drop_is_said_and_the_text_and_other_images_stay(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    composer, note = window.composer, window.composer.image_note
    good = tmp_path / "harbour.png"
    good.write_bytes(png(3, (48, 24)))
    drop(window, good)
    qtbot.waitUntil(lambda: chips_loaded(window, 1), timeout=10_000)
    composer.box.setPlainText("Typed words")
    paste_bytes(window, "image/png", png(4)[:-40])  # a PNG cut short
    qtbot.waitUntil(lambda: "Not attached" in note.text(), timeout=10_000)
    assert "damaged or cut short" in note.text() and note.property("role") == "error"
    assert composer.box.toPlainText() == "Typed words" and [p.name for p in composer.images] == ["harbour.png"]
    fake = tmp_path / "notes.png"
    fake.write_text("not a picture at all\n")
    drop(window, fake)
    qtbot.waitUntil(lambda: "notes.png" in note.text(), timeout=10_000)
    assert note.text().startswith("Not attached: notes.png is not an image") and note.isVisible()
    assert composer.box.toPlainText() == "Typed words" and len(composer.image_chips.chips) == 1
    assert composer.files == []  # nor was it taken as a document
    wide = composer.image_chips.chips[0].thumb.iconSize()
    assert (wide.width(), wide.height()) == (48, 24)  # its own shape, never enlarged


def right_edge(widget: QWidget, within: QWidget) -> int:
    return widget.mapTo(within, QPoint(widget.width(), 0)).x()


def test_images_no_longer_kept_show_their_names_above_the_bubble_never_fail(qtbot: Any, qloop: Any, tmp_path: Path) -> None:
    window, _ = make_window(qtbot, tmp_path, [])
    window.resize(1100, 800)
    c = window.controller
    gone = [ImageContent(sha256=f"{n:02x}" * 32, mime="image/png", width=40, height=30, name=f"gone-{n}.png")
            for n in range(5)]
    c.doc.turns.append(Turn([Version("What was this?", images=tuple(gone))]))
    c.docChanged.emit()
    turn = window.transcript.turns[0]
    thumbs = turn.pictures.thumbs
    assert len(thumbs) == 5
    qtbot.waitUntil(lambda: all(t.missing for t in thumbs), timeout=10_000)
    assert "gone-0.png" in thumbs[0].text() and "not kept" in thumbs[0].text()
    assert turn.user.text() == "What was this?"
    # the names stand above the bubble, against its right edge, and wrap as the window narrows
    above = lambda: all(t.mapTo(turn, QPoint(0, 0)).y() < turn.user.mapTo(turn, QPoint(0, 0)).y() for t in thumbs)  # noqa: E731
    # (both once the layout has settled: under load it can be seen half done, once in CI)
    qtbot.waitUntil(lambda: abs(right_edge(thumbs[-1], turn) - right_edge(turn.user, turn)) <= 2 and above())
    lines = lambda: len({t.mapTo(turn, QPoint(0, 0)).y() for t in thumbs})  # noqa: E731
    wide = lines()
    window.resize(560, 800)
    qtbot.waitUntil(lambda: lines() > wide and right_edge(thumbs[-1], turn) <= turn.width())
    viewer = ImageViewer.open_for(thumbs[0])
    assert "no longer kept" in viewer.label.text()
    viewer.close()


@pytest.fixture(scope="module")
def vision_pair() -> tuple[Path, Path]:
    return tiny_vision.build_text(), tiny_vision.build_projector()


@pytest.fixture
def vision_window(qtbot: Any, qloop: Any, tmp_path: Path, vision_pair: tuple[Path, Path]) -> Iterator[MainWindow]:
    """A window on the tiny vision model, loaded with its projector, the debug pane open."""
    from app.controllers.bridge import EngineBridge
    from app.controllers.chat import ChatController
    from app.controllers.model_host import ModelHost
    from app.engine.local.client import WorkerClient
    from app.ui.window.main_window import UiState

    client = WorkerClient()
    client.load(vision_pair[0], n_ctx=512, n_threads=1, projector=vision_pair[1])
    host = ModelHost(EngineBridge())
    host.use(client, "smollm2", "tiny vision", loader=client)
    window = MainWindow(ChatController(host), UiState(tmp_path / "ui-state.json"))
    qtbot.addWidget(window)
    window.show()
    window.controller.settle()
    window.controller.max_tokens = 8
    window.set_debug(True, remember=False)
    try:
        yield window
    finally:
        window.close()
        host.close()
        client.close()


def test_a_real_vision_model_reads_the_pasted_image_and_the_debug_pane_counts_it(qtbot: Any, vision_window: MainWindow) -> None:
    window, c = vision_window, vision_window.controller
    assert c.sees_images is True
    paste_screenshot(qtbot, window, 5)
    qtbot.waitUntil(lambda: chips_loaded(window, 1), timeout=10_000)
    assert not window.composer.image_note.isVisible()  # this model sees images: nothing to say
    picture = window.composer.images[0]
    with qtbot.waitSignal(c.replyFinished, timeout=60_000):
        window.composer.box.setPlainText("What is this?")
        qtbot.keyClick(window.composer.box, Qt.Key.Key_Return)
    assert window.composer.images == [] and not window.composer.image_chips.isVisible()
    version = c.doc.turns[0].version
    assert [i.sha256 for i in version.images] == [picture.sha256]
    reply = version.reply
    assert reply is not None and reply.state in ("done", "incomplete"), reply  # 8 tokens at most
    assert reply.debug.timings["generated"] > 0 and reply.debug.timings["image_tokens"] == 16
    turn = window.transcript.turns[0]
    answer = turn.segments[0]
    assert isinstance(answer, MarkdownView) and answer.toPlainText().strip()  # it streamed in
    thumbs: list[Thumb] = turn.pictures.thumbs
    qtbot.waitUntil(lambda: thumbs[0].loaded, timeout=10_000)
    assert turn.pictures.isVisible() and turn.user.text() == "What is this?"
    assert "Images" in window.debug.run.details.text() and "1 → 16 tokens" in window.debug.run.details.text()
    assert "images: 1 → 16 tokens" in window.debug.events.toPlainText()
    qtbot.waitUntil(lambda: [n for n, _ in kept_of(version.id)] == [picture.name], timeout=10_000)
    viewer = ImageViewer.open_for(thumbs[0])
    assert viewer.label.pixmap().width() == 32  # the image itself, at its own size
    viewer.close()
    turn.edit_button.click()
    turn.editor.setPlainText("And this?")
    with qtbot.waitSignal(c.replyFinished, timeout=60_000):
        turn.resend.click()
    edited = c.doc.turns[0].version
    assert edited.id != version.id and edited.images == version.images  # the edit keeps it
    assert edited.reply is not None and edited.reply.debug.timings["image_tokens"] == 16
    qtbot.waitUntil(lambda: [n for n, _ in kept_of(edited.id)] == [picture.name], timeout=10_000)
    qtbot.waitUntil(lambda: window.transcript.turns[0].pictures.thumbs[0].loaded, timeout=10_000)
    assert "What is this?" not in all_text(window.transcript)
