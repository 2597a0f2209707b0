"""The small parts a turn is made of: its icon buttons, the user's message bubble and the
images the message carried.

Guarantees: an `ActionButton` draws its icon only but keeps its text (said as its tooltip, and
its accessible name is the longer sentence it is given), sits in the tab order and is pressed
by Enter as well as Space; a `Bubble` asks for the width its longest line needs and no more,
never more than its maximum width (the turn sets that to its share of the column), and may
shrink to a few characters, so the window can always get narrower. `Pictures` shows a
message's images as thumbnails (`THUMB_PX` on their long side, in lines against the right edge
that wrap as the column narrows), each opening the image large (`ImageViewer`, Esc closes
it); an image no longer kept here shows its name instead, and opening it says so.
"""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QGuiApplication, QKeyEvent, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.domain.messages import ImageContent
from app.ui.composer.file_chips import FlowLayout
from app.ui.composer.image_chips import Thumb
from app.ui.icons import give
from app.ui.theme import mark

ICON_PX = 16
THUMB_PX = 120  # a message's image in the transcript, on its long side


class ActionButton(QToolButton):
    """A small, flat, icon-only button; its text is its tooltip (see the module guarantees)."""

    def __init__(
        self, text: str, name: str, icon: str, parent: QWidget, *, show_text: bool = False
    ) -> None:
        super().__init__(parent)
        self.setText(text)
        self.setAccessibleName(name)
        self.setToolTip(name if name.lower().startswith(text.lower()) else f"{text}: {name}")
        give(self, icon)
        self.setIconSize(QSize(ICON_PX, ICON_PX))
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolButtonStyle(
            Qt.ToolButtonStyle.ToolButtonTextBesideIcon
            if show_text
            else Qt.ToolButtonStyle.ToolButtonIconOnly
        )
        mark(self, "action")

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.isEnabled():
            self.click()
            return
        super().keyPressEvent(event)


class Bubble(QLabel):
    """The user's message: plain text, selectable, as wide as its longest line allows."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setWordWrap(True)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        mark(self, "bubble")

    def _natural(self) -> int:
        """The width that holds the longest line unbroken, with the bubble's padding."""
        metrics = self.fontMetrics()
        lines = self.text().split("\n")
        widest = max((metrics.horizontalAdvance(line) for line in lines), default=0)
        margins = self.contentsMargins()
        return widest + margins.left() + margins.right() + 2 * self.margin() + 4

    def sizeHint(self) -> QSize:
        width = min(self._natural(), self.maximumWidth())
        return QSize(width, self.heightForWidth(width))

    def minimumSizeHint(self) -> QSize:
        width = min(self._natural(), self.fontMetrics().averageCharWidth() * 8)
        return QSize(width, super().minimumSizeHint().height())


class Pictures(QWidget):
    """A message's images, as thumbnails; each opens large."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setAccessibleName("Images of your message")
        policy = QSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        policy.setHeightForWidth(True)
        self.setSizePolicy(policy)
        self.flow = FlowLayout(self, right=True)
        self.thumbs: list[Thumb] = []
        self.hide()

    def show_images(self, images: Sequence[ImageContent]) -> None:
        for thumb in self.thumbs:
            self.flow.removeWidget(thumb)
            thumb.deleteLater()
        self.thumbs = []
        for image in images:
            thumb = Thumb(image, THUMB_PX, self)
            thumb.clicked.connect(lambda _=False, t=thumb: ImageViewer.open_for(t))
            self.flow.addWidget(thumb)
            self.thumbs.append(thumb)
        self.setVisible(bool(images))
        self.updateGeometry()


class ImageViewer(QDialog):
    """One image, as large as the screen allows (at most its own size)."""

    @staticmethod
    def open_for(thumb: Thumb) -> ImageViewer:
        from app.controllers.attachments import image_bytes

        viewer = ImageViewer(thumb.image, image_bytes(thumb.image.sha256, thumb.image.name), thumb)
        viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        viewer.show()
        return viewer

    def __init__(self, image: ImageContent, data: bytes | None, parent: QWidget) -> None:
        super().__init__(parent)
        name = image.name or "Image"
        self.setWindowTitle(name)
        self.setAccessibleName(f"Image {name}")
        self.label = QLabel(self)
        self.label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        pixmap = QPixmap()
        if data is None or not pixmap.loadFromData(data):
            self.label.setText(f"{name} is no longer kept on this computer.")
        else:
            screen = QGuiApplication.primaryScreen()
            room = screen.availableSize() * 0.8 if screen is not None else QSize(1024, 768)
            if pixmap.width() > room.width() or pixmap.height() > room.height():
                pixmap = pixmap.scaled(
                    room,
                    Qt.AspectRatioMode.KeepAspectRatio,
                    Qt.TransformationMode.SmoothTransformation,
                )
            self.label.setPixmap(pixmap)
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)


__all__ = ["THUMB_PX", "ActionButton", "Bubble", "ImageViewer", "Pictures"]
