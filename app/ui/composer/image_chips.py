"""The images the next message carries (`ImageTray`, the composer's: checked, then shown as
chips) and the thumbnails images are shown by, in the composer and in the transcript.

Guarantees: images are checked off the GUI thread, one at a time in the order given
(`check_image`), before one is taken; one that is not a still image the app reads, is cut short
or too large is said in one sentence (the tray's note, above the composer's field) and nothing
else changes. A taken image shows as a chip (its thumbnail and a × that removes exactly it),
once however often it is added; `text()` says them ("🖼 a.png"). For a model that reads text
only (`sees_images` says False) the image is kept and the note says so at once. `settled` says
when no image waits to be checked, and whether one was refused since it last said so.
A `Thumb` shows an image by its sha256 at the size its width and height give it (never
enlarged), blank until its thumbnail is made; thumbnails are made off the GUI thread
(`thumbnails()`: kept for the run, the newest `KEEP_THUMBS`); an image no longer kept on this
computer shows its name and says so, never fails.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QSize, Qt, Signal
from PySide6.QtGui import QIcon, QPixmap
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from app.controllers.background import Background
from app.domain.messages import ImageContent
from app.ui.composer.file_chips import FlowLayout
from app.ui.icons import give
from app.ui.theme import mark

if TYPE_CHECKING:
    from app.controllers.attachments import Picture

CHIP_PX = 56  # an attached image's thumbnail, on its long side
KEEP_THUMBS = 400  # thumbnails kept for the run (the least recently shown dropped first)


class Thumbnails(QObject):
    """Thumbnails by (sha256, side), made on a worker thread and kept (an image found missing
    is looked for again when next asked: it may be kept by then); `ready` says, on the GUI
    thread, that one was made (its PNG) or found missing (b"")."""

    ready = Signal(str, int, bytes)
    _made = Signal(str, int, bytes)  # from the worker thread: handed to the GUI thread

    def __init__(self) -> None:
        super().__init__()
        self._kept: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self._asked: set[tuple[str, int]] = set()
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="thumbnails")
        self._made.connect(self.ready, Qt.ConnectionType.QueuedConnection)

    def put(self, sha256: str, side: int, png: bytes) -> None:
        """A thumbnail made elsewhere (the composer's, made while the image was checked)."""
        with self._lock:
            self._kept[(sha256, side)] = png
            self._kept.move_to_end((sha256, side))
            while len(self._kept) > KEEP_THUMBS:
                self._kept.popitem(last=False)

    def ask(self, sha256: str, name: str, side: int) -> bytes | None:
        """The thumbnail's PNG when made; None while it is being made (`ready` says when)."""
        key = (sha256, side)
        with self._lock:
            if key in self._kept:
                self._kept.move_to_end(key)
                return self._kept[key]
            if key in self._asked:
                return None
            self._asked.add(key)
        self._pool.submit(self._make, sha256, name, side)
        return None

    def _make(self, sha256: str, name: str, side: int) -> None:
        from app.controllers.attachments import thumbnail_of

        png = b""
        try:
            png = thumbnail_of(sha256, name, side) or b""
        finally:
            if png:
                self.put(sha256, side, png)
            with self._lock:
                self._asked.discard((sha256, side))
            self._made.emit(sha256, side, png)


_thumbnails: list[Thumbnails] = []


def thumbnails() -> Thumbnails:
    """The window's thumbnails (made on first use, on the GUI thread)."""
    if not _thumbnails:
        _thumbnails.append(Thumbnails())
    return _thumbnails[0]


def fitted(image: ImageContent, side: int) -> QSize:
    """The size `image` is shown at within `side` × `side` (never enlarged)."""
    width, height = max(1, image.width), max(1, image.height)
    scale = min(1.0, side / max(width, height))
    return QSize(max(1, round(width * scale)), max(1, round(height * scale)))


class Thumb(QToolButton):
    """An image shown by its thumbnail; until it is made, a blank of its size; when the image
    is no longer kept here, its name and "not kept" instead. Pressing it opens it large (the
    owner connects `clicked`)."""

    def __init__(self, image: ImageContent, side: int, parent: QWidget) -> None:
        super().__init__(parent)
        self.image, self.side = image, side
        self.loaded = self.missing = False  # its thumbnail shows / the image is not kept here
        name = image.name or "image"
        self.setAccessibleName(f"Image {name}")
        self.setToolTip(f"{name} · {image.width} × {image.height}")
        self.setAutoRaise(True)
        self.setIconSize(fitted(image, side))
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        loader = thumbnails()
        loader.ready.connect(self._ready)
        self._show(loader.ask(image.sha256, image.name, side))

    def _ready(self, sha256: str, side: int, png: bytes) -> None:
        if (sha256, side) == (self.image.sha256, self.side):
            self._show(png)

    def _show(self, png: bytes | None) -> None:
        if png is None:  # being made: a blank of its size meanwhile
            blank = QPixmap(self.iconSize())
            blank.fill(Qt.GlobalColor.transparent)
            self.setIcon(QIcon(blank))
            return
        pixmap = QPixmap()
        if png and pixmap.loadFromData(png, "PNG"):
            self.setIcon(QIcon(pixmap))
            self.setIconSize(pixmap.size())
            self.loaded = True
            return
        self.missing = True
        self.setIcon(QIcon())
        self.setText(f"🖼 {self.image.name or 'image'}\nnot kept on this computer")
        self.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.setAccessibleDescription("no longer kept on this computer")
        self.setToolTip(f"{self.image.name or 'This image'} is no longer kept on this computer")


class ImageChip(QFrame):
    """One attached image: its thumbnail and the × that removes it."""

    def __init__(self, image: ImageContent, parent: QWidget) -> None:
        super().__init__(parent)
        mark(self, "chip")
        row = QHBoxLayout(self)
        row.setContentsMargins(2, 2, 2, 2)
        row.setSpacing(2)
        self.thumb = Thumb(image, CHIP_PX, self)
        self.thumb.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # Tab goes to the × (as for files)
        self.thumb.setAccessibleName(f"Attached image {image.name}")
        self.remove = QToolButton(self)
        give(self.remove, "close")
        self.remove.setAccessibleName(f"Remove {image.name}")
        self.remove.setToolTip(f"The message does not carry {image.name}")
        self.remove.setIconSize(QSize(12, 12))
        row.addWidget(self.thumb)
        row.addWidget(self.remove, 0, Qt.AlignmentFlag.AlignTop)


class ImageChips(QWidget):
    """The attached images' chips, each with its ×."""

    removed = Signal(str)  # the sha256 of the image whose × was pressed

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Attached images")
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.flow = FlowLayout(self)
        self.flow.setContentsMargins(4, 2, 0, 0)
        self.images: list[ImageContent] = []
        self.chips: list[ImageChip] = []
        self.hide()

    def show_images(self, images: list[ImageContent]) -> None:
        """One chip per image (the strip hidden when there is none)."""
        for chip in self.chips:
            self.flow.removeWidget(chip)
            chip.hide()
            chip.deleteLater()
        self.images = list(images)
        self.chips = [self._chip(image) for image in images]
        for chip in self.chips:
            self.flow.addWidget(chip)
        self.setVisible(bool(images))
        self.updateGeometry()

    def text(self) -> str:
        return "  ".join(f"🖼 {image.name}" for image in self.images)

    def _chip(self, image: ImageContent) -> ImageChip:
        chip = ImageChip(image, self)
        chip.remove.clicked.connect(lambda: self.removed.emit(image.sha256))
        return chip


class ImageTray(QObject):
    """The images the next message carries (see the module guarantees)."""

    settled = Signal(bool)  # no image waits to be checked; True: none was refused meanwhile
    changed = Signal()  # the chips were drawn again

    def __init__(self, chips: ImageChips, note: QLabel) -> None:
        super().__init__(chips)
        self.chips, self.note = chips, note
        self.images: list[Picture] = []  # the checked images, in order
        # whether the conversation's model sees images (None: no model yet); the window says
        self.sees_images: Callable[[], bool | None] = lambda: None
        self._waiting: list[tuple[Path | bytes, str]] = []
        self._checking = False
        self._refused = False  # since `settled` last said
        self._checker = Background("image check", self._failed)
        self._checker.setParent(self)
        chips.removed.connect(self.remove)

    @property
    def busy(self) -> bool:
        """An image is being checked, or waits to be."""
        return self._checking or bool(self._waiting)

    def add(self, source: Path | bytes, name: str) -> None:
        """An image file, or a pasted or dropped image's bytes: checked, then taken or said."""
        self._waiting.append((source, name))
        self._next()

    def _next(self) -> None:
        if self._checking:
            return
        if not self._waiting:
            refused, self._refused = self._refused, False
            self.settled.emit(not refused)
            return
        from app.controllers.attachments import chip_image

        source, name = self._waiting.pop(0)
        self._checking = True
        self._checker.run(lambda: chip_image(source, name, CHIP_PX), self._checked)

    def _checked(self, result: tuple[Picture, bytes] | str) -> None:
        self._checking = False
        if isinstance(result, str):
            self._refuse(result)
            return
        picture, thumb = result
        thumbnails().put(picture.sha256, CHIP_PX, thumb)
        if all(p.sha256 != picture.sha256 for p in self.images):
            self.images.append(picture)
            self._draw()
        self.say(self.text_only_note())
        self._next()

    def _failed(self, message: str, _details: str) -> None:
        self._checking = False
        self._refuse(message)

    def _refuse(self, why: str) -> None:
        self._refused = True
        self.say(f"Not attached: {why.rstrip('.')}.", problem=True)
        self._next()

    def text_only_note(self) -> str:
        """What to say of the images for a model that reads text only ("" otherwise)."""
        if not self.images or self.sees_images() is not False:
            return ""
        one = len(self.images) == 1
        kind, stays, them = ("image", "It stays", "it") if one else ("images", "They stay", "them")
        return (
            f"The model answering this chat reads text only: it cannot see the attached {kind}."
            f" {stays} attached, but the message is sent only once you remove {them} (×) or a"
            " model that sees images (loaded with its projector, an mmproj file) answers the chat."
        )

    def say(self, text: str, problem: bool = False) -> None:
        """The note above the field (empty: hidden)."""
        self.note.setText(text)
        mark(self.note, "error" if problem else "notice")
        self.note.setVisible(bool(text))

    def _draw(self) -> None:
        self.chips.show_images([p.content() for p in self.images])
        self.changed.emit()

    def remove(self, sha256: str) -> None:
        """A chip's ×: the message no longer carries that image."""
        self.images = [p for p in self.images if p.sha256 != sha256]
        self._draw()
        self.say(self.text_only_note())

    def take(self) -> list[Picture]:
        """The images, which the tray then forgets (and its note with them)."""
        images, self.images = self.images, []
        self._draw()
        self.say("")
        return images


__all__ = [
    "CHIP_PX",
    "KEEP_THUMBS",
    "ImageChip",
    "ImageChips",
    "ImageTray",
    "Thumb",
    "Thumbnails",
    "fitted",
    "thumbnails",
]
